"""``diffzoo data stats``: exact counts on datasets with known masks, the
JSON document, the plots, skipped samples, the output folder rules."""

from __future__ import annotations

import json
import shutil
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from diffzoo.harness.core.types import LabelSpace, Sample, SampleMeta
from diffzoo.harness.data.stats import OUTSIDE_MAP, STATS_VERSION, StatsAccumulator, dataset_stats, distribution
from diffzoo.harness.run.factories import open_dataset
from diffzoo.leaderboard.outdir import MARKER, claim_output_dir
from diffzoo.leaderboard.render.stats_plots import STATS_PLOTS

from helpers.cli import cli
from helpers.data import make_diffseg_folder
from helpers.images import save_image

TOP_KEYS = {"stats_version", "dataset", "splits", "images", "read", "authentic", "editors", "turns", "base", "edit_types",
            "edited_area", "resolutions", "label_values", "skipped", "notes", "plots"}


def _pair(folder: Path, sid: str, label: np.ndarray) -> None:
    h, w = label.shape
    save_image(folder / f"{sid}.image.png", np.full((h, w, 3), 90, np.uint8))
    save_image(folder / f"{sid}.mask.png", label)


@pytest.fixture
def known(tmp_path) -> Path:
    """DiffSeg30k layout, labels background/sd2/sdxl:

    - 0: 10x8, all background (authentic), base real, no turns;
    - 1: 10x8, 20 px sd2 + 6 px sdxl, base real, turns sd2 then sdxl;
    - 2: 16x16, 64 px sd2 + 16 px ignore (255), base ai, one sd2 turn;
    - 3: 16x16, 4 px of value 7 (not in the label map): skipped, kind mask-values.
    """
    root = tmp_path / "known"
    folder = root / "train_copy"
    _pair(folder, "00000000", np.zeros((8, 10), np.uint8))
    one = np.zeros((8, 10), np.uint8)
    one[0:2, 0:10] = 1
    one[4:6, 0:3] = 2
    _pair(folder, "00000001", one)
    two = np.zeros((16, 16), np.uint8)
    two[0:8, 0:8] = 1
    two[15, 0:16] = 255
    _pair(folder, "00000002", two)
    three = np.zeros((16, 16), np.uint8)
    three[0:2, 0:2] = 7
    _pair(folder, "00000003", three)
    (root / "labels.json").write_text(json.dumps({"names": ["background", "sd2", "sdxl"], "verified": True}))
    (root / "splits.json").write_text(json.dumps({"train": ["00000000", "00000001", "00000003"],
                                                  "val": ["00000002"]}))
    turn = {"prompt": "", "edit_type": "unknown", "region": None, "seed": None}
    manifest = [
        {"id": "00000000", "base": "real", "turns": []},
        {"id": "00000001", "base": "real", "turns": [{"editor": "sd2", **turn}, {"editor": "sdxl", **turn}]},
        {"id": "00000002", "base": "ai", "turns": [{"editor": "sd2", **turn}]},
        {"id": "00000003", "base": "ai", "turns": [{"editor": "sdxl", **turn}]},
    ]
    (root / "manifest.jsonl").write_text("".join(json.dumps(m) + "\n" for m in manifest))
    return root


def test_exact_counts_on_known_masks(known):
    stats = dataset_stats(open_dataset(str(known)))
    assert stats["stats_version"] == STATS_VERSION
    assert stats["splits"] == {"train": 3, "val": 1}
    assert (stats["images"], stats["read"], stats["authentic"]) == (4, 3, 1)
    assert stats["editors"] == {"sd2": {"value": 1, "images": 2, "images_from_turns": 2},
                                "sdxl": {"value": 2, "images": 1, "images_from_turns": 1}}
    assert stats["turns"] == {"counts": {"0": 1, "1": 1, "2": 1, "unknown": 0}, "with_metadata": 2}
    assert stats["base"] == {"real": 2, "ai": 1, "unknown": 0}
    area = stats["edited_area"]
    sd2, sdxl, overall = area["editors"]["sd2"], area["editors"]["sdxl"], area["overall"]
    assert (sd2["count"], sd2["mean"], sd2["median"], sd2["p10"], sd2["p90"]) == (2, 0.25, 0.25, 0.25, 0.25)
    assert (sdxl["count"], sdxl["mean"], sdxl["median"]) == (1, 0.075, 0.075)
    # overall: 26/80 = 0.325 and 64/256 = 0.25 (ignore pixels are no editor's)
    assert overall["count"] == 2
    assert overall["mean"] == pytest.approx(0.2875) and overall["median"] == pytest.approx(0.2875)
    assert overall["p10"] == pytest.approx(0.2575) and overall["p90"] == pytest.approx(0.3175)
    assert overall["histogram"] == [0] * 5 + [1, 1] + [0] * 13  # [0.25, 0.3) and [0.3, 0.35)
    assert len(area["bin_edges"]) == len(overall["histogram"]) + 1
    assert stats["resolutions"] == {"counts": {"10x8": 2, "16x16": 1},
                                    "width": {"min": 10, "max": 16}, "height": {"min": 8, "max": 16}}
    assert stats["label_values"] == {
        "0": {"name": "background", "in_label_map": True, "pixels": 80 + 54 + 176, "images": 3},
        "1": {"name": "sd2", "in_label_map": True, "pixels": 20 + 64, "images": 2},
        "2": {"name": "sdxl", "in_label_map": True, "pixels": 6, "images": 1},
        "255": {"name": "ignore", "in_label_map": True, "pixels": 16, "images": 1},
    }
    skipped = stats["skipped"]
    assert (skipped["count"], skipped["by_kind"]) == (1, {"mask-values": 1})
    assert skipped["samples"][0]["id"] == "00000003" and "7" in skipped["samples"][0]["reason"]
    assert any("outside the label map" in note for note in stats["notes"])


def test_split_option_reads_only_that_split(known):
    stats = dataset_stats(open_dataset(str(known)), ["val"])
    assert stats["splits"] == {"val": 1}
    assert (stats["images"], stats["read"], stats["skipped"]["count"]) == (1, 1, 0)
    assert stats["resolutions"]["counts"] == {"16x16": 1}
    # one split named twice (validation is val): one row, not two
    assert dataset_stats(open_dataset(str(known)), ["val", "validation", "VAL"])["splits"] == {"val": 1}


def test_cli_tables_json_and_plots(known, tmp_path, capsys):
    out = tmp_path / "stats-out"
    code, text, err = cli(capsys, "data", "stats", known, "--out", out)
    assert code == 0, err
    for title in ("images per editor", "images per number of turns", "base image", "resolutions",
                  "label values", "skipped samples (1 mask-values)", "outside the label map"):
        assert title in text
    assert f"plots and stats.json in {out}" in text
    for name in STATS_PLOTS:
        with Image.open(out / name) as im:
            im.verify()
            assert im.format == "PNG" and im.size[0] > 100
    assert (out / MARKER).is_file()
    saved = json.loads((out / "stats.json").read_text())
    assert saved["editors"]["sd2"]["images"] == 2

    code, text, err = cli(capsys, "data", "stats", known, "--out", out, "--json")
    assert code == 0, err
    doc = json.loads(text)  # the whole of stdout is one JSON document
    assert set(doc) == TOP_KEYS
    assert set(doc["plots"]) == {*STATS_PLOTS, "stats.json"}
    assert doc["skipped"]["by_kind"] == {"mask-values": 1}
    assert {k: v for k, v in doc.items() if k != "plots"} == {k: v for k, v in saved.items() if k != "plots"}


def test_default_out_and_no_plots(known, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, text, err = cli(capsys, "data", "stats", known, "--no-plots", "--json")
    assert code == 0, err
    assert json.loads(text)["plots"] == {} and not (tmp_path / "diffzoo-out").exists()
    code, _, err = cli(capsys, "data", "stats", known)
    assert code == 0, err
    folder = tmp_path / "diffzoo-out" / "stats" / "known"
    assert sorted(p.name for p in folder.iterdir()) == sorted([*STATS_PLOTS, "stats.json"])
    assert (tmp_path / "diffzoo-out" / MARKER).is_file()  # claimed like `run --out`


@pytest.mark.parametrize("spelling", ["diffzoo-out/stats/known", "./diffzoo-out/stats/known/", "absolute"])
def test_out_naming_the_default_folder_is_the_default(known, tmp_path, capsys, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "diffzoo-out" / "stats" / "known"
    explicit = str(folder) if spelling == "absolute" else spelling
    for args in ([], ["--out", explicit], ["--out", explicit, "--force"], []):
        code, _, err = cli(capsys, "data", "stats", known, *args)
        assert code == 0, err
        assert sorted(p.name for p in folder.iterdir()) == sorted([*STATS_PLOTS, "stats.json"])  # no marker here
        assert (tmp_path / "diffzoo-out" / MARKER).is_file()
    shutil.rmtree(tmp_path / "diffzoo-out")
    for args in (["--out", explicit], []):  # a fresh folder named explicitly first: the default finds it diffzoo's
        code, _, err = cli(capsys, "data", "stats", known, *args)
        assert code == 0, err
        assert not (folder / MARKER).exists() and (tmp_path / "diffzoo-out" / MARKER).is_file()


def test_a_stats_folder_claimed_as_its_own_out_stays_its_own(known, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "diffzoo-out" / "stats" / "known"
    claim_output_dir(folder)  # as an explicit --out of this folder claimed it before it meant the default
    code, _, err = cli(capsys, "data", "stats", known, "--out", "diffzoo-out/stats/known")
    assert code == 0, err
    assert sorted(p.name for p in folder.iterdir()) == sorted([*STATS_PLOTS, "stats.json", MARKER])
    assert not (tmp_path / "diffzoo-out" / MARKER).exists()


def test_label_names_the_font_lacks_draw_without_glyph_warnings(known, tmp_path, capsys):
    (known / "labels.json").write_text(json.dumps({"names": ["background", "稳定扩散", "sdxl"], "verified": True}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = cli(capsys, "data", "stats", known, "--out", tmp_path / "o")
    assert code == 0, err
    assert not [w for w in caught if "missing from font" in str(w.message)]
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == sorted([*STATS_PLOTS, "stats.json", MARKER])


def test_foreign_out_folder_is_refused(known, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, _, err = cli(capsys, "data", "stats", known, "--out", out)
    assert code == 2 and "not made by diffzoo" in err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    code, _, err = cli(capsys, "data", "stats", known, "--out", tmp_path / "plots", "--force", "--no-plots")
    assert code == 2 and "--out and --force name where the plots go; with --no-plots nothing is written" in err
    assert not (tmp_path / "plots").exists()


def test_an_out_inside_the_datasets_folder_is_refused_before_any_plot(known, capsys):
    """Plots written into a folder of the dataset (its images/) would be read as its files the next time."""
    images = next(p for p in known.iterdir() if p.is_dir())
    before = sorted(p.relative_to(known) for p in known.rglob("*"))
    code, _, err = cli(capsys, "data", "stats", known, "--out", images / "plots")
    assert code == 2 and f"--out {images / 'plots'} lies in the folder of the dataset {known}, whose files diffzoo reads" in " ".join(err.split())
    assert sorted(p.relative_to(known) for p in known.rglob("*")) == before


def test_unknown_split_names_the_splits(known, capsys):
    code, _, err = cli(capsys, "data", "stats", known, "--split", "nope", "--no-plots")
    assert code == 2 and "no split 'nope'" in err and "train, val" in err  # the user's --split: a usage error


def test_diffseg_fixture_matches_its_manifest(tmp_path):
    root = make_diffseg_folder(tmp_path / "ds", n=9, size=24)
    stats = dataset_stats(open_dataset(str(root)))
    assert (stats["images"], stats["read"], stats["authentic"]) == (9, 9, 3)  # every third image is authentic
    lines = [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines()]
    editors = Counter(t["editor"] for m in lines for t in m["turns"])
    assert {n: e["images"] for n, e in stats["editors"].items()} == dict(editors)
    assert {n: e["images_from_turns"] for n, e in stats["editors"].items()} == dict(editors)
    assert stats["turns"]["counts"] == {"0": 3, "1": 6, "unknown": 0}
    assert stats["base"] == {"real": 4, "ai": 5, "unknown": 0}
    side = 24 // 3
    assert stats["edited_area"]["overall"]["median"] == pytest.approx(side * side / 24**2)
    assert stats["resolutions"]["counts"] == {"24x24": 9}


def test_generic_tp_gt_folder(tmp_path):
    """Binary masks, no per-edit metadata: turns of edited images are unknown, said in a note."""
    root = tmp_path / "casia-like"
    img = np.full((12, 20, 3), 100, np.uint8)
    for name in ("a", "b"):
        save_image(root / "Tp" / f"{name}.png", img)
    mask_a = np.zeros((12, 20), np.uint8)
    mask_a[:6, :10] = 255  # 60 of 240 px
    mask_b = np.zeros((12, 20), np.uint8)
    mask_b[:, :] = 255  # the whole image
    save_image(root / "Gt" / "a.png", mask_a)
    save_image(root / "Gt" / "b.png", mask_b)
    save_image(root / "Au" / "c.png", np.full((30, 40, 3), 50, np.uint8))
    stats = dataset_stats(open_dataset(str(root), split="test"))
    assert stats["splits"] == {"test": 3}
    assert stats["editors"] == {"edited": {"value": 1, "images": 2, "images_from_turns": None}}
    assert stats["edited_area"]["editors"]["edited"]["mean"] == pytest.approx((0.25 + 1.0) / 2)
    assert stats["edited_area"]["editors"]["edited"]["histogram"][-1] == 1  # 1.0 falls in the last bin
    assert stats["turns"] == {"counts": {"0": 1, "unknown": 2}, "with_metadata": 0}
    assert stats["base"] == {"real": 1, "ai": 0, "unknown": 2}
    assert stats["resolutions"]["counts"] == {"20x12": 2, "40x30": 1}
    assert any("no per-edit metadata" in note for note in stats["notes"])
    (root / "Tp" / "a.png").write_bytes(b"")
    notes = dataset_stats(open_dataset(str(root), split="test"))["notes"]
    assert "1 sample(s) could not be read and were skipped" in notes  # not "1 other": no other skip was said


def test_value_outside_the_map_from_an_unchecked_adapter_is_flagged():
    acc = StatsAccumulator(LabelSpace.from_editors(["sd2"]))
    label = np.zeros((2, 2), np.uint8)
    label[0, 0] = 9
    acc.add(Sample(np.zeros((2, 2, 3), np.uint8), label, SampleMeta("x")))
    assert acc.result()["label_values"]["9"] == {"name": OUTSIDE_MAP, "in_label_map": False, "pixels": 1,
                                                 "images": 1}


def test_distribution_of_nothing():
    assert distribution([]) == {"count": 0, "mean": None, "median": None, "p10": None, "p90": None,
                                "histogram": [0] * 20}


# -- mini ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mini_cache(tmp_path_factory) -> Path:
    from diffzoo.generators.datasets.mini import ensure_mini

    cache = tmp_path_factory.mktemp("mini-cache")
    ensure_mini(cache, n_images=3, size=32, seed=0)
    return cache


def test_mini(mini_cache, tmp_path, capsys):
    from diffzoo.generators.datasets.mini import mini_root

    opts = ["--dataset-option", f"cache={mini_cache}", "--dataset-option", "n_images=3",
            "--dataset-option", "size=32"]
    code, text, err = cli(capsys, "data", "stats", "mini", "--out", tmp_path / "o", "--json", *opts)
    assert code == 0, err
    doc = json.loads(text)
    root = mini_root(mini_cache, n_images=3, size=32, seed=0)
    metas = [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines()]
    masks = [np.asarray(Image.open(p)) for p in sorted(root.rglob("*.mask.png"))]
    names = doc["dataset"]["label_space"]
    in_masks = Counter(names[v] for m in masks for v in np.unique(m) if 0 < v < 255)
    assert doc["images"] == doc["read"] == sum(doc["splits"].values()) == 3
    assert "embedded demo dataset" in doc["notes"][0]
    assert {n: e["images"] for n, e in doc["editors"].items() if e["images"]} == dict(in_masks)
    assert doc["turns"]["counts"] == {"unknown": 0, **{str(k): v for k, v in
                                                       Counter(len(m["turns"]) for m in metas).items()}}
    assert doc["base"] == {"real": 0, "ai": 0, "unknown": 0, **Counter(m["base"] for m in metas)}
    assert doc["authentic"] == sum(1 for m in masks if not ((m > 0) & (m < 255)).any())
    for name in STATS_PLOTS:
        assert (tmp_path / "o" / name).is_file()
    code, text, err = cli(capsys, "data", "stats", "mini", "--out", tmp_path / "o", *opts)
    assert code == 0, err
    assert "images per editor" in text and "embedded demo dataset" in text


@pytest.mark.parametrize(("folder", "slug"), [("con", "con-"), ("NUL.x", "x-NUL.x-"), (".-x", "x--x-"), ("_x", "x-_x-"),
                                              ("segformer.tiny", "segformer.tiny")])
def test_a_dataset_named_as_a_device_or_an_option_gets_a_folder_every_system_can_make(known, tmp_path, capsys,
                                                                                       monkeypatch, folder, slug):
    """``con`` and ``NUL.x`` are devices on Windows (no folder of the name can be made) and a name
    starting with ``-`` reads as an option to every shell tool given the path: the default folder
    of such a dataset gets the name's hash appended, as a detector's page does; a name that is a
    file name everywhere is its own slug."""
    import hashlib

    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "data", "stats", known.rename(tmp_path / folder))
    assert code == 0, err
    hashed = slug + hashlib.sha256(folder.encode()).hexdigest()[:8] if slug.endswith("-") else slug
    assert [p.name for p in (tmp_path / "diffzoo-out" / "stats").iterdir()] == [hashed]
