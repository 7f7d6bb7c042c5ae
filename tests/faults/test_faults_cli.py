"""Fault suite: user errors are user errors, and skipped samples are counted
once, by reason.

Each user error prints one line that names the problem and the fix, exits
2 and never says "internal error".
"""

from __future__ import annotations

import errno
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

from diffzoo import hookimpl, open_dataset
from diffzoo.harness.core.errors import ConfigError, StorageError
from diffzoo.harness.core.fsutil import cache_root, check_usable_dir, user_path_error
from diffzoo.harness.core.plugins import get_plugin_system
from diffzoo.leaderboard.store import RecordStore

from helpers.cli import cli, one_line_exit_2
from helpers.data import make_cocoglide, make_diffseg_folder, make_tpgt
from helpers.records import make_record

pytestmark = pytest.mark.isolated_cache  # kills and tampering during CLI runs need a cache of their own



@pytest.mark.parametrize("seed", ["-1", str(2**70)])
def test_a_seed_outside_the_valid_range(capsys, seed):
    result = cli(capsys, "run", "--detector", "segformer", "--suite", "standard", "--seed", seed)
    one_line_exit_2(*result, f"--seed {seed}", "0 to 2**63 - 1")


def test_an_unknown_dataset_option_lists_the_valid_ones(capsys, diffseg_folder):
    result = cli(capsys, "run", "--detector", "segformer", "--suite", "standard", "--dataset", diffseg_folder,
                 "--dataset-option", "val_fractoin=0.3")
    line = one_line_exit_2(*result, "val_fractoin", "Did you mean 'val_fraction'?", "Valid options:")
    assert "calib_fraction" in line and "split_seed" in line


def test_each_valid_dataset_option_listed_is_one_the_user_may_pass(capsys, tmp_path):
    """The list named `path`, which `--dataset-option path=X` is refused for beside a dataset given by its path."""
    data = make_tpgt(tmp_path / "tpgt")
    line = one_line_exit_2(*cli(capsys, "data", "info", data, "--dataset-option", "pth=1"))
    values = {"name": "x", "skip_unpaired": "true", "split": "test", "split_seed": "1", "val_fraction": "0.3"}
    assert line.split("Valid options: ")[1].split(", ") == sorted(values) and "Did you mean" not in line
    for key, value in values.items():
        code, _, stderr = cli(capsys, "data", "info", data, "--dataset-option", f"{key}={value}")
        assert code == 0, stderr
    line = one_line_exit_2(*cli(capsys, "data", "info", "mini", "--dataset-option", "pth=1"))
    assert "Did you mean 'path'?" in line  # a registered name: its path is an option


@pytest.mark.parametrize("given, named", [(["--labels", "a,b"], "--labels"),
                                          (["--extra-authentic", "{au}"], "--extra-authentic")])
def test_labels_or_extra_authentic_an_adapter_does_not_take_are_named_as_typed(capsys, tmp_path, given, named):
    """The error named '--dataset-option label_space' / 'extra_authentic', options the user never typed."""
    data = make_tpgt(tmp_path / "tpgt")
    result = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", data, "--plan",
                 *(g.format(au=data / "Au") for g in given))
    line = one_line_exit_2(*result)
    assert line == (f"error: dataset adapter 'tpgt' (for {data}) does not take {named}. Valid options: name, "
                    "skip_unpaired, split, split_seed, val_fraction")


def test_extra_authentic_is_read_by_the_rule_of_every_path_option_and_given_once(capsys, tmp_path, monkeypatch):
    """--dataset-option extra_authentic=coco5k was read from the current folder only; --extra-authentic given beside
    it silently won, and --labels beside label_space= too."""
    from diffzoo.harness.run.request import RunRequest

    data = make_diffseg_folder(tmp_path / "ds")
    (data / "coco5k").mkdir()
    Image.new("RGB", (8, 8)).save(data / "coco5k" / "a.png")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "data", "info", data, "--dataset-option", "extra_authentic=coco5k")
    assert code == 0, err
    assert "\nextra_authentic: 1\n" in out
    result = cli(capsys, "data", "info", data, "--dataset-option", "extra_authentic=nope")
    assert one_line_exit_2(*result) == (f"error: extra_authentic=nope does not exist (looked for {tmp_path / 'nope'} "
                                        f"or {data / 'nope'})")
    request = RunRequest.of(detector="segformer.tiny", dataset=str(data), extra_authentic="coco5k")
    assert request.paths_not_found() == []  # reproduce and sweep look where the adapter reads it
    assert request.paths_not_found() == []
    assert RunRequest.of(detector="segformer.tiny", dataset=str(data), extra_authentic="nope").paths_not_found() == [
        ("--extra-authentic nope", Path("nope"))]
    result = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", data, "--plan",
                 "--extra-authentic", "coco5k", "--dataset-option", "extra_authentic=other")
    assert one_line_exit_2(*result) == ("error: --extra-authentic and --dataset-option extra_authentic= name one "
                                        "option; give it once")
    result = cli(capsys, "data", "info", data, "--labels", "a,b", "--dataset-option", "label_space=c,d")
    assert one_line_exit_2(*result) == "error: --labels and --dataset-option label_space= name one option; give it once"


def test_reproduce_looks_for_extra_authentic_and_labels_given_as_dataset_options_by_the_adapters_rule(tmp_path,
                                                                                                    monkeypatch):
    """`--dataset-option extra_authentic=nope` (or `label_space=none.json`) was not looked for: only the flags
    were, so reproduce and sweep went on to fail inside the adapter instead of naming the path first."""
    from diffzoo.harness.run.request import RunRequest

    data = make_diffseg_folder(tmp_path / "ds")
    (data / "coco5k").mkdir()
    (data / "mine.json").write_text("[]")
    monkeypatch.chdir(tmp_path)
    for key, there, lost in (("extra_authentic", "coco5k", "nope"), ("label_space", "mine.json", "none.json")):
        found = RunRequest.of(detector="segformer.tiny", dataset=str(data), dataset_option={key: there})
        assert found.paths_not_found() == []  # from the dataset folder, as the adapter reads it
        missing = RunRequest.of(detector="segformer.tiny", dataset=str(data), dataset_option={key: lost})
        assert missing.paths_not_found() == [(f"--dataset-option {key}={lost}", Path(lost))]


@pytest.mark.parametrize("option", ["split", "split_seed", "name"])
def test_an_empty_dataset_option_is_refused_not_read_as_a_value(capsys, tmp_path, option):
    """`--dataset-option split=$SPLIT` with SPLIT unset put every sample in a split named ''; an empty
    split_file= / metadata= was the current folder ("split_file . does not exist")."""
    data = make_tpgt(tmp_path / "tpgt")
    result = cli(capsys, "data", "info", data, "--dataset-option", f"{option}=")
    assert one_line_exit_2(*result) == (f"error: --dataset-option {option}= gives no value (an unset shell variable?); "
                                        "give one or leave the option out")
    result = cli(capsys, "data", "info", make_diffseg_folder(tmp_path / "ds"), "--dataset-option", "split_file=")
    assert "split_file= gives no value" in one_line_exit_2(*result)


@pytest.mark.parametrize("command", [["data", "info", "{data}"],
                                     ["run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset",
                                      "{data}", "--plan"]])
@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_labels_option_is_refused_not_dropped(capsys, diffseg_folder, command, value):
    """`--labels "$LABELS"` with LABELS unset was dropped: the data's own (or the paper's unverified) label map ran."""
    result = cli(capsys, *(c.format(data=diffseg_folder) for c in command), "--labels", value)
    assert one_line_exit_2(*result) == (f"error: --labels {value!r} gives no value (an unset shell variable?); give "
                                        "one or leave the option out")


def test_an_unknown_option_of_mini_is_refused_before_it_is_built(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "empty-cache"))
    result = cli(capsys, "run", "--detector", "segformer", "--suite", "standard", "--dataset-option", "nimages=5")
    one_line_exit_2(*result, "nimages", "Did you mean 'n_images'?")
    assert not (tmp_path / "empty-cache").exists()


@pytest.mark.parametrize("args", [
    ["run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", "{x}", "--plan"],
    ["run", "--detector", "segformer.tiny", "--suite", "standard", "--checkpoint", "{x}", "--plan"],
    ["run", "--detector", "segformer.tiny", "--suite", "standard", "--extra-authentic", "{x}", "--plan"],
    ["run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset-option", "split_file={x}", "--plan"],
    ["data", "info", "{x}"], ["data", "find", "{x}"], ["data", "label-pairs", "{x}", "{x}-edited"],
    ["predict", "--detector", "segformer.tiny", "{x}"],
    ["leaderboard", "validate", "{x}"], ["leaderboard", "add", "{x}", "--store", "{x}-store"],
])
def test_a_path_that_is_not_there_is_a_usage_error_whichever_command_names_it(capsys, tmp_path, args):
    # the fix is another path on the command line: exit 2, as click's own "does not exist"
    missing = str(tmp_path / "nowhere")
    result = cli(capsys, *(a.replace("{x}", missing) for a in args))
    one_line_exit_2(*result, "nowhere", "does not exist")


def test_a_path_that_holds_no_dataset_is_a_usage_error_as_a_path_that_is_not_there(capsys, tmp_path):
    # a device, a folder no adapter reads, a dangling link: the fix is another path on the command line (exit 2)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "a.txt").write_text("x")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    said = {("data", "info", "/dev/null"): "dataset path /dev/null is a character device, not a dataset folder or file",
            ("data", "info", tmp_path / "junk"): f"{tmp_path / 'junk'}: no dataset adapter recognises this layout",
            ("data", "info", tmp_path / "gone"): f"dataset path {tmp_path / 'gone'} is a broken symbolic link",
            ("data", "find", "/dev/null"): "/dev/null: cannot look for datasets in it: it is a character device"}
    for args, needle in said.items():
        one_line_exit_2(*cli(capsys, *args), needle)


def test_an_eval_dataset_that_cannot_be_opened_is_named_as_the_option_that_gave_it(capsys, tmp_path):
    # the run's --dataset opened: the refusal of a folder no adapter reads said nothing of --eval-dataset
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "a.txt").write_text("x")
    for given, said in ((tmp_path / "junk", f"{tmp_path / 'junk'}: no dataset adapter recognises this layout"),
                        (tmp_path / "gone", f"dataset path {tmp_path / 'gone'} does not exist")):
        result = cli(capsys, "run", "--detector", "segformer.tiny", "--dataset", "mini", "--suite", "cross-dataset",
                     "--eval-dataset", given, "--plan")
        assert one_line_exit_2(*result).startswith(f"error: --eval-dataset {given}: {said}")


PLAN = ["run", "--detector", "segformer.tiny", "--plan", "--dataset"]


@pytest.mark.parametrize(("command", "advice", "followed"), [
    (["data", "info"], "`data info tpgt` lists every split", ["data", "info", "tpgt"]),
    (["data", "stats", "--no-plots"], "`data stats tpgt --split val` reads that split alone",
     ["data", "stats", "tpgt", "--split", "val", "--no-plots", "--json"]),
    (["run", "--detector", "segformer.tiny", "--suite", "standard", "--plan", "--dataset"],
     "PATH:SPLIT is --eval-dataset's spelling; the suite chooses the splits a run reads",
     [*PLAN, "mini", "--suite", "cross-dataset", "--eval-dataset", "tpgt:val"])])
def test_a_dataset_given_as_path_colon_split_says_that_the_split_is_not_taken_there(capsys, tmp_path, monkeypatch,
                                                                                    command, advice, followed):
    """`--dataset tpgt:val` (the folder tpgt, --eval-dataset's spelling) said "unknown dataset 'tpgt:val'. Did you
    mean 'tpgt'?", as if the folder were not there; `data info` and `data stats` were told of --eval-dataset and a
    suite, which they do not take, and stats not of its --split.  The advice, followed, reads the split."""
    make_tpgt(tmp_path / "tpgt")
    monkeypatch.chdir(tmp_path)
    line = one_line_exit_2(*cli(capsys, *command, "tpgt:val"))
    assert line == f"error: dataset path tpgt:val does not exist; tpgt does, but a dataset is given without :val ({advice})"
    code, stdout, stderr = cli(capsys, *followed)
    assert code == 0 and ("val" in stdout or command[0] == "run"), stderr  # --plan does not list the eval splits


def test_the_name_of_an_adapter_that_reads_files_says_to_give_their_path(capsys, monkeypatch):
    # `--dataset casia2` (the registered name, no path): each such adapter was "internal error: TypeError"
    import inspect

    from diffzoo.harness.core.plugins import get_registry

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    readers = [e.name for e in get_registry().list("dataset")
               if (p := inspect.signature(e.load()).parameters.get("path")) is not None and p.default is p.empty]
    assert {"casia2", "tpgt", "sidset", "tgif", "jsonlist"} <= set(readers)
    for name in readers:
        result = cli(capsys, "data", "info", name)
        one_line_exit_2(*result, f"dataset {name!r} reads files on disk", f"--dataset /data/{name}")
    result = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset", "--eval-dataset", "tpgt",
                 "--plan")
    one_line_exit_2(*result, "dataset 'tpgt' reads files on disk")


def test_a_tilde_the_shell_left_in_a_path_is_the_home_folder_never_a_folder_named_tilde(capsys, tmp_path,
                                                                                        monkeypatch, diffseg_folder):
    # bash expands no ~ after `--out=`, and YAML never does: pathlib made a folder named "~" here
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    fast = ["--detector", "segformer.tiny", "--dataset", str(diffseg_folder), "--iterations", "2",
            "--batch-size", "2", "--crop-size", "32", "--device", "cpu"]
    code, _, err = cli(capsys, "train", *fast, "--out=~/ck")
    assert code == 0, err
    (tmp_path / "train.yaml").write_text("out: ~/from-config\n")
    code, _, err = cli(capsys, "train", *fast, "--task", "semantic", "--config", "train.yaml")
    assert code == 0, err
    assert (tmp_path / "home" / "ck" / "card.json").is_file()
    assert (tmp_path / "home" / "from-config" / "card.json").is_file()
    assert not (tmp_path / "~").exists()


def test_a_labels_file_given_with_a_tilde_the_shell_left_is_read_from_the_home_folder(capsys, tmp_path, monkeypatch,
                                                                                     diffseg_folder):
    # `--labels=~/labels.json` (and `labels: ~/labels.json` in a --config): "label file ~/labels.json does not exist"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "labels.json").write_text(json.dumps({"names": ["background", "sd2", "sdxl"]}))
    code, out, err = cli(capsys, "data", "info", diffseg_folder, "--labels=~/labels.json")
    assert code == 0, err
    assert "label_space: ['background', 'sd2', 'sdxl']" in out and "'source': '--labels'" in out


def test_a_labels_path_that_does_not_exist_is_said_not_read_as_a_class_name(capsys, tmp_path, diffseg_folder):
    # `--labels /data/labels.jsn` (a typo) became the label map (background, /data/labels.jsn): every sample of
    # another class was then skipped as mask-values
    missing = tmp_path / "labels.jsn"
    result = cli(capsys, "data", "info", diffseg_folder, "--labels", missing)
    assert one_line_exit_2(*result) == f"error: --labels={missing} does not exist (looked for {missing})"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where no one can make a folder")
def test_a_cache_where_no_folder_can_be_made_is_refused_for_everyone_root_included(capsys, monkeypatch):
    # root passes every permission check, and /proc still refuses mkdir (ENOENT): only trying tells
    monkeypatch.setenv("DIFFZOO_CACHE", "/proc/diffzoo-cache")
    result = cli(capsys, "run", "--detector", "segformer", "--suite", "standard")
    one_line_exit_2(*result, "the diffzoo cache ($DIFFZOO_CACHE) /proc/diffzoo-cache cannot be used",
                    "no folder can be made in /proc", "choose another path")


def test_a_folder_that_cannot_be_made_names_the_folder_that_refuses_it_in_full(monkeypatch, tmp_path):
    # a relative --out under a folder the user may not write: "permission denied on ." named no folder
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("os.access", lambda path, mode: False)  # what a user who is not root sees
    with pytest.raises(StorageError, match=f"--out out/new cannot be used: permission denied on {tmp_path};"):
        check_usable_dir(Path("out/new"), "--out")


def test_an_out_folder_whose_name_is_too_long_is_one_line_before_any_work(capsys, caplog, tmp_path, monkeypatch):
    """A part of --out longer than the filesystem takes passed the first check, and the run failed after its work
    with a WARNING that its log is not written before its error line, leaving the folders it made.  A writer that
    meets the name says it in the same words: it said "cannot use P: ...; choose another path"."""
    monkeypatch.chdir(tmp_path)
    out = f"o/{'x' * 300}/y"
    said = "cannot be used: the name is too long for the filesystem; choose another path (--out DIR, $DIFFZOO_CACHE)"
    assert one_line_exit_2(*cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset", "mini",
                                "--out", out)) == f"error: --out {out} {said} or fix the files there"
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(StorageError) as checked:
        check_usable_dir(Path(out), "--out")
    assert str(checked.value) == f"--out {user_path_error(OSError(errno.ENAMETOOLONG, 'File name too long', out))}"


def test_the_default_cache_follows_xdg_cache_home_when_it_is_absolute(monkeypatch, tmp_path):
    monkeypatch.delenv("DIFFZOO_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "diffzoo"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # invalid by the XDG rule: ignored
    assert cache_root() == Path.home() / ".cache" / "diffzoo"
    for blank in ("", " ", "\t"):  # no value, as unset: never a folder named " " in the current folder
        monkeypatch.setenv("DIFFZOO_CACHE", blank)
        assert cache_root() == Path.home() / ".cache" / "diffzoo"
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "own"))
    assert cache_root() == tmp_path / "own"


@pytest.mark.parametrize("args, needles", [
    (["--suite", ""], ["--suite is empty"]),
    (["--suite", " , "], ["--suite is empty"]),
    (["--bootstrap", "-1"], ["--bootstrap -1: give the number of resamples, 0 to 100,000"]),
    (["--bootstrap", "1000000000"], ["--bootstrap 1000000000: give the number of resamples, 0 to 100,000"]),
    (["--suite", "lora", "--generator", "sdxl.hyper-sd-8stp=sdxl.tiny-lora"],
     ["unknown generator 'sdxl.hyper-sd-8stp'", "Did you mean 'sdxl.hyper-sd-8step'"]),
    (["--suite", "lora", "--generator", "sdxl.hyper-sd-8step=nosuch"], ["unknown generator 'nosuch'"]),
    (["--labels", "sd2,sd2"], ["--labels: names 'sd2,sd2': editors 'sd2' and 'sd2' are one class, 'sd2'"]),
    (["--dataset-option", "calib_fraction=2"], ["calib_fraction must be in [0, 1 - val_fraction), got 2"]),
    (["--dataset-option", "n_images=0"], ["n_images must be from 1 to 100,000 (mini is the demo dataset; make a "
                                          "larger one with diffzoo generate), got 0"]),
    (["--dataset-option", "n_images=100000000"], ["n_images must be from 1 to 100,000", "got 100000000"]),
    (["--dataset-option", "n_images=two"], ["--dataset-option n_images takes an integer, got 'two'"]),
    (["--dataset-option", "seed=-3"], ["seed -3 is not a valid seed: give an integer from 0 to 2**63 - 1"]),
    (["--dataset-option", "calib_fraction=0.1=2"], ["--dataset-option calib_fraction takes a number, got '0.1=2'"]),
    (["--iterations", "0"], ["--iterations 0: must be at least 1"]),
    (["--iterations", "99999999999999999999"],  # beyond the machine integers of the ETA
     ["--iterations 99,999,999,999,999,999,999: must be at most 1,000,000,000"]),
    (["--calibration-split", "train"], ["--calibration-split train is read only with --thresholds calibrated"]),
    (["--thresholds", "calibrated", "--calibration-split", ""],  # it looked for a split named ''
     ["--calibration-split '' gives no value (an unset shell variable?)"]),
    (["--eval-dataset-option", "kinds=partial"], ["--eval-dataset-option was given, but no --eval-dataset"]),
    (["--batch-size", "-2"], ["--batch-size -2: must be at least 1"]),
    (["--crop-size", "4"], ["--crop-size 4: must be at least 8"]),
    (["--suite", "unseen-generators", "--holdout", "sd2,glide", "--holdout", "glide,sd2"],
     ["the held-out pair glide,sd2 is given twice (also as sd2,glide)"]),
    (["--suite", "unseen-generators", "--holdout", "sd2,sd2"],  # was "a held-out pair names two different editors"
     ["--holdout takes two different editor names, e.g. sd2,glide; got 'sd2,sd2'"]),
    (["--dataset-option", "calib_fraction=0.1", "--dataset-option", "calib_fraction=0.2"],
     ["--dataset-option calib_fraction is given twice"]),
    (["--suite", "lora", "--generator", "sdxl.hyper-sd-8step=sdxl.tiny-lora", "--generator",
      "sdxl.hyper-sd-8step=sd2.tiny"], ["--generator sdxl.hyper-sd-8step is given twice"]),
    (["--crop-size", "100000"], ["--crop-size 100000: a 100000 x 100000 px crop exceeds the 67,108,864-pixel limit"]),
    (["--generator", "sdxl.hyper-sd-8step=sdxl.tiny-lora"],
     ["--generator sdxl.hyper-sd-8step=sdxl.tiny-lora was given, but no case of the suites generates with "
      "'sdxl.hyper-sd-8step'"]),
])
def test_run_options_that_cannot_mean_what_they_say_are_refused_before_any_work(capsys, args, needles):
    """An empty suite (an unset shell variable) ran nothing and exited 0; a negative bootstrap and
    a misspelt --generator name (or an unknown card) were taken and ignored; an adapter's own
    option out of range exited 1; --labels said its flag twice."""
    suite = [] if "--suite" in args else ["--suite", "standard"]  # an option is given once
    code, stdout, stderr = cli(capsys, "run", "--detector", "segformer.tiny", *suite, *args, "--plan")
    line = one_line_exit_2(code, stdout, stderr, *needles)
    assert line.count("--labels") <= 1


@pytest.mark.parametrize("args, said", [
    (["run", "-d", "segformer", "--extra-authentic", "", "--plan"], "--extra-authentic was given an empty path"),
    (["run", "-d", "segformer", "--out=", "--plan"], "--out was given an empty path"),
    (["predict", "", "--checkpoint", "model"], "diffzoo predict was given an empty path as an argument"),
    (["predict", "--device", "cpu", "", "--checkpoint", "model"], "diffzoo predict was given an empty path"),
    (["--debug", "leaderboard", "list", "--store", ""], "--store was given an empty path"),
    (["leaderboard", "add", "--store", "s", ""], "diffzoo leaderboard add was given an empty path as an argument"),
    (["leaderboard", "diff", "", "records"], "an empty version name or path was given"),
    (["run", "-d", "segformer.tiny", "-s", "cross-dataset", "--eval-dataset", "mini:", "--plan"],
     "--eval-dataset 'mini:' names no split after its ':'"),  # was read as mini's default split
    (["run", "-d", "segformer.tiny", "-s", "cross-dataset", "--eval-dataset", ":val", "--plan"],
     "--eval-dataset ':val' names no dataset before its ':'"),
])
def test_an_empty_value_is_refused_never_read_as_the_current_folder(capsys, tmp_path, monkeypatch, args, said):
    monkeypatch.chdir(tmp_path)  # a folder of images and records: what pathlib makes of ""
    Image.new("RGB", (8, 8)).save(tmp_path / "photo.png")
    (tmp_path / "records").mkdir()
    one_line_exit_2(*cli(capsys, *args), said, "(an unset shell variable?)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["photo.png", "records"]



@pytest.mark.parametrize("args", [["freeze", "v1", "--detector", ""], ["freeze", "v1", "--suite", " , "],
                                  ["list", "--dataset", ""]])
def test_an_empty_leaderboard_filter_is_refused_never_read_as_no_filter(capsys, tmp_path, args):
    """``freeze v1 --detector "$DET"`` with DET unset froze every record of the store (for good:
    versions are immutable), and ``list`` listed them all."""
    store = RecordStore(tmp_path / "s")
    store.add(make_record("alpha"))
    flag = args[-2]
    one_line_exit_2(*cli(capsys, "leaderboard", *args, "--store", store.root),
                    f"{flag} is empty (an unset shell variable?): give a pattern or leave the option out")
    assert not (store.root / "versions").exists()

@pytest.mark.parametrize("value", ["", " , "])
def test_an_empty_exclude_editors_is_refused_never_read_as_excluding_none(capsys, tmp_path, monkeypatch, value):
    """``train --exclude-editors "$HELD_OUT"`` with HELD_OUT unset trained on every editor, unsaid."""
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    one_line_exit_2(*cli(capsys, "train", "-d", "segformer.tiny", "--exclude-editors", value),
                    "--exclude-editors is empty (an unset shell variable?): give editor names or leave the option out")
    assert not (tmp_path / "cache").exists()  # refused before the data was built or anything trained


@pytest.mark.parametrize("option, said", [
    ("split_seed=x", "--dataset-option split_seed takes an integer, got 'x'"),
    ("calib_fraction=abc", "--dataset-option calib_fraction takes a number, got 'abc'"),
    ("skip_unpaired=[1]", "--dataset-option skip_unpaired takes true or false, got [1]"),
    (f"split_seed={10**30}", f"split_seed {10**30} is not a valid seed: give an integer from 0 to 2**63 - 1"),
])
def test_an_adapter_option_of_the_wrong_kind_is_one_line_naming_it(capsys, diffseg_folder, option, said):
    """Each was an internal error (a TypeError inside the adapter) or, for a seed, taken as text (a
    split seed past --seed's range was taken too)."""
    result = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", diffseg_folder,
                 "--dataset-option", option, "--plan")
    one_line_exit_2(*result, said)



def test_a_split_seed_past_the_seed_range_is_refused_where_no_hash_split_reads_it(capsys, tmp_path):
    """COCOGlide is a test set: opened without val_fraction it never splits by hash, so split_seed=10**30 was
    taken (by `data info` and by the API), while DiffSeg30k refused it."""
    data = make_cocoglide(tmp_path / "cg")
    said = f"split_seed {10**30} is not a valid seed: give an integer from 0 to 2**63 - 1"
    one_line_exit_2(*cli(capsys, "data", "info", data, "--dataset-option", f"split_seed={10**30}"), said)
    with pytest.raises(ConfigError, match=re.escape(said)):
        open_dataset(str(data), split_seed=10**30)
    seed = 2**63 - 1
    assert open_dataset(str(data), split_seed=seed, val_fraction=0.5).provenance()["split"]["id"] == \
        f"diffzoo-hash-v1-seed{seed}-val50"

@pytest.mark.parametrize("value", ["True", "FALSE", "true"])
def test_a_boolean_option_takes_true_or_false_in_any_case(capsys, diffseg_folder, value):
    """The errors' hint reads skip_unpaired=True, as Python spells it; JSON alone reads `true`."""
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset",
                         diffseg_folder, "--dataset-option", f"skip_unpaired={value}", "--plan")
    assert code == 0 and "error" not in err, err


def test_data_build_of_another_dataset_names_the_one_it_builds(capsys):
    line = one_line_exit_2(*cli(capsys, "data", "build", "MINI"), "`data build` builds the demo dataset 'mini' alone")
    assert line.endswith("not 'MINI'. Did you mean 'mini'?") and "diffzoo list" not in line


def test_a_held_out_editor_the_dataset_lacks_is_named_once(capsys):
    result = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "unseen-generators", "--holdout",
                 "sd2,nosuch", "--plan")
    line = one_line_exit_2(*result, "dataset mini has no editor nosuch")
    assert line.count("nosuch") == 1


@pytest.mark.parametrize("task, said", [
    ("nosuch", "--task 'nosuch' is not a task. Tasks: binary, semantic, classification"),
    ("Binary", "--task 'Binary' is not a task. Did you mean 'binary'?"),
    ("classification", "--task classification: fcn8s.tiny serves binary, semantic, not classification"),
])
def test_plugins_check_of_a_task_that_is_none_is_a_usage_error_not_a_failed_check(capsys, task, said):
    """Each was a table of FAIL rows against the detector, exit 1."""
    one_line_exit_2(*cli(capsys, "plugins", "check", "fcn8s.tiny", "--task", task), said)


def test_list_with_a_misspelled_kind(capsys):
    line = one_line_exit_2(*cli(capsys, "list", "detektors"), "Did you mean 'detectors'?")
    assert line.count("'detectors'") == 1


def test_an_unknown_name_lists_each_available_name_once(capsys):
    line = one_line_exit_2(*cli(capsys, "run", "--detector", "segformer", "--suite", "standrd"),
                           "Did you mean 'standard'?")
    available = line.split("Available: ", 1)[1].split(";")[0].rstrip(" .").split(", ")
    assert len(available) == len(set(available)), available


class TakesATakenName:
    """Registers a fresh detector first, then a suite name diffzoo already has."""

    @hookimpl
    def register_detectors(self, register):
        register("greedy.fresh", "json:dumps", description="would be fine on its own",
                 card=SimpleNamespace(name="greedy.fresh"))

    @hookimpl
    def register_suites(self, register):
        register("standard", "json:dumps")

    @hookimpl
    def register_commands(self, cli):
        @cli.command("greedy-hello")
        def hello() -> None:
            print("hello")


def test_a_plugin_registering_a_taken_name_is_rejected_whole(capsys):
    system = get_plugin_system()
    system.pm.register(TakesATakenName(), name="greedy")
    registry = system.registry
    assert not registry.has("detector", "greedy.fresh")  # its earlier entry did not stay
    assert registry.get("suite", "standard").source == "diffzoo.harness.builtins"
    [failure] = [f for f in system.failures if f.plugin == "greedy"]
    assert "registered twice" in failure.message and "the whole plugin is skipped" in str(failure)
    assert "greedy" not in {info.name for info in system.info()}


class MisspeltDistortions:
    """Suites whose case gives its distortion a parameter it does not take, or leaves one out."""

    @hookimpl
    def register_suites(self, register):
        from diffzoo.harness.suites import Case, Suite, TrainSpec

        for name, dist, params in (("typo", "jpeg", (("qualty", 80),)), ("unset", "webp", ())):
            case = Case("q80", "binary", TrainSpec("binary"), distortion=dist, distortion_params=params)
            register(name, Suite(name, "1", "a parameter misspelt or left out", (case,)))


@pytest.mark.parametrize(("suite", "problem"), [
    ("typo", "distortion 'jpeg' cannot take the parameters {'qualty': 80}: got an unexpected keyword argument "
             "'qualty'"),
    ("unset", "distortion 'webp' cannot take the parameters {}: missing a required argument: 'quality'"),
])
def test_a_distortion_parameter_its_function_cannot_take_is_refused_before_any_work(capsys, diffseg_folder, tmp_path,
                                                                                     faulty, suite, problem):
    """A misspelt parameter of a plugin suite's case is a usage error when planned, never a failed pass mid-run."""
    get_plugin_system().pm.register(MisspeltDistortions(), name="misspelt")
    code, stdout, stderr = cli(capsys, "run", "--detector", "faulty.x", "--suite", suite, "--dataset", diffseg_folder,
                               "--out", tmp_path / "out", "--bootstrap", "0", "--device", "cpu")
    assert one_line_exit_2(code, stdout, stderr) == f"error: case {suite}/q80: {problem}"
    assert not list(tmp_path.glob("out/records/*.json"))


def test_a_full_disk_names_the_path_and_the_free_space(capsys, tmp_path, monkeypatch, record_factory):
    from diffzoo.harness.core import fsutil

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsutil.tempfile, "mkstemp", full)
    record = tmp_path / "in" / "r.json"
    record.parent.mkdir()
    record.write_text(record_factory().to_json())
    result = cli(capsys, "leaderboard", "add", record, "--store", tmp_path / "store")
    line = one_line_exit_2(*result, "disk full while writing", "free on that filesystem")
    assert str(tmp_path / "store") in line


def test_a_full_disk_inside_any_writer_is_one_line(capsys, tmp_path, monkeypatch):
    import diffzoo.leaderboard.render.text as formats

    target = tmp_path / "pub" / "leaderboard.md"

    def full(selection, fmts, out, **options):
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr(formats, "publish_formats", full)  # what `leaderboard publish` calls when it runs
    (tmp_path / "store" / "records").mkdir(parents=True)
    result = cli(capsys, "leaderboard", "publish", "--store", tmp_path / "store", "--out", tmp_path / "pub")
    one_line_exit_2(*result, f"disk full while writing {target}", "free")


def test_a_full_disk_while_writing_a_plot_names_the_plot_and_its_filesystem(tmp_path, monkeypatch):
    """A plot is written whole or not at all; when its write hits ENOSPC the message names the
    PNG and the free space of the filesystem holding it (matplotlib's own error names neither),
    and no partial PNG is left."""
    import os

    from diffzoo.harness.core import fsutil
    from diffzoo.harness.core.errors import StorageError
    from diffzoo.leaderboard.render.plots import confusion_png

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "out" / "plots" / "confusion.png"
    with pytest.raises(StorageError) as exc:
        confusion_png([[3, 1], [0, 4]], ["background", "edited"], target, title="binary")
    assert str(exc.value).startswith(f"disk full while writing {target} (")
    assert f"{fsutil.free_space(target)} on that filesystem" in str(exc.value)
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_a_full_disk_with_no_path_never_reports_another_filesystems_free_space():
    from diffzoo.harness.core.fsutil import disk_full_error

    error = disk_full_error(OSError(errno.ENOSPC, "No space left on device"))
    assert error is not None and "disk full while writing a file (free space unknown)" in str(error)


# -- skipped samples: counted once each, by reason --------------------------------------

def test_one_bad_file_is_one_skipped_sample_not_one_per_record(capsys, diffseg_folder, tmp_path, faulty):
    from diffzoo import open_dataset

    victim = open_dataset(str(diffseg_folder)).ids("val")[0]
    (diffseg_folder / "train_copy" / f"{victim}.image.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", "faulty.x", "--suite", "standard", "--dataset",
                               diffseg_folder, "--out", out, "--bootstrap", "0", "--device", "cpu")
    assert code == 0, stderr
    flat = " ".join(stdout.split())
    assert "1 sample(s) skipped: 1 corrupt" in flat, flat
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert len(records) == 3
    for r in records:
        assert r["counts"]["skipped_by_reason"] == {"corrupt": 1}, r["counts"]


def _odd_folder(root):
    """A DiffSeg30k-layout folder: four ordinary images for training and, in
    val, one of each odd kind of image or mask (see test_faults_data)."""
    import numpy as np

    from helpers.images import encode, huge_png

    d = root / "train_copy"
    d.mkdir(parents=True)
    rng = np.random.default_rng(0)

    def plain(size=32):
        return encode(Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)))

    def mask(w, h, value=0):
        return encode(Image.new("L", (w, h), value))

    colour = np.zeros((8, 8, 3), np.uint8)
    colour[0, 0] = (1, 0, 2)
    val = {
        "v-one-pixel": (encode(Image.new("RGB", (1, 1))), mask(1, 1, 1)),
        "v-tall": (encode(Image.new("RGB", (1, 400))), mask(1, 400, 1)),
        "v-wide": (encode(Image.new("RGB", (400, 1))), mask(400, 1)),
        "v-rgba": (encode(Image.new("RGBA", (16, 16))), mask(16, 16, 2)),
        "v-cmyk": (encode(Image.new("CMYK", (16, 16)), "TIFF"), mask(16, 16)),
        "v-grey16": (encode(Image.fromarray(np.full((16, 16), 600, np.uint16))), mask(16, 16, 1)),
        "v-palette": (encode(Image.new("P", (16, 16))), mask(16, 16)),
        "v-grey": (encode(Image.new("L", (16, 16), 90)), mask(16, 16, 1)),
        "v-colour-mask": (plain(8), encode(Image.fromarray(colour))),
        "v-jpeg-mask": (plain(8), encode(Image.new("L", (8, 8)), "JPEG")),
        "v-mask-size": (plain(8), mask(8, 4)),
        "v-truncated": (plain(32)[:60], mask(32, 32)),
        "v-huge": (huge_png(), mask(8, 8)),
    }
    train = {f"t{i}": (plain(), mask(32, 32, 1 + i % 2)) for i in range(4)}
    for sid, (image, m) in {**train, **val}.items():
        (d / f"{sid}.image.png").write_bytes(image)
        (d / f"{sid}.mask.png").write_bytes(m)
    (root / "labels.json").write_text(json.dumps({"names": ["background", "sd2", "sdxl"], "verified": True}))
    (root / "splits.json").write_text(json.dumps({"train": sorted(train), "val": sorted(val)}))
    return root


def test_odd_images_never_end_a_run_and_are_counted_by_reason(capsys, tmp_path, faulty):
    folder = _odd_folder(tmp_path / "odd")
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", "faulty.x", "--suite", "standard,distortions",
                               "--dataset", folder, "--out", out, "--bootstrap", "0", "--device", "cpu")
    assert code == 0, stderr
    expected = {"mask-ambiguous": 1, "mask-lossy": 1, "mask-size": 1, "corrupt": 1, "too-large": 1}
    flat = " ".join(stdout.split())
    assert "5 sample(s) skipped:" in flat, flat
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert records
    for r in records:
        assert r["counts"]["skipped_by_reason"] == expected, r["counts"]
        if r["case"]["name"] == "binary" and r["suite"]["name"] == "standard":
            assert r["counts"]["evaluated"] == 8  # the eight odd images that convert


# -- one row per result; --rerun; --out folders diffzoo did not make -------------------------

def _run(capsys, folder, out, *extra):
    return cli(capsys, "run", "--detector", "faulty.x", "--suite", "standard", "--dataset", folder, "--out", out,
               "--bootstrap", "0", "--device", "cpu", *extra)


def _rows(out):
    return sorted(p.name for p in (out / "records").glob("*.json"))


def test_the_same_run_twice_leaves_one_row_per_result(capsys, diffseg_folder, tmp_path, faulty):
    out = tmp_path / "out"
    assert _run(capsys, diffseg_folder, out)[0] == 0
    first = _rows(out)
    code, stdout, stderr = _run(capsys, diffseg_folder, out)
    assert code == 0, stderr
    assert _rows(out) == first and len(first) == 3
    assert "0 record(s) added, 3 already recorded with the same numbers" in " ".join(stdout.split())


def test_rerun_replaces_and_keeps_the_old_records(capsys, diffseg_folder, tmp_path, faulty):
    out = tmp_path / "out"
    _run(capsys, diffseg_folder, out)
    code, stdout, stderr = _run(capsys, diffseg_folder, out, "--rerun")
    assert code == 0, stderr
    assert "3 replaced" in " ".join(stdout.split())
    assert len(_rows(out)) == 3 and len(list((out / "replaced").glob("*.json"))) == 3


def test_a_rerun_that_gives_other_numbers_is_loud_and_keeps_the_stored_row(capsys, diffseg_folder, tmp_path,
                                                                           faulty):
    out = tmp_path / "out"
    _run(capsys, diffseg_folder, out)
    before = {p.name: p.read_bytes() for p in (out / "records").glob("*.json")}
    faulty(bias=1.5)  # same weights, other predictions: what nondeterminism looks like
    code, stdout, stderr = _run(capsys, diffseg_folder, out)
    assert code == 2
    assert "already recorded with different numbers" in stderr and "--rerun" in stderr
    assert "mIoU" in " ".join(stdout.split())
    assert {p.name: p.read_bytes() for p in (out / "records").glob("*.json")} == before


def test_a_run_whose_record_is_held_by_a_file_that_is_no_valid_record_says_so_and_rerun_replaces_it(
        capsys, diffseg_folder, tmp_path, faulty):
    """Never "3 already recorded with the same numbers", exit 0, the broken file kept (a sweep would run its job
    again on every sweep, each time "done")."""
    out = tmp_path / "out"
    _run(capsys, diffseg_folder, out)
    path = sorted((out / "records").glob("*.json"))[0]
    data = json.loads(path.read_text())
    data["metrics"] = {name: 0.5 for name in data["metrics"]}  # edited by hand: its digest no longer matches
    path.write_text(json.dumps(data))
    code, stdout, stderr = _run(capsys, diffseg_folder, out)
    text = " ".join(stdout.split())
    assert code == 2 and "0 record(s) added, 2 already recorded with the same numbers (one row each; --rerun " \
        "replaces them), 1 not stored: a file that is not a valid record holds its place" in text
    assert f"already recorded: {path.stem}, but the stored file is invalid (field metrics." in text
    one_line_exit_2(code, "", stderr, "1 result(s) of this run are stored in a file that is not a valid record or "
                    "fails verification (listed above)", "Re-run with --rerun")
    assert json.loads(path.read_text()) == data  # kept until asked
    code, stdout, stderr = _run(capsys, diffseg_folder, out, "--rerun")
    assert code == 0 and "3 replaced" in " ".join(stdout.split()), stderr
    code, stdout, _ = cli(capsys, "leaderboard", "verify", "--store", out)
    assert code == 0 and "3 good, 0 bad" in stdout


@pytest.mark.parametrize("args, said", [
    (["run", "-d", "segformer.tiny", "--suite", "standard", "--device", "cuda:7"], "--device cuda:7"),
    (["run", "-d", "segformer.tiny", "--suite", "standard", "--dataset", "nosuch"], "unknown dataset 'nosuch'"),
    (["train", "-d", "segformer.tiny", "--dataset", "nosuch"], "unknown dataset 'nosuch'"),
    (["data", "stats", "nosuch"], "unknown dataset 'nosuch'"),
    (["data", "stats", "mini", "--split", "nosuch"], "has no split 'nosuch'"),
])
def test_a_command_refused_while_planning_leaves_no_out_folder(capsys, tmp_path, monkeypatch, args, said):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)  # --device cuda:7 is refused on any machine
    one_line_exit_2(*cli(capsys, *args, "--out", tmp_path / "out"), said)
    assert not (tmp_path / "out").exists()


def test_an_out_folder_diffzoo_did_not_make_is_refused_before_any_work(capsys, diffseg_folder, tmp_path, faulty):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("do not touch")
    code, stdout, stderr = _run(capsys, diffseg_folder, out)
    one_line_exit_2(code, stdout, stderr, str(out), "--force")
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]
    code, stdout, stderr = _run(capsys, diffseg_folder, out, "--force")
    assert code == 0, stderr
    assert (out / "thesis.tex").read_text() == "do not touch" and len(_rows(out)) == 3


def test_force_never_overwrites_a_foreign_summary(capsys, diffseg_folder, tmp_path, faulty):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "summary.md").write_text("my notes")
    code, stdout, stderr = _run(capsys, diffseg_folder, out, "--force")
    one_line_exit_2(code, stdout, stderr, "summary.md", "never overwrites")
    assert (out / "summary.md").read_text() == "my notes"
