"""``diffzoo generate``: multi-turn labels, resumability, torchrun sharding, balance, regions, quality filter.

The end-to-end runs use the tiny random-weight editors (sd2.tiny, sdxl.tiny,
flux1.tiny) at 32 px on a handful of samples; unit checks use fake editors.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from diffzoo import open_dataset
from diffzoo.generators.generate import pipeline
from diffzoo.generators.generate.bases import BaseRef, check_bases
from diffzoo.generators.generate.layout import STATE_DIR
from diffzoo.generators.generate.multiturn import TurnPlan, edit_sample
from diffzoo.generators.generate.quality import QualityFilter
from diffzoo.generators.generate.regions import choose_region, dedupe_overlaps, regions_of
from diffzoo.generators.generate.schedule import Schedule, parse_turn_ratio
from diffzoo.harness.core.errors import ConfigError, DataError, WeightsUnavailableError
from diffzoo.harness.core.protocols import EditResult, Generator
from diffzoo.harness.core.types import LabelSpace

from helpers.cli import cli, one_line, one_line_exit_2

EDITORS = "sd2.tiny,sdxl.tiny,flux1.tiny"
N = 6


# -- helpers ---------------------------------------------------------------------------


def make_bases(folder: Path, n: int = 4, h: int = 48, w: int = 40) -> Path:
    folder.mkdir(parents=True)
    yy, xx = np.mgrid[0:h, 0:w]
    for i in range(n):
        im = np.stack([(xx * 5 + i * 30) % 256, (yy * 4) % 256, np.full_like(xx, 60 * i)], -1)
        Image.fromarray(im.astype(np.uint8)).save(folder / f"b{i}.png")
    return folder


def files(root: Path) -> dict[str, str]:
    """sha256 of every file of the dataset: all but the fingerprint cache and the runs' logs (each dated)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".diffzoo-fingerprint.json" and p.relative_to(root).parts[0] != "logs"
    }


def manifest(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines() if line]


class FakeEditor(Generator):
    """Paints the mask with a colour from (value, seed); ``value=None`` changes nothing (a no-op)."""

    def __init__(self, value: int | None):
        self.value = value
        self.calls = 0

    def edit(self, image, mask, prompt, seed):
        self.calls += 1
        out = image.copy()
        if self.value is not None:
            out[mask] = [(self.value * 70 + seed) % 256, (seed * 7) % 256, 200]
        return EditResult(out, mask.copy() if self.value is not None else np.zeros_like(mask), {})


def gen_config(out: Path, bases: Path | str | None, **kw) -> pipeline.GenerateConfig:
    defaults = dict(editors=tuple(EDITORS.split(",")), n=N, size=32, seed=3)
    defaults.update(kw)
    return pipeline.GenerateConfig(out=out, bases=str(bases) if bases else None, **defaults)


# -- schedule: turn ratio and balance -----------------------------------------------------
def test_schedule_turn_ratio_and_balanced_editors_types_and_bases():
    sched = Schedule(seed=7, editors=("a", "b", "c"), turn_ratio=(1, 4, 5), ai_fraction=0.5)
    samples = [sched.sample(i) for i in range(40)]
    assert Counter(s.n_turns for s in samples) == {1: 4, 2: 16, 3: 20}
    editors = Counter(e for s in samples for e in s.editors)
    assert sum(editors.values()) == 4 + 32 + 60 and max(editors.values()) - min(editors.values()) <= 1
    types = Counter(t for s in samples for t in s.edit_types)
    assert set(types) == {"attribute_change", "object_addition", "object_removal"}
    assert max(types.values()) - min(types.values()) <= 1
    assert Counter(s.base for s in samples) == {"real": 20, "ai": 20}
    for kind in ("real", "ai"):  # the k-th sample of a kind takes base k
        assert sorted(s.base_ordinal for s in samples if s.base == kind) == list(range(20))
    # five editors do not divide a block's turns: still balanced over whole blocks
    five = Schedule(seed=1, editors=tuple("abcde"), turn_ratio=(1, 4, 5), ai_fraction=0.3)
    counts = Counter(e for i in range(60) for e in five.sample(i).editors)
    assert max(counts.values()) - min(counts.values()) <= 1
    assert sum(five.sample(i).base == "ai" for i in range(60)) == 18
    assert [sched.real_count(n) for n in (0, 7, 20, 33, 40)] == [
        sum(s.base == "real" for s in samples[:n]) for n in (0, 7, 20, 33, 40)]
    # a sample depends on (seed, index) only, not on what was asked before
    assert Schedule(7, ("a", "b", "c")).sample(37) == samples[37]
    other = Schedule(8, ("a", "b", "c"))
    assert [other.sample(i) for i in range(20)] != samples[:20]
    with pytest.raises(ConfigError, match="turn ratio"):
        Schedule(0, ("a",), "1:x:5")


# -- multi-turn labels -------------------------------------------------------------------
def _box(h, w, y0, y1, x0, x1, label=None):
    m = np.zeros((h, w), bool)
    m[y0:y1, x0:x1] = True
    return regions_of([(m, label)], "mask")[0]


def test_later_turns_overwrite_earlier_labels():
    image = np.full((16, 16, 3), 90, np.uint8)
    a, b = _box(16, 16, 2, 10, 2, 10), _box(16, 16, 6, 14, 6, 14)
    editors = {"e1": FakeEditor(1), "e2": FakeEditor(2)}
    space = LabelSpace.from_editors(["e1", "e2"])
    turns = [TurnPlan("e1", "attribute_change", a, (("x", 1),)), TurnPlan("e2", "object_addition", b, (("r", 2), ("y", 3)))]
    out = edit_sample(image, [lambda im, done, t=t: (t,) for t in turns], editors, space)
    expected = np.zeros((16, 16), np.uint8)
    expected[a.mask] = 1
    expected[b.mask] = 2  # the later turn wins where they overlap
    assert out.rejected is None and np.array_equal(out.label, expected)
    assert editors["e2"].calls == 2  # addition = removal then addition in place
    assert (out.image[~(a.mask | b.mask)] == 90).all() and (out.image[b.mask] != 90).any()


def test_a_turn_whose_tries_fail_alike_says_the_reason_once():
    """Three tries rejected for the same reason read it three times in generate.json; distinct ones stay in order.
    Reasons of one kind that differ in their numbers alone are one, the first met, with the count of its kind and a
    word that it is the first of several."""
    image = np.full((16, 16, 3), 90, np.uint8)
    a, b = _box(16, 16, 2, 10, 2, 10), _box(16, 16, 4, 8, 4, 8)
    space = LabelSpace.from_editors(["e1"])
    tries = [TurnPlan("e1", "attribute_change", r, (("x", i),), i) for i, r in enumerate((a, b, a))]
    out = edit_sample(image, [lambda im, done: tries], {"e1": FakeEditor(None)}, space, QualityFilter())
    assert out.rejected == "turn 1: no-op (0.0% of the region changed, below 10%) (3 tries)"
    judged = QualityFilter(scorer=lambda before, after, mask, prompt, kind: 2.0 if prompt else 1.0, min_changed=0)
    named = [TurnPlan("e1", "attribute_change", a, ((p, i),), i) for i, p in enumerate(("x", "", "y"))]
    out = edit_sample(image, [lambda im, done: named], {"e1": FakeEditor(None)}, space, judged)
    assert out.rejected == "turn 1: score 2 below 3 (3 tries alike, the first shown)"  # scored 2, 1, 2
    space = LabelSpace.from_editors(["e1", "e2"])
    mixed = [TurnPlan(e, "attribute_change", a, ((p, i),), i) for i, (e, p) in enumerate((("e2", "x"), ("e1", "x"),
                                                                                        ("e2", "")))]
    out = edit_sample(image, [lambda im, done: mixed], {"e1": FakeEditor(None), "e2": FakeEditor(1)}, space,
                      QualityFilter(scorer=judged.scorer))
    assert out.rejected == ("turn 1: score 2 below 3 (2 tries alike, the first shown); no-op (0.0% of the region "
                            "changed, below 10%)")


def test_cli_labels_match_the_manifest(capsys, tmp_path):
    bases = make_bases(tmp_path / "bases", n=2)
    masks = tmp_path / "masks"
    for i in range(2):  # three overlapping objects per base, so turns overwrite each other
        (masks / f"b{i}").mkdir(parents=True)
        for name, (y0, y1, x0, x1) in {"box": (4, 28, 4, 22), "cup": (14, 40, 10, 30), "dog_1": (20, 44, 2, 16)}.items():
            m = np.zeros((48, 40), np.uint8)
            m[y0:y1, x0:x1] = 255
            Image.fromarray(m).save(masks / f"b{i}" / f"{name}.png")
    out = tmp_path / "out"
    code, stdout, err = cli(capsys, "generate", "--out", out, "--bases", bases, "--regions", f"masks:{masks}",
                            "--editors", EDITORS, "--n", 4, "--turns", "0:0:1", "--ai-bases", 0, "--size", 32)
    assert code == 0, err
    assert "4 sample(s)" in stdout
    space = LabelSpace.from_editors(["sd2", "sdxl", "flux1"])
    ds = open_dataset(str(out))
    assert list(ds.label_space.names) == list(space.names)
    for row in manifest(out):
        assert row["base"] == "real" and len(row["turns"]) == 3
        label = np.asarray(Image.open(out / "train_copy" / f"{row['id']}.mask.png"))
        base = row["source"].rsplit(".", 1)[0]
        expected = np.zeros(label.shape, np.uint8)
        mask = None
        for turn in row["turns"]:
            stem = {"box": "box", "cup": "cup", "dog": "dog_1"}[turn["object"]]
            mask = np.asarray(Image.open(masks / base / f"{stem}.png").resize((label.shape[1], label.shape[0]),
                                                                              Image.Resampling.NEAREST)) > 0
            assert turn["area"] == mask.sum()
            x0, y0, x1, y1 = turn["region"]
            assert mask[y0:y1, x0:x1].sum() == mask.sum()
            expected[mask] = space.index(turn["editor"])
        assert np.array_equal(label, expected)
        assert len({t["object"] for t in row["turns"]}) == 3  # each turn a different object
        owners = {space.names[v] for v in np.unique(label) if v}
        assert owners <= {t["editor"] for t in row["turns"]}
        assert (label[mask] == space.index(row["turns"][-1]["editor"])).all()  # the last turn owns its region
        sample = ds.load(row["id"])
        assert [t.editor for t in sample.meta.turns] == [t["editor"] for t in row["turns"]]


def test_an_editor_the_label_map_spells_otherwise_keeps_one_name(capsys, tmp_path):
    """sd35 and kandinsky22 are read back as the DiffSeg30k names sd3.5 and kandinsky2.2: the dataset
    writes those, so its label map, manifest and statistics name each editor once."""
    bases = make_bases(tmp_path / "bases", n=2)
    out = tmp_path / "out"
    code, _, err = cli(capsys, "generate", "--out", out, "--bases", bases, "--editors",
                       "sd35.tiny,kandinsky22.tiny,sd2.tiny", "--n", 3, "--ai-bases", 0, "--size", 32)
    assert code == 0, err
    assert json.loads((out / "labels.json").read_text())["names"] == ["background", "sd3.5", "kandinsky2.2", "sd2"]
    ds = open_dataset(str(out))
    assert list(ds.label_space.names) == ["background", "sd3.5", "kandinsky2.2", "sd2"]
    assert {t["editor"] for row in manifest(out) for t in row["turns"]} <= set(ds.label_space.names)
    code, text, err = cli(capsys, "data", "stats", out, "--json", "--no-plots")
    assert code == 0, err
    editors = json.loads(text)["editors"]
    assert sorted(editors) == ["kandinsky2.2", "sd2", "sd3.5"]  # each once, with its value in the label map
    assert all(e["value"] is not None and e["images"] == e["images_from_turns"] for e in editors.values())


# -- resumability, torchrun, fingerprints ---------------------------------------------------
@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted single-process run (real and AI bases, three tiny editors)."""
    root = tmp_path_factory.mktemp("ref")
    bases = make_bases(root / "bases")
    summary = pipeline.generate(gen_config(root / "out", bases))
    assert summary.accepted + summary.rejected == N and summary.made == N
    return bases, root / "out"


def test_reference_run_opens_and_is_consistent(reference):
    _, out = reference
    rows = manifest(out)
    assert [r["id"] for r in rows] == [f"{i:08d}" for i in range(N)]
    assert {r["base"] for r in rows} == {"real", "ai"}
    for r in rows:
        assert 1 <= len(r["turns"]) <= 3
        for t in r["turns"]:
            assert {"editor", "prompt", "edit_type", "region", "seed", "area"} <= set(t)
            assert (t["edit_type"] == "object_addition") == ("before" in t)
        if r["base"] == "ai":
            assert r["source"] == "t2i:sd-t2i.tiny" and r["base_info"]["caption"]
    ds = open_dataset(str(out))
    sample = ds.load(rows[0]["id"])
    assert sample.meta.base == rows[0]["base"]
    assert sample.image.shape == ((32, 32, 3) if sample.meta.base == "ai" else (32, 27, 3))  # longer side 32


def test_interrupted_run_resumes_to_the_same_dataset(reference, tmp_path, capsys):
    bases, ref = reference
    out = tmp_path / "out"

    def stop_after_two(done, total):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pipeline.generate(gen_config(out, bases), progress=stop_after_two)
    finished = sorted(p.stem for p in (out / STATE_DIR / "samples").glob("*.json"))
    assert finished == ["00000000", "00000001"] and not (out / "manifest.jsonl").exists()
    # a half-written later sample: image without mask or record, and a temp file of an atomic write
    (out / "train_copy" / "00000004.image.png").write_bytes(b"partial")
    (out / "train_copy" / ".00000004.mask.png.x1y2z3w4.tmp").write_bytes(b"partial")  # mkstemp's name
    code, stdout, err = cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS,
                            "--n", N, "--size", 32, "--seed", 3)
    assert code == 0, err
    assert f"{N - 2} made now, 2 from earlier runs" in stdout
    assert files(out) == files(ref)
    assert open_dataset(str(out)).fingerprint() == open_dataset(str(ref)).fingerprint()
    # everything done: a third run makes nothing
    code, stdout, _ = cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS,
                          "--n", N, "--size", 32, "--seed", 3)
    assert code == 0 and f"0 made now, {N} from earlier runs" in stdout
    # each run left its log: the interrupted one says where it stopped, the others how they ended
    logs = [p.read_text() for p in sorted((out / "logs").glob("*-generate.log"))]
    assert len(logs) == 3
    assert "interrupted (Ctrl-C)" in logs[0] and f"{N} of {N} sample(s) to make on cpu" in logs[0]
    assert f"{N - 2} of {N} sample(s) to make" in logs[1], logs[1]
    assert f"{N - 2} made now, 2 from earlier runs" in logs[1] and '"editors": [' in logs[1]
    assert f"0 of {N} sample(s) to make" in logs[2] and "done in" in logs[2]
    assert open_dataset(str(out)).fingerprint() == open_dataset(str(ref)).fingerprint()  # the logs are not data


def test_a_disk_full_midway_is_one_line_and_a_resume_then_gives_the_same_dataset(reference, tmp_path, capsys,
                                                                                 monkeypatch, caplog):
    """The disk fills at sample 1's mask: one line naming it; the writes still pending (samples 2-4)
    are one info line each (--debug), never a traceback; freed, a resume makes the dataset of an uninterrupted run."""
    import errno
    import logging
    import threading

    bases, ref = reference
    out = tmp_path / "out"
    fsync, synced = os.fsync, []

    def full_after_four(fd):
        if threading.current_thread().name.startswith("diffzoo-writer"):
            synced.append(fd)
            if len(synced) > 4:  # sample 0's image, mask and record, sample 1's image
                raise OSError(errno.ENOSPC, "No space left on device")
        fsync(fd)

    monkeypatch.setattr(os, "fsync", full_after_four)
    caplog.set_level(logging.INFO, logger="diffzoo.generators")
    args = ("generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N, "--size", 32, "--seed", 3)
    one_line_exit_2(*cli(capsys, *args), f"error: disk full while writing {out / 'train_copy' / '00000001.mask.png'} (")
    assert "Traceback" not in next((out / "logs").glob("*-generate.log")).read_text()
    pending = [r for r in caplog.records if r.name.endswith(".layout")]
    assert [r.getMessage().split(" (")[0] for r in pending] == [
        f"also not written, as the run stopped: disk full while writing {out / 'train_copy' / f'0000000{i}.image.png'}"
        for i in (2, 3, 4)]
    assert {r.levelno for r in pending} == {logging.INFO} and not any(r.exc_info for r in pending)
    monkeypatch.setattr(os, "fsync", fsync)  # space freed
    code, stdout, err = cli(capsys, *args)
    assert code == 0 and f"{N - 1} made now, 1 from earlier runs" in stdout, err
    assert files(out) == files(ref)


def test_a_smaller_n_on_a_finished_run_says_the_samples_beyond_it_are_kept(reference, tmp_path, capsys):
    """--n 2 on a folder of N samples keeps all N; the summary named only the 2 below --n."""
    import shutil

    bases, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    code, stdout, err = cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS,
                            "--n", 2, "--size", 32, "--seed", 3)
    assert code == 0, err
    kept = len(manifest(ref))
    assert " ".join(stdout.split()).startswith(
        f"{kept} sample(s) in {out} (0 made now, 2 from earlier runs, {N - kept} rejected by the quality filter; "
        f"{N - 2} sample(s) beyond --n 2, from an earlier run with a larger --n, kept); classes: "), stdout
    assert manifest(out) == manifest(ref)


def test_sample_records_or_settings_not_written_whole_are_made_again_or_said(reference, tmp_path, capsys):
    """A sample record cut short, of another shape, or a FIFO (a copy of the folder stopped part way,
    an edit) was an internal error (or a read blocked for ever); the settings file, one too."""
    import os
    import shutil

    bases, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    samples = out / STATE_DIR / "samples"
    whole = (samples / "00000000.json").read_text()
    (samples / "00000000.json").write_text(whole[:30])
    (samples / "00000001.json").write_text("[]")
    (samples / "00000002.json").write_text('{"status": "ok"}')
    (samples / "00000003.json").write_text('{"status": "rejected", "row": {}}')
    (samples / "00000004.json").unlink()
    os.mkfifo(samples / "00000004.json")
    args = ["generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N, "--size", 32, "--seed", 3]
    code, stdout, err = cli(capsys, *args)
    assert code == 0 and f"5 made now, {N - 5} from earlier runs" in stdout, err
    assert (out / "manifest.jsonl").read_text() == (ref / "manifest.jsonl").read_text()
    config = out / STATE_DIR / "config.json"
    for text, why in (("[1]", "an array, not an object"), ("null", "null, not an object"),
                      (config.read_text()[:20], "Expecting")):
        config.write_text(text)
        line = one_line_exit_2(*cli(capsys, *args))
        assert f"{config} does not hold the settings of a generate run ({why}" in line
        assert "put back the one the run wrote, or choose a new --out" in line
    config.unlink()  # with its samples still there: a resume under other settings would keep them unsaid
    line = one_line_exit_2(*cli(capsys, *args[:-1], 4))
    assert line == (f"error: {config} is missing, and {out} holds samples a run made with its settings; put back the one "
                    "the run wrote, or choose a new --out")


def test_sample_records_edited_by_hand_are_made_again_never_an_internal_error(reference, tmp_path, capsys):
    """A record whose row lost its id, whose sizes are no list or are gone, that holds another sample's row, or
    a rejection with no id, was an internal KeyError or TypeError, kept unchecked, or listed one id twice."""
    import shutil

    bases, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    samples = out / STATE_DIR / "samples"
    records = {i: json.loads((samples / f"{i:08d}.json").read_text()) for i in range(5)}
    del records[0]["row"]["id"]
    records[1]["sizes"] = 5
    records[2]["row"]["id"] = "00000003"
    del records[3]["sizes"]
    records[4] = {"status": "rejected", "reason": "edited", "row": records[4]["row"]}
    for i, record in records.items():
        (samples / f"{i:08d}.json").write_text(json.dumps(record))
    code, stdout, err = cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N,
                            "--size", 32, "--seed", 3)
    assert code == 0 and f"5 made now, {N - 5} from earlier runs" in stdout, err
    assert files(out) == files(ref)
    for row in manifest(out):  # an AI base has no file: a base digest put in its record is no base's
        if row["base"] == "ai":
            path = samples / f"{row['id']}.json"
            path.write_text(json.dumps({**json.loads(path.read_text()), "base_sha256": "0" * 64}))
    code, stdout, err = cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N,
                            "--size", 32, "--seed", 3)
    assert code == 0 and f"0 made now, {N} from earlier runs" in stdout, err


def test_a_sample_file_replaced_by_one_of_its_size_is_made_again_with_a_warning(reference, tmp_path, capsys):
    """A finished sample's image overwritten by other bytes of the same size (a disk error, a copy from
    another run) was kept: its size matched its record's, so the dataset held an image no label map describes."""
    import shutil

    bases, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    sid = manifest(ref)[0]["id"]
    image = out / "train_copy" / f"{sid}.image.png"
    blob = bytearray(image.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    image.write_bytes(bytes(blob))
    code, stdout, err = cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N,
                            "--size", 32, "--seed", 3)
    assert code == 0 and f"1 made now, {N - 1} from earlier runs" in stdout, err
    log = sorted((out / "logs").glob("*-generate.log"))[-1].read_text()  # the resume's
    warning = "WARNING diffzoo.generators.generate.layout: {}: not the file sample {} was written as (its sha256 " \
              "is not its record's); it counts as unfinished, made again by a run whose --n covers its id"
    assert warning.format(image, sid) in log, log
    assert files(out) == files(ref)
    sid = manifest(ref)[-1]["id"]  # a sample past a smaller --n is left out, not made again: the warning says so
    image = out / "train_copy" / f"{sid}.image.png"
    image.write_bytes(bytes(blob[: image.stat().st_size]).ljust(image.stat().st_size, b"\0"))
    code, stdout, err = cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", int(sid),
                            "--size", 32, "--seed", 3)
    assert code == 0 and "0 made now" in stdout and sid not in (out / "manifest.jsonl").read_text(), err
    assert warning.format(image, sid) in sorted((out / "logs").glob("*-generate.log"))[-1].read_text()


@pytest.mark.parametrize("folder", ["train_copy", ".diffzoo-generate/samples"])
def test_a_file_where_a_run_writes_its_samples_is_one_line_before_any_model(reference, tmp_path, capsys, folder):
    """A file in place of train_copy/ or the records' folder let the run edit its samples, then failed each
    write: a traceback per sample, then the error."""
    import shutil

    bases, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    shutil.rmtree(out / folder)
    (out / folder).write_text("x")
    one_line_exit_2(*cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N,
                         "--size", 32, "--seed", 3),
                    f"--out {out / folder} cannot be used: it is not a folder; choose another path")


def test_a_label_map_file_edited_between_runs_is_one_line_saying_what_to_do(reference, tmp_path, capsys):
    """labels.json edited, cut short or of bytes no text decodes from: an internal UnicodeDecodeError for the
    last, and for the others a line naming no way on."""
    import shutil

    bases, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    for edit in (b'{"names": ["background", "x"], "verified": true}', b'{"names": [', b"\xff\xfe"):
        (out / "labels.json").write_bytes(edit)
        one_line_exit_2(*cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N,
                             "--size", 32, "--seed", 3),
                        f"{out / 'labels.json'} is not the label map this run wrote (background, sd2, sdxl, flux1); "
                        "put it back, or remove it and the run writes it again")
    (out / "labels.json").unlink()
    assert cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N, "--size", 32,
               "--seed", 3)[0] == 0
    assert files(out) == files(ref)


def test_two_torchrun_ranks_match_one_process(reference, tmp_path):
    bases, ref = reference
    launcher = tmp_path / "launch.py"  # diffzoo's CLI with the generate command imported
    launcher.write_text("import diffzoo.cli.generate\nfrom diffzoo.cli import main\nmain()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(launcher),
           "generate", "--out", str(out), "--bases", str(bases), "--editors", EDITORS, "--samples", str(N),
           "--size", "32", "--seed", "3", "--device", "cpu"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("sample(s) in") == 1  # rank 0 reports alone
    records = [json.loads(p.read_text()) for p in (out / STATE_DIR / "samples").glob("*.json")]
    assert len(records) == N
    assert files(out) == files(ref)
    assert open_dataset(str(out)).fingerprint() == open_dataset(str(ref)).fingerprint()


def test_resume_with_other_settings_or_a_foreign_folder_is_one_line(reference, capsys, tmp_path):
    bases, ref = reference
    copy = tmp_path / "copy"
    import shutil

    shutil.copytree(ref, copy)
    code, _, err = cli(capsys, "generate", "--out", copy, "--bases", bases, "--editors", "sd2.tiny", "--n", N,
                       "--size", 32, "--seed", 3)
    assert code != 0 and err.count("error:") == 1 and "other settings" in err and "editors" in err
    code, _, err = cli(capsys, "generate", "--out", copy, "--bases", bases, "--editors", EDITORS, "--n", N,
                       "--size", 32, "--seed", 4)
    assert code != 0 and f"{copy} was generated with other settings (seed differs); resume with the same" in err
    line = one_line_exit_2(*cli(capsys, "generate", "--out", copy, "--bases", bases, "--editors", EDITORS, "--n", N,
                                "--size", 32, "--seed", 3, "--min-changed", 0.2, "--tries", 4))
    assert f"{copy} was generated with other settings (min_changed, tries differ); resume with the same" in line
    more = tmp_path / "more-bases"  # the same options, one base image more: said as a file, not an option
    shutil.copytree(bases, more)
    shutil.copy(next(p for p in more.iterdir() if p.is_file()), more / "added.png")
    line = one_line_exit_2(*cli(capsys, "generate", "--out", copy, "--bases", more, "--editors", EDITORS, "--n", N,
                                "--size", 32, "--seed", 3))
    assert f"{copy} was generated with other settings (bases differs; a file added, removed or resized under " \
           "--bases or --regions masks:DIR, or another --captions or --lora file, counts); resume with the same " \
           "options and files or choose a new --out" in line
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("x")
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "foreign", "--bases", bases, "--editors", EDITORS)
    assert code != 0 and "not empty" in err
    assert not (tmp_path / "foreign" / "logs").exists()  # a folder refused is not written, not even a log
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "o", "--bases", bases, "--editors", EDITORS,
                       "--turns", "1:x")
    assert code != 0 and "turn ratio" in err
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "o", "--bases", bases, "--editors", "sd2.tiny,sdxl.tny")
    assert code != 0 and err.count("error:") == 1 and "sdxl.tiny" in err  # did you mean
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "o", "--bases", bases, "--editors", EDITORS,
                       "--regions", "boxes")
    assert code != 0 and "masks:DIR" in err
    assert not (tmp_path / "o").exists()  # nothing written before the options were checked
    code, _, err = cli(capsys, "generate", "--out", bases / "gen", "--bases", bases, "--editors", EDITORS)
    assert code == 2 and f"--out {bases / 'gen'} is inside the bases' folder {bases}: the images it writes would " \
                         "be read as bases the next time" in " ".join(err.split())
    assert not (bases / "gen").exists()
    (tmp_path / "masks" / "b0").mkdir(parents=True)  # a resumed run found the images it wrote there as masks added
    Image.fromarray(np.pad(np.full((24, 20), 255, np.uint8), ((12, 12), (10, 10)))).save(tmp_path / "masks/b0/box.png")
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "masks" / "gen", "--bases", bases, "--editors", EDITORS,
                       "--regions", f"masks:{tmp_path / 'masks'}", "--n", 1, "--size", 32)
    assert code == 2 and f"--out {tmp_path / 'masks' / 'gen'} is inside the masks' folder {tmp_path / 'masks'}: the " \
                         "images it writes would be read as masks the next time" in " ".join(err.split())
    assert not (tmp_path / "masks" / "gen").exists()


def test_a_trailing_zero_turn_count_resumes_the_same_schedule(reference, capsys, tmp_path):
    """--turns 1:4:5:0 (no sample with 4 edits) makes the samples 1:4:5 makes: it was refused as other settings."""
    import shutil

    bases, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    args = ["generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N, "--size", 32, "--seed", 3]
    code, stdout, err = cli(capsys, *args, "--turns", "1:4:5:0:0")
    assert code == 0 and f"0 made now, {N} from earlier runs" in stdout, err
    line = one_line_exit_2(*cli(capsys, *args, "--turns", "1:4:5:1"))
    assert f"{out} was generated with other settings (turns differs)" in line
    assert Schedule(3, ("a", "b"), (1, 4, 5, 0)).turn_ratio == (1, 4, 5)
    config = out / STATE_DIR / "config.json"  # a run's settings that kept the zero resume under the same ratio too
    config.write_text(json.dumps({**json.loads(config.read_text()), "turns": [1, 4, 5, 0]}))
    code, stdout, err = cli(capsys, *args)
    assert code == 0 and f"0 made now, {N} from earlier runs" in stdout, err


def test_a_proportional_turn_ratio_resumes_the_same_schedule(reference, capsys, tmp_path):
    """--turns 2:8:10 is the ratio 1:4:5: a run made with one resumes under the other."""
    import shutil

    bases, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    args = ["generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N, "--size", 32, "--seed", 3]
    code, stdout, err = cli(capsys, *args, "--turns", "2:8:10")
    assert code == 0 and f"0 made now, {N} from earlier runs" in stdout, err
    ratios = [Schedule(3, ("a", "b"), r) for r in ((3, 12, 15), (1, 4, 5))]
    assert ratios[0].turn_ratio == (1, 4, 5) == parse_turn_ratio("500:2000:2500")  # its sum is the reduced one's
    assert [ratios[0].sample(i) for i in range(60)] == [ratios[1].sample(i) for i in range(60)]


def test_a_turn_ratio_from_python_of_no_whole_numbers_is_refused():
    """GenerateConfig(turns=(0.5, 1)) was read as 0:1 (every sample two edits), and (None,) was a TypeError."""
    for turns in ((0.5, 1), (None,), (1, "x")):
        with pytest.raises(ConfigError) as exc:
            parse_turn_ratio(turns)
        assert str(exc.value) == f"turn ratio {turns!r}: expected whole numbers such as 1:4:5"
    assert parse_turn_ratio((2.0, 8, 10)) == (1, 4, 5)


def test_a_base_replaced_by_a_file_of_its_size_is_refused_on_resume(capsys, tmp_path):
    """A base overwritten by another image of the same byte size kept the bases' listing (names and sizes):
    the resume went on, and the dataset held samples made from another base than the one now there."""
    bases = tmp_path / "bases"
    bases.mkdir()
    pixels = np.random.default_rng(0).integers(0, 255, (2, 48, 40, 3), np.uint8)
    for i, im in enumerate(pixels):  # stored uncompressed: the same shape is the same byte size
        Image.fromarray(im).save(bases / f"b{i}.png", compress_level=0)
    args = ["generate", "--out", tmp_path / "out", "--bases", bases, "--editors", "sd2.tiny", "--n", 2,
            "--ai-bases", 0, "--size", 32]
    code, stdout, err = cli(capsys, *args)
    assert code == 0, err
    size = (bases / "b1.png").stat().st_size
    Image.fromarray(255 - pixels[1]).save(bases / "b1.png", compress_level=0)
    assert (bases / "b1.png").stat().st_size == size
    sid = next(r["id"] for r in manifest(tmp_path / "out") if r["base_info"]["file"] == "b1.png")
    one_line_exit_2(*cli(capsys, *args), f"error: --bases: {bases / 'b1.png'} is not the file sample {sid} was made "
                                         "from (its sha256 is not its record's); put that file back, or choose a new "
                                         "--out")
    Image.fromarray(pixels[1]).save(bases / "b1.png", compress_level=0)
    code, stdout, err = cli(capsys, *args)
    assert code == 0 and "0 made now, 2 from earlier runs" in stdout, err


def test_a_second_run_on_the_same_out_is_refused_while_the_first_writes(reference, capsys, tmp_path):
    """Two runs writing one --out at once would interleave its files: the second is refused in one line,
    before its bases are checked (seconds for a large set; here, bases no longer there)."""
    import shutil

    from diffzoo.harness.core.fsutil import lock_open_file

    bases, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    args = ["generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N, "--size", 32, "--seed", 3]
    with open(out / STATE_DIR / pipeline.LOCK_FILE, "a") as held:  # what the first run holds while it writes
        assert lock_open_file(held, wait=False)
        for given in (bases, tmp_path / "gone"):
            one_line_exit_2(*cli(capsys, *args[:4], given, *args[5:]), f"error: {out} is being written by another "
                            "diffzoo generate run; let it finish, or choose another --out")
    code, stdout, err = cli(capsys, *args)
    assert code == 0 and f"0 made now, {N} from earlier runs" in stdout, err


def test_a_lock_or_settings_file_that_is_no_regular_file_is_one_line(reference, capsys, tmp_path):
    """A FIFO where the run's lock goes blocked the run for ever (opened to append, it waits for a reader);
    a folder where its settings go was said to be missing."""
    import os
    import shutil

    bases, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    args = ["generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N, "--size", 32, "--seed", 3]
    lock, config = out / STATE_DIR / pipeline.LOCK_FILE, out / STATE_DIR / pipeline.CONFIG_FILE
    lock.unlink(missing_ok=True)
    os.mkfifo(lock)
    line = one_line_exit_2(*cli(capsys, *args))
    assert line == f"error: {lock} is a FIFO (named pipe), not a regular file; diffzoo reads only regular files"
    lock.unlink()
    settings = config.read_text()
    config.unlink()
    config.mkdir()
    line = one_line_exit_2(*cli(capsys, *args))
    assert line.startswith(f"error: {config} does not hold the settings of a generate run ({config} is a folder")
    config.rmdir()
    config.write_text(settings)
    code, stdout, err = cli(capsys, *args)
    assert code == 0 and f"0 made now, {N} from earlier runs" in stdout, err


def test_a_link_inside_out_is_refused_before_any_write(reference, capsys, tmp_path):
    """A resumed run whose train_copy/ is a symbolic link to another folder would write the dataset's
    images there: refused with the link named, nothing written on either side."""
    import shutil

    bases, ref = reference
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    shutil.copytree(ref, out)
    (out / "train_copy").rename(elsewhere)
    (out / "train_copy").symlink_to(elsewhere, target_is_directory=True)
    before = files(elsewhere), sorted(p.name for p in out.iterdir())
    line = one_line_exit_2(*cli(capsys, "generate", "--out", out, "--bases", bases, "--editors", EDITORS, "--n", N,
                                "--size", 32, "--seed", 3))
    assert f"{out / 'train_copy'} is a symbolic link; diffzoo does not write through links" in line
    assert (files(elsewhere), sorted(p.name for p in out.iterdir())) == before
    assert len(list((out / "logs").iterdir())) == len(list((ref / "logs").iterdir()))


@pytest.mark.parametrize("args, said", [
    (["--threads", "0"], "--threads must be at least 1, got 0"),
    (["--n", "100000000001"], "--n must be from 1 to 100,000,000 (ids have 8 digits), got 100000000001"),
    (["--lora-scale", "nan"], "--lora-scale must be a finite number, got nan"),
    (["--min-score", "9"], "--min-score must be in [0, 5] (the VLM's scale), got 9.0"),
    (["--ai-bases", "2"], "--ai-bases must be in [0, 1] (the fraction of bases generated), got 2.0"),
    (["--ai-bases", "2", "--bases", "photos"], "--ai-bases must be in [0, 1] (the fraction of bases generated), got "
     "2.0"),  # not "--bases is read only when some bases are real": leaving --bases out would not mend it
    (["--size", "100000"], "--size 100000: 100000 x 100000 px bases exceed the 67,108,864-pixel limit on images"),
    (["--out", "a-file"], "--out a-file exists and is not a folder"),  # a file is a usage error, never an internal FileExistsError
    (["--turns", "1000000000:1:1"], "turn ratio '1000000000:1:1': its counts sum to 1000000002, at most 1000"),
    (["--min-area", "nan"], "--min-area and --max-area need 0 <= --min-area <= --max-area <= 1, got nan, 0.5"),
    (["--min-changed", "2"], "--min-changed must be in [0, 1], got 2.0"),
    (["--tries", "0"], "--tries must be at least 1, got 0"),
    (["--min-area", "0.5", "--max-area", "1"], "--min-area 0.5 and --max-area 1 leave no random region (those cover "
     "5% to 35% of an image: every sample would be rejected); give bounds that meet that range, or --regions open-vocab"),
])
def test_generate_settings_out_of_range_are_one_line_before_any_model(capsys, tmp_path, monkeypatch, args, said):
    """--threads 0 and a --size no image could hold were internal errors (torch's RuntimeError, a
    MemoryError); a nan LoRA scale and a score outside the VLM's scale were taken; area bounds no random
    region meets rejected every sample after the models loaded."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("mine")
    given = {"--out": tmp_path / "o", "--ai-bases": "1", "--editors": "sd2.tiny", "--n": "2",
             **dict(zip(args[::2], args[1::2]))}
    one_line_exit_2(*cli(capsys, "generate", *[word for pair in given.items() for word in pair]), said)
    assert not (tmp_path / "o").exists() and (tmp_path / "a-file").read_text() == "mine"


@pytest.mark.parametrize("args, said", [
    (["--ai-bases", "1", "--bases", "photos"], "--bases is read only when some bases are real (--ai-bases under 1)"),
    (["--ai-bases", "0", "--bases", "photos", "--captions", "c.json"],
     "--captions is read only for AI bases (--ai-bases above 0)"),
    (["--ai-bases", "1", "--objects", "vlm"], "--objects is read only with --regions open-vocab"),
    (["--ai-bases", "1", "--detector", "IDEA-Research/grounding-dino-tiny"],
     "--detector is read only with --regions open-vocab"),
    (["--ai-bases", "1", "--min-score", "4"], "--min-score is read only with --vlm-score"),
    (["--ai-bases", "1", "--vlm", "Qwen/Qwen2.5-VL-3B-Instruct"],
     "--vlm is read only with --prompts vlm, --objects vlm or --vlm-score"),
    (["--ai-bases", "1", "--lora-scale", "0.5"], "--lora-scale is read only with --lora"),
])
def test_generate_options_nothing_reads_are_one_line_before_any_model(capsys, tmp_path, args, said):
    """Each was ignored unsaid: a run made without the captions, VLM, detector or LoRA weight the user chose."""
    result = cli(capsys, "generate", "--out", tmp_path / "o", "--editors", "sd2.tiny", "--n", "2", *args)
    assert one_line_exit_2(*result) == f"error: {said}; leave it out"
    assert not (tmp_path / "o").exists()


def test_a_tilde_after_bases_or_regions_equals_is_the_home_folder(capsys, tmp_path, monkeypatch):
    """--bases=~/photos (bash leaves a tilde after --flag=) looked for a folder named ~ in the current one,
    as --regions=masks:~/m and --bases=coco:~/a.json:~/images did; --out=~/gen is the home folder."""
    monkeypatch.setenv("HOME", str(tmp_path))
    generate = ["generate", "--out=~/o", "--editors", "sd2.tiny", "--n", "2", "--ai-bases", "0"]
    one_line_exit_2(*cli(capsys, *generate, "--bases=~/photos"), f"bases folder {tmp_path / 'photos'} does not exist")
    make_bases(tmp_path / "photos", n=1)
    one_line_exit_2(*cli(capsys, *generate, "--bases=~/photos", "--regions=masks:~/m"),
                    f"--regions masks:{tmp_path / 'm'} does not exist")
    one_line_exit_2(*cli(capsys, *generate, "--bases=coco:~/a.json:~/photos"),
                    f"COCO annotation file {tmp_path / 'a.json'} does not exist")
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where no one can make a folder")
def test_an_out_no_folder_can_be_made_in_is_one_line_before_any_model(capsys, tmp_path):
    """--out /proc/x (any place no folder can be made in) was an internal FileNotFoundError."""
    result = cli(capsys, "generate", "--out", "/proc/diffzoo-out", "--ai-bases", "1", "--editors", "sd2.tiny",
                 "--n", "2")
    one_line_exit_2(*result, "--out /proc/diffzoo-out cannot be used: no folder can be made in /proc",
                    "choose another path")


def test_one_editor_named_twice_is_refused(capsys, tmp_path):
    """--editors sd2,sd2.inpaint (sd2 is its family's default card, sd2.inpaint) made two label classes
    of one editor."""
    for editors, card in (("sd2,sd2.inpaint", "sd2.inpaint"), ("sd2.tiny,sd2.tiny", "sd2.tiny")):
        one_line_exit_2(*cli(capsys, "generate", "--out", tmp_path / "o", "--editors", editors, "--ai-bases", "1",
                             "--n", "1"), f"--editors {editors} names {card} twice; keep one")
    assert not (tmp_path / "o").exists()


def test_two_editors_of_one_label_name_name_both_and_the_name(tmp_path):
    """Editors passed in built under names a label map reads as one (sdxl, SDXL) were refused as
    "listed twice", a wording for one name given twice, which the check of --editors refuses earlier."""
    config = gen_config(tmp_path / "o", None, editors=("sdxl", "SDXL"), ai_fraction=1)
    with pytest.raises(ConfigError) as exc:
        pipeline.generate(config, editors={"sdxl": FakeEditor(1), "SDXL": FakeEditor(2)})
    assert str(exc.value) == "editors 'sdxl' and 'SDXL' have the same label name 'sdxl'; give one another name"


def test_an_editor_named_as_a_diffseg30k_editor_with_a_dot_keeps_its_whole_name_as_label():
    """An editor passed in as sd3.5 was labelled sd3: its family was cut at the first dot."""
    from diffzoo.generators.generate.multiturn import class_names

    assert class_names(("sd3.5", "Kandinsky 2.2", "sdxl.tiny")) == ("sd3.5", "kandinsky2.2", "sdxl")
    with pytest.raises(ConfigError) as exc:
        class_names(("sd3.5", "sd35.tiny"))
    assert str(exc.value) == "editors 'sd3.5' and 'sd35.tiny' have the same label name 'sd3.5'; give one another name"


def test_a_caption_that_is_no_text_is_named_never_read_as_its_spelling(tmp_path):
    """A null caption was the prompt 'None', a number or an object its Python spelling."""
    from diffzoo.generators.generate.coco import load_captions

    path = tmp_path / "captions.json"
    for caption in (None, 5, {"en": "a dog"}):
        path.write_text(json.dumps({"annotations": [{"image_id": 1, "id": 1, "caption": "a cup"},
                                                    {"image_id": 2, "id": 7, "caption": caption}]}))
        with pytest.raises(DataError) as exc:
            load_captions(path)
        assert str(exc.value) == f"{path}: not a COCO captions file: annotation 7's caption {caption!r} is no text"


@pytest.mark.parametrize("data", [[], {"images": []}, {"annotations": {"1": "a cup"}}, {"annotations": [[]]},
                                  {"annotations": [{"id": 1, "caption": "a cup"}]}, "not JSON"])
def test_a_captions_file_of_another_shape_says_what_it_should_hold(capsys, tmp_path, data):
    """A JSON list was "not a COCO captions file (TypeError: list indices must be integers or slices,
    not str)": Python's words, never what the file should hold."""
    path = tmp_path / "c.json"
    path.write_text(data if data == "not JSON" else json.dumps(data))
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "o", "--editors", "sd2.tiny", "--ai-bases", "1",
                       "--captions", path)
    assert (code, one_line(err)) == (1, f'error: {path}: not a COCO captions file: expected a JSON object '
                                        '{"annotations": [{"image_id": 1, "id": 1, "caption": "a dog on a sofa"}, ...]}')
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("data", [[], {"images": 1}, "not JSON"])
def test_a_coco_instances_file_of_another_shape_says_what_it_should_hold(capsys, tmp_path, data):
    """A JSON list was "not a COCO instances file (AssertionError: annotation file format <class 'list'>
    not supported)": pycocotools' words, never what the file should hold."""
    path, images = tmp_path / "i.json", tmp_path / "imgs"
    path.write_text(data if data == "not JSON" else json.dumps(data))
    images.mkdir()
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "o", "--editors", "sd2.tiny", "--ai-bases", "0",
                       "--bases", f"coco:{path}:{images}")
    assert (code, one_line(err)) == (1, f'error: {path}: not a COCO instances file: expected a JSON object '
                                        '{"images": [...], "annotations": [...], "categories": [...]} '
                                        '(instances_train2017.json)')
    assert not (tmp_path / "o").exists()


def test_a_captions_file_not_there_or_a_fifo_is_one_line_before_any_model(capsys, tmp_path):
    """--captions FIFO blocked the read for ever; a file not there was "not a COCO captions file
    (FileNotFoundError: ...)", exit 1."""
    import os

    os.mkfifo(tmp_path / "captions.json")
    for name, said in (("captions.json", f"--captions {tmp_path / 'captions.json'} is a FIFO (named pipe), not a "
                                         "regular file"),
                       ("none.json", f"--captions {tmp_path / 'none.json'} does not exist")):
        result = cli(capsys, "generate", "--out", tmp_path / "o", "--ai-bases", "1", "--editors", "sd2.tiny", "--n",
                     "2", "--captions", tmp_path / name)
        one_line_exit_2(*result, said)
        assert not (tmp_path / "o").exists()


# -- COCO regions -----------------------------------------------------------------------------
def _poly(x0, y0, x1, y1):
    return [[x0, y0, x1, y0, x1, y1, x0, y1]]


@pytest.fixture
def coco(tmp_path):
    images = make_bases(tmp_path / "images", n=2)
    anns = [  # image 1: a box, a near-duplicate of it (IoU > 0.7), a separate cup, a crowd region
        {"id": 1, "image_id": 1, "category_id": 1, "segmentation": _poly(2, 2, 22, 26), "area": 480, "bbox": [2, 2, 20, 24], "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 2, "segmentation": _poly(3, 3, 22, 26), "area": 437, "bbox": [3, 3, 19, 23], "iscrowd": 0},
        {"id": 3, "image_id": 1, "category_id": 3, "segmentation": _poly(26, 30, 38, 46), "area": 192, "bbox": [26, 30, 12, 16], "iscrowd": 0},
        {"id": 4, "image_id": 1, "category_id": 3, "segmentation": _poly(0, 0, 40, 48), "area": 1920, "bbox": [0, 0, 40, 48], "iscrowd": 1},
        # image 2: only an instance below the area bound -> not a usable base
        {"id": 5, "image_id": 2, "category_id": 1, "segmentation": _poly(0, 0, 2, 2), "area": 4, "bbox": [0, 0, 2, 2], "iscrowd": 0},
    ]  # fmt: skip
    data = {
        "images": [{"id": 1, "file_name": "b0.png", "width": 40, "height": 48},
                   {"id": 2, "file_name": "b1.png", "width": 40, "height": 48}],
        "annotations": anns,
        "categories": [{"id": 1, "name": "dog"}, {"id": 2, "name": "cat"}, {"id": 3, "name": "cup"}],
    }  # fmt: skip
    ann = tmp_path / "instances_tiny.json"
    ann.write_text(json.dumps(data))
    (tmp_path / "captions_tiny.json").write_text(json.dumps({"annotations": [
        {"id": 1, "image_id": 1, "caption": "a dog next to a cup"}, {"id": 2, "image_id": 2, "caption": "an empty room"}]}))
    return ann, images


def test_coco_regions_drop_overlaps_and_skip_crowds(coco):
    from diffzoo.generators.generate.coco import CocoIndex

    ann, images = coco
    index = CocoIndex(ann, images)
    regions = index.regions(1, 48, 40)
    assert [r.label for r in regions] == ["dog", "cup"]  # the smaller near-duplicate "cat" and the crowd are gone
    assert regions[0].bbox == (2, 2, 22, 26)
    assert [im.id for im in index.usable_images(0.01, 0.5)] == [1]
    half = index.regions(1, 24, 20)  # masks follow the image size
    assert half[0].mask.shape == (24, 20)


def test_bad_mask_files_are_named_before_any_sample_is_made(capsys, tmp_path):
    """A mask file that is no image stopped the run at its sample, after the samples before it."""
    bases = make_bases(tmp_path / "bases", n=2)
    masks = tmp_path / "masks"
    for i in range(2):
        (masks / f"b{i}").mkdir(parents=True)
        Image.fromarray(np.full((48, 40), 255, np.uint8)).save(masks / f"b{i}" / "box.png")
    (masks / "b1" / "cup.png").write_bytes(b"not a png")
    (masks / "b1" / "dog.png").write_bytes(b"")
    out = tmp_path / "out"
    code, stdout, err = cli(capsys, "generate", "--out", out, "--bases", bases, "--regions", f"masks:{masks}",
                            "--editors", "sd2.tiny", "--n", 4, "--ai-bases", 0, "--size", 32)
    line = " ".join((stdout + err).split())
    assert code == 1 and line.startswith(
        f"error: --regions masks:{masks}: 2 mask file(s) cannot be used: {masks / 'b1' / 'cup.png'}: corrupt "
        f"or truncated image (not a recognised image format); {masks / 'b1' / 'dog.png'}: the file is empty (0 bytes), "
        "not an image; fix or remove them"), line
    assert not (out / STATE_DIR / "samples").exists()


def test_a_region_mask_replaced_by_a_file_of_its_size_is_refused_on_resume(capsys, tmp_path):
    """A mask file overwritten by another of the same byte size kept the masks' listing (names and sizes):
    the resume went on, and the dataset held samples edited in regions no mask now there draws."""
    bases = make_bases(tmp_path / "bases", n=1)  # 40 x 48 px (W x H)
    masks = tmp_path / "masks"
    (masks / "b0").mkdir(parents=True)
    m = np.zeros((48, 40), np.uint8)
    m[4:28, 4:22] = 255
    Image.fromarray(m).save(masks / "b0" / "box.png", compress_level=0)  # uncompressed: its size is its shape's
    args = ["generate", "--out", tmp_path / "out", "--bases", bases, "--regions", f"masks:{masks}", "--editors",
            "sd2.tiny", "--n", 1, "--ai-bases", 0]
    code, stdout, err = cli(capsys, *args)
    assert code == 0, stdout + err
    Image.fromarray(np.roll(m, 10, axis=0)).save(masks / "b0" / "box.png", compress_level=0)
    one_line_exit_2(*cli(capsys, *args), f"error: --regions masks:{masks}: the mask files of b0.png are not those "
                                         "sample 00000000 was made from (their sha256 is not its record's); put "
                                         "them back, or choose a new --out")
    Image.fromarray(m).save(masks / "b0" / "box.png", compress_level=0)
    code, stdout, err = cli(capsys, *args)
    assert code == 0 and "0 made now, 1 from earlier runs" in stdout, err

def test_a_16_bit_region_mask_of_0_and_65535_is_its_non_zero_pixels(capsys, tmp_path):
    """A 16-bit 0/65535 mask was refused as "class-index masks hold values 0..254"; non-zero pixels are the object."""
    bases = make_bases(tmp_path / "bases", n=1)  # 40 x 48 px (W x H)
    (tmp_path / "masks" / "b0").mkdir(parents=True)
    m = np.zeros((48, 40), np.uint16)
    m[4:28, 4:22] = 65535
    Image.fromarray(m).save(tmp_path / "masks" / "b0" / "box.png")
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--regions",
                            f"masks:{tmp_path / 'masks'}", "--editors", "sd2.tiny", "--n", 1, "--ai-bases", 0)
    assert code == 0, stdout + err
    assert [t["object"] for row in manifest(tmp_path / "out") for t in row["turns"]] == ["box"]


def test_a_mask_not_of_its_bases_shape_is_named_before_any_model_loads(capsys, tmp_path):
    """A 40 x 48 px mask of a 48 x 40 px base (drawn on the view its EXIF tag turns) was stretched to it, unsaid."""
    bases = make_bases(tmp_path / "bases", n=2)  # 40 x 48 px (W x H)
    for i, (h, w) in enumerate([(24, 20), (40, 48)]):  # half size: resized; turned: refused
        (tmp_path / "masks" / f"b{i}").mkdir(parents=True)
        Image.fromarray(np.full((h, w), 255, np.uint8)).save(tmp_path / "masks" / f"b{i}" / "box.png")
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--regions",
                            f"masks:{tmp_path / 'masks'}", "--editors", "sd2.tiny", "--n", 1, "--ai-bases", 0)
    assert code == 1 and " ".join((stdout + err).split()) == (
        f"error: --regions masks:{tmp_path / 'masks'}: 1 mask file(s) cannot be used: "
        f"{tmp_path / 'masks' / 'b1' / 'box.png'}: 48 x 40 px does not scale to its base b1.png, 40 x 48 px; "
        "fix or remove them"), stdout + err
    assert not (tmp_path / "out" / STATE_DIR / "samples").exists()


def test_an_all_zero_mask_is_named_empty_before_any_model_loads(capsys, tmp_path):
    """A mask file of zeros only gave its base's samples the reason "no region to edit (none within the
    area bounds)", naming no file."""
    bases = make_bases(tmp_path / "bases", n=2)
    for i, value in enumerate([255, 0]):
        (tmp_path / "masks" / f"b{i}").mkdir(parents=True)
        Image.fromarray(np.full((48, 40), value, np.uint8)).save(tmp_path / "masks" / f"b{i}" / "box.png")
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--regions",
                            f"masks:{tmp_path / 'masks'}", "--editors", "sd2.tiny", "--n", 2, "--ai-bases", 0)
    assert code == 1 and " ".join((stdout + err).split()) == (
        f"error: --regions masks:{tmp_path / 'masks'}: 1 mask file(s) cannot be used: "
        f"{tmp_path / 'masks' / 'b1' / 'box.png'}: the mask is empty (no non-zero pixel, no region); "
        "fix or remove them"), stdout + err
    assert not (tmp_path / "out" / STATE_DIR / "samples").exists()


def test_a_mask_that_vanishes_at_size_is_named_before_any_model_loads(capsys, tmp_path):
    """A 1-pixel mask of a 400 x 400 px base is empty at --size 32: its samples were rejected with "no region to
    edit (none within the area bounds)", naming no file."""
    (tmp_path / "bases").mkdir()
    Image.fromarray(np.full((400, 400, 3), 90, np.uint8)).save(tmp_path / "bases" / "b0.png")
    (tmp_path / "masks" / "b0").mkdir(parents=True)
    dot = np.zeros((400, 400), np.uint8)
    dot[200, 201] = 255
    Image.fromarray(dot).save(tmp_path / "masks" / "b0" / "dot.png")
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", tmp_path / "bases", "--regions",
                            f"masks:{tmp_path / 'masks'}", "--editors", "sd2.tiny", "--n", 1, "--ai-bases", 0,
                            "--size", 32)
    assert code == 1 and " ".join((stdout + err).split()) == (
        f"error: --regions masks:{tmp_path / 'masks'}: 1 mask file(s) cannot be used: "
        f"{tmp_path / 'masks' / 'b0' / 'dot.png'}: its 1 non-zero pixel(s) vanish at --size (32 x 32 px): no region "
        "is left; draw a larger region or give a larger --size; fix or remove them"), stdout + err
    assert not (tmp_path / "out" / STATE_DIR / "samples").exists()


def test_bases_whose_masks_all_miss_the_area_bounds_are_named_before_any_model_loads(capsys, tmp_path):
    """Masks of a base all under --min-area or over --max-area left it no region: the run loaded every model
    and rejected each of its samples ("no region to edit (none within the area bounds)"), naming no file."""
    bases = make_bases(tmp_path / "bases", n=3)  # 40 x 48 px (W x H): 1,920 px
    for i, (y0, y1, x0, x1) in enumerate([(20, 22, 20, 22), (2, 46, 2, 38), (10, 30, 8, 30)]):
        box = np.zeros((48, 40), np.uint8)
        box[y0:y1, x0:x1] = 255
        (tmp_path / "masks" / f"b{i}").mkdir(parents=True)
        Image.fromarray(box).save(tmp_path / "masks" / f"b{i}" / "box.png")
    Image.fromarray(np.full((48, 40), 255, np.uint8)).save(tmp_path / "masks" / "b2" / "all.png")  # b2 has one fit
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--regions",
                            f"masks:{tmp_path / 'masks'}", "--editors", "sd2.tiny", "--n", 3, "--ai-bases", 0)
    assert code == 1 and " ".join((stdout + err).split()) == (
        f"error: --regions masks:{tmp_path / 'masks'}: 2 base image(s) cannot be used: b0.png: its mask(s) in "
        f"{tmp_path / 'masks' / 'b0'} cover 0.2% of it, none from --min-area 0.01 to --max-area 0.5: no region to "
        f"edit; b1.png: its mask(s) in {tmp_path / 'masks' / 'b1'} cover 82.5% of it, none from --min-area 0.01 to "
        "--max-area 0.5: no region to edit; fix or remove them"), stdout + err
    assert not (tmp_path / "out" / STATE_DIR / "samples").exists()


def test_bases_with_an_exif_orientation_tag_are_named_in_a_warning(tmp_path, caplog):
    """A photo a viewer shows upright through its EXIF tag is edited as stored, turned: said, naming it (it was
    made into samples unsaid)."""
    from diffzoo.generators.generate.bases import list_folder

    bases = make_bases(tmp_path / "bases", n=2)
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees clockwise to view"
    Image.open(bases / "b1.png").convert("RGB").save(bases / "turned.jpg", exif=exif)
    check_bases(list_folder(bases), 32, str(bases))
    assert "1 base image(s) carry an EXIF orientation tag (turned.jpg): they are edited as stored" in caplog.text
    assert "b0.png" not in caplog.text and "b1.png" not in caplog.text


def test_bases_with_transparency_are_named_in_the_same_warning_pass(tmp_path, caplog):
    """An RGBA PNG (or a palette one with a transparent entry) is edited composited on white: said once per kind,
    counting and naming one, beside the EXIF one (both were made into samples, the transparent ones unsaid).
    The pixels decide: an RGBA PNG all opaque is read unchanged, unnamed (its header alone named it)."""
    from diffzoo.generators.generate.bases import list_folder

    bases = make_bases(tmp_path / "bases", n=1)
    rgb = Image.open(bases / "b0.png").convert("RGB")
    rgb.convert("RGBA").save(bases / "opaque.png")
    cutout = rgb.convert("RGBA")
    cutout.putpixel((0, 0), (0, 0, 0, 254))
    cutout.save(bases / "cutout.png")
    keyed = rgb.convert("P")
    keyed.putpixel((0, 0), 0)
    keyed.save(bases / "keyed.png", transparency=0)
    exif = Image.Exif()
    exif[0x0112] = 6
    for name in ("t1.jpg", "t2.jpg"):
        rgb.save(bases / name, exif=exif)
    check_bases(list_folder(bases), 32, str(bases))
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert said == [
        "2 base image(s) carry an EXIF orientation tag (t1.jpg and 1 more): they are edited as stored, as diffzoo "
        "reads every image; a viewer that applies the tag shows them turned against their samples (rotate the "
        "originals first: exiftran -ai)",
        "2 base image(s) hold transparency (an alpha channel or a transparent colour) (cutout.png and 1 more): they "
        "are edited composited on white, as diffzoo reads every image (flatten the originals on the background you "
        "want)"]


def test_bad_bases_are_named_from_their_headers_before_any_model_loads(capsys, tmp_path):
    """A zero-byte base, or one too thin for a region at --size (4000 x 8 px at 32: 32 x 1), stopped the
    run only when its sample came, after the models had loaded."""
    bases = make_bases(tmp_path / "bases", n=1)
    (bases / "empty.png").write_bytes(b"")
    Image.fromarray(np.full((8, 4000, 3), 90, np.uint8)).save(bases / "thin.png")
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--editors", "sd2.tiny",
                            "--n", 1, "--ai-bases", 0, "--size", 32)
    assert code == 1 and " ".join((stdout + err).split()) == (
        f"error: --bases {bases}: 2 base image(s) cannot be used: empty.png: the file is empty (0 bytes), not an "
        "image; thin.png: 4000 x 8 px, 32 x 1 px at --size 32: a side under 8 px, too small for a region; "
        "fix or remove them"), stdout + err
    assert not (tmp_path / "out" / STATE_DIR).exists()
    thin = make_bases(tmp_path / "thin", n=1)
    Image.fromarray(np.full((8, 400, 3), 90, np.uint8)).save(thin / "thin.png")  # 8 px high: no random region fits
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", thin, "--editors", "sd2.tiny",
                            "--n", 2, "--ai-bases", 0)
    assert code == 1 and " ".join((stdout + err).split()) == (
        f"error: --bases {thin}: 1 base image(s) cannot be used: thin.png: 400 x 8 px: too narrow for a random "
        "region (one covering 2.5% of it); fix or remove them"), stdout + err
    refs = [BaseRef(f"e{i}", bases / "empty.png", f"e{i}.png") for i in range(5)]  # the first three named
    with pytest.raises(DataError) as exc:
        check_bases(refs, None, "B")
    assert str(exc.value) == ("--bases B: 5 base image(s) cannot be used: e0.png: the file is empty (0 bytes), not "
                              "an image; e1.png: the file is empty (0 bytes), not an image; e2.png: the file is empty "
                              "(0 bytes), not an image and 2 more; fix or remove them")


def test_a_base_some_random_draws_fit_never_stops_the_run(capsys, tmp_path):
    """A 140 x 8 px base holds a random region on some draws only: one failed draw of its six stopped the run."""
    bases = tmp_path / "bases"
    bases.mkdir()
    Image.fromarray(np.full((8, 140, 3), 90, np.uint8)).save(bases / "thin.png")
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--editors", "sd2.tiny",
                            "--n", 2, "--ai-bases", 0)
    assert code == 0 and "2 sample(s)" in " ".join(stdout.split()), stdout + err


def test_checking_many_bases_before_the_models_is_shown(capsys, monkeypatch, tmp_path):
    """Decoding thousands of bases before any model loads takes seconds: a progress task, never silence."""
    monkeypatch.setattr("diffzoo.generators.generate.regions.ANNOUNCE", 0)  # these few bases count as many
    bases = make_bases(tmp_path / "bases", n=3)
    (bases / "empty.png").write_bytes(b"")  # refused after the check: no model is built
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--editors", "sd2.tiny",
                            "--n", 1, "--ai-bases", 0)
    assert code == 1 and re.search(r"^checking 4 base image\(s\) \(1 decoded\) before any model loads  finished 4/4 "
                                   "in ", err, re.M), err
    (bases / "empty.png").unlink()
    for i in range(3):  # every mask empty: refused once all are checked
        (tmp_path / "masks" / f"b{i}").mkdir(parents=True)
        Image.fromarray(np.zeros((48, 40), np.uint8)).save(tmp_path / "masks" / f"b{i}" / "cup.png")
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--editors", "sd2.tiny",
                            "--n", 1, "--ai-bases", 0, "--regions", f"masks:{tmp_path / 'masks'}")
    assert code == 1 and re.search(r"^checking the masks of 3 base\(s\) before any model loads  finished 3/3 in ", err,
                                   re.M), err


def test_a_base_cut_short_in_its_pixels_is_named_before_any_model_loads(capsys, tmp_path):
    """A base whose header was whole but whose pixel data was cut short passed the header check and stopped
    the run at its sample, after the editors had loaded (and the samples before it were made)."""
    bases = make_bases(tmp_path / "bases", n=2)
    cut = bases / "b1.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (48, 40, 3), np.uint8)).save(cut)
    cut.write_bytes(cut.read_bytes()[:300])
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--editors", "sd2.tiny",
                            "--n", 2, "--ai-bases", 0, "--size", 32)
    assert code == 1 and " ".join((stdout + err).split()) == (
        f"error: --bases {bases}: 1 base image(s) cannot be used: b1.png: corrupt or truncated image (image file is "
        "truncated); fix or remove them"), stdout + err
    assert not (tmp_path / "out" / STATE_DIR).exists()


def test_a_mask_file_cut_short_in_its_pixels_is_named_before_any_model_loads(capsys, tmp_path):
    """A mask whose header was whole but whose pixel data was cut short passed the check and failed the run later."""
    bases = make_bases(tmp_path / "bases", n=1)
    (tmp_path / "masks" / "b0").mkdir(parents=True)
    cut = tmp_path / "masks" / "b0" / "cup.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 2, (48, 40), np.uint8) * 255).save(cut)
    cut.write_bytes(cut.read_bytes()[:120])
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--regions",
                            f"masks:{tmp_path / 'masks'}", "--editors", "sd2.tiny", "--n", 1, "--ai-bases", 0)
    assert code == 1 and " ".join((stdout + err).split()).startswith(
        f"error: --regions masks:{tmp_path / 'masks'}: 1 mask file(s) cannot be used: {cut}: corrupt or truncated "
        "image (image file is truncated); fix or remove them"), stdout + err
    assert not (tmp_path / "out" / STATE_DIR / "samples").exists()


def test_bases_no_region_source_covers_say_why_and_where_the_masks_go(coco, capsys, tmp_path):
    """Both were "no usable real base images (check --bases and --regions)"."""
    ann, images = coco
    (tmp_path / "masks").mkdir()
    Image.fromarray(np.full((48, 40), 255, np.uint8)).save(tmp_path / "masks" / "b0.png")  # beside, not in b0/
    bases = make_bases(tmp_path / "bases", n=2)
    generate = ["generate", "--out", tmp_path / "o", "--editors", "sd2.tiny", "--n", "2", "--ai-bases", "0"]
    one_line_exit_2(*cli(capsys, *generate, "--bases", bases, "--regions", f"masks:{tmp_path / 'masks'}"),
                    f"none of the 2 base(s) has masks in masks:{tmp_path / 'masks'}: the masks of b0.png go in "
                    f"{tmp_path / 'masks' / 'b0'}/*.png")
    one_line_exit_2(*cli(capsys, *generate, "--bases", f"coco:{ann}:{images}", "--min-area", "0.9",
                         "--max-area", "1"),
                    "none of the 2 COCO base(s) has an instance whose area is between --min-area 0.9 and --max-area 1")
    os.mkfifo(bases / "pipe.png")  # reading it would block for ever
    one_line_exit_2(*cli(capsys, *generate, "--bases", bases),
                    f"bases folder {bases}: pipe.png is a FIFO (named pipe), not an image file; move it away")
    assert not (tmp_path / "o").exists()


def test_bases_that_are_no_image_files_or_share_a_name_are_each_named(capsys, tmp_path):
    """Two FIFOs among the bases named one and counted the other; two images of one name without suffix
    were said as a Python list of that name, naming no file; a folder of no image named no folder."""
    bases = make_bases(tmp_path / "bases", n=2)
    generate = ["generate", "--out", tmp_path / "o", "--editors", "sd2.tiny", "--n", "2", "--ai-bases", "0",
                "--bases", bases]
    for name in ("p1.png", "p2.png"):
        os.mkfifo(bases / name)
    one_line_exit_2(*cli(capsys, *generate), f"bases folder {bases}: p1.png is a FIFO (named pipe); p2.png is a FIFO "
                                             "(named pipe), not image files; move them away")
    for name in ("p1.png", "p2.png"):
        (bases / name).unlink()
    Image.open(bases / "b1.png").save(bases / "b1.jpg")
    one_line_exit_2(*cli(capsys, *generate), f"bases folder {bases}: images share a name without suffix (b1.jpg, "
                                             "b1.png); rename them apart or move all but one away")
    (tmp_path / "none").mkdir()  # "no usable real base images (check --bases and --regions)"
    (tmp_path / "none" / "notes.txt").write_text("x")
    one_line_exit_2(*cli(capsys, *generate[:-1], tmp_path / "none"),
                    f"bases folder {tmp_path / 'none'} holds no images (.png, .jpg, .jpeg, .tif, .tiff, .bmp, .webp); "
                    "give a folder of photos, or --ai-bases 1")
    assert not (tmp_path / "o").exists()


def test_a_file_or_fifo_where_a_folder_or_file_is_expected_is_named_for_what_it_is(capsys, tmp_path):
    """--bases FILE, --regions masks:FILE, --lora FIFO and --lora FOLDER all said "... does not exist"."""
    bases = make_bases(tmp_path / "bases", n=2)
    (tmp_path / "c.yaml").write_text("x: 1")
    os.mkfifo(tmp_path / "cap.fifo")
    generate = ["generate", "--out", tmp_path / "o", "--editors", "sd2.tiny", "--n", "2", "--ai-bases", "0"]
    for args, said in (
        (["--bases", tmp_path / "c.yaml"], f"bases folder {tmp_path / 'c.yaml'} is a file, not a folder"),
        (["--bases", tmp_path / "cap.fifo"], f"bases folder {tmp_path / 'cap.fifo'} is a FIFO (named pipe), not a folder"),
        (["--bases", bases, "--regions", f"masks:{tmp_path / 'c.yaml'}"],
         f"--regions masks:{tmp_path / 'c.yaml'} is a file, not a folder"),
        (["--bases", bases, "--lora", tmp_path / "cap.fifo"],
         f"{tmp_path / 'cap.fifo'} is a FIFO (named pipe), not a regular file; diffzoo reads only regular files"),
        (["--bases", bases, "--lora", bases], f"{bases} is a folder, not a regular file; diffzoo reads only regular files"),
        (["--bases", bases, "--lora", tmp_path / "none.safetensors"],
         f"LoRA file {tmp_path / 'none.safetensors'} does not exist (expected a .safetensors file)"),
    ):
        assert one_line_exit_2(*cli(capsys, *generate, *args)) == f"error: {said}"
    assert not (tmp_path / "o").exists()


def test_regions_masks_given_no_folder_is_an_unset_variable_never_the_current_folder(capsys, tmp_path, monkeypatch):
    """--regions masks:$DIR with DIR unset looked for masks in the current folder."""
    bases = make_bases(tmp_path / "bases", n=2)
    monkeypatch.chdir(tmp_path)
    assert one_line_exit_2(*cli(capsys, "generate", "--out", tmp_path / "o", "--editors", "sd2.tiny", "--n", "2",
                                "--ai-bases", "0", "--bases", bases, "--regions", "masks:")) == (
        "error: --regions masks: gives no value (an unset shell variable?); give one or leave the option out")
    assert not (tmp_path / "o").exists()


def test_a_lora_given_no_file_is_an_unset_variable_not_a_missing_file(capsys, tmp_path):
    """--lora sd2.tiny=$FILE with FILE unset said "LoRA file '' does not exist"."""
    generate = ["generate", "--out", tmp_path / "o", "--editors", "sd2.tiny", "--n", "2", "--ai-bases", "1"]
    for given in ("sd2.tiny=", ""):
        shown = given or "''"
        assert one_line_exit_2(*cli(capsys, *generate, "--lora", given)) == (
            f"error: --lora {shown} gives no value (an unset shell variable?); give one or leave the option out")
    assert not (tmp_path / "o").exists()


def test_an_earlier_generate_output_is_refused_as_bases(capsys, tmp_path):
    """--bases OUT of an earlier generate took its *.mask.png files (and its edited images) as real bases."""
    earlier = make_bases(tmp_path / "earlier" / "train_copy", n=2).parent  # a generate --out's layout
    Image.fromarray(np.zeros((48, 40), np.uint8)).save(earlier / "train_copy" / "00000000.mask.png")
    generate = ["generate", "--out", tmp_path / "o", "--editors", "sd2.tiny", "--n", "2", "--ai-bases", "0"]
    assert one_line_exit_2(*cli(capsys, *generate, "--bases", earlier)) == (
        f"error: bases folder {earlier} holds label masks (train_copy/00000000.mask.png): it is an edited dataset "
        "(a generate --out?), not real bases; give a folder of real photos")
    assert not (tmp_path / "o").exists()


def test_generate_from_coco_bases(coco, tmp_path):
    ann, images = coco
    fakes = {"a": FakeEditor(1), "b": FakeEditor(2)}
    config = pipeline.GenerateConfig(out=tmp_path / "out", editors=("a", "b"), bases=f"coco:{ann}:{images}", n=4,
                                     turns=(1, 1, 0), ai_fraction=0.5, t2i="sd-t2i.tiny", size=32)
    summary = pipeline.generate(config, editors=fakes)
    assert summary.accepted == 4
    rows = manifest(tmp_path / "out")
    real = [r for r in rows if r["base"] == "real"]
    ai = [r for r in rows if r["base"] == "ai"]
    assert real and ai
    assert {r["source"] for r in real} == {"coco:b0.png"}  # b1 has no usable instance
    assert {t["object"] for r in real for t in r["turns"]} <= {"dog", "cup"}
    assert {r["base_info"]["caption"] for r in ai} <= {"a dog next to a cup", "an empty room"}  # captions_* found
    settings = json.loads((tmp_path / "out" / "generate.json").read_text())["settings"]
    assert settings["regions"] == "coco" and settings["captions"] == 2


def test_a_coco_base_not_of_its_annotations_shape_is_named_before_any_model_loads(coco, tmp_path):
    """A 48 x 40 px file for an image annotated 40 x 48 px had its instance masks stretched onto it, unsaid;
    then it was named only when its sample came, after the models had loaded."""
    ann, images = coco
    Image.fromarray(np.zeros((40, 48, 3), np.uint8)).save(images / "b0.png")  # turned
    config = pipeline.GenerateConfig(out=tmp_path / "out", editors=("a",), bases=f"coco:{ann}:{images}", n=1,
                                     ai_fraction=0, size=32)
    with pytest.raises(DataError) as exc:
        pipeline.generate(config, editors={"a": FakeEditor(1)})
    assert str(exc.value) == (f"--bases coco:{ann}:{images}: 1 base image(s) cannot be used: coco:b0.png: 48 x 40 px "
                              "does not scale to the 40 x 48 px its annotations give: a file of another image, or "
                              "turned; fix or remove them")
    assert not (tmp_path / "out" / STATE_DIR).exists()  # named before any sample, from the header


def test_area_bins_are_balanced_and_bounds_respected():
    h = w = 40
    small = [_box(h, w, 0, 4, i * 5, i * 5 + 4, "s") for i in range(8)]  # 1% each
    large = [_box(h, w, 0, 20, 0, 20, "l")]  # 25%
    huge = [_box(h, w, 0, 40, 0, 32, "h")]  # 80%: above max_area
    picks = Counter(choose_region(small + large + huge, np.random.default_rng(i), min_area=0.005, max_area=0.5).label
                    for i in range(400))
    assert set(picks) == {"s", "l"} and abs(picks["s"] - picks["l"]) < 80  # per bin, not per candidate (8:1)
    assert choose_region(huge, np.random.default_rng(0), max_area=0.5) is None
    a = _box(h, w, 0, 20, 0, 20)
    b = _box(h, w, 0, 19, 0, 20)
    c = _box(h, w, 25, 35, 25, 35)
    kept = dedupe_overlaps([b, a, c], 0.7)
    assert len(kept) == 2 and kept[0] is a and kept[1] is c


def test_progress_starts_before_the_first_sample(tmp_path):
    """The first sample builds the editors (minutes for real weights): the bar showed nothing until it was
    done, then timed the run from there."""
    calls = []
    config = gen_config(tmp_path / "out", make_bases(tmp_path / "bases"), editors=("a",), n=2, ai_fraction=0.0)
    pipeline.generate(config, progress=lambda done, total: calls.append((done, total)), editors={"a": FakeEditor(1)})
    assert calls == [(0, 2), (1, 2), (2, 2)]
    calls.clear()  # a finished run makes nothing, and shows nothing
    pipeline.generate(config, progress=lambda done, total: calls.append((done, total)), editors={"a": FakeEditor(1)})
    assert calls == []


def test_an_instruction_editors_own_area_bounds_are_settings_a_resume_shares(tmp_path):
    """An editor's own min_area / max_area (an instruction editor's rejection bounds) decide which tries are
    rejected: they were not recorded, so a resume with other bounds went on unsaid."""

    class Bounded(FakeEditor):
        def __init__(self, max_area: float):
            super().__init__(1)
            self.label_options = {"tau": 0.05, "min_area": 0.01, "max_area": max_area, "cleanup": 3}

    config = gen_config(tmp_path / "out", make_bases(tmp_path / "bases"), editors=("a",), n=1, ai_fraction=0.0)
    pipeline.generate(config, editors={"a": Bounded(0.7)})
    settings = json.loads((tmp_path / "out" / "generate.json").read_text())["settings"]
    assert settings["editor_areas"] == {"a": [0.01, 0.7]}
    with pytest.raises(ConfigError, match=r"other settings \(editor_areas differs\); resume with the same options"):
        pipeline.generate(config, editors={"a": Bounded(0.5)})
    stored = tmp_path / "out" / STATE_DIR / pipeline.CONFIG_FILE  # written before the bounds were: they are unknown
    stored.write_text(json.dumps({k: v for k, v in json.loads(stored.read_text()).items() if k != "editor_areas"}))
    assert pipeline.generate(config, editors={"a": Bounded(0.5)}).made == 0


def test_a_run_stopped_before_writing_its_settings_is_resumed(tmp_path):
    """A run takes its lock before it writes its settings: stopped between (a full disk), its folder holds the
    lock alone, and was refused as a foreign folder."""
    config = gen_config(tmp_path / "out", make_bases(tmp_path / "bases"), editors=("a",), n=2, ai_fraction=0.0)
    (tmp_path / "out" / STATE_DIR).mkdir(parents=True)
    (tmp_path / "out" / STATE_DIR / pipeline.LOCK_FILE).touch()
    assert pipeline.generate(config, editors={"a": FakeEditor(1)}).made == 2


def test_a_run_that_finished_no_sample_leaves_its_out_to_a_run_of_other_settings(tmp_path, caplog):
    """A run stopped before any sample finished (a model that would not load) kept its settings in --out, and
    the corrected command was refused as other settings; once a sample is finished, its settings stay."""
    import dataclasses

    class Broken(Generator):
        def edit(self, image, mask, prompt, seed):
            raise RuntimeError("no weights")

    out = tmp_path / "out"
    config = gen_config(out, make_bases(tmp_path / "bases"), editors=("a",), n=2, ai_fraction=0.0)
    with pytest.raises(RuntimeError, match="no weights"):
        pipeline.generate(config, editors={"a": Broken()})
    # what a stopped run may leave beside its settings: a sample half written (files, no record; a record cut short)
    for folder in ("train_copy", f"{STATE_DIR}/samples"):
        (out / folder).mkdir(exist_ok=True)
    for name in ("00000001.image.png", "00000001.mask.png"):
        (out / "train_copy" / name).write_bytes(b"partial")
    (out / STATE_DIR / "samples" / "00000000.json").write_text('{"id": "0000')
    other = dataclasses.replace(config, editors=("b",), seed=4, n=1)
    assert pipeline.generate(other, editors={"b": FakeEditor(1)}).made == 1
    assert f"{out} holds no finished sample: this run's settings replace those stored (editors, labels, seed " \
           "differ)" in caplog.text
    assert json.loads((out / STATE_DIR / "config.json").read_text())["editors"] == ["b"]
    assert json.loads((out / "labels.json").read_text())["names"] == ["background", "b"]
    assert sorted(p.name for p in (out / "train_copy").iterdir()) == ["00000000.image.png", "00000000.mask.png"]
    with pytest.raises(ConfigError, match=r"other settings \(editors, labels, seed differ\)"):
        pipeline.generate(config, editors={"a": FakeEditor(1)})
    interrupted = tmp_path / "interrupted"  # one sample finished, the next not: the settings are the folder's

    def stop_after_one(done, total):
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pipeline.generate(dataclasses.replace(config, out=interrupted), progress=stop_after_one,
                          editors={"a": FakeEditor(1)})
    with pytest.raises(ConfigError, match=r"other settings \(seed differs\)"):
        pipeline.generate(dataclasses.replace(other, out=interrupted, editors=("a",)), editors={"a": FakeEditor(1)})


def test_a_resume_on_another_thread_count_is_other_settings(tmp_path):
    """--threads can change the bytes torch's CPU kernels give (their sums split over threads): a resume on
    another count is refused as other settings, as a seed is; it mixed the two counts' samples unsaid."""
    import dataclasses

    config = gen_config(tmp_path / "out", make_bases(tmp_path / "bases"), editors=("a",), n=1, ai_fraction=0.0)
    pipeline.generate(config, editors={"a": FakeEditor(1)})
    with pytest.raises(ConfigError, match=r"other settings \(threads differs\); resume with the same options"):
        pipeline.generate(dataclasses.replace(config, n=2, threads=2), editors={"a": FakeEditor(1)})
    saved = tmp_path / "out" / STATE_DIR / "config.json"  # settings without a thread count: it is not known
    saved.write_text(json.dumps({k: v for k, v in json.loads(saved.read_text()).items() if k != "threads"}))
    assert pipeline.generate(dataclasses.replace(config, n=2, threads=2), editors={"a": FakeEditor(1)}).made == 1


def test_ai_bases_only_need_no_real_bases(tmp_path):
    config = pipeline.GenerateConfig(out=tmp_path / "out", editors=("a",), n=2, ai_fraction=1.0, t2i="sd-t2i.tiny",
                                     size=32, turns=(1,))
    summary = pipeline.generate(config, editors={"a": FakeEditor(1)})
    rows = manifest(tmp_path / "out")
    assert summary.accepted == 2 and {r["base"] for r in rows} == {"ai"}
    assert len({r["base_info"]["caption"] + str(r["base_info"]["seed"]) for r in rows}) == 2
    with pytest.raises(ConfigError, match="--bases"):
        pipeline.generate(pipeline.GenerateConfig(out=tmp_path / "o2", editors=("sd2.tiny",), ai_fraction=0.5))
    # regions that describe real images only would be ignored when every base is generated
    for regions in ("coco", "masks:" + str(tmp_path / "masks")):
        with pytest.raises(ConfigError, match=f"--regions {regions}: with --ai-bases 1 every base is generated"):
            pipeline.generate(pipeline.GenerateConfig(out=tmp_path / "o3", editors=("a",), n=2, ai_fraction=1.0,
                                                      t2i="sd-t2i.tiny", size=32, regions=regions),
                              editors={"a": FakeEditor(1)})
        assert not (tmp_path / "o3").exists()


# -- quality filter ------------------------------------------------------------------------
def test_quality_filter_rejects_a_noop_and_low_scores():
    before = np.full((16, 16, 3), 100, np.uint8)
    mask = np.zeros((16, 16), bool)
    mask[4:12, 4:12] = True
    after = before.copy()
    after[mask] = 250
    q = QualityFilter()
    assert q(before, before, mask, "p", "object_removal").startswith("no-op")
    assert q(before, after, mask, "p", "object_removal") is None
    judged = QualityFilter(scorer=lambda *a: 2.0)
    assert "score 2 below 3" in judged(before, after, mask, "p", "object_removal")
    assert QualityFilter(scorer=lambda *a: 4.0)(before, after, mask, "p", "object_removal") is None
    with pytest.raises(ConfigError):
        QualityFilter(min_area=0.6, max_area=0.5)


def test_a_noop_reason_shows_its_fraction_below_the_bound_never_rounded_to_it():
    """--min-changed 0.004 read "below 0%", and 999 of 10,000 pixels changed under 0.1 "10.0% ... below 10%":
    the reason a rejection records names the bound as given and a fraction under it."""
    before = np.full((100, 100, 3), 100, np.uint8)
    mask = np.ones((100, 100), bool)
    after = before.copy()
    after.reshape(-1, 3)[:999] = 250
    assert QualityFilter()(before, after, mask, "p", "object_removal") == \
        "no-op (9.9% of the region changed, below 10%)"
    after = before.copy()
    after.reshape(-1, 3)[:30] = 250
    assert QualityFilter(min_changed=0.004)(before, after, mask, "p", "object_removal") == \
        "no-op (0.3% of the region changed, below 0.4%)"


def test_noop_editor_samples_are_rejected_and_not_written(tmp_path):
    bases = make_bases(tmp_path / "bases", n=2)
    noop = FakeEditor(None)
    config = pipeline.GenerateConfig(out=tmp_path / "out", editors=("noop",), bases=str(bases), n=3, ai_fraction=0,
                                     tries=2, size=32)
    summary = pipeline.generate(config, editors={"noop": noop})
    assert summary.accepted == 0 and summary.rejected == 3
    assert all("no-op" in r["reason"] for r in summary.rejections)
    assert not list((tmp_path / "out" / "train_copy").glob("*.png"))
    calls = noop.calls
    assert calls >= 3 * 2  # every sample's first turn tried twice
    again = pipeline.generate(config, editors={"noop": noop})
    assert again.made == 0 and again.reused == 3 and noop.calls == calls  # rejected samples are not redone


def test_a_run_whose_ids_hold_no_ai_base_needs_no_text_to_image_weights(tmp_path):
    """--ai-bases 0.01 over ids 0..19 deals no AI base (it is a share of the id sequence: ids 0..99 hold one):
    the run needed SDXL's weights for no sample; a run whose ids hold one still names them."""
    import dataclasses

    config = gen_config(tmp_path / "out", make_bases(tmp_path / "bases"), editors=("a",), n=20, turns=(1,),
                        ai_fraction=0.01, t2i="sdxl-t2i.base")
    summary = pipeline.generate(config, editors={"a": FakeEditor(1)})
    assert summary.accepted == 20 and {r["base"] for r in manifest(tmp_path / "out")} == {"real"}
    with pytest.raises(WeightsUnavailableError, match="stabilityai/stable-diffusion-xl-base-1.0"):
        pipeline.generate(dataclasses.replace(config, n=100), editors={"a": FakeEditor(1)})


# -- open vocabulary -------------------------------------------------------------------------
def test_open_vocab_weights_offline_name_what_to_download(capsys, tmp_path):
    from diffzoo.generators.generate.openvocab import GroundingDinoDetector, SamSegmenter
    from diffzoo.generators.generate.vlm import QwenVL

    image = np.zeros((16, 16, 3), np.uint8)
    with pytest.raises(WeightsUnavailableError, match="IDEA-Research/grounding-dino-tiny"):
        GroundingDinoDetector("IDEA-Research/grounding-dino-tiny").detect(image, ["cat"])
    with pytest.raises(WeightsUnavailableError, match="facebook/sam-vit-base"):
        SamSegmenter("facebook/sam-vit-base").segment(image, [(0, 0, 4, 4)])
    with pytest.raises(WeightsUnavailableError, match="Qwen/Qwen2.5-VL-7B-Instruct"):
        QwenVL().ask([image], "what is this?")
    bases = make_bases(tmp_path / "bases", n=1)
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "out", "--bases", bases, "--regions", "open-vocab",
                       "--editors", EDITORS, "--n", 1, "--ai-bases", 0)
    assert code != 0 and err.count("error:") == 1 and "IDEA-Research/grounding-dino-base" in err



def test_a_model_without_its_weights_is_one_line_before_any_sample(capsys, tmp_path, offline_empty_hub):
    """--editors sd2 with no cached weights failed only once the "generating" bar had started: the
    editor, the text-to-image model and the VLM are built at their first sample."""
    bases = make_bases(tmp_path / "bases", n=1)
    for args, what, hub_id in (
            (("--editors", "sd2", "--ai-bases", 1), "generator 'sd2.inpaint'",
             "stabilityai/stable-diffusion-2-inpainting"),
            (("--editors", "sd2.tiny", "--ai-bases", 1, "--t2i", "sdxl-t2i.base"), "generator 'sdxl-t2i.base'",
             "stabilityai/stable-diffusion-xl-base-1.0"),
            (("--editors", "sd2.tiny", "--ai-bases", 0, "--bases", bases, "--prompts", "vlm"),
             "vision-language model", "Qwen/Qwen2.5-VL-7B-Instruct")):
        code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", *args, "--n", 1)
        assert code != 0 and "generating" not in stdout + err, stdout + err
        assert [line for line in err.splitlines() if line.strip()] == [
            f"error: {what}: weights '{hub_id}' are not in the local cache and could not be downloaded. Fetch them "
            f"on a machine with network access, e.g. `hf download {hub_id}`, then copy that machine's hub cache "
            f"(~/.cache/huggingface/hub) into {tmp_path / 'hf' / 'hub'} here (HF_HUB_CACHE or HF_HOME moves it) "
            "(the hub is offline or does not answer)"]
        assert offline_empty_hub == []
    code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--editors", "glide", "--ai-bases", 0,
                            "--bases", bases, "--n", 1)  # its official files, kept in diffzoo's cache
    assert code != 0 and "generating" not in stdout + err, stdout + err
    assert one_line(err).startswith("error: generator 'glide.inpaint': weights 'https://openaipublic.blob.core."
                                    "windows.net/diffusion/dec-2021/base_inpaint.pt' are not in the local cache")
    assert one_line(err).endswith("(offline; 4 file(s) missing)")

def test_a_model_option_written_as_a_path_that_is_not_there_does_not_exist(capsys, tmp_path, offline_empty_hub):
    """--vlm ./nodir was taken as a hub id and failed at its first sample with a hub error; --vlm, --detector
    and --sam written as a path (./, ../, /, ~) are folders that exist, before any model."""
    bases = make_bases(tmp_path / "bases", n=1)
    missing = tmp_path / "nodir"
    saved = tmp_path / "saved"  # a folder save_pretrained wrote: a detector found, so --sam is checked
    saved.mkdir()
    (saved / "config.json").write_text("{}")
    for args, what, given in (
            (("--prompts", "vlm", "--vlm", "./nodir"), "vision-language model", "./nodir"),
            (("--regions", "open-vocab", "--detector", missing), "open-vocabulary detector", str(missing)),
            (("--regions", "open-vocab", "--detector", saved, "--sam", "~/nodir-diffzoo"), "segmenter",
             os.path.expanduser("~/nodir-diffzoo"))):
        code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--editors", "sd2.tiny", "--ai-bases",
                                0, "--bases", bases, "--n", 1, *args)
        assert "generating" not in stdout + err, stdout + err
        line = one_line_exit_2(code, stdout, err)
        assert line.endswith(f" {given} does not exist (a hub id is written ORG/NAME)"), line
        assert line.startswith(f"error: {what}") and offline_empty_hub == [], line


def test_a_model_option_written_as_a_folder_of_no_saved_model_says_so_before_any_model(capsys, tmp_path,
                                                                                      offline_empty_hub):
    """--vlm . (a folder that exists but holds no model) failed at its first sample, telling the user
    to run `hf download .`; a folder given for a model holds what save_pretrained writes."""
    bases = make_bases(tmp_path / "bases", n=1)
    for args in (("--prompts", "vlm", "--vlm", "."), ("--regions", "open-vocab", "--detector", str(bases))):
        code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--editors", "sd2.tiny", "--ai-bases",
                                0, "--bases", bases, "--n", 1, *args)
        assert "generating" not in stdout + err, stdout + err
        line = one_line_exit_2(code, stdout, err)
        assert line.endswith(f" {args[3]} is a folder that holds no saved model (no config.json or "
                             "model_index.json): give the folder save_pretrained wrote, or a hub id ORG/NAME"), line
        assert offline_empty_hub == [] and not (tmp_path / "out").exists()


def test_a_model_option_given_empty_is_no_value_before_any_model(capsys, tmp_path, offline_empty_hub):
    """--vlm "$UNSET" was asked of the hub as the id '' and failed at the first sample ("hf download ")."""
    bases = make_bases(tmp_path / "bases", n=1)
    for args in (("--prompts", "vlm", "--vlm", ""), ("--regions", "open-vocab", "--detector", " "),
                 ("--regions", "open-vocab", "--sam", "")):
        code, stdout, err = cli(capsys, "generate", "--out", tmp_path / "out", "--editors", "sd2.tiny", "--ai-bases",
                                0, "--bases", bases, "--n", 1, *args)
        assert one_line_exit_2(code, stdout, err) == (f"error: {args[2]} '{args[3]}' gives no value (an unset shell "
                                                      "variable?); give one or leave the option out")
        assert not (tmp_path / "out").exists()


def test_a_card_lora_source_written_as_a_path_that_is_not_there_does_not_exist(offline_empty_hub):
    """A card's LoRA source ./loras with a weight_name was asked of the hub as a repository id."""
    import dataclasses

    from diffzoo.generators.editors.lora import resolve_lora_files
    from diffzoo.harness.core.plugins import get_registry

    card = get_registry().get("generator", "sdxl").card
    card = dataclasses.replace(card, options={**card.options, "loras": ({"source": "./loras", "weight_name": "x.st"},)})
    with pytest.raises(ConfigError, match=r"^generator 'sdxl\.\w+': LoRA file 'loras' does not exist$"):
        resolve_lora_files(card)
    assert offline_empty_hub == []


def test_a_model_of_an_unreachable_hub_is_read_from_the_cache_only(monkeypatch):
    """Without HF_HUB_OFFLINE and with no network, --vlm x hung for minutes: the hub library retried
    each file the model reads.  One request that gets no answer makes the load read the cache only."""
    import huggingface_hub

    from diffzoo.generators.editors.diffusers_editor import from_hub

    asked, loads = [], []

    def no_answer(repo_id, **kwargs):
        asked.append(repo_id)
        raise ConnectionError("[Errno -2] Name or service not known")

    class Model:
        @classmethod
        def from_pretrained(cls, model_id, local_files_only, **kwargs):
            loads.append(local_files_only)
            if not local_files_only:
                raise AssertionError("the hub was asked for each file, retried")
            raise OSError(f"{model_id} is not in the cache")

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub, "repo_info", no_answer)
    with pytest.raises(WeightsUnavailableError) as exc:
        from_hub("vision-language model", "x", Model)
    assert (asked, loads) == (["x"], [True])
    assert str(exc.value).startswith("vision-language model: weights 'x' are not in the local cache and could not be "
                                     "downloaded. Fetch them on a machine with network access, e.g. `hf download x`")


def tiny_grounding_dino(tmp_path):
    """A random-weight Grounding DINO with a character WordPiece tokenizer (built offline)."""
    import torch
    from transformers import (
        BertConfig,
        BertTokenizer,
        GroundingDinoConfig,
        GroundingDinoForObjectDetection,
        GroundingDinoImageProcessor,
        GroundingDinoProcessor,
        SwinConfig,
    )

    chars = list("abcdefghijklmnopqrstuvwxyz.")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    config = GroundingDinoConfig(
        backbone_config=SwinConfig(embed_dim=8, depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1], window_size=4,
                                   image_size=64, out_features=["stage2", "stage3", "stage4"]),
        text_config=BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=32, max_position_embeddings=64),
        d_model=32, encoder_layers=1, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=32, decoder_ffn_dim=32, num_queries=10, num_feature_levels=3, encoder_n_points=2,
        decoder_n_points=2, max_text_len=64, use_timm_backbone=False, backbone=None, use_pretrained_backbone=False,
    )  # fmt: skip
    torch.manual_seed(0)
    model = GroundingDinoForObjectDetection(config).eval()
    processor = GroundingDinoProcessor(GroundingDinoImageProcessor(size={"shortest_edge": 64, "longest_edge": 64}),
                                       BertTokenizer(str(tmp_path / "vocab.txt")))
    return model, processor


def tiny_sam():
    import torch
    from transformers import (
        SamConfig,
        SamImageProcessor,
        SamMaskDecoderConfig,
        SamModel,
        SamProcessor,
        SamPromptEncoderConfig,
        SamVisionConfig,
    )

    config = SamConfig(
        vision_config=SamVisionConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
                                      image_size=64, patch_size=8, output_channels=16, global_attn_indexes=[1],
                                      window_size=2, mlp_dim=16, num_pos_feats=8),
        prompt_encoder_config=SamPromptEncoderConfig(hidden_size=16, image_size=64, patch_size=8, mask_input_channels=4),
        mask_decoder_config=SamMaskDecoderConfig(hidden_size=16, mlp_dim=16, num_hidden_layers=2, num_attention_heads=2,
                                                 iou_head_hidden_dim=16),
    )  # fmt: skip
    torch.manual_seed(0)
    processor = SamProcessor(SamImageProcessor(size={"longest_edge": 64}, pad_size={"height": 64, "width": 64}))
    return SamModel(config).eval(), processor


def test_open_vocab_with_tiny_grounding_dino_and_sam(tmp_path):
    from diffzoo.generators.generate.openvocab import GroundingDinoDetector, OpenVocabRegions, SamSegmenter

    model, processor = tiny_grounding_dino(tmp_path)
    detector = GroundingDinoDetector(model=model, processor=processor, box_threshold=0.0, text_threshold=0.0)
    sam_model, sam_processor = tiny_sam()
    segmenter = SamSegmenter(model=sam_model, processor=sam_processor)
    image = (np.random.default_rng(0).random((48, 40, 3)) * 255).astype(np.uint8)
    found = detector.detect(image, ["cat", "dog"])
    assert found and all(0 <= d.box[0] <= d.box[2] <= 40 and 0 <= d.box[1] <= d.box[3] <= 48 for d in found)
    masks = segmenter.segment(image, [d.box for d in found[:3]])
    assert [m.shape for m in masks] == [(48, 40)] * 3 and all(m.dtype == bool for m in masks)
    names_asked = []

    def namer(im):
        names_asked.append(im.shape)
        return ["cat"]

    source = OpenVocabRegions(detector, segmenter, namer=namer, max_regions=4)
    base = type("Base", (), {"image": image})()
    regions = source.candidates(base, np.random.default_rng(0))
    assert names_asked == [(48, 40, 3)] and 1 <= len(regions) <= 4
    for i, r in enumerate(regions):
        assert r.shape == "open-vocab" and r.mask.shape == (48, 40) and r.mask.any()
        assert all(np.logical_and(r.mask, o.mask).sum() / np.logical_or(r.mask, o.mask).sum() <= 0.7
                   for o in regions[i + 1:])


class FakeDetector:
    def detect(self, image, names):
        from diffzoo.generators.generate.openvocab import Detection

        return [Detection((2.0, 2.0, 14.0, 14.0), names[0], 0.9), Detection((16.0, 18.0, 30.0, 30.0), names[-1], 0.8),
                Detection((2.0, 2.0, 14.0, 13.0), names[0], 0.5)]  # near-duplicate of the first


class FakeSegmenter:
    def segment(self, image, boxes):
        out = []
        for x0, y0, x1, y1 in boxes:
            m = np.zeros(image.shape[:2], bool)
            m[int(y0):int(y1), int(x0):int(x1)] = True
            out.append(m)
        return out


def test_open_vocab_glue_in_the_pipeline_with_injected_models(tmp_path):
    from diffzoo.generators.generate.openvocab import OpenVocabRegions

    bases = make_bases(tmp_path / "bases", n=2, h=32, w=32)
    source = OpenVocabRegions(FakeDetector(), FakeSegmenter(), vocabulary=("vase", "kite"))
    config = pipeline.GenerateConfig(out=tmp_path / "out", editors=("a",), bases=str(bases), regions="open-vocab",
                                     n=3, ai_fraction=0, turns=(0, 1), size=32)
    summary = pipeline.generate(config, editors={"a": FakeEditor(1)}, regions=source)
    assert summary.accepted == 3
    for row in manifest(tmp_path / "out"):
        assert sorted(t["object"] for t in row["turns"]) == ["kite", "vase"]
        assert sorted(tuple(t["region"]) for t in row["turns"]) == [(2, 2, 14, 14), (16, 18, 30, 30)]


def test_vlm_roles_parse_answers_with_a_fake_model():
    from diffzoo.generators.generate.vlm import VlmObjectNamer, VlmPrompter, VlmScorer

    class FakeVL:
        model_id = "fake/vl"

        def __init__(self, answers):
            self.answers, self.questions = list(answers), []

        def ask(self, images, question):
            self.questions.append(question)
            return self.answers.pop(0)

    assert VlmObjectNamer(FakeVL(["Cat, a dog;\nred cup, cat"]))(np.zeros((8, 8, 3), np.uint8)) == ["cat", "a dog", "red cup"]
    region = _box(16, 16, 2, 8, 2, 8, "cup")
    vl = FakeVL(['"a sandy beach"', "a green parrot\nextra"])
    prompts = VlmPrompter(vl)(np.zeros((16, 16, 3), np.uint8), region, "object_addition", np.random.default_rng(0))
    assert prompts == ("a sandy beach", "a green parrot") and "(2, 2) to (8, 8)" in vl.questions[0]
    empty = VlmPrompter(FakeVL([""]))(np.zeros((16, 16, 3), np.uint8), region, "attribute_change", np.random.default_rng(0))
    assert len(empty) == 1 and "cup" in empty[0]  # template fallback names the object
    scorer = VlmScorer(FakeVL(["Score: 4", "no idea"]))
    img = np.zeros((16, 16, 3), np.uint8)
    assert scorer(img, img, region.mask, "p", "object_removal") == 4.0
    assert scorer(img, img, region.mask, "p", "object_removal") == 0.0


def test_lora_option_loads_a_lora_into_one_editor(capsys, tmp_path):
    from safetensors.torch import save_file

    from diffzoo.generators.editors.cards import SD2_TINY
    from diffzoo.generators.tiny.builders import build_tiny_pipeline
    from diffzoo.generators.tiny.components import tiny_lora_state_dict

    lora = tmp_path / "style.safetensors"
    save_file(tiny_lora_state_dict(build_tiny_pipeline(SD2_TINY), seed=3), str(lora))
    bases = make_bases(tmp_path / "bases", n=2)
    common = ["--bases", bases, "--editors", "sd2.tiny", "--n", 2, "--ai-bases", 0, "--size", 32, "--turns", "1"]
    assert cli(capsys, "generate", "--out", tmp_path / "plain", *common)[0] == 0
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "lora", *common, "--lora", lora, "--lora-scale", 0.8)
    assert code == 0, err
    plain, styled = files(tmp_path / "plain"), files(tmp_path / "lora")
    assert plain["train_copy/00000000.mask.png"] == styled["train_copy/00000000.mask.png"]  # same plan
    assert plain["train_copy/00000000.image.png"] != styled["train_copy/00000000.image.png"]  # other weights
    settings = json.loads((tmp_path / "lora" / "generate.json").read_text())["settings"]
    assert settings["loras"] == [{"editor": "sd2.tiny", "file": "style.safetensors", "bytes": lora.stat().st_size,
                                  "scale": 0.8}]
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "x", "--bases", bases, "--editors", EDITORS,
                       "--lora", lora)
    assert code != 0 and "EDITOR=FILE" in err
    code, _, err = cli(capsys, "generate", "--out", tmp_path / "x", "--bases", bases, "--editors", EDITORS,
                       "--lora", f"sdxl.tiny={tmp_path / 'missing.safetensors'}")
    assert code != 0 and err.count("error:") == 1 and "does not exist" in err
    # two for one editor: the settings listed both, and only the last was loaded
    twice = one_line_exit_2(*cli(capsys, "generate", "--out", tmp_path / "y", *common, "--lora", lora, "--lora", lora))
    assert twice == f"error: --lora sd2.tiny={lora}: sd2.tiny has a --lora already; give one per editor"
    assert not (tmp_path / "y").exists()


def test_a_lora_file_that_is_no_lora_is_refused_from_its_header_before_any_model(capsys, tmp_path):
    """Junk, or a safetensors file of no LoRA tensor, under --lora failed (exit 1) once the editor loaded."""
    import torch
    from safetensors.torch import save_file

    junk, plain = tmp_path / "junk.safetensors", tmp_path / "plain.safetensors"
    junk.write_bytes(b"junk")
    save_file({"weight": torch.zeros(2)}, str(plain))
    generate = ["generate", "--editors", "sd2.tiny", "--ai-bases", 1, "--n", 1]
    assert one_line_exit_2(*cli(capsys, *generate, "--out", tmp_path / "a", "--lora", junk)) == (
        f"error: LoRA for 'sd2.tiny': refusing to load weights file {junk}: could not be read as weights: "
        "SafetensorError: Error while deserializing header: header too small; replace it with the file from "
        "the LoRA's publisher")
    assert one_line_exit_2(*cli(capsys, *generate, "--out", tmp_path / "b", "--lora", plain)) == (
        f"error: LoRA for 'sd2.tiny': {plain} holds no LoRA: none of its 1 tensor name(s) says lora "
        "(e.g. 'weight'); give a LoRA .safetensors file")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_background_writes_run_in_order_and_their_errors_reach_the_caller():
    from diffzoo.generators.generate.layout import BackgroundWriter
    from diffzoo.harness.core.errors import StorageError

    done = []
    with BackgroundWriter(queued=2) as writer:
        for i in range(7):
            writer.submit(done.append, i)
    assert done == list(range(7))  # all written before the block ends, in order

    def fail(i):
        if i == 1:
            raise StorageError("disk full writing sample 1")
        done.append(i)

    done.clear()
    with pytest.raises(StorageError, match="sample 1"):
        with BackgroundWriter(queued=2) as writer:
            for i in range(6):
                writer.submit(fail, i)
    assert done[0] == 0 and 1 not in done and len(done) < 6  # it stopped soon after the failure
