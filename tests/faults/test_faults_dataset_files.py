"""Fault suite: the files of a dataset folder.

1. symbolic links of every kind (a loop, a dangling link, a stray ``a -> b -> a`` loop, a link
   to a file outside the folder, a folder link that loops) never stop a run, ``data info`` or
   ``data stats``: a link to a file is followed, one that leads nowhere is a sample skipped as
   ``not-a-file``, and fingerprinting and loading agree (docs/datasets.md, "Links");
2. images with an EXIF orientation tag are scored as stored, said once per dataset and
   counted by ``data info`` / ``data stats`` (docs/datasets.md, "EXIF orientation").
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from helpers.cli import cli
from helpers.data import make_diffseg_folder, make_tpgt

pytestmark = pytest.mark.isolated_cache

EXIF_WORDS = "carry an EXIF orientation tag"


def stats_json(capsys, data: Path) -> dict:
    code, out, err = cli(capsys, "data", "stats", data, "--json", "--no-plots")
    assert code == 0, err
    return json.loads(out)


def info(capsys, data: Path) -> tuple[str, str]:
    """``data info``'s fingerprint and its whole output (stdout + stderr)."""
    code, out, err = cli(capsys, "data", "info", data)
    assert code == 0, err
    found = re.search(r"^fingerprint: ([0-9a-f]{16})$", out, re.MULTILINE)
    assert found is not None, out
    return found.group(1), out + err


def _replace_with_link(path: Path, target: str | Path) -> None:
    path.unlink()
    os.symlink(target, path)


def _val_ids(data: Path, n: int) -> list[str]:
    from diffzoo import open_dataset

    return open_dataset(str(data)).ids("val")[:n]


# -- 1. links ------------------------------------------------------------------------------------

def _loop_named_like_an_image(data: Path) -> int:
    victim = data / "train_copy" / "00000004.image.png"
    _replace_with_link(victim, victim.name)
    return 1


def _dangling_link_named_like_an_image(data: Path) -> int:
    _replace_with_link(data / "train_copy" / "00000004.mask.png", "gone.mask.png")
    return 1


def _stray_loop_elsewhere(data: Path) -> int:
    for folder in (data, data / "train_copy"):
        os.symlink("b", folder / "a")
        os.symlink("a", folder / "b")
    os.symlink("y.zip", data / "y.zip")  # named like a source the sniffers open
    os.symlink("y.parquet", data / "y.parquet")
    return 0


def _folder_link_loops(data: Path) -> int:
    os.symlink(".", data / "again")  # scanned one level down: would list every pair twice
    os.symlink("..", data / "train_copy" / "up")
    os.symlink("/", data / "train_copy" / "disk")  # outside: never walked
    return 0


LINKS = {
    "a link loop named like an image": _loop_named_like_an_image,
    "a dangling link named like a mask": _dangling_link_named_like_an_image,
    "a stray a -> b -> a loop elsewhere": _stray_loop_elsewhere,
    "folder links that loop or leave": _folder_link_loops,
}


@pytest.mark.parametrize("make", LINKS.values(), ids=list(LINKS))
def test_links_in_a_folder_never_stop_info_or_stats_and_skip_as_not_a_file(capsys, tmp_path, make):
    data = make_diffseg_folder(tmp_path / "ds", n=9)
    skipped = make(data)
    first, text = info(capsys, data)
    again, _ = info(capsys, data)
    assert first == again
    assert "--out" not in text and "DIFFZOO_CACHE" not in text and "no dataset adapter" not in text
    stats = stats_json(capsys, data)
    assert stats["dataset"]["fingerprint"] == first
    assert stats["skipped"]["by_kind"] == ({"not-a-file": skipped} if skipped else {})
    assert stats["read"] == 9 - skipped  # each pair listed once: a folder link is never walked twice
    for item in stats["skipped"]["samples"]:
        assert "not an image file (a symbolic link to " in item["reason"], item


def test_a_link_to_a_file_outside_the_folder_is_followed_and_hashed_by_content(capsys, tmp_path):
    data = make_diffseg_folder(tmp_path / "ds", n=9)
    plain, _ = info(capsys, data)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    victim = data / "train_copy" / "00000004.image.png"
    shutil.move(victim, outside / victim.name)
    os.symlink(outside / victim.name, victim)
    linked, _ = info(capsys, data)
    assert linked == plain  # the content is hashed, not the link
    stats = stats_json(capsys, data)
    assert stats["read"] == 9 and stats["skipped"]["count"] == 0


def test_links_in_a_tp_gt_folder_and_its_authentic_images(capsys, tmp_path):
    """The class, not only DiffSeg30k's folder: Tp/Gt/Au walked recursively."""
    data = make_tpgt(tmp_path / "tpgt")
    _replace_with_link(data / "Au" / "real1.jpg", "real1.jpg")  # a loop
    os.symlink("nowhere.png", data / "Au" / "gone.png")
    os.symlink("..", data / "Tp" / "up")
    os.symlink("b", data / "a")
    os.symlink("a", data / "b")
    first, _ = info(capsys, data)
    assert info(capsys, data)[0] == first
    stats = stats_json(capsys, data)
    assert stats["skipped"]["by_kind"] == {"not-a-file": 2} and stats["read"] == 3


def test_a_run_on_a_folder_with_broken_links_skips_them_as_not_a_file(capsys, tmp_path, faulty):
    data = make_diffseg_folder(tmp_path / "ds", n=12)
    loop, dangling = _val_ids(data, 2)
    _replace_with_link(data / "train_copy" / f"{loop}.image.png", f"{loop}.image.png")
    _replace_with_link(data / "train_copy" / f"{dangling}.image.png", "nowhere.png")
    os.symlink("b", data / "a")
    os.symlink("a", data / "b")
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", "faulty.x", "--suite", "standard", "--dataset", data,
                               "--out", out, "--bootstrap", "0", "--device", "cpu")
    assert code == 0, stderr
    assert "2 sample(s) skipped: 2 not-a-file" in " ".join(stdout.split())
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert records and all(r["counts"]["skipped_by_reason"] == {"not-a-file": 2} for r in records)
    assert len({r["dataset"]["fingerprint"] for r in records}) == 1


# -- 2. EXIF orientation -------------------------------------------------------------------------

def _tag(path: Path, orientation: int) -> None:
    img = Image.open(path)
    img.load()
    exif = Image.Exif()
    exif[0x0112] = orientation
    img.save(path, exif=exif)


def _exif_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if EXIF_WORDS in r.getMessage()]


def test_exif_orientation_is_said_once_and_counted_not_applied(capsys, caplog, tmp_path):
    plain = make_diffseg_folder(tmp_path / "plain", n=6)
    data = make_diffseg_folder(tmp_path / "tagged", n=6)
    tagged = sorted((data / "train_copy").glob("*.image.png"))[:2]
    for path in tagged:
        _tag(path, 6)
    _tag(data / "train_copy" / "00000005.image.png", 1)  # the normal view: not counted
    caplog.clear()
    _, text = info(capsys, data)
    warnings = _exif_warnings(caplog)
    assert len(warnings) == 1 and "2 image file(s) of tagged" in warnings[0]
    assert "stored pixels" in warnings[0]
    assert "exif_orientation: 2" in text
    stats = stats_json(capsys, data)
    assert stats["dataset"]["exif_orientation"] == 2
    assert any("EXIF orientation" in note for note in stats["notes"])
    # scored as stored: the tagged image's pixels are the file's, not rotated
    from diffzoo import open_dataset

    sid = tagged[0].name.split(".")[0]
    sample = open_dataset(str(data)).load(sid)
    with Image.open(tagged[0]) as img:
        assert sample.image.shape[:2] == (img.height, img.width)
        assert (sample.image == np.asarray(img.convert("RGB"))).all()

    caplog.clear()
    _, text = info(capsys, plain)
    assert not _exif_warnings(caplog) and "exif_orientation: 0" in text
    assert stats_json(capsys, plain)["dataset"]["exif_orientation"] == 0


def test_exif_orientation_is_counted_from_a_warm_cache_too(capsys, tmp_path):
    data = make_diffseg_folder(tmp_path / "tagged", n=6)
    _tag(next((data / "train_copy").glob("*.mask.png")), 8)  # a mask counts as an image file
    assert stats_json(capsys, data)["dataset"]["exif_orientation"] == 1
    assert stats_json(capsys, data)["dataset"]["exif_orientation"] == 1  # digests now cached


@pytest.mark.parametrize("kind", ["loop", "dangling"])
def test_a_dataset_path_that_is_a_broken_link_says_so(capsys, tmp_path, kind):
    link = tmp_path / "ds"
    if kind == "loop":
        os.symlink(tmp_path / "other", link)
        os.symlink(link, tmp_path / "other")
    else:
        os.symlink(tmp_path / "gone", link)
    code, out, err = cli(capsys, "data", "info", link)
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "does not exist" not in err
    assert "symbolic link" in err and str(link) in err


# -- 3. the fix an error suggests works where it is said ------------------------------------------

def test_data_info_takes_the_dataset_option_its_unpaired_error_suggests(capsys, caplog, tmp_path):
    """``data info`` named `--dataset-option skip_unpaired=true` as the fix, and had no such option."""
    data = make_tpgt(tmp_path / "tpgt")
    (data / "Gt" / "a.png").unlink()
    code, _, err = cli(capsys, "data", "info", data)
    assert code == 1 and err.strip().splitlines() == [
        f"error: {data}: 1 Tp image(s) have no mask in Gt/ (e.g. Tp/a.png); `--dataset-option skip_unpaired=true` "
        "skips them"]
    code, out, err = cli(capsys, "data", "info", data, "--dataset-option", "skip_unpaired=true")
    assert code == 0, err
    splits = re.search(r"^splits: (.*)$", out, re.MULTILINE)
    assert splits is not None and sum(ast.literal_eval(splits.group(1)).values()) == 3  # b, c and Au/real1
    assert "1 Tp image(s) have no mask in Gt/ (e.g. Tp/a.png); skipping them" in caplog.text
