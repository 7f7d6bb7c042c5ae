"""Fault suite: the text files a user hands diffzoo (a ``--config``, a ``--labels`` map, a
dataset's ``splits.json`` and ``manifest.jsonl``, a ``.zip`` to sniff) are read as the store's
files are: only regular files, never blocking on a FIFO, with a size and a nesting bound; a
refused file is one line naming it, exit 2, never a hang or "internal error: RecursionError".

Each command runs in a subprocess with a timeout, so that a regression that blocks fails
instead of hanging the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import one_line_exit_2
from helpers.data import make_diffseg_folder

DEEP_JSON = "[" * 10_000 + "]" * 10_000
DEEP_YAML = "a: " + "[" * 5_000 + "]" * 5_000


def diffzoo(tmp_path: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "DIFFZOO_CACHE": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "diffzoo", *map(str, args)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)


def one_line(result: subprocess.CompletedProcess, *words: str) -> str:
    return one_line_exit_2(result.returncode, result.stdout, result.stderr, *words)


@pytest.mark.parametrize("kind", ["fifo", "deep-json", "deep-yaml"])
def test_a_config_that_is_a_fifo_or_nested_too_deep_is_one_line(tmp_path, kind):
    path = tmp_path / ("run.yaml" if kind != "deep-json" else "run.json")
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text(DEEP_JSON if kind == "deep-json" else DEEP_YAML)
    line = one_line(diffzoo(tmp_path, "run", "--config", path), "--config", path.name)
    assert ("FIFO" in line) if kind == "fifo" else ("deeper than 100 levels" in line)


def test_a_config_over_a_megabyte_is_one_line_before_it_is_parsed(tmp_path):
    """A 50 MB --config was parsed whole (42 s for one of comments; 5 minutes for a mapping of 64 MB),
    where options fill a few kB."""
    path = tmp_path / "run.yaml"
    path.write_text("detector: segformer.tiny\n# " + "x" * 50_000_000 + "\n")
    assert one_line(diffzoo(tmp_path, "run", "--config", path, "--plan")) == (
        f"error: --config {path} holds more than the 1.0 MB diffzoo reads from such a file (50.0 MB)")


@pytest.mark.parametrize("body, kind", [("- detector\n- segformer.tiny\n", "an array"), ("segformer.tiny\n", "a string"),
                                         ("[1, 2]\n", "an array"), ("3\n", "a number")])
def test_a_config_that_is_no_mapping_names_what_it_is_in_words_of_the_file(tmp_path, body, kind):
    """A config of another kind was said to be a Python type ("got list", "got str")."""
    path = tmp_path / "run.yaml"
    path.write_text(body)
    assert one_line(diffzoo(tmp_path, "run", "--config", path, "--plan")) == (
        f"error: --config {path}: must be a mapping of option names to values (key: value lines), not {kind}")


def _laughs(levels: int) -> str:
    """A "billion laughs" YAML: each list nine aliases of the one before (9**levels values)."""
    lines = ["dataset_option:", '  a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("body, said", [
    (_laughs(9), "holds 490,329,066 values (an alias *NAME counts each time it is used); diffzoo reads at most "
                 "100,000"),
    ("dataset_option: &loop {self: *loop}\n", "holds a list or mapping that contains itself"),
    ("dataset_option: {" + ", ".join(f"k{i}: 0" for i in range(50_000)) + "}\n", "holds 100,003 values (an alias"),
])
def test_a_config_that_expands_through_its_aliases_is_one_line(tmp_path, body, said):
    """Aliases share what their anchor built: loading is cheap, but logging or checking the options
    walked every copy (minutes, then MemoryError); a self-containing one never ends.  A file of as many
    values written out is refused as such (it was said to expand "through its aliases", having none)."""
    path = tmp_path / "run.yaml"
    path.write_text(body)
    one_line(diffzoo(tmp_path, "run", "--detector", "segformer.tiny", "--config", path), path.name, said)
    path.write_text(_laughs(3))  # 9**3 values: read
    from diffzoo.harness.core.fsutil import read_yaml

    assert len(read_yaml(path.read_text(), "x")["dataset_option"]["a2"]) == 9


@pytest.mark.parametrize("command, body, needles", [
    ("run", "detector: {segformer.tiny: 1}", ["--config", "--detector takes text, got {'segformer.tiny': 1}"]),
    ("run", "iterations: lots", ["--config", "--iterations takes an integer, got 'lots'"]),
    ("run", "iterations: 1.5", ["--config", "--iterations takes an integer, got 1.5"]),
    ("run", 'iterations: "3"', ["--config", "--iterations takes an integer, got '3'"]),
    ("run", "iterations: true", ["--config", "--iterations takes an integer, got True"]),
    ("run", "seed: '3'", ["--config", "--seed takes an integer, got '3'"]),  # text, as every integer option says it
    # a value out of range names the file as one of the wrong kind does
    ("run", "seed: -1", ["--config", "--seed -1 is not a valid seed: give an integer from 0 to 2**63 - 1"]),
    ("run", "bootstrap: -1", ["--config", "--bootstrap -1: give the number of resamples"]),
    ("run", "iterations: 0", ["--config", "--iterations 0: must be at least 1"]),
    ("run", "workers: -1", ["--config", "--workers"]),
    ("run", "log_every: 0", ["--config", "--log-every"]),
    ("run", "thresholds: sometimes", ["--config", "--thresholds 'sometimes': choose one of"]),
    ("run", "device: 0", ["--config", "--device '0' is not a device diffzoo can use; give one of auto, cpu, cuda"]),
    ("train", "device: tpu", ["--config", "--device 'tpu' is not a device diffzoo can use"]),
    ("train", "seed: -1", ["--config", "--seed -1 is not a valid seed"]),
    ("train", "seed: '3'", ["--config", "--seed takes an integer, got '3'"]),
    ("run", "suite: {a: 1}", ["--config", "--suite takes text, got {'a': 1}"]),
    ("run", "eval_dataset: 5", ["--config", "--eval-dataset takes a list, got 5"]),
    ("run", "checkpoint: [null]", ["--config", "--checkpoint takes a path, got None"]),
    ("run", "labels: [[sd2], glide]", ["--config", "--labels takes text, got [['sd2'], 'glide']"]),
    ("run", "train: 'yes'", ["--config", "--train takes true or false, got 'yes'"]),
    ("run", "holdout: [5]", ["--config", "--holdout takes two different editor names", "got 5"]),
    ("run", "holdout: [sd2, glide]", ["--config", "got 'sd2' in ['sd2', 'glide']: each item is one pair"]),
    ("run", "holdout: {sd2: glide}", ["--config", "--holdout takes a list of pairs, got {'sd2': 'glide'}"]),
    ("run", "dataset_option: 5", ["--config", "--dataset-option takes a list, got 5"]),
    # a card name is text: a mapping was read as its repr, "unknown generator \"{'a': 1}\""
    ("run", "generator: {sdxl: {a: 1}}", ["--config", "--generator takes text, got {'a': 1}"]),
    ("run", "out: [a]", ["--config", "--out takes a path, got ['a']"]),
    ("run", "plan: 5", ["--config", "--plan takes true or false, got 5"]),
    ("sweep", "dataset: {a: 1}", ["--config", "dataset takes a list, got {'a': 1}"]),
    ("sweep", "dataset: [mini, {a: 1}]", ["--config", "--dataset takes text, got {'a': 1}"]),
    ("sweep", "time: true", ["--config", "--time takes an integer, got True"]),  # a bool is never read as 1 minute
    ("train", "out: 5", ["--config", "--out takes a path, got 5"]),
    ("run", "detector: segformer.tiny\ndetector: fcn8s.tiny", ["run.yaml gives 'detector' twice (lines 1 and 2)"]),
    ("sweep", "wait: true\nwait: false", ["run.yaml gives 'wait' twice (lines 2 and 3)"]),
    ("run", "dataset_option: {a: 1, a: 2}", ["run.yaml gives 'a' twice (line 2, columns 18 and 24); keep one"]),
    ("train", "batch-size: 2\nbatch_size: 3", ["'batch-size' and 'batch_size' are one option"]),
    ("run", "extra_authentic: ''", ["run.yaml: extra_authentic is given an empty path"]),
    ("run", "checkpoint: ['']", ["run.yaml: checkpoint is given an empty path"]),
    ("sweep", "out: ''", ["run.yaml: out is given an empty path"]),
    # an empty value is refused where the file is read, naming it, as every other bad value of the file
    ("run", "detector: ''", ["run.yaml: detector is given an empty value (''); give one or leave the key out"]),
    ("run", "suite: ''", ["run.yaml: suite is given an empty value (''); give one or leave the key out"]),
    ("run", "dataset: ' '", ["run.yaml: dataset is given an empty value (' '); give one or leave the key out"]),
    ("run", "labels: ''", ["run.yaml: labels is given an empty value (''); give one or leave the key out"]),
    ("run", "eval_dataset: [mini, '']", ["run.yaml: eval_dataset is given an empty value (['mini', ''])"]),
    ("train", "exclude_editors: ''", ["run.yaml: exclude_editors is given an empty value ('')"]),
    ("run", "generator: {sdxl: ''}", ["run.yaml: generator is given an empty value ({'sdxl': ''})"]),
    ("run", "dataset_option: {'': 1}", ["run.yaml: dataset_option is given an empty value ({'': 1})"]),
    ("run", "out: null", ["run.yaml: out given no value (null)", 'leave the key out for the default (out: "diffzoo-out")']),
    ("run", "references:\nseed: null", ["references, seed given no value", "(references: true, seed: 0)"]),
    ("sweep", "out: null", ["run.yaml: out given no value (null)"]),
    # null is an empty default: what to write is said, never "leave the key out", which is as empty
    ("sweep", "detectors: null", ["a sweep needs detectors", "or in --config detectors: [NAME_OR_PATTERN, ...]"]),
])
def test_a_config_value_of_the_wrong_kind_is_one_line_naming_its_option(capsys, tmp_path, command, body, needles):
    """A --config file can give any YAML value (a list, a mapping, a number for text): one the
    option does not take is refused before any work, in one line, never an internal error."""
    from helpers.cli import cli

    path = tmp_path / "run.yaml"
    first = "detectors: segformer.tiny" if command == "sweep" else "detector: segformer.tiny"
    path.write_text(f"{first}\n{body}\n" if not body.startswith(("detector:", "detectors:")) else body + "\n")
    args = [command, "--config", path, *(["--plan"] if command != "train" else [])]
    args += [] if body.startswith("out:") else ["--out", tmp_path / "out"]
    line = one_line_exit_2(*cli(capsys, *args), *needles)
    assert "--config" not in needles or line.startswith(f"error: --config {path}: "), line  # named as the file's
    assert not (tmp_path / "out").exists()


def test_a_bad_environment_variable_is_never_named_as_the_config_files(capsys, tmp_path, monkeypatch):
    """A --config file's crop_size is checked against $DIFFZOO_MAX_PIXELS: the file is named where
    its value is refused, never where the variable is."""
    from helpers.cli import cli

    path = tmp_path / "run.yaml"
    path.write_text("detector: segformer.tiny\ncrop_size: 100000\n")
    one_line_exit_2(*cli(capsys, "run", "--config", path, "--plan"),
                    f"error: --config {path}: --crop-size 100000: a 100000 x 100000 px crop exceeds")
    path.write_text("detector: segformer.tiny\ncrop_size: 256\n")
    monkeypatch.setenv("DIFFZOO_MAX_PIXELS", "abc")
    assert one_line_exit_2(*cli(capsys, "run", "--config", path, "--plan")) == (
        "error: DIFFZOO_MAX_PIXELS='abc' is not a positive whole number of pixels; unset it for the default "
        "67,108,864 (8192 x 8192) or give e.g. DIFFZOO_MAX_PIXELS=200000000")


def test_a_config_or_label_map_that_is_not_yaml_is_one_line_saying_where(capsys, tmp_path):
    """A tab-indented --config said only "not YAML (while scanning for the next token)", naming no line; a
    YAML label map with a syntax error put yaml's whole multi-line message, source excerpt and all, in its line."""
    from helpers.cli import cli

    path = tmp_path / "run.yaml"
    path.write_text("detector: segformer.tiny\n\tsuite: standard\n")
    assert one_line_exit_2(*cli(capsys, "run", "--config", path, "--plan")) == (
        f"error: --config {path}: not YAML (line 2, column 1: found character '\\t' that cannot start any token "
        "(while scanning for the next token))")
    labels = tmp_path / "labels.yaml"
    labels.write_text("names: [background, sd2\n")
    assert one_line_exit_2(*cli(capsys, "run", "--detector", "segformer.tiny", "--labels", labels, "--plan")) == (
        f"error: --labels: label file {labels} is not a readable label map (line 2, column 1: expected ',' or ']', "
        "but got '<stream end>' (while parsing a flow sequence))")


def test_a_labels_value_naming_a_folder_is_refused_never_read_as_a_class_name(capsys, tmp_path, monkeypatch):
    """`--labels sd2` where ./sd2 is a folder was read as the one class 'sd2', silently."""
    from helpers.cli import cli

    (tmp_path / "sd2").mkdir()
    monkeypatch.chdir(tmp_path)
    for given in ("sd2", "sd2/"):
        assert one_line_exit_2(*cli(capsys, "run", "-d", "segformer.tiny", "--labels", given, "--suite", "standard",
                                   "--plan")) == (
            f"error: --labels: {given} is a folder, not a label file; give a label file, or for a class of "
            "that name 'background,sd2'")


def test_a_labels_value_naming_a_fifo_is_refused_never_read_as_a_class_name(capsys, tmp_path, monkeypatch):
    """`--labels sd2` where ./sd2 is a FIFO was read as the one class 'sd2', silently: every sample skipped."""
    from helpers.cli import cli

    os.mkfifo(tmp_path / "sd2")
    monkeypatch.chdir(tmp_path)
    assert one_line_exit_2(*cli(capsys, "data", "stats", "mini", "--labels", "sd2", "--no-plots")) == (
        "error: sd2 is a FIFO (named pipe), not a regular file; diffzoo reads only regular files")


def test_a_path_valued_dataset_option_given_a_number_list_or_mapping_is_one_line(capsys, tmp_path):
    """`--dataset-option split_file=2024` (read as JSON: a number) and a --config's `metadata: 5` or
    `extra_authentic: {a: 1}` reached the adapter as they were: "internal error: TypeError: expected str,
    bytes or os.PathLike object, not int"."""
    from helpers.cli import cli

    data = make_diffseg_folder(tmp_path / "ds")
    here, there = (Path.cwd() / "2024").absolute(), data / "2024"
    assert one_line_exit_2(*cli(capsys, "data", "info", data, "--dataset-option", "split_file=2024")) == (
        f"error: split_file=2024 does not exist (looked for {here} or {there})")
    path = tmp_path / "run.yaml"
    for option, said in (("metadata: 5", "metadata=5 does not exist"),
                         ("extra_authentic: {a: 1}", "--dataset-option extra_authentic takes text, got {'a': 1}")):
        path.write_text(f"detector: segformer.tiny\ndataset: {data}\ndataset_option: {{{option}}}\n")
        one_line_exit_2(*cli(capsys, "run", "--config", path, "--plan"), said)


def test_a_config_key_given_null_where_the_default_is_none_is_that_default(capsys, tmp_path):
    """``eval_dataset:`` (or any option whose default is an empty list) is no dataset, as leaving it out is."""
    from helpers.cli import cli

    path = tmp_path / "sweep.yaml"
    path.write_text("detectors: segformer.tiny\neval_dataset:\nslurm_option: null\n")
    code, stdout, stderr = cli(capsys, "sweep", "--config", path, "--plan", "--out", tmp_path / "out")
    assert code == 0 and stdout.splitlines()[-1] == f"1 job(s); suites standard; store {tmp_path / 'out'}", \
        stdout + stderr


def test_a_config_value_the_command_line_spells_as_text_may_be_a_list_or_a_number(capsys, tmp_path):
    """What a --config file gives in YAML's own kinds reads as the command line's text would:
    a list for a comma-separated option, a number where text is asked."""
    from helpers.cli import cli

    path = tmp_path / "sweep.yaml"
    path.write_text("detectors: segformer.tiny\nsuite: [standard, distortions]\ndataset: [mini]\n")
    code, stdout, stderr = cli(capsys, "sweep", "--config", path, "--plan", "--out", tmp_path / "out")
    assert code == 0 and "suites standard,distortions" in stdout, stdout + stderr
    path.write_text("detector: segformer.tiny\nsuite: [standard, distortions]\n")
    code, stdout, stderr = cli(capsys, "run", "--config", path, "--plan", "--out", tmp_path / "out")
    assert code == 0 and "-> standard/binary, standard/image, distortions (" in stdout, stdout + stderr
    from diffzoo.harness.run.request import RunRequest

    request = RunRequest.of(detector="segformer.tiny", calibration_split=2024, eval_dataset="x", checkpoint="a",
                            thresholds="calibrated")
    assert (request.calibration_split, request.eval_dataset, request.checkpoint) == ("2024", ["x"], [Path("a")])


@pytest.mark.parametrize("kind", ["fifo", "deep"])
def test_a_label_map_that_is_a_fifo_or_nested_too_deep_is_one_line(tmp_path, kind):
    path = tmp_path / "labels.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text(DEEP_JSON)
    one_line(diffzoo(tmp_path, "run", "--detector", "segformer.tiny", "--labels", path, "--plan"), path.name)


@pytest.mark.parametrize("name", ["splits.json", "manifest.jsonl"])
@pytest.mark.parametrize("kind", ["fifo", "deep"])
def test_a_datasets_metadata_file_that_is_a_fifo_or_nested_too_deep_is_named(tmp_path, name, kind):
    data = make_diffseg_folder(tmp_path / "ds")
    path = data / name
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text(DEEP_JSON + "\n")
    result = diffzoo(tmp_path, "data", "info", data)  # finishes: a FIFO is never waited on
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    if kind == "deep" or result.returncode != 0:  # a FIFO where the layout reads a file may be ignored, never read
        assert result.returncode != 0 and len(lines) == 1 and name in lines[0], result.stderr


def test_a_fifo_named_like_a_zip_is_never_opened(tmp_path):
    data = make_diffseg_folder(tmp_path / "ds")
    os.mkfifo(data / "extra.zip")
    result = diffzoo(tmp_path, "data", "info", data)
    assert "internal error" not in result.stderr, result.stderr  # finishes (timeout would fail), whatever it says
