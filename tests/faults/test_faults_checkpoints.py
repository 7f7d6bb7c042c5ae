"""Fault suite: checkpoints, pretrained weights, resumed training and --device: kills and strangers never make diffzoo
load the wrong bytes, and a killed training run resumes to the same model."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from diffzoo.harness.core.cards import stable_hash
from diffzoo.harness.core.errors import ModelError
from diffzoo.harness.core.fsutil import sha256_file
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.runner import Runner

from helpers.cli import cli, one_line_exit_2
from helpers.hub import TINY_SEGFORMER_REPO, hub_segformer
from helpers.images import save_image

pytestmark = pytest.mark.isolated_cache  # kills writers and tampers with cached checkpoints on purpose

TASK = {"segformer.tiny": "binary", "cnnspot.tiny": "classification", "universalfakedet.tiny": "classification"}
ITERATIONS = 20  # the default resume interval is a tenth: a save every 2 steps


def _request(folder: Path, detector: str = "segformer.tiny", **kw) -> RunRequest:
    crop = 16 if detector == "segformer.tiny" else 32
    return RunRequest(detector=detector, suite="standard", dataset=str(folder), device="cpu", bootstrap=0,
                      iterations=ITERATIONS, batch_size=2, crop_size=crop, **kw)


class _Killed(BaseException):
    """Stands in for a kill in the middle of training: like a KeyboardInterrupt, not an Exception, which a
    detector's fit raising would be its plugin's error."""


class _Steps:
    """A Progress that counts the training steps a run computes and can 'kill' it at one."""

    def __init__(self, kill_at: int | None = None):
        self.calls, self.kill_at = 0, kill_at

    @contextmanager
    def task(self, description, total):
        outer = self

        class Task:
            def advance(self, n=1, **info):
                if description.startswith("training") and n:  # n = 0: a status line (e.g. features extracted)
                    outer.calls += 1
                    if outer.calls == outer.kill_at:
                        raise _Killed(f"killed at step {outer.calls}")

        yield Task()


def _train(folder: Path, detector: str = "segformer.tiny", progress=None):
    return Runner(_request(folder, detector), progress).train(TASK[detector])


def _checkpoints_dir(detector: str = "segformer.tiny") -> Path:
    return Path(os.environ["DIFFZOO_CACHE"]) / "checkpoints" / detector


_DIE = """
import json, os, sys
import safetensors.torch as st
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.runner import Runner
suffix, die_at = sys.argv[2], int(sys.argv[3])
real, calls = st.save_file, [0]
def dying(tensors, filename, *args, **kwargs):
    if str(filename).endswith(suffix):
        calls[0] += 1
        if calls[0] == die_at:  # the kill lands in the middle of writing this file
            real(tensors, filename, *args, **kwargs)
            with open(filename, "r+b") as fh:
                fh.truncate(64)
            os._exit(9)
    return real(tensors, filename, *args, **kwargs)
st.save_file = dying
Runner(RunRequest.from_dict(json.loads(sys.argv[1]))).train(sys.argv[4])
"""


def _train_and_die(folder: Path, tmp_path: Path, suffix: str, die_at: int) -> int:
    """Train segformer.tiny in another process that is killed (os._exit) while
    writing the ``die_at``-th file whose name ends in ``suffix``; its exit code."""
    done = subprocess.run([sys.executable, "-c", _DIE, json.dumps(_request(folder).to_dict()), suffix, str(die_at),
                           "binary"],
                          cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True, timeout=300)
    return done.returncode


def _tensors_equal(a: Path, b: Path) -> bool:
    x, y = load_file(str(a)), load_file(str(b))
    return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)


def _image(tmp_path: Path) -> Path:
    return save_image(tmp_path / "probe.png", np.full((32, 32, 3), 120, np.uint8))


# -- a kill during a checkpoint save -----------------------------------------------------

def test_checkpoint_save_killed_midway_is_ignored_then_cleaned(diffseg_folder, tmp_path, capsys):
    assert _train_and_die(diffseg_folder, tmp_path, "model.safetensors", 1) == 9
    left = [p for p in _checkpoints_dir().iterdir() if p.name.startswith(".")]
    assert left and all((p / "model.safetensors").exists() for p in left)  # what the kill left behind
    from diffzoo.harness.models.checkpoints import cached_checkpoints

    assert cached_checkpoints("segformer.tiny") == []
    code, _, err = cli(capsys, "predict", _image(tmp_path), "--detector", "segformer.tiny", "--device", "cpu",
                       "--out", tmp_path / "pred")
    assert code == 2 and "no checkpoint of segformer.tiny in the cache" in err
    assert not any(p.exists() for p in left)  # cleaned at the next start


def test_checkpoint_folder_still_being_written_is_neither_listed_nor_removed(monkeypatch, tmp_path):
    import safetensors.torch as st

    from diffzoo import create_detector
    from diffzoo.harness.models.checkpoints import cache_dir, cached_checkpoints

    real, seen = st.save_file, {}

    def writer_midway(tensors, filename, *args, **kwargs):  # another process looks in now
        real(tensors, filename, *args, **kwargs)
        seen["listed"] = cached_checkpoints("segformer.tiny")
        seen["kept"] = Path(filename).parent.exists()

    monkeypatch.setattr(st, "save_file", writer_midway)
    target = cache_dir("segformer.tiny", "k" * 20)
    create_detector("segformer.tiny", "binary").save(target)
    assert seen == {"listed": [], "kept": True}
    monkeypatch.setattr(st, "save_file", real)
    assert cached_checkpoints("segformer.tiny") == [target]
    assert create_detector("segformer.tiny", "binary").load(target)["sha256"] == sha256_file(target / "model.safetensors")


# -- strangers in the checkpoint cache -----------------------------------------------------

def test_run_refuses_cached_weights_changed_after_their_card(diffseg_folder):
    path = Path(_train(diffseg_folder).checkpoint.path)
    weights = path / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(ModelError) as exc:
        _train(diffseg_folder)
    message = str(exc.value)
    assert str(weights) in message and "sha256 differs" in message
    assert f"delete {path}" in message and "train it anew" in message


def test_predict_refuses_cached_weights_changed_after_their_card(diffseg_folder, tmp_path, capsys):
    from diffzoo import create_detector

    path = Path(_train(diffseg_folder).checkpoint.path)
    torch.manual_seed(5)
    other = create_detector("segformer.tiny", "binary").save(tmp_path / "other")  # another, intact model
    (path / "model.safetensors").write_bytes(other.read_bytes())  # copied over the cached one's weights
    code, _, err = cli(capsys, "predict", _image(tmp_path), "--detector", "segformer.tiny", "--device", "cpu",
                       "--task", "binary", "--out", tmp_path / "pred")
    assert code != 0 and "sha256 differs" in err and "delete" in err and "model.safetensors" in err
    assert not (tmp_path / "pred").exists() or not any((tmp_path / "pred").iterdir())


@pytest.mark.parametrize("edit", ["no sha256 in card.json", "no card.json", "card.json of another cache key"])
def test_cached_checkpoint_a_stranger_edited_is_refused_by_run_and_predict(edit, diffseg_folder, tmp_path, capsys):
    path = Path(_train(diffseg_folder).checkpoint.path)
    card = json.loads((path / "card.json").read_text())
    if edit == "no card.json":
        (path / "card.json").unlink()
    else:
        card.pop("sha256") if edit.startswith("no sha256") else card.update(cache_key="0" * 20)
        (path / "card.json").write_text(json.dumps(card))
    with pytest.raises(ModelError, match="delete"):
        _train(diffseg_folder)
    code, _, err = cli(capsys, "predict", _image(tmp_path), "--detector", "segformer.tiny", "--device", "cpu",
                       "--out", tmp_path / "pred")
    if edit == "card.json of another cache key":  # predict takes any cached model: its card is intact
        assert code == 0
    else:
        assert code != 0 and str(path) in err and "delete" in err


@pytest.mark.parametrize("field, value, shown", [("card", "segformer.tiny", '"segformer.tiny"'), ("card", None, "null"),
                                                 ("task", 5, "5"), ("label_space", ["a", "b"], '["a", "b"]'),
                                                 ("training", "x", '"x"')])
def test_a_given_checkpoint_whose_card_field_has_another_type_is_one_line(field, value, shown, tmp_path, capsys):
    """A card.json written by hand with its sha256 right (as the refusal of one without says to do)."""
    from diffzoo import create_detector

    folder = tmp_path / "mine"
    create_detector("segformer.tiny", "binary").save(folder)
    card = json.loads((folder / "card.json").read_text())
    (folder / "card.json").write_text(json.dumps({**card, field: value}))
    line = (f"error: checkpoint card {folder / 'card.json'}: {field} is {shown}, not a JSON "
            f"{'string' if field == 'task' else 'object'} as diffzoo writes it (the card was edited or made by hand); "
            "correct it, or pass the .safetensors file without a card.json")
    for command in (["run", "--detector", "segformer.tiny", "--suite", "standard", "--bootstrap", "0"],
                    ["predict", _image(tmp_path), "--detector", "segformer.tiny"]):
        code, _, err = cli(capsys, *command, "--checkpoint", folder, "--device", "cpu", "--out", tmp_path / "out")
        assert code == 1 and err.strip() == line, err


@pytest.mark.parametrize("train", ["--train", "--no-train"])
def test_a_checkpoint_of_a_task_no_case_scores_is_refused_not_replaced_by_a_training(train, tmp_path, capsys):
    from diffzoo import create_detector, open_dataset

    folder = tmp_path / "semantic"
    create_detector("segformer.tiny", "semantic", open_dataset("mini").label_space).save(folder)
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "classification", "--checkpoint",
                         folder, train, "--iterations", "2", "--batch-size", "2", "--crop-size", "16", "--device", "cpu",
                         "--bootstrap", "0", "--out", tmp_path / "out")
    assert one_line_exit_2(code, out, err) == (
        f"error: --checkpoint {folder} is a semantic model, but no case of this run scores one (they score binary "
        "models): give a checkpoint of that task, or a suite with semantic cases")
    assert not (Path(os.environ["DIFFZOO_CACHE"]) / "checkpoints" / "segformer.tiny").exists()  # nothing trained


def test_a_semantic_checkpoint_of_another_label_map_is_refused_by_the_plan(tmp_path, capsys):
    """Its card.json names its classes: the plan passed, and the run scored the binary model first and failed only
    when loading this one."""
    import dataclasses

    from diffzoo import create_detector, open_dataset

    space = open_dataset("mini").label_space
    names = space.names
    other = dataclasses.replace(space, names=(names[0], names[2], names[1], *names[3:]))
    create_detector("segformer.tiny", "semantic", other).save(tmp_path / "semantic")
    create_detector("segformer.tiny", "binary").save(tmp_path / "binary")
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--checkpoint",
                         tmp_path / "binary", "--checkpoint", tmp_path / "semantic", "--no-train", "--device", "cpu",
                         "--bootstrap", "0", "--plan", "--out", tmp_path / "out")
    assert code == 1 and err.strip() == (f"error: checkpoint {tmp_path / 'semantic'} has classes {list(other.names)}, "
                                         f"the dataset has {list(names)}"), err


def test_a_checkpoint_without_card_for_two_tasks_is_refused_before_any_work(tmp_path, capsys):
    """A bare model.safetensors says no task: scored as a binary model first, it then failed to fit the semantic one."""
    from diffzoo import create_detector, open_dataset

    create_detector("segformer.tiny", "binary").save(tmp_path / "full")
    (bare := tmp_path / "bare").mkdir()
    (bare / "model.safetensors").write_bytes((tmp_path / "full" / "model.safetensors").read_bytes())
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--checkpoint", bare,
                         "--no-train", "--device", "cpu", "--bootstrap", "0", "--out", tmp_path / "out")
    assert one_line_exit_2(code, out, err) == (
        f"error: --checkpoint {bare} has no card.json naming its task, and this run would score it as a binary and "
        "as a semantic model: a checkpoint holds one task's model; give it with the card.json diffzoo wrote beside "
        "it, or a suite whose cases score one task")
    assert "evaluating" not in err and not (tmp_path / "out").exists()
    semantic = tmp_path / "semantic"  # beside a checkpoint whose card names the other task, it is the one left
    create_detector("segformer.tiny", "semantic", open_dataset("mini").label_space).save(semantic)
    runner = Runner(RunRequest(detector="segformer.tiny", suite="standard", checkpoint=[bare, semantic], train=False,
                               device="cpu", bootstrap=0))
    assert {job.task: runner.models.given_checkpoint(job) for job in runner.plan.jobs} == {"binary": bare,
                                                                                           "semantic": semantic}


@pytest.mark.parametrize("cut, said", [(0, "header too small"), (2, "incomplete metadata, file not fully covered")])
def test_an_empty_or_cut_short_checkpoint_is_refused_by_the_plan_as_unreadable(cut, said, tmp_path, capsys):
    """A download cut short, given bare: the plan refused it as having "no card.json naming its task" (a
    two-task suite), or let it pass to fail when loaded; its header is read at the plan."""
    from diffzoo import create_detector

    create_detector("segformer.tiny", "binary").save(tmp_path / "full")
    data = (tmp_path / "full" / "model.safetensors").read_bytes()
    bare = tmp_path / "bare.safetensors"
    bare.write_bytes(data[:len(data) // cut] if cut else b"")
    line = f"error: checkpoint {bare} is not a readable safetensors file: Error while deserializing header: {said}"
    for suite in ("standard", "classification"):
        assert one_line_exit_2(*cli(capsys, "run", "--detector", "segformer.tiny", "--suite", suite, "--no-references",
                                    "--checkpoint", bare, "--no-train", "--device", "cpu", "--plan", "--out",
                                    tmp_path / "out")) == line


# -- pretrained weights: hashed at first use, checked ever after ------------------------


def _tiny_card():
    return get_registry().get("detector", "segformer.tiny").card


def _pretrained(**card_fields):
    from diffzoo.plugins.segformer.model import SegformerDetector

    card = dataclasses.replace(_tiny_card(), name="segformer.hashed", weights=TINY_SEGFORMER_REPO, **card_fields)
    return SegformerDetector(card, "binary", BINARY, pretrained=True)


def _recorded(digest: str) -> list[Path]:
    cache = Path(os.environ["DIFFZOO_CACHE"])
    return [p for p in cache.rglob("*.json") if digest in p.read_text()]


def test_first_use_of_pretrained_weights_records_their_sha256(offline_empty_hub, tmp_path):
    weights = hub_segformer(tmp_path / "hf" / "hub", seed=0)
    _pretrained()
    assert _recorded(sha256_file(weights))
    _pretrained()  # the same bytes again: accepted


def test_pretrained_weights_changed_after_first_use_are_refused(offline_empty_hub, tmp_path):
    hub = tmp_path / "hf" / "hub"
    before = sha256_file(hub_segformer(hub, seed=0))
    _pretrained()
    weights = hub_segformer(hub, seed=1)  # the file is replaced in the HF cache
    after = sha256_file(weights)
    with pytest.raises(ModelError) as exc:
        _pretrained()
    message = str(exc.value)
    assert "segformer.hashed" in message and str(weights) in message and before in message and after in message


def test_pretrained_weights_are_checked_against_the_published_sha256(offline_empty_hub, tmp_path):
    weights = hub_segformer(tmp_path / "hf" / "hub", seed=0)
    digest = sha256_file(weights)
    with pytest.raises(ModelError) as exc:
        _pretrained(weights_sha256="f" * 64)
    message = str(exc.value)
    assert "segformer.hashed" in message and str(weights) in message and digest in message and "f" * 64 in message
    _pretrained(weights_sha256=digest)  # the published bytes: accepted


# -- training resumes after a kill ----------------------------------------------------------

@pytest.mark.parametrize("detector", list(TASK))
def test_killed_training_resumes_from_its_last_save_to_identical_weights(detector, diffseg_folder, tmp_path,
                                                                         monkeypatch):
    killed = _Steps(kill_at=7)
    with pytest.raises(_Killed):
        _train(diffseg_folder, detector, killed)
    resumed = _Steps()
    out = _train(diffseg_folder, detector, resumed)
    assert resumed.calls == ITERATIONS - 6  # from the state saved after step 6
    assert not any(p.name.endswith(".resume") for p in _checkpoints_dir(detector).iterdir())
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "uninterrupted"))
    whole = _train(diffseg_folder, detector)
    assert Path(out.checkpoint.path).name == Path(whole.checkpoint.path).name  # one cache key
    assert _tensors_equal(Path(out.checkpoint.path, "model.safetensors"),
                          Path(whole.checkpoint.path, "model.safetensors"))
    assert out.checkpoint.training["losses"] == whole.checkpoint.training["losses"]


def test_kill_while_saving_the_resume_state_keeps_the_previous_one(diffseg_folder, tmp_path, monkeypatch):
    assert _train_and_die(diffseg_folder, tmp_path, "state.safetensors", 3) == 9  # the save after step 6
    resumed = _Steps()
    out = _train(diffseg_folder, progress=resumed)
    assert resumed.calls == ITERATIONS - 4  # from the intact state saved after step 4
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "uninterrupted"))
    whole = _train(diffseg_folder)
    assert _tensors_equal(Path(out.checkpoint.path, "model.safetensors"),
                          Path(whole.checkpoint.path, "model.safetensors"))


def test_a_resume_state_that_no_longer_fits_the_model_is_ignored_and_training_starts_over(diffseg_folder, tmp_path,
                                                                                          monkeypatch, caplog):
    with pytest.raises(_Killed):
        _train(diffseg_folder, progress=_Steps(kill_at=7))
    # the state of the model as its code was before: one tensor under another name (its hash made to match)
    for step in _checkpoints_dir().glob("*.resume/step-*"):
        tensors = load_file(str(step / "state.safetensors"))
        name = next(k for k in tensors if k.startswith("model/"))
        tensors[name.replace("model/", "model/old.")] = tensors.pop(name)
        save_file(tensors, str(step / "state.safetensors"))
        doc = {**json.loads((step / "state.json").read_text()), "sha256": sha256_file(step / "state.safetensors")}
        doc.pop("digest")  # the state as diffzoo writes it: its hashes made to match
        (step / "state.json").write_text(json.dumps({**doc, "digest": stable_hash(doc, 64)}))
    again = _Steps()
    out = _train(diffseg_folder, progress=again)
    assert again.calls == ITERATIONS  # from the start, not stopped by the old state for ever
    assert "it does not fit the model (1 tensor(s) missing from the checkpoint" in caplog.text
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "uninterrupted"))
    assert _tensors_equal(Path(out.checkpoint.path, "model.safetensors"),
                          Path(_train(diffseg_folder).checkpoint.path, "model.safetensors"))


def test_a_resume_state_given_as_checkpoint_says_the_training_did_not_finish(tmp_path, capsys):
    """It said only "checkpoint folder ... has no model.safetensors"."""
    from diffzoo.harness.models.resume import Resume, resume_dir

    states = resume_dir("segformer.tiny", "k")
    Resume(states).save(8, {"model/w": torch.zeros(1)}, {})  # a training killed after its save at step 8
    for given in (states / "step-000000008", states):
        code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--checkpoint",
                             given, "--device", "cpu", "--bootstrap", "0", "--out", tmp_path / "out")
        assert one_line_exit_2(code, out, err) == (
            f"error: checkpoint folder {given} has no model.safetensors: it is the resume state of a training that "
            "did not finish, saved after step 8; run the same `diffzoo train` (or `diffzoo run`) command again to "
            "finish it, and pass the checkpoint it writes (`diffzoo train` prints its folder)")


@pytest.mark.parametrize("edit", [{"stream": None}, {"losses": "abc"}, {"optimizer": [1]}])
def test_a_resume_state_whose_json_was_edited_is_ignored_and_training_starts_over(diffseg_folder, tmp_path,
                                                                                  monkeypatch, caplog, edit):
    """state.json is not hashed with the tensors: an edited one was resumed, "its fit raised KeyError:
    'stream'" blamed the detector, and every later run resumed it again."""
    with pytest.raises(_Killed):
        _train(diffseg_folder, progress=_Steps(kill_at=7))
    for step in _checkpoints_dir().glob("*.resume/step-*"):
        doc = json.loads((step / "state.json").read_text())
        (step / "state.json").write_text(json.dumps({**doc, **edit}))
    again = _Steps()
    out = _train(diffseg_folder, progress=again)
    assert again.calls == ITERATIONS  # from the start
    assert "state.json changed after it was written" in caplog.text
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "uninterrupted"))
    assert _tensors_equal(Path(out.checkpoint.path, "model.safetensors"),
                          Path(_train(diffseg_folder).checkpoint.path, "model.safetensors"))


def test_save_interval_changes_neither_the_cache_key_nor_the_model(diffseg_folder, tmp_path, monkeypatch):
    from diffzoo.harness.core.errors import ConfigError

    every_step = Runner(_request(diffseg_folder, save_every=1)).train("binary")
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "other"))
    never = Runner(_request(diffseg_folder, save_every=0)).train("binary")
    assert Path(every_step.checkpoint.path).name == Path(never.checkpoint.path).name
    assert every_step.checkpoint.sha256 == never.checkpoint.sha256
    card = json.loads(Path(never.checkpoint.path, "card.json").read_text())
    assert not any("save" in key for key in card["train_config"])
    with pytest.raises(ConfigError, match="--save-every -1"):
        Runner(_request(diffseg_folder, save_every=-1))


def test_a_file_where_the_detectors_cache_folder_goes_is_one_line(diffseg_folder, capsys):
    """$DIFFZOO_CACHE/checkpoints/DETECTOR a file: an internal FileExistsError from the training lock."""
    _checkpoints_dir().parent.mkdir(parents=True)
    _checkpoints_dir().write_text("not a folder")
    code, out, err = cli(capsys, "train", "-d", "segformer.tiny", "--dataset", diffseg_folder, "--iterations", "2",
                         "--batch-size", "2", "--crop-size", "16", "--device", "cpu")
    assert one_line_exit_2(code, out, err) == (
        f"error: {_checkpoints_dir()} cannot be used: a part of the path is a file, not a folder; choose another path "
        "(--out DIR, $DIFFZOO_CACHE) or fix the files there")


@pytest.mark.parametrize("losses", [{"first_loss": None}, {"final_loss": "x"}, {}])
def test_train_over_a_cached_card_whose_losses_were_edited_prints_its_summary(losses, diffseg_folder, capsys):
    """The summary line of `diffzoo train` reads the cached card's ``training``: a value that is no number is '?'."""
    args = ("train", "-d", "segformer.tiny", "--dataset", diffseg_folder, "--iterations", "2", "--batch-size", "2",
            "--crop-size", "16", "--device", "cpu")
    assert cli(capsys, *args)[0] == 0
    card_file = next(_checkpoints_dir().glob("*/card.json"))
    card = json.loads(card_file.read_text())
    card["training"] = {**{k: v for k, v in card["training"].items() if k not in ("first_loss", "final_loss")}, **losses}
    card_file.write_text(json.dumps(card))
    code, out, err = cli(capsys, *args)
    assert code == 0 and "internal error" not in err, err
    assert "loss ? -> final loss ?" in " ".join(out.split())


def test_train_over_a_cached_model_whose_log_end_line_was_edited_prints_its_summary(diffseg_folder, capsys):
    """The last line of `diffzoo train` reads the ``end`` line of the model's log.jsonl: a time that is no number is '?'."""
    args = ("train", "-d", "segformer.tiny", "--dataset", diffseg_folder, "--iterations", "2", "--batch-size", "2",
            "--crop-size", "16", "--device", "cpu")
    assert cli(capsys, *args)[0] == 0
    log_file = next(_checkpoints_dir().glob("*.train/log.jsonl"))
    lines = log_file.read_text().splitlines()
    lines[-1] = json.dumps({**json.loads(lines[-1]), "train_seconds": None, "validation_seconds": "x"})
    log_file.write_text("\n".join(lines) + "\n")
    code, out, err = cli(capsys, *args)
    assert code == 0 and "internal error" not in err, err
    assert "; ? s of training steps, ? s of validation" in " ".join(out.split())


# -- section 7: --device ---------------------------------------------------------------------

@pytest.mark.parametrize("device", ["tpu", "", "cuda:x", "cuda:", "gpu", " cpu"])
def test_unknown_device_is_a_user_error(device, diffseg_folder, capsys):
    code, _, err = cli(capsys, "run", "--detector", "segformer.tiny", "--dataset", diffseg_folder,
                       "--device", device, "--bootstrap", "0")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "internal error" not in err
    assert repr(device) in lines[0] and "auto, cpu, cuda, cuda:N" in lines[0]


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_written_files_and_checkpoint_folders_get_the_modes_the_umask_gives(tmp_path, mask):
    """Atomic writes go through mkstemp/mkdtemp (0600/0700): what is renamed into place gets the
    mode a plain open/mkdir would, so a shared result is readable where the umask says so."""
    import stat

    from diffzoo import create_detector
    from diffzoo.harness.core.fsutil import atomic_write_bytes, atomic_write_text

    old = os.umask(mask)
    try:
        written = [atomic_write_text(tmp_path / "a.json", "{}"), atomic_write_bytes(tmp_path / "b.png", b"x")]
        weights = create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    finally:
        os.umask(old)
    assert weights.parent == tmp_path / "ck"
    for path in [*written, weights, weights.parent / "card.json"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, path
    assert stat.S_IMODE(weights.parent.stat().st_mode) == 0o777 & ~mask
