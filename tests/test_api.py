"""diffzoo.evaluate / diffzoo.train: the public Python entry points, and the CLI on top of them."""

import json
import signal
import subprocess
import sys

import numpy as np
import pytest

import diffzoo
from diffzoo.harness.core.errors import ConfigError, StorageError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.runner import run
from diffzoo.leaderboard.store import RecordStore

from helpers.cli import cli, one_line

FAST = dict(device="cpu", iterations=40, batch_size=4, crop_size=32, bootstrap=0)


def test_evaluate_runs_stores_and_summarizes(diffseg_folder, tmp_path):
    out = tmp_path / "out"
    result = diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder), out=out,
                              **FAST)
    assert sorted(r.body.case_name for r in result.records) == ["binary", "image", "semantic"]
    assert [o.status for o in result.outcomes] == ["added"] * 3
    assert sorted(r.id for r in RecordStore(out).load().records) == sorted(r.id for r in result.records)
    assert result.written["summary.md"] == out / "summary.md" and (out / "summary.md").is_file()
    assert result.dataset.fingerprint() == result.plans[0].fingerprint
    assert result.conflicts == [] and result.summary is not None

    # the same call again: the cached model, the same records, nothing added
    again = diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder), out=out,
                             **FAST)
    assert [o.status for o in again.outcomes] == ["present"] * 3
    assert not any(o.differs for o in again.outcomes)
    assert [r.id for r in again.records] == [r.id for r in result.records]
    assert [r.body.metrics for r in again.records] == [r.body.metrics for r in result.records]


def test_a_run_leaves_a_log_of_what_it_did_and_said_in_its_out_folder(diffseg_folder, tmp_path):
    out = tmp_path / "out"
    val = next(p for p in sorted((diffseg_folder / "train_copy").glob("*.image.png")))
    val.write_bytes(val.read_bytes()[:60])  # a truncated image: skipped, with a warning
    first = diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder), out=out,
                             **FAST)
    (log,) = (out / "logs").glob("*-run.log")
    text = log.read_text()
    fingerprint = first.plans[0].fingerprint
    for needle in (f"INFO diffzoo.run: diffzoo {diffzoo.__version__} (Python", '"detector": "segformer.tiny"',
                   f"dataset {first.dataset.name} (fingerprint {fingerprint})", "plan segformer.tiny [binary] on",
                   "passes segformer.tiny [binary]: 1 model pass(es)", "finished 40/40 in", "  loss ",
                   "evaluating segformer.tiny [binary] on", "done in", "3 record(s) (3 added)"):
        assert needle in text, needle
    assert "WARNING diffzoo.harness" in text and val.name.split(".")[0] in text  # the skipped sample, as warned


def test_a_run_that_stops_after_claiming_its_folder_logs_why(diffseg_folder, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the store went away")

    monkeypatch.setattr("diffzoo.api._store", broken)
    with pytest.raises(RuntimeError, match="went away"):
        diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder),
                         out=tmp_path / "out", **FAST)
    (log,) = (tmp_path / "out" / "logs").glob("*-run.log")
    text = log.read_text()
    assert "ERROR diffzoo.run: stopped: RuntimeError: the store went away" in text
    assert "Traceback (most recent call last)" in text  # a bug's traceback is kept for its report
    with pytest.raises(ConfigError):  # refused while planning: no folder, so no log either
        diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder),
                         out=tmp_path / "new", dataset_option={"split": "nosuch"}, **FAST)
    assert not (tmp_path / "new").exists()


def test_a_name_in_a_log_line_never_forges_or_colours_a_line_of_the_log(tmp_path, monkeypatch):
    """A sample or file name holding ESC sequences, a CR or a line break is written as its
    visible characters into a command's log, as on the console: one record, one line."""
    import logging

    from diffzoo.harness.core.runlog import RunLog

    monkeypatch.setattr(sys, "argv", ["diffzoo", "run", "--out", "a\rb=c"])
    path = tmp_path / "x.log"
    logged = RunLog(path, lambda: path)
    with logged.attached():
        logged.note_command()
        logging.getLogger("diffzoo.harness.data").warning("skipping corrupt sample: %s",
                                                          "evil\x1b[31mRED\nINFO diffzoo.run: done")
    text = path.read_text()
    assert "\x1b" not in text and "\r" not in text and len(text.splitlines()) == 2
    assert text.splitlines()[1].endswith(r"skipping corrupt sample: evil\x1b[31mRED\nINFO diffzoo.run: done")
    assert r"--out 'a\rb=c'" in text.splitlines()[0]


def test_a_sigterm_is_logged_and_still_ends_the_process_as_sigterm(tmp_path):
    """A scheduler's SIGTERM at a time limit leaves its line in the log; the process still ends by it."""
    script = tmp_path / "job.py"
    script.write_text(
        "import logging, os, signal, sys, time\n"
        "from pathlib import Path\n"
        "logging.basicConfig(format='%(levelname)s %(name)s: %(message)s')\n"  # the console, as the CLI's
        "from diffzoo.harness.core.runlog import RunLog\n"
        "path = Path(sys.argv[1])\n"
        "logged = RunLog(path, lambda: path)\n"
        "with logged.attached():\n"
        "    watched = signal.getsignal(signal.SIGTERM) != signal.SIG_DFL\n"
        "print('watched', watched, 'restored', signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True)\n"
        "with logged.attached():\n"
        "    logged.note('evaluating')\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(60)\n"
        "print('not reached')\n")
    log = tmp_path / "job.log"
    proc = subprocess.run([sys.executable, str(script), str(log)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGTERM and "not reached" not in proc.stdout, proc.stderr
    assert proc.stdout.splitlines() == ["watched True restored True"]  # the default again after the block
    lines = log.read_text().splitlines()
    assert "evaluating" in lines[0] and lines[1].endswith("ERROR diffzoo.run: stopped: SIGTERM received")
    assert proc.stderr.strip() == "ERROR diffzoo.run: stopped: SIGTERM received"  # said where the user looks, too


def test_a_users_own_logs_in_a_forced_out_folder_are_left_alone_and_the_run_goes_on(diffseg_folder, tmp_path,
                                                                                   caplog):
    out = tmp_path / "out"
    (out / "logs").mkdir(parents=True)
    (out / "logs" / "mine.txt").write_text("the user's")
    result = diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder), out=out,
                              force=True, **FAST)
    assert [o.status for o in result.outcomes] == ["added"] * 3
    assert [p.name for p in (out / "logs").iterdir()] == ["mine.txt"]
    assert (out / "logs" / "mine.txt").read_text() == "the user's"
    assert "is not written from here on" in caplog.text and "before diffzoo claimed it with --force" in caplog.text


def test_evaluate_gives_the_runners_numbers(diffseg_folder, tmp_path):
    """evaluate() adds no logic of its own to the numbers: the records equal the runner's."""
    result = diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder), **FAST)
    direct = run(RunRequest(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder),
                            device="cpu", bootstrap=0, iterations=40, batch_size=4, crop_size=32, recipe="native"))
    assert [r.to_json() for r in result.records] != []
    assert ([json.loads(r.to_json())["metrics"] for r in result.records]
            == [json.loads(r.to_json())["metrics"] for r in direct.records])
    assert [r.id for r in result.records] == [r.id for r in direct.records]
    assert result.outcomes == [] and result.store is None  # no out: nothing written


def test_on_plan_sees_the_plan_before_any_training(diffseg_folder, tmp_path, monkeypatch):
    class Stop(Exception):
        pass

    seen = []

    def stop(result):
        seen.append([job.key for job in result.plans[0].jobs])
        raise Stop

    cache = tmp_path / "cache"
    monkeypatch.setenv("DIFFZOO_CACHE", str(cache))
    with pytest.raises(Stop):
        diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder), on_plan=stop,
                         **FAST)
    assert len(seen) == 1 and len(seen[0]) == 2  # binary (+ image) and semantic models planned
    assert not (cache / "checkpoints").exists()  # and none trained


@pytest.mark.parametrize("option, value, flag", [
    ("checkpoint", [""], "--checkpoint"), ("extra_authentic", "", "--extra-authentic"), ("weights", "", "--weights"),
    ("out", "", "--out")])
def test_an_empty_path_or_weights_is_refused_not_read_as_the_current_folder_or_dropped(option, value, flag):
    """evaluate(checkpoint=[""]) read the current folder as the checkpoint; extra_authentic="" and weights="" (an
    unset variable) were dropped unsaid: the run trained a model in place of the release asked for."""
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate(detector="segformer.tiny", plan_only=True, **{option: value})
    assert str(error.value) == f"{flag} '' gives no value (an unset shell variable?); give one or leave the option out"


@pytest.mark.parametrize("entry", [diffzoo.evaluate, diffzoo.train])
def test_an_out_of_another_kind_is_one_config_error_naming_it(entry, tmp_path):
    """evaluate(out=5) and train(out=5) stopped with a TypeError from pathlib."""
    with pytest.raises(ConfigError) as error:
        entry(detector="segformer.tiny", dataset=str(tmp_path / "none"), out=5)
    assert str(error.value) == "--out takes a path, got 5"


@pytest.mark.parametrize("only, said", [
    ("image", "only= takes a list of pairs, got 'image'"),
    (("standard", "clean"), "only= takes a list of pairs, got ('standard', 'clean')"),
    (3, "only= takes a list of pairs, got 3"),
])
def test_only_of_another_kind_than_a_list_of_pairs_is_one_config_error(only, said):
    """evaluate(only="image") stopped with a TypeError from `in`; one pair alone planned no case, unsaid."""
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate(detector="segformer.tiny", plan_only=True, only=only)
    assert str(error.value) == said
    cases = diffzoo.evaluate(detector="segformer.tiny", plan_only=True, only={("standard", "image")},
                             references=False).plans[0].jobs
    assert [case.key.case for job in cases for case in job.cases] == ["image"]  # a set of pairs, as reproduce gives


def test_only_with_reference_detectors_is_refused_not_run_with_every_case_of_theirs():
    """evaluate(only=...) planned the main detector's one case and every case of the references (paper's)."""
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate(detector="segformer.tiny", plan_only=True, only={("standard", "image")})
    assert str(error.value) == ("only= limits the cases of segformer.tiny alone, and the reference detectors (cnnspot, "
                                "universalfakedet.tiny) would run every case of theirs: pass references=False with only=")
    plans = diffzoo.evaluate(detector="segformer.tiny", suite="standard", plan_only=True, only={("standard", "image")})
    assert len(plans.plans) == 1  # suites that name no reference: only= is the whole run


@pytest.mark.parametrize("only, said", [
    ([("nosuite", "binary")], "only= ('nosuite', 'binary'): this run has no suite 'nosuite'; its suites: standard."),
    ([("standard", "binary"), ("standart", "binary")],
     "only= ('standart', 'binary'): this run has no suite 'standart'; its suites: standard. Did you mean 'standard'?"),
    ([("standard", "imag")], "only= ('standard', 'imag'): suite 'standard' has no case 'imag'; its cases: binary, "
     "semantic, image. Did you mean 'image'?"),
    ([], "only= names no (suite, case) pair; give one, or leave only= out for every case"),
])
def test_only_naming_a_suite_or_case_the_run_has_not_is_refused_with_those_it_has(only, said):
    """evaluate(only=[("nosuite", "x")]) planned no case and said nothing."""
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate(detector="segformer.tiny", suite="standard", plan_only=True, only=only)
    assert str(error.value) == said


GIVEN_AS_PROGRESS = "progress= takes a Progress (an object with a task(description, total) method), got "


@pytest.mark.parametrize("entry, keyword, value, said", [
    (entry, keyword, value, said) for entry in (diffzoo.evaluate, diffzoo.train) for keyword, value, said in [
        ("progress", 3, GIVEN_AS_PROGRESS + "3"),
        ("progress", True, GIVEN_AS_PROGRESS + "True"),
        ("on_plan", 3, "on_plan= takes a function, got 3"),
    ]] + [(diffzoo.evaluate, "on_result", "print", "on_result= takes a function, got 'print'")])
def test_a_progress_or_hook_of_another_kind_is_one_config_error_before_any_work(entry, keyword, value, said):
    """evaluate(progress=3) was taken (and failed where a bar was drawn); on_plan=3 was a TypeError."""
    with pytest.raises(ConfigError) as error:
        entry(detector="segformer.tiny", **{"plan_only": True} if entry is diffzoo.evaluate else {}, **{keyword: value})
    assert str(error.value) == said


@pytest.mark.parametrize("holdout, said", [
    (("sd2", "glide"), "got 'sd2' in ('sd2', 'glide'): each item is one pair, as in [('sd2', 'glide')]"),
    (["sd2,glide", "kolors"], "got 'kolors' in ['sd2,glide', 'kolors']: each item is one pair, as in [('sd2', 'glide')]"),
    (["sd2"], "got 'sd2'"),
])
def test_a_holdout_item_that_is_no_pair_is_refused_saying_holdout_is_a_list_of_pairs(holdout, said):
    """evaluate(holdout=("sd2", "glide")), one pair given whole, said "got 'sd2'", as if sd2 had been given alone."""
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate(detector="segformer.tiny", plan_only=True, holdout=holdout)
    assert str(error.value) == f"--holdout takes two different editor names, e.g. sd2,glide; {said}"


@pytest.mark.parametrize("option", ["dataset_option", "generator"])
def test_a_key_value_mapping_of_a_blank_key_is_refused_as_a_blank_key_value_item_is(option):
    """evaluate(dataset_option={"": 1}) said "dataset 'mini' does not take --dataset-option ." (naming no option)."""
    flag = "--" + option.replace("_", "-")
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate(detector="segformer.tiny", plan_only=True, **{option: {" ": "1"}})
    assert str(error.value) == f"{flag} takes KEY=VALUE, got the key ' ' in {{' ': '1'}}"


@pytest.mark.parametrize("holdout", [{}, {"sd2": "glide"}])
def test_a_holdout_mapping_is_refused_as_no_list_of_pairs(holdout):
    """evaluate(holdout={}) was read by its keys: {} held nothing out, unsaid; {"sd2": "glide"} said "got 'sd2'"."""
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate(detector="segformer.tiny", plan_only=True, holdout=holdout)
    assert str(error.value) == f"--holdout takes a list of pairs, got {holdout!r}"


@pytest.mark.parametrize("option, value, said", [
    ("references", "no", "--references takes true or false, got 'no'"),
    ("rerun", "no", "--rerun takes true or false, got 'no'"),
    ("force", 0, "--force takes true or false, got 0"),
    ("plan_only", "yes", "--plan takes true or false, got 'yes'"),
    ("strict", "no", "--strict takes true or false, got 'no'"),  # the request's own, by the same rule
    ("allow_train_overlap", 1, "--allow-train-overlap takes true or false, got 1"),
])
def test_a_bool_option_given_another_kind_from_python_is_refused(option, value, said):
    """evaluate(references="no") ran the reference detectors, rerun="no" said "rerun=True acts on the store"."""
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate(detector="segformer.tiny", **{"plan_only": True, option: value})
    assert str(error.value) == said
    plan = diffzoo.evaluate(detector="segformer.tiny", suite="classification", references="false", plan_only="true")
    assert len(plan.plans) == 1  # "true" and "false" as a KEY=VALUE option spells them: no reference detector


def test_unknown_options_are_named(diffseg_folder):
    with pytest.raises(ConfigError, match="unknown option.*iteration\\b.*options are:.*iterations"):
        diffzoo.evaluate(detector="segformer.tiny", dataset=str(diffseg_folder), iteration=3)


@pytest.mark.parametrize("entry, given, unknown, said", [
    (diffzoo.evaluate, {"plan": True}, "plan", " plan: Did you mean 'plan_only'?"),
    (diffzoo.evaluate, {"reference": False}, "reference", " reference: Did you mean 'references'?"),
    (diffzoo.train, {"tasks": "binary"}, "tasks", " tasks: Did you mean 'task'?"),
    (diffzoo.train, {"bootstrap": 5, "nope": 1}, "nope", ""),
    (diffzoo.train, {"request": {"nope": 1}}, "nope", ""),
])
def test_an_unknown_keyword_is_named_with_the_entry_points_own_keywords(tmp_path, entry, given, unknown, said):
    """evaluate(plan=True) listed the request's options alone, never plan_only; train(nope=1) said
    "train() does not read nope, an option of evaluate()", which it is not."""
    with pytest.raises(ConfigError) as error:
        entry(detector="segformer.tiny", dataset=str(tmp_path / "none"), **given)
    assert str(error.value).startswith(f"unknown option(s) {unknown}; options are: ")
    assert str(error.value).endswith(f"workers.{said}")  # the options listed, in order, then the closest
    assert (" bootstrap," in str(error.value)) == (entry is diffzoo.evaluate)  # train() lists what it reads


def test_train_refuses_released_weights_which_it_would_return_untrained():
    """train(weights="released:NAME") returned the release, copied to out= as if it were a trained model."""
    with pytest.raises(ConfigError) as error:
        diffzoo.train(detector="dinov3iml.tiny", weights="released:cat-lora-r32", checkpoint=["x.pth"])
    assert str(error.value) == ("train() trains a model, and weights='released:cat-lora-r32' names released weights, "
                                "which are never trained: score them with evaluate() (diffzoo run --weights)")


def test_train_refuses_released_weights_before_it_opens_the_dataset(tmp_path):
    """train() opened the dataset before it refused the release: a missing dataset was said instead."""
    with pytest.raises(ConfigError) as error:
        diffzoo.train(detector="dinov3iml.tiny", dataset=str(tmp_path / "none"), weights="released:cat-lora-r32",
                      checkpoint=["x.pth"], device="cpu")
    assert str(error.value) == ("train() trains a model, and weights='released:cat-lora-r32' names released weights, "
                                "which are never trained: score them with evaluate() (diffzoo run --weights)")


def test_train_refuses_an_out_that_is_no_checkpoint_folder_before_it_opens_the_dataset(tmp_path):
    """train(out=FILE) opened the dataset and planned before it refused the folder, naming no option."""
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ConfigError) as error:
        diffzoo.train(detector="segformer.tiny", dataset=str(tmp_path / "none"), out=tmp_path / "afile", device="cpu")
    assert str(error.value) == (f"--out {tmp_path / 'afile'} exists and is not a checkpoint folder; give a new or "
                                "empty folder")


@pytest.mark.parametrize("options, said", [
    ({"holdout": [("sd2", "sdxl")]}, "train() does not read holdout, an option of evaluate() (train() holds editors "
     "out with exclude_editors=); leave it out"),
    ({"suite": "standard", "bootstrap": 5}, "train() does not read bootstrap, suite, options of evaluate(); leave them "
     "out"),
    ({"checkpoint": ["model"]}, "train() trains a model, and checkpoint=['model'] names a trained one: score it with "
     "evaluate() (diffzoo run --checkpoint)"),
    ({"request": {"holdout": ["sd2,sdxl"], "seed": 3}}, "train() does not read holdout, an option of evaluate() "
     "(train() holds editors out with exclude_editors=); leave it out"),
    ({"request": {"batch-size": 2, "bootstrap": 5}}, "train() does not read bootstrap, an option of evaluate(); leave "
     "it out"),  # batch-size is --batch-size, as a --config file spells it
])
def test_train_refuses_an_option_it_does_not_read_before_it_opens_the_dataset(tmp_path, options, said):
    """train(holdout=...) trained on every editor unsaid, train(suite=...) was a TypeError, and
    train(checkpoint=...) said "no case of this run scores one (they score  models)"; a request
    mapping's keys are options as the keywords are."""
    with pytest.raises(ConfigError) as error:
        diffzoo.train(detector="segformer.tiny", dataset=str(tmp_path / "none"), device="cpu", **options)
    assert str(error.value) == said


@pytest.mark.parametrize("excluded, said", [
    (3, "--exclude-editors takes a list, got 3"),
    ({"sd2": 1}, "--exclude-editors takes a list, got {'sd2': 1}"),
    ([None], "--exclude-editors takes text, got None"),
])
def test_train_refuses_exclude_editors_of_another_kind_before_it_opens_the_dataset(tmp_path, excluded, said):
    """train(exclude_editors=3) was a TypeError, {"sd2": 1} held sd2 out by the mapping's key and [None] an
    editor named 'None'."""
    with pytest.raises(ConfigError) as error:
        diffzoo.train(detector="segformer.tiny", dataset=str(tmp_path / "none"), exclude_editors=excluded)
    assert str(error.value) == said


def test_train_refuses_an_out_under_a_file_before_it_opens_the_dataset(tmp_path):
    """train(out=FILE/x) trained the model, then ended in an internal FileExistsError copying it."""
    (tmp_path / "afile").write_text("x")
    with pytest.raises(StorageError) as error:
        diffzoo.train(detector="segformer.tiny", dataset=str(tmp_path / "none"), out=tmp_path / "afile" / "x",
                      device="cpu")
    assert str(error.value) == (f"--out {tmp_path / 'afile' / 'x'} cannot be used: a part of the path is a file, not a "
                                "folder; choose another path (--out DIR, $DIFFZOO_CACHE) or fix the files there")


def test_train_refuses_an_out_holding_another_trainings_checkpoint_before_training(tmp_path, monkeypatch):
    """train(out=DIR) wrote over the checkpoint of another detector or config in DIR, unsaid; the
    same training again (found in the cache) replaces its own copy."""
    from helpers.data import make_tpgt

    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    data, out = make_tpgt(tmp_path / "data"), tmp_path / "ckpt"
    fast = dict(dataset=str(data), out=out, device="cpu", iterations=2, batch_size=2, crop_size=32)
    first = diffzoo.train(detector="segformer.tiny", **fast)
    with pytest.raises(ConfigError) as error:
        diffzoo.train(detector="segformer.tiny", **{**fast, "iterations": 3})
    other = diffzoo.train(detector="segformer.tiny", **{**fast, "iterations": 3, "out": None}).job.key
    assert str(error.value) == (f"--out {out} holds a checkpoint of segformer.tiny [binary] (cache key {first.job.key}), "
                                f"not of this training (cache key {other}), and the copy would replace it; give another "
                                "folder, or remove it")
    assert diffzoo.train(detector="segformer.tiny", **fast).checkpoint.source == "cache"
    (out / "card.json").unlink()  # weights alone: whose they are cannot be told
    with pytest.raises(ConfigError) as error:
        diffzoo.train(detector="segformer.tiny", **fast)
    assert str(error.value) == (f"--out {out} holds model.safetensors without its card.json, not of this training "
                                f"(cache key {first.job.key}), and the copy would replace it; give another folder, "
                                "or remove it")


def test_train_refuses_a_task_its_detector_has_not_before_it_opens_the_dataset(tmp_path):
    """train(task="classification") of a segmentation card opened the dataset first: a missing one was said."""
    with pytest.raises(ConfigError) as error:
        diffzoo.train(detector="segformer.tiny", dataset=str(tmp_path / "none"), task="classification", device="cpu")
    assert str(error.value) == "segformer.tiny cannot be trained for task 'classification'; it supports binary, semantic"


@pytest.mark.parametrize("task, said", [
    ("Binary", "--task 'Binary' is not a task. Did you mean 'binary'? Tasks: binary, semantic, classification"),
    ("nosuch", "--task 'nosuch' is not a task. Tasks: binary, semantic, classification"),
])
def test_train_refuses_a_task_that_is_no_task_as_every_task_option_does(tmp_path, task, said):
    """An unknown task was said to be one the detector "cannot be trained for", with no suggestion."""
    with pytest.raises(ConfigError) as error:
        diffzoo.train(detector="segformer.tiny", dataset=str(tmp_path / "none"), task=task, device="cpu")
    assert str(error.value) == said


def test_the_cli_run_is_evaluate_printed(diffseg_folder, tmp_path, capsys, monkeypatch):
    """`diffzoo run` calls diffzoo.evaluate with its options as one RunRequest."""
    import diffzoo.api as api  # what the command calls when it runs (it imports no torch before)

    calls = []
    real = api.evaluate

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "evaluate", spy)
    out = tmp_path / "out"
    code, text, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset",
                     str(diffseg_folder), "--out", str(out), "--device", "cpu", "--iterations", "40",
                     "--batch-size", "4", "--crop-size", "32", "--bootstrap", "0")
    assert code == 0, err
    assert len(calls) == 1
    args, kwargs = calls[0]
    request = kwargs["request"]
    assert (request.detector, request.suite, request.dataset) == ("segformer.tiny", "standard", str(diffseg_folder))
    assert kwargs["out"] == out and request.iterations == 40 and request.recipe == "native"
    assert "3 record(s) added" in text
    stored = sorted(r.id for r in RecordStore(out).load().records)
    python = diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder), **FAST)
    assert stored == sorted(r.id for r in python.records)


def test_train_is_the_runs_training(diffseg_folder, tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))  # an empty cache: this test trains
    trained = diffzoo.train(detector="segformer.tiny", dataset=str(diffseg_folder), task="binary",
                            out=tmp_path / "ckpt", device="cpu", iterations=40, batch_size=4, crop_size=32)
    assert trained.checkpoint.source == "trained" and trained.copy is not None and trained.copy.exists()
    result = diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder), **FAST)
    binary = next(r for r in result.records if r.body.case_name == "binary")
    assert binary.data["detector"]["checkpoint_sha256"] == trained.checkpoint.sha256  # found in the cache


def test_plan_only_says_the_passes_and_does_no_work(diffseg_folder, tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("DIFFZOO_CACHE", str(cache))
    result = diffzoo.evaluate(detector="segformer.tiny", suite="standard,distortions", dataset=str(diffseg_folder),
                              out=tmp_path / "out", plan_only=True, **FAST)
    assert result.records == [] and result.outcomes == []
    assert not (cache / "checkpoints").exists() and not (tmp_path / "out").exists()
    plan = result.plans[0]
    val = len(result.dataset.ids("val"))
    distortions = get_registry().get("suite", "distortions").load()
    settings = {(c.distortion, tuple(c.distortion_params)) for c in distortions.cases}
    # the binary model: the undistorted pass (standard and the clean cases) + one per other setting
    n_binary = len(settings | {("none", ())})
    n_semantic = len({(c.distortion, tuple(c.distortion_params)) for c in distortions.cases
                      if c.task == "semantic"} | {("none", ())})
    assert plan.pass_lines() == [
        f"segformer.tiny [binary]: {n_binary} model pass(es), {n_binary * val} image reads of {result.dataset.name}:val",
        f"segformer.tiny [semantic]: {n_semantic} model pass(es), {n_semantic * val} image reads of {result.dataset.name}:val",
    ]

    code, text, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset",
                          str(diffseg_folder), "--out", str(tmp_path / "out2"), "--device", "cpu", "--plan")
    assert code == 0, err
    assert f"passes segformer.tiny [binary]: 1 model pass(es), {val} image reads of {result.dataset.name}:val" in text
    assert f"passes segformer.tiny [semantic]: 1 model pass(es), {val} image reads of {result.dataset.name}:val" in text
    assert "record(s) added" not in text and not (tmp_path / "out2").exists()
    assert not (cache / "checkpoints").exists()


def test_a_plan_refuses_an_out_folder_the_run_would_refuse(diffseg_folder, tmp_path, capsys, monkeypatch):
    """`run --plan --out c.yaml/sub` (or a place no folder can be made) printed a plan, as the run then failed."""
    from helpers.cli import one_line_exit_2

    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    (tmp_path / "c.yaml").write_text("x: 1")
    run = ["run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", str(diffseg_folder), "--plan",
           "--device", "cpu"]
    out = tmp_path / "c.yaml" / "sub"
    assert one_line_exit_2(*cli(capsys, *run, "--out", out)) == (
        f"error: --out {out} cannot be used: a part of the path is a file, not a folder; choose another path "
        "(--out DIR, $DIFFZOO_CACHE) or fix the files there")
    assert one_line_exit_2(*cli(capsys, *run, "--out", "/proc/x")).startswith("error: --out /proc/x cannot be used: ")


def test_an_out_folder_the_dataset_reads_from_is_refused(diffseg_folder, tmp_path, capsys, monkeypatch):
    """`run --dataset DATA --out DATA/Tp` wrote plots where the next open of DATA read them as
    tampered images; the default `--out` of a run started in DATA is a new folder no layout reads."""
    from diffzoo.leaderboard.outdir import claim_output_dir

    from helpers.cli import one_line_exit_2
    from helpers.data import make_tpgt

    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    data = make_tpgt(tmp_path / "DATA")
    run = ["run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", str(data), "--plan",
           "--device", "cpu"]
    for out in (data / "Tp" / "o", data / "Tp", data, tmp_path / "DATA" / "Gt" / ".." / "Au"):
        assert one_line_exit_2(*cli(capsys, *run, "--out", out)) == (
            f"error: --out {out} lies in the folder of the dataset {data}, whose files diffzoo reads: what it writes "
            "there would be read as the dataset's the next time; choose a folder outside it (or a new one directly "
            "in it)")
    authentic = tmp_path / "au"  # every image below it is read: a new folder in it too
    (authentic / "a").mkdir(parents=True)
    (authentic / "a" / "x.png").write_bytes((data / "Au" / "real1.jpg").read_bytes())
    diffseg = ["run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", str(diffseg_folder),
               "--extra-authentic", str(authentic), "--plan", "--device", "cpu", "--out", authentic / "new"]
    assert one_line_exit_2(*cli(capsys, *diffseg)) == (
        f"error: --out {authentic / 'new'} lies in the folder of --extra-authentic {authentic}, whose files diffzoo "
        "reads: what it writes there would be read as the dataset's the next time; choose a folder outside it")
    monkeypatch.chdir(data)
    assert cli(capsys, *run[:-4], ".", "--plan", "--device", "cpu")[0] == 0  # the default --out, new
    claim_output_dir(data / "diffzoo-out")
    assert cli(capsys, *run[:-4], ".", "--plan", "--device", "cpu")[0] == 0  # and once a run made it


@pytest.mark.parametrize("given, said", [
    ({"rerun": True}, "rerun=True acts on the store at out=, and no out= is given: give out=DIR, or leave it out"),
    ({"rerun": True, "force": True}, "rerun=True and force=True act on the store at out=, and no out= is given: "
     "give out=DIR, or leave them out"),
])
def test_rerun_or_force_without_out_is_refused_not_left_unread(tmp_path, given, said):
    """evaluate(rerun=True) without out= ran, stored nothing and replaced nothing, unsaid."""
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(tmp_path / "none"), **given)
    assert str(error.value) == said


def test_paths_and_lists_are_taken_where_the_api_asks_for_text(diffseg_folder, tmp_path, monkeypatch):
    """A Python caller passes a Path for a dataset, a list for the suites, and a comma text for
    the held-out editors, as the command line spells them; a value of no such kind is refused."""
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    assert diffzoo.open_dataset(diffseg_folder).fingerprint() == diffzoo.open_dataset(str(diffseg_folder)).fingerprint()
    result = diffzoo.evaluate(detector="segformer.tiny", suite=["standard", "distortions"], dataset=diffseg_folder,
                              plan_only=True, **FAST)
    assert result.plans[0].dataset.fingerprint() == diffzoo.open_dataset(diffseg_folder).fingerprint()
    assert {c.suite.name for job in result.plans[0].jobs for c in job.cases} == {"standard", "distortions"}
    request = RunRequest.of(detector="segformer.tiny", dataset=diffseg_folder, suite=["standard", "lora"])
    assert (request.dataset, request.suite) == (str(diffseg_folder), "standard,lora")
    with pytest.raises(ConfigError, match="--iterations takes an integer, got '40'"):
        diffzoo.evaluate(detector="segformer.tiny", dataset=diffseg_folder, plan_only=True, iterations="40")
    # numpy's integers (a seed drawn by np.random) are integers, stored as Python's ("takes an integer, got 3")
    numbered = RunRequest.of(detector="segformer.tiny", seed=np.int64(3), iterations=np.int32(40))
    assert numbered.to_dict()["seed"] == 3 and type(numbered.seed) is type(numbered.iterations) is int
    # a request may be a mapping, as a --config file gives it; an option given still wins
    as_dict = diffzoo.evaluate(request={"detector": "segformer.tiny", "suite": "lora", "dataset": str(diffseg_folder),
                                        **FAST}, suite="standard", plan_only=True)
    assert as_dict.request == RunRequest.of(detector="segformer.tiny", suite="standard", dataset=diffseg_folder,
                                            **FAST)
    with pytest.raises(ConfigError, match="request= takes a RunRequest or a mapping of its fields, got str"):
        diffzoo.evaluate(request="segformer.tiny", plan_only=True)
    # its keys as a --config file's: the flag's spelling or the field's (a loaded run.yaml), never a TypeError
    loaded = diffzoo.evaluate(request={"detector": "segformer.tiny", "dataset": str(diffseg_folder), "--batch-size": 2,
                                       "crop-size": 32, "iterations": 3}, suite="standard", plan_only=True)
    assert (loaded.request.batch_size, loaded.request.crop_size) == (2, 32)
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate(request={"detector": "segformer.tiny", "batch-size": 2, "batch_size": 3}, plan_only=True)
    assert str(error.value) == "request=: 'batch-size' and 'batch_size' are one option; keep one"
    with pytest.raises(ConfigError, match="^unknown option\\(s\\) 1; options are: allow_train_overlap"):
        diffzoo.evaluate(request={"detector": "segformer.tiny", 1: 2}, plan_only=True)


def test_a_dataset_can_name_the_reference_detectors_run_on_it():
    """mini declares its stand-in for UniversalFakeDetect's ViT-L/14 (random features
    either way offline); the record then names the detector that ran."""
    from diffzoo.generators.datasets.mini import MINI_REFERENCES
    from diffzoo.harness.core.plugins import get_registry
    from diffzoo.harness.run.references import reference_requests
    from diffzoo.harness.run.request import RunRequest
    from diffzoo.harness.suites.paper import REFERENCE_DETECTORS

    suites = [get_registry().get("suite", "classification").load()]
    request = RunRequest(detector="segformer", suite="classification")
    plain = [r.detector for r in reference_requests(request, suites)]
    assert plain == list(REFERENCE_DETECTORS)
    swapped = [r.detector for r in reference_requests(request, suites, MINI_REFERENCES)]
    assert swapped == ["cnnspot", "universalfakedet.tiny"]
    assert all(r.suite == "classification" for r in reference_requests(request, suites, MINI_REFERENCES))


def test_every_type_evaluate_and_train_answer_with_is_exported():
    """What ``evaluate()`` and ``train()`` return, and every type their fields and properties
    hold, down to a plan's cases and a summary's table cells, is a name of ``diffzoo`` (or of
    ``diffzoo.plugin``, the authoring surface): a user never imports an internal module to
    name what the API gave them."""
    import dataclasses
    import typing

    import diffzoo.plugin

    exported = {getattr(m, n) for m in (diffzoo, diffzoo.plugin) for n in m.__all__}
    seen: set[type] = set()
    internal: dict[str, str] = {}

    def walk(tp, via):
        if typing.get_origin(tp) is not None:
            for arg in typing.get_args(tp):
                walk(arg, via)
            return
        if not isinstance(tp, type) or tp in seen or not tp.__module__.startswith("diffzoo"):
            return
        seen.add(tp)
        if tp not in exported:
            internal[f"{tp.__module__}.{tp.__qualname__}"] = via
        if dataclasses.is_dataclass(tp) or hasattr(tp, "_fields"):
            for name, hint in typing.get_type_hints(tp).items():
                if not name.startswith("_"):
                    walk(hint, f"{via}.{name}")
        for name, value in vars(tp).items():
            if isinstance(value, property) and not name.startswith("_"):
                walk(typing.get_type_hints(value.fget).get("return"), f"{via}.{name}")

    walk(diffzoo.Evaluation, "Evaluation")
    walk(diffzoo.TrainOutput, "TrainOutput")
    for function in (diffzoo.evaluate, diffzoo.train):  # what a caller hands them: a Progress to report to
        for name, hint in typing.get_type_hints(function).items():
            walk(hint, f"{function.__name__}({name})")
    walk(diffzoo.Progress, "Progress")
    assert internal == {}
    assert {diffzoo.PassSpec, diffzoo.CaseKey, diffzoo.Table, diffzoo.Cell} <= seen  # the walk reached them


def test_the_plan_says_where_each_model_comes_from_and_refuses_what_would_fail(diffseg_folder, tmp_path, capsys,
                                                                              monkeypatch):
    """Trained now, loaded from the cache, or a given checkpoint; `--no-train` with no model, and a
    `--checkpoint` of another detector, fail at planning (they failed only when the run reached them)."""
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    run = ["run", "--suite", "standard", "--dataset", str(diffseg_folder), "--device", "cpu", "--plan",
           "--iterations", "2", "--batch-size", "2", "--crop-size", "32"]  # the training below: one cache key

    def models(text):
        return [line.rsplit("; ", 1)[1] for line in text.splitlines() if line.startswith("plan ")]

    code, text, err = cli(capsys, *run, "--detector", "segformer.tiny")
    assert code == 0 and models(text) == \
        ["trained now", "trained now"], text
    code, _, err = cli(capsys, *run, "--detector", "segformer.tiny", "--no-train")
    assert code == 1 and "error: no binary checkpoint for segformer.tiny on" in err and "drop --no-train" in err

    trained = diffzoo.train(detector="segformer.tiny", dataset=str(diffseg_folder), task="binary", device="cpu",
                            iterations=2, batch_size=2, crop_size=32)
    code, text, err = cli(capsys, *run, "--detector", "segformer.tiny")
    assert code == 0 and models(text) == \
        ["loaded from the cache", "trained now"], text
    code, text, err = cli(capsys, *run, "--detector", "segformer.tiny", "--no-train")
    assert code == 1 and "no semantic checkpoint" in err  # the binary model is cached, the semantic one is not
    code, text, err = cli(capsys, *run, "--detector", "segformer.tiny", "--checkpoint", trained.checkpoint.path)
    assert code == 0 and f"; checkpoint {trained.checkpoint.path}" in one_line(text) and "; trained now" in text
    code, _, err = cli(capsys, *run, "--detector", "fcn8s.tiny", "--checkpoint", trained.checkpoint.path)
    assert code == 1 and f"checkpoint {trained.checkpoint.path} is for detector 'segformer.tiny', not " \
                         "'fcn8s.tiny'" in one_line(err)


def test_a_request_of_no_mapping_or_no_detector_is_refused_saying_so():
    for data in ([], "segformer.tiny", [("detector", "segformer.tiny")]):
        with pytest.raises(ConfigError) as error:
            RunRequest.from_dict(data)  # type: ignore[arg-type]
        assert str(error.value) == ("RunRequest.from_dict takes a mapping of option names to values (to_dict's form), "
                                    f"got {type(data).__name__}")
    for made in (lambda: RunRequest(), lambda: RunRequest(detector=None, suite="standard")):  # type: ignore[arg-type]
        with pytest.raises(ConfigError) as error:
            made()
        assert str(error.value) == "a run needs a detector: --detector NAME (or detector: NAME in --config)"
