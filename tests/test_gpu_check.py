"""benchmarks/gpu_check.py --smoke: the script runs on a CPU and its JSON holds every section.

The smoke run checks the script, not the speed: no figure is compared with
anything but zero.  It measures the real data path (PNG files in the
DiffSeg30k layout read through diffzoo's loaders) at its tiny stand-in sizes
with 0 and 2 loader workers, and lists what it leaves out in ``not_measured``
(the GPU, the 512 / 1024 px sizes, 4 workers; IMDL-BenCo's detectors when
``imdlbenco`` is not installed).  Every evaluation reports forward / metric /
wait ms per image beside its images/s.  One smoke run (about 15 s on an idle
2-core machine) serves every test here, in the default run, so that the
script a lent GPU will run is tested on every commit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMOKE_SIZES = ("64px", "128px")
SMOKE_WORKERS = [0, 2]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("gpu-check")
    out = tmp / "gpu.json"
    env = {**os.environ, "DIFFZOO_CACHE": str(tmp / "cache"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.pop("DIFFZOO_WORKERS", None)
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--smoke", "--json", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert out.is_file(), proc.stdout[-3000:]
    return {"json": json.loads(out.read_text()), "stdout": proc.stdout}


def whats(result: dict) -> list[str]:
    return [item["what"] for item in result["not_measured"]]


def test_smoke_keeps_the_in_memory_figures(smoke):
    result = smoke["json"]
    assert result["smoke"] is True and "partial" not in result
    for key in ("train_images_per_s", "eval_images_per_s", "inference_images_per_s",
                "inference_b1_fp32_images_per_s"):
        assert result[key] > 0, key
    assert result["mmseg_published_fps"] == 30.88
    assert result["figures"] and all({"figure", "value", "unit", "goal", "met"} <= set(f) for f in result["figures"])
    assert "RESULT {" in smoke["stdout"]


def test_smoke_measures_the_real_data_path_with_each_worker_count(smoke):
    data = smoke["json"]["data_path"]
    assert "noise" in data["note"] and "worst case" in data["note"]
    assert set(data["cases"]) == set(SMOKE_SIZES)
    for name, case in data["cases"].items():
        assert case["adapter"] == "DiffSeg30kDataset", name
        assert case["train_images"] > 0 and case["val_images"] > 0
        for loop in ("train", "eval"):
            entries = case[loop]
            assert [e["workers"] for e in entries] == SMOKE_WORKERS, (name, loop)
            for e in entries:
                assert e["images_per_s"] > 0, (name, loop, e)
                assert 0 <= e["data_wait_share"] <= 1, (name, loop, e)
        assert all(e["evaluated"] == case["val_images"] for e in case["eval"])


def test_smoke_names_what_it_did_not_measure(smoke):
    result = smoke["json"]
    assert all(set(item) == {"what", "why"} and item["why"] for item in result["not_measured"])
    text = " | ".join(whats(result))
    assert "1024 px" in text and "512 px" in text
    assert "4 loader worker" in text
    import torch

    if not torch.cuda.is_available():
        assert any("GPU" in w for w in whats(result))


def test_smoke_measures_benco_or_says_it_is_not_installed(smoke):
    from diffzoo.plugins.benco.specs import installed

    result = smoke["json"]
    if not installed():
        assert result["benco"]["status"].startswith("not measured: imdlbenco not installed")
        reasons = [item["why"] for item in result["not_measured"] if "IMDL-BenCo" in item["what"]]
        assert reasons == ["imdlbenco not installed (scripts/install-benco.sh)"]
        return
    models = result["benco"]["models"]
    assert models, result["not_measured"]
    for name, m in models.items():
        assert m["train_images_per_s"] > 0 and m["inference_b1_fp32_images_per_s"] > 0, name


PARTS = ("images_per_s", "forward_ms", "metric_ms", "wait_ms")


def assert_eval_parts(entry: dict, config: str, where) -> None:
    for key in PARTS:
        assert entry[key] > 0, (where, key, entry)
    assert entry["config"] == config, where
    assert entry["leads"] in ("forward", "metric", "wait"), where
    assert entry["leads"] == max(("forward", "metric", "wait"), key=lambda k: entry[f"{k}_ms"]), where
    assert entry["metric_path"] in ("numpy", "torch") and isinstance(entry["overlap"], bool), where


def test_smoke_splits_each_evaluation_into_forward_metric_and_wait(smoke):
    import torch

    result, cuda = smoke["json"], torch.cuda.is_available()
    assert "synchronize" in result["eval_timing_note"] and "overlap" in result["eval_timing_note"]
    timing = result["eval_timing"]
    assert_eval_parts(timing["default"], "default", "synthetic")
    assert timing["default"]["images_per_s"] == result["eval_images_per_s"]
    entries = [(f"{size} {e['workers']}", e) for size, case in result["data_path"]["cases"].items()
               for e in case["eval"]]
    assert len(entries) == len(SMOKE_SIZES) * len(SMOKE_WORKERS)
    for where, e in entries:
        assert_eval_parts(e, "default", where)
    if cuda:  # the old way beside the default (budget permitting; a smoke run has room)
        assert_eval_parts(timing["numpy_no_overlap"], "numpy_no_overlap", "synthetic old")
        for size, case in result["data_path"]["cases"].items():
            for e in case["eval_numpy_no_overlap"]:
                assert_eval_parts(e, "numpy_no_overlap", size)
                assert e["metric_path"] == "numpy" and e["overlap"] is False
    else:  # on the CPU the default is numpy without overlap: nothing to compare
        assert "numpy_no_overlap" not in timing
        assert all(e["metric_path"] == "numpy" and e["overlap"] is False
                   for _, e in [("synthetic", timing["default"]), *entries])
        assert any("overlap=False" in w for w in whats(result))
    assert "forward" in smoke["stdout"] and "metric" in smoke["stdout"] and "leads" in smoke["stdout"]


def test_smoke_checks_the_device_metric_path_against_numpy(smoke):
    """The metrics section: on the CPU in smoke mode (on a lent GPU, on CUDA), every case's
    counts from reduce_torch equal reduce_numpy's, and both were timed."""
    checks = smoke["json"]["device_metrics"]
    assert len(checks) == 4  # 64 px x (2, 9 classes) x (blobs, worst case)
    assert all(c["exact"] and c["mismatched"] == [] and c["numpy_ms"] > 0 and c["device_ms"] > 0
               for c in checks.values())
