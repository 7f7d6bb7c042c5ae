"""Scaling with torchrun, and ``diffzoo train``.

The torchrun tests launch two CPU processes (gloo) through
``python -m torch.distributed.run --standalone``: a sharded evaluation must
give exactly the records of one process, and DDP training must leave one
checkpoint written by rank 0.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from diffzoo import open_dataset
from diffzoo.harness.core.distributed import shard
from diffzoo.harness.core.errors import ConfigError

from helpers.cli import cli, one_line_exit_2
from helpers.data import make_diffseg_folder

pytestmark = pytest.mark.isolated_cache  # counts the checkpoints DDP writes; the cache key has no world size

TRAIN = ["--detector", "segformer.tiny", "--iterations", "3", "--batch-size", "2", "--crop-size", "32",
         "--device", "cpu", "--no-pretrained"]
TRAIN_DDP = [*TRAIN[:5], "4", *TRAIN[6:]]  # a global batch of 4: 2 per rank of two


def diffzoo(*args, world: int = 1, cwd: Path) -> subprocess.CompletedProcess:
    """``diffzoo ARGS`` in a fresh process, or under torchrun with ``world`` CPU ranks."""
    launcher = [sys.executable]
    if world > 1:
        launcher += ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={world}"]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"  # the same for both runs: equal threads, equal floats
    return subprocess.run([*launcher, "-m", "diffzoo", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def records(folder: Path) -> dict[str, dict]:
    found = [json.loads(p.read_text()) for p in (folder / "records").glob("*.json")]
    return {r["case"]["name"]: r for r in found}


def same(a, b) -> bool:
    """Exact equality, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("n, world", [(0, 2), (1, 3), (7, 2), (10, 4), (5, 5), (3, 8)])
def test_shards_cover_every_id_exactly_once(n, world):
    ids = [f"{i:04d}" for i in range(n)]
    parts = [shard(ids, r, world) for r in range(world)]
    assert sorted(i for part in parts for i in part) == ids
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert parts == [shard(ids, r, world) for r in range(world)]  # deterministic
    assert shard(ids) == ids  # one process: everything
    with pytest.raises(ConfigError):
        shard(ids, world, world)


def test_torchrun_trains_with_ddp_and_evaluates_shards_exactly_like_one_process(capsys, tmp_path):
    """One torchrun launch (two ranks) trains both models of the standard
    suite through DDP and evaluates sharded; one process then evaluates the
    same checkpoints: every number must be equal."""
    import torch

    data = make_diffseg_folder(tmp_path / "ds", n=20)  # 3 validation images: uneven shards

    val = open_dataset(str(data)).ids("val")
    bad = data / "train_copy" / f"{val[1]}.image.png"
    bad.write_bytes(bad.read_bytes()[:60])  # corrupt, on rank 1: skipped lists merge too
    args = ["run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", data,
            "--bootstrap", "20", "--device", "cpu"]
    ddp = diffzoo(*args, *TRAIN_DDP[2:8], "--no-pretrained", "--out", tmp_path / "d2", world=2, cwd=tmp_path)
    assert ddp.returncode == 0, ddp.stderr

    # training: rank 0 wrote one checkpoint per model, trained on two processes
    cache = Path(os.environ["DIFFZOO_CACHE"]) / "checkpoints" / "segformer.tiny"
    written = sorted(p for p in cache.iterdir() if "." not in p.name)
    assert len(written) == 2
    for folder in written:
        assert {p.name for p in folder.iterdir()} == {"model.safetensors", "card.json"}
        rows = [json.loads(line) for line in (cache / f"{folder.name}.train" / "log.jsonl").read_text().splitlines()]
        starts = [r for r in rows if r["event"] == "start"]  # rank 0 alone writes the log
        assert len(starts) == 1 and starts[0]["world_size"] == 2
        assert [r["step"] for r in rows if r["event"] == "train"] == [1, 2, 3]
        log = json.loads((folder / "card.json").read_text())["training"]
        assert log["world_size"] == 2 and log["iterations"] == 3
        assert all(math.isfinite(x) for x in [log["final_loss"], *log["losses"]])

    # evaluation: one process, the same checkpoints, the same thread count
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        code, _, err = cli(capsys, *args, "--no-train", "--out", tmp_path / "d1",
                           *[a for folder in written for a in ("--checkpoint", folder)])
    finally:
        torch.set_num_threads(threads)
    assert code == 0, err
    one, two = records(tmp_path / "d1"), records(tmp_path / "d2")
    assert set(one) == set(two) == {"binary", "semantic", "image"}
    assert len(list((tmp_path / "d2" / "records").glob("*.json"))) == 3  # rank 0 alone wrote
    for case, r in one.items():
        assert r["counts"]["evaluated"] == 2 and r["counts"]["skipped"][0]["id"] == val[1]
        assert r["detector"]["checkpoint_sha256"] == two[case]["detector"]["checkpoint_sha256"]
        for key in ("metrics", "ci95", "baselines", "slices", "confusion", "counts", "label_space"):
            assert same(r[key], two[case][key]), (case, key, r[key], two[case][key])
    # only rank 0 prints
    assert ddp.stdout.count("record(s) added") == 1
    assert ddp.stdout.count("plan segformer.tiny [binary]") == 1


@pytest.mark.slow  # DDP training itself is covered above; this adds the command's rank-0 output
def test_torchrun_train_command(tmp_path):
    """``diffzoo train`` under torchrun: rank 0 reports once and writes the copy."""
    data = make_diffseg_folder(tmp_path / "ds", n=12)
    result = diffzoo("train", *TRAIN_DDP, "--dataset", data, "--out", "model",
                     world=2, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("final loss") == 1 and "on 2 process(es)" in result.stdout
    card = json.loads((tmp_path / "model" / "card.json").read_text())
    assert card["training"]["world_size"] == 2 and math.isfinite(card["training"]["final_loss"])
    from diffzoo import create_detector

    create_detector("segformer.tiny").load(tmp_path / "model")  # complete and loadable


def test_torchrun_across_two_nodes_trains_what_one_node_with_two_ranks_trains(tmp_path):
    """The multi-node command of docs/scaling.md, two "nodes" of one CPU rank each
    meeting at a c10d rendezvous on this machine, trains the very model (byte for
    byte) that one node with two ranks trains."""
    import hashlib
    import socket

    data = make_diffseg_folder(tmp_path / "ds", n=12)
    args = ["-m", "diffzoo", "train", *TRAIN_DDP, "--dataset", data]
    one = diffzoo("train", *TRAIN_DDP, "--dataset", data, "--out", "one-node", world=2, cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env.update(OMP_NUM_THREADS="1", DIFFZOO_CACHE=str(tmp_path / "cache-two-nodes"))  # trains again
    nodes = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1",
                               "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=diffzoo-test",
                               f"--node-rank={rank}", *args, "--out", "two-nodes"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for rank in (0, 1)]
    outputs = [node.communicate(timeout=300) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    assert sum(out.count("on 2 process(es)") for out, _ in outputs) == 1  # rank 0 alone reports

    def weights(folder: str) -> str:
        return hashlib.sha256((tmp_path / folder / "model.safetensors").read_bytes()).hexdigest()

    assert weights("two-nodes") == weights("one-node")


# -- diffzoo train (one process) ---------------------------------------------------

def test_train_writes_the_checkpoint_run_would_use(capsys, diffseg_folder, tmp_path):
    code, out, err = cli(capsys, "train", *TRAIN, "--dataset", diffseg_folder, "--out", tmp_path / "model")
    assert code == 0, err
    assert "final loss" in out and "copy:" in out
    copy = json.loads((tmp_path / "model" / "card.json").read_text())
    assert len(copy["sha256"]) == 64 and math.isfinite(copy["training"]["final_loss"])
    from diffzoo.harness.models.checkpoints import cache_dir

    cached = cache_dir("segformer.tiny", copy["cache_key"])
    assert json.loads((cached / "card.json").read_text())["sha256"] == copy["sha256"]
    # `diffzoo run` with the same options plans the same cache key, so it would load this model
    from diffzoo.harness.run.request import RunRequest
    from diffzoo.harness.run.runner import Runner

    plan = Runner(RunRequest(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder),
                             device="cpu", pretrained=False,
                             iterations=3, batch_size=2, crop_size=32)).plan
    assert cached.name in [job.key for job in plan.jobs if job.task == "binary"]
    code, out, err = cli(capsys, "train", *TRAIN, "--dataset", diffseg_folder)
    assert code == 0 and "found in the cache" in out, err


def test_train_names_the_config_keys_it_does_not_read(capsys, caplog, diffseg_folder, tmp_path):
    """One file serves run and train; the run options in it (weights: among them) were dropped unsaid."""
    config = tmp_path / "run.yaml"
    config.write_text("suite: standard\nthresholds: calibrated\nweights: released:cat-lora-r32\niterations: 3\n")
    code, out, err = cli(capsys, "train", *TRAIN, "--dataset", diffseg_folder, "--config", config)
    assert code == 0, err
    said = [r.getMessage() for r in caplog.records if r.name == "diffzoo.cli.train"]
    assert said == [f"--config {config}: diffzoo train does not read suite, thresholds, weights (options of diffzoo "
                    "run); it trains with the others"]


def test_the_out_of_a_run_file_is_the_runs_folder_never_a_copy_of_the_checkpoint(capsys, caplog, diffseg_folder,
                                                                                  tmp_path):
    """`diffzoo train --config run.yaml` copied its checkpoint into the run's --out folder, and `diffzoo run
    --config run.yaml` then refused that folder as not diffzoo's."""
    config, runs = tmp_path / "run.yaml", tmp_path / "runs"
    config.write_text(f"suite: standard\nout: {runs}\nbootstrap: 0\n")
    code, _, err = cli(capsys, "train", *TRAIN, "--dataset", diffseg_folder, "--config", config)
    assert code == 0, err
    assert [r.getMessage() for r in caplog.records if r.name == "diffzoo.cli.train"] == [
        f"--config {config}: diffzoo train does not read bootstrap, out, suite (options of diffzoo run); it trains "
        "with the others (give --out on the command line for a copy of the checkpoint)"]
    assert not runs.exists()
    code, _, err = cli(capsys, "train", *TRAIN, "--dataset", diffseg_folder, "--config", config, "--out",
                       tmp_path / "ck")
    assert code == 0 and (tmp_path / "ck" / "model.safetensors").is_file(), err
    code, _, err = cli(capsys, "run", *TRAIN, "--dataset", diffseg_folder, "--config", config)
    assert code == 0 and list((runs / "records").glob("*.json")), err


def test_train_exclude_editors_drops_their_images(capsys, diffseg_folder, tmp_path):

    ds = open_dataset(str(diffseg_folder))
    sdxl = ds.label_space.index("sdxl")
    train = ds.ids("train")
    without = [i for i in train if sdxl not in ds.load(i).label]
    assert 0 < len(without) < len(train)
    logs = {}
    for name, extra in (("all", []), ("held", ["--exclude-editors", "sdxl"])):
        code, _, err = cli(capsys, "train", *TRAIN, "--dataset", diffseg_folder, "--out", tmp_path / name, *extra)
        assert code == 0, err
        logs[name] = json.loads((tmp_path / name / "card.json").read_text())
    assert logs["all"]["training"]["num_train_images"] == len(train)
    assert logs["held"]["training"]["num_train_images"] == len(without)
    assert logs["held"]["cache_key"] != logs["all"]["cache_key"]
    # an editor named twice is the same training data: the same model, found in the cache
    code, out, err = cli(capsys, "train", *TRAIN, "--dataset", diffseg_folder, "--out", tmp_path / "twice",
                         "--exclude-editors", "sdxl,sdxl")
    assert code == 0 and "found in the cache" in out, err
    assert json.loads((tmp_path / "twice" / "card.json").read_text())["cache_key"] == logs["held"]["cache_key"]


def test_train_out_in_the_checkpoint_cache_is_refused_before_training(capsys, diffseg_folder, tmp_path, monkeypatch):
    """``--out $DIFFZOO_CACHE/checkpoints/DETECTOR/KEY``: the copy replaced the model cached for that
    key, which every later run of it then refused ("written for cache key ..., not ...")."""
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    cached = tmp_path / "cache" / "checkpoints" / "segformer.tiny" / "0123456789abcdef0123"
    cached.mkdir(parents=True)
    (cached / "model.safetensors").write_bytes(b"cached weights")
    (cached / "card.json").write_text("{}")
    code, out, err = cli(capsys, "train", *TRAIN, "--dataset", diffseg_folder, "--out", cached)
    assert one_line_exit_2(code, out, err) == (
        f"error: --out {cached} is inside the checkpoint cache {tmp_path / 'cache' / 'checkpoints'}, whose models a copy "
        "would replace; choose a folder outside it (the trained model is cached there already)")
    assert (cached / "model.safetensors").read_bytes() == b"cached weights" and "trained" not in out


def test_leaving_out_the_editor_of_every_training_image_names_the_editors_not_an_empty_split(capsys, tmp_path):
    """The split holds images: the loader's "the training split is empty" named the wrong thing."""
    folder = make_diffseg_folder(tmp_path / "ds")
    rows = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
    kept = [r for r in rows if [t["editor"] for t in r["turns"]] == ["sdxl"]]
    for row in rows:
        if row not in kept:
            for file in (folder / "train_copy").glob(f"{row['id']}.*"):
                file.unlink()
    (folder / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    n = len(open_dataset(str(folder)).ids("train"))
    assert n > 0
    code, out, err = cli(capsys, "train", *TRAIN, "--dataset", folder, "--exclude-editors", "sdxl")
    assert one_line_exit_2(code, out, err) == (f"error: leaving out editors sdxl leaves none of the {n} images of "
                                               "ds's 'train' split to train on")
    assert "trained" not in out


def test_leaving_out_the_editor_of_every_edited_training_image_is_refused_before_training(capsys, tmp_path):
    """The kept images are all authentic: the refusal came only after training, from the loss loop."""
    folder = make_diffseg_folder(tmp_path / "ds")
    rows = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
    kept = [r for r in rows if [t["editor"] for t in r["turns"]] in ([], ["sdxl"])]
    for row in rows:
        if row not in kept:
            for file in (folder / "train_copy").glob(f"{row['id']}.*"):
                file.unlink()
    (folder / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    authentic = sum(1 for r in kept if not r["turns"])
    assert 0 < authentic < len(kept)
    code, out, err = cli(capsys, "train", *TRAIN, "--dataset", folder, "--exclude-editors", "sdxl")
    assert one_line_exit_2(code, out, err) == (
        f"error: leaving out editors sdxl leaves no edited image among the {authentic} of ds's 'train' split "
        "it keeps, and a model that never saw one is not scored")
    assert "trained" not in out


@pytest.mark.parametrize("args, expected", [
    (["--exclude-editors", "sd2,sdxll"], "cannot exclude editor 'sdxll'"),
    (["--task", "classification"], "cannot be trained for task 'classification'"),
    (["--task", "Binary"], "--task 'Binary' is not a task. Did you mean 'binary'?"),
    (["--out", "{data}"], "is not a checkpoint folder"),
    (["--exclude-editors", "{editors}"], "leaves no edited image to train on"),
])
def test_train_errors_are_one_line(capsys, diffseg_folder, args, expected):
    editors = ",".join(open_dataset(str(diffseg_folder)).label_space.editors)
    args = [a.format(data=diffseg_folder, editors=editors) for a in args]
    code, out, err = cli(capsys, "train", *TRAIN, "--dataset", diffseg_folder, *args)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code != 0 and len(lines) == 1 and expected in lines[0], err
    assert "Traceback" not in err and "trained" not in out
    if "sdxll" in expected:
        assert "Did you mean 'sdxl'?" in lines[0]
