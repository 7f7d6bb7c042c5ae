"""The data catalog (docs/datasets.md, "Data catalog"): ``diffzoo data find ROOT`` lists every
dataset the adapters recognise under a folder, from the fingerprint cache the second time, never
hanging on a FIFO or a link loop; ``--eval-dataset catalog:ROOT`` evaluates on each of them but
the run's own training data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from diffzoo import open_dataset

from helpers.cli import cli
from helpers.data import make_casia2, make_cocoglide, make_diffseg_folder, make_tpgt

FAST = ["--iterations", "2", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


@pytest.fixture
def benchmarks(tmp_path) -> Path:
    """ROOT holding three benchmarks at different depths, and a folder that is none."""
    root = tmp_path / "root"
    make_tpgt(root / "tpgt")
    make_casia2(root / "classic" / "casia2")
    make_cocoglide(root / "more" / "glide" / "cocoglide")
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("not a dataset")
    return root


def find_json(capsys, root, *args):
    code, stdout, stderr = cli(capsys, "data", "find", root, "--json", *args)
    assert code == 0, stderr
    return json.loads(stdout)


def test_find_lists_each_benchmark_with_adapter_splits_counts_and_fingerprint(capsys, benchmarks):
    found = {d["path"]: d for d in find_json(capsys, benchmarks)["datasets"]}
    assert set(found) == {str(benchmarks / p) for p in ("tpgt", "classic/casia2", "more/glide/cocoglide")}
    for path, d in found.items():
        ds = open_dataset(path)
        assert d["splits"] == {s: len(ds.ids(s)) for s in ds.splits()} and sum(d["splits"].values()) > 0
        assert d["fingerprint"] == ds.fingerprint()
        assert d["evaluates"] == ["binary", "image"]  # one edited class: no semantic case
    assert [found[str(benchmarks / p)]["adapter"] for p in ("tpgt", "classic/casia2", "more/glide/cocoglide")] == [
        "tpgt", "casia2", "cocoglide"]
    code, stdout, _ = cli(capsys, "data", "find", benchmarks)  # the table
    assert code == 0 and all(d["fingerprint"] in stdout for d in found.values()) and "casia2" in stdout


def test_a_folder_of_downloads_still_packed_is_said_to_hold_archives(capsys, tmp_path):
    """A benchmark left as its .tar.bz2 downloads was "no dataset adapter recognises this folder", no more."""
    packed = tmp_path / "root" / "Columbia"
    packed.mkdir(parents=True)
    for archive in ("4cam_splc.tar.bz2", "4cam_auth.tar.bz2"):
        (packed / archive).write_bytes(b"BZh9")
    why = {p["path"]: p["why"] for p in find_json(capsys, tmp_path / "root", "--verbose")["passed"]}
    assert why[str(packed)] == ("no dataset adapter recognises this folder; it has no subfolder to look in (it holds "
                                "archives not extracted: 4cam_auth.tar.bz2, 4cam_splc.tar.bz2; extract them first)")


def test_find_says_semantic_for_a_label_space_of_several_editors(capsys, tmp_path):
    make_diffseg_folder(tmp_path / "root" / "seg", editors=("sd2", "sdxl"))
    (found,) = find_json(capsys, tmp_path / "root")["datasets"]
    assert found["adapter"] == "diffseg30k" and found["evaluates"] == ["binary", "semantic", "image"]


def test_a_dataset_folder_is_not_looked_into_and_verbose_says_why_others_are_not_listed(capsys, benchmarks):
    code, stdout, _ = cli(capsys, "data", "find", benchmarks, "--verbose")
    assert code == 0
    assert f"{benchmarks / 'notes'}: no dataset adapter recognises this folder; it has no subfolder" in stdout
    catalog = find_json(capsys, benchmarks, "--verbose")
    passed = {p["path"] for p in catalog["passed"]}
    assert not any(p.startswith(str(benchmarks / "tpgt")) for p in passed)  # a dataset's folders are its own
    code, stdout, _ = cli(capsys, "data", "find", benchmarks / "notes")
    assert code == 0 and "no dataset found under" in stdout and "--verbose says why" in stdout


def test_a_layout_a_sniffer_refuses_is_listed_not_opened_with_its_reason(capsys, tmp_path):
    """``Gt/`` beside ``gt/``: the folder is a Tp/Gt dataset that cannot be read, never one passed over
    as no adapter's (its reason unsaid even with --verbose) nor looked into."""
    root = tmp_path / "root"
    make_tpgt(root / "good")
    (make_tpgt(root / "bad") / "gt").mkdir()
    catalog = find_json(capsys, root, "--verbose")
    assert [d["path"] for d in catalog["datasets"]] == [str(root / "good")]
    assert catalog["broken"] == [{"path": str(root / "bad"), "error": f"{root / 'bad'}: Gt and gt are both the Gt/ "
                                                                       "folder, in another letter case; keep one of them"}]
    assert [p["path"] for p in catalog["passed"]] == [str(root)]


def test_a_home_folder_of_no_such_user_is_a_path_not_there_never_an_internal_error(capsys):
    """``~nouser/x``: pathlib's expanduser raises RuntimeError; the shell's rule leaves the path as typed."""
    gone = "~diffzoo-no-such-user/x"
    code, _, stderr = cli(capsys, "data", "info", gone)
    assert (code, " ".join(stderr.split())) == (2, f"error: dataset path {gone} does not exist")
    code, _, stderr = cli(capsys, "data", "find", gone)
    assert (code, " ".join(stderr.split())) == (2, f"error: {gone} does not exist: nothing to look for datasets in")
    code, _, stderr = cli(capsys, "run", "-d", "segformer.tiny", "--dataset", gone, "--plan", "--device", "cpu")
    assert (code, " ".join(stderr.split())) == (2, f"error: dataset path {gone} does not exist")  # --out checked first


def test_a_depth_past_any_tree_ends_with_the_tree(capsys, tmp_path):
    make_tpgt(tmp_path / "root" / "a")
    catalog = find_json(capsys, tmp_path / "root", "--depth", str(10**20))
    assert [d["path"] for d in catalog["datasets"]] == [str(tmp_path / "root" / "a")]


def test_a_second_find_reads_no_image(capsys, benchmarks, monkeypatch):
    from PIL import Image

    import diffzoo.harness.data.fingerprint as fingerprint

    hashed = []
    real = fingerprint._file_sha256
    monkeypatch.setattr(fingerprint, "_file_sha256", lambda path: hashed.append(path) or real(path))
    first = find_json(capsys, benchmarks)
    assert any(Path(p).suffix in (".png", ".jpg", ".tif") for p in hashed)  # the first listing hashed images

    def refused(*args, **kwargs):
        raise AssertionError(f"read an image: {args}")

    for name in ("_file_sha256", "_file_head", "_member_digest"):
        monkeypatch.setattr(fingerprint, name, refused)
    monkeypatch.setattr(Image, "open", refused)
    assert find_json(capsys, benchmarks) == first


def test_a_fifo_a_link_loop_and_a_folder_link_never_hang_find(tmp_path):
    root = tmp_path / "root"
    make_tpgt(root / "tpgt")
    for name in ("pipe", "train.zip", "table.csv"):  # a FIFO named like what a sniffer reads
        os.mkfifo(root / name)
    (root / "up").symlink_to(root, target_is_directory=True)  # a folder link back up: a loop if followed
    (root / "tpgt" / "Tp" / "back").symlink_to(root, target_is_directory=True)
    (root / "self").symlink_to(root / "self")  # a link loop
    code = "import sys; from diffzoo.cli import main\nmain(['data', 'find', sys.argv[1], '--json', '--verbose'])"
    env = {**os.environ, "DIFFZOO_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=120,
                          env=env)  # opening a FIFO would block for ever, a followed loop walk for ever: both fail here
    assert done.returncode == 0, done.stderr
    catalog = json.loads(done.stdout)
    assert [d["path"] for d in catalog["datasets"]] == [str(root / "tpgt")]
    why = {p["path"]: p["why"] for p in catalog["passed"]}
    assert why[str(root / "pipe")] == why[str(root / "train.zip")] == "a FIFO (named pipe): never opened"
    assert why[str(root / "up")].startswith(f"folder link to {root} not followed")
    assert why[str(root / "self")] == "a symbolic link loop: not followed"


def test_find_on_a_path_that_is_no_folder_is_one_line(capsys, tmp_path):
    os.mkfifo(tmp_path / "fifo")
    code, stdout, stderr = cli(capsys, "data", "find", tmp_path / "fifo")
    assert code == 2 and "cannot look for datasets in it: it is a FIFO (named pipe)" in stderr + stdout
    assert "Traceback" not in stderr


def test_run_evaluates_on_every_catalog_dataset_but_its_own_training_data(capsys, benchmarks, tmp_path):
    train = make_diffseg_folder(benchmarks / "seg")  # the run's --dataset, under ROOT too
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset",
                               "--dataset", train, "--eval-dataset", f"catalog:{benchmarks}", "--out", out, *FAST)
    assert code == 0, stderr
    records = [json.loads(p.read_text()) for p in sorted((out / "records").glob("*.json"))]
    evaluated = {r["dataset"]["fingerprint"] for r in records}
    expected = {open_dataset(str(benchmarks / p)).fingerprint() for p in ("tpgt", "classic/casia2",
                                                                          "more/glide/cocoglide")}
    assert evaluated == expected and open_dataset(str(train)).fingerprint() not in evaluated
    assert f"{train} left out: it is the run's --dataset" in " ".join((stdout + stderr).split())


def test_a_catalog_holding_only_the_training_data_is_refused(capsys, tmp_path):
    train = make_diffseg_folder(tmp_path / "root" / "seg")
    code, stdout, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset",
                               "--dataset", train, "--eval-dataset", f"catalog:{tmp_path / 'root'}",
                               "--out", tmp_path / "out", *FAST)
    assert code == 2 and "no dataset to evaluate on under" in stderr and "1 found, none held out" in stderr


def test_a_broken_data_file_beside_dataset_folders_hides_none_of_them(capsys, benchmarks):
    """ROOT's stray unreadable ``x.parquet`` made ROOT itself a DiffSeg30k folder that does not open:
    nothing below it was listed."""
    (benchmarks / "x.parquet").write_bytes(b"not a parquet file at all")
    catalog = find_json(capsys, benchmarks)
    assert [d["path"] for d in catalog["datasets"]] == [str(benchmarks / p) for p in (
        "tpgt", "classic/casia2", "more/glide/cocoglide")]
    bad = benchmarks / "x.parquet"
    assert catalog["broken"] == [{"path": str(bad), "error": f"diffseg30k: {bad}: not a readable .parquet file "
                                                             "(empty, truncated or of another format)"}]
