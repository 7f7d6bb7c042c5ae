"""The command line as a user meets it: one clear line per error, exit codes."""

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from diffzoo.cli import main

from helpers.cli import cli, one_line_exit_2

FAST = ["--iterations", "3", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]




def error_lines(err):
    return [line for line in err.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize(
    "args, expected",
    [
        (["run", "--detectr", "segformer"], "No such option: --detectr"),
        (["list"], "Missing argument"),
        (["run", "--detector", "segformer", "extra-arg"], "unexpected extra argument"),
        (["list", "detectors", "--bogus"], "No such option: --bogus"),
        (["run", "--detector", "segformer", "--seed", "abc"], "Invalid value for '--seed'"),
        (["nonsense"], "No such command 'nonsense'"),
    ],
)
def test_usage_errors_are_clicks_own_message_and_exit_2(capsys, args, expected):
    code, out, err = cli(capsys, *args)
    assert code == 2, (out, err)
    assert expected in err and "Usage: diffzoo" in err and "--help" in err
    assert "internal error" not in err and "Traceback" not in err


@pytest.mark.parametrize("args, option", [
    (["run", "-d", "segformer.tiny", "-d", "fcn8s.tiny", "--plan"], "'--detector' / '-d' was given 2 times"),
    (["run", "-d", "segformer.tiny", "-s", "standard", "--suite=slices", "--suite", "lora"], "'--suite' / '-s' was "
     "given 3 times"),
    (["run", "-d", "segformer.tiny", "--train", "--no-train"], "'--train' / '--no-train' was given 2 times"),
    (["train", "-d", "segformer.tiny", "--iterations", "3", "--iterations", "4"], "'--iterations' was given 2 times"),
    (["reproduce", "abc", "--tolerance", "0.1", "--tolerance", "0"], "'--tolerance' was given 2 times"),
    (["leaderboard", "show", "--store", "a", "--store", "b"], "'--store' was given 2 times"),
])
def test_an_option_that_takes_one_value_given_twice_is_a_usage_error(capsys, tmp_path, monkeypatch, args, option):
    """click kept the last one: `run -d segformer.tiny -d fcn8s.tiny` planned and trained fcn8s.tiny alone, unsaid."""
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, *args)
    assert code == 2 and not out, (out, err)
    assert f"Error: Option {option}, and only the last would count: give it once" in " ".join(err.split())


def test_a_mistyped_option_names_the_one_meant(capsys):
    code, _, err = cli(capsys, "run", "--detectr", "segformer")
    assert code == 2 and "--detector" in err.split("No such option: --detectr")[1]


def test_version_names_diffzoo_and_torch(capsys):
    from importlib.metadata import version

    from diffzoo.version import __version__

    code, out, err = cli(capsys, "--version")
    assert code == 0 and not err
    assert out.strip().startswith(f"diffzoo {__version__} (torch {version('torch')}, Python ")


def test_each_command_is_listed_with_its_summary_in_one_line():
    """A group's listing shows each command's first help paragraph as flowing text, never cut where
    its docstring's lines end ("... against its" / "state; one line ...")."""
    import inspect
    import subprocess
    import sys

    from diffzoo.cli.app import app

    groups = [([], app)] + [([g.name], g.typer_instance) for g in app.registered_groups]
    for prefix, group in groups:
        done = subprocess.run([sys.executable, "-m", "diffzoo", *prefix, "--help"], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "COLUMNS": "400"})
        assert done.returncode == 0, done.stderr
        for info in group.registered_commands:
            doc = info.help or inspect.getdoc(info.callback) or ""
            summary = " ".join(doc.split("\n\n")[0].split())
            assert summary in done.stdout, (prefix, info.name, summary)


@pytest.mark.parametrize("args", [["--help"], ["list", "detectors"], ["list", "suites"], ["--version"],
                                  ["run", "--help"]])
def test_help_and_listing_import_no_torch(args):
    """Start-up stays light: these commands import neither torch nor a model library
    (their time is measured by benchmarks/cli_startup.py, not here)."""
    import subprocess
    import sys

    code = ("import sys\nfrom diffzoo.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n"
            "    assert not exc.code, exc.code\n"
            "heavy = sorted(m for m in ('torch', 'transformers', 'diffusers', 'timm', 'cv2', 'numpy') if m in sys.modules)\n"
            "print('HEAVY', heavy, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stderr, done.stderr
    assert done.stdout.strip()


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_terminal_that_cannot_show_a_character_gets_a_stand_in_not_an_error(encoding, tmp_path):
    """A console in latin-1 or ASCII (an old server's locale, a Windows code page): a metric's
    "↑" is shown by a stand-in, never an internal UnicodeEncodeError."""
    import os
    import subprocess
    import sys

    from diffzoo.leaderboard.store import RecordStore

    from helpers.records import make_record, make_state

    record = make_record("det", task="binary", case="binary", state=make_state("binary"))
    RecordStore(tmp_path / "store").add(record)
    done = subprocess.run([sys.executable, "-m", "diffzoo", "leaderboard", "show", record.id, "--store",
                           str(tmp_path / "store")], capture_output=True, env=dict(os.environ, PYTHONIOENCODING=encoding),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert b"F1 ?" in done.stdout  # "F1 \u2191" with the arrow as "?"


NOISY = """
import sys, warnings
from diffzoo.cli import app, main

@app.command("noisy")
def noisy():
    from transformers import SegformerConfig
    SegformerConfig().use_return_dict  # transformers logs "`use_return_dict` is deprecated!"
    warnings.warn("old_api() is deprecated", FutureWarning)
    from huggingface_hub.utils import logging as hub_logging
    from datasets.utils import logging as datasets_logging
    # an unreachable hub: each retry a warning, printed twice (the library's handler and the root's)
    hub_logging.get_logger("huggingface_hub.utils._http").warning("Retrying in 1s [Retry 1/5].")
    datasets_logging.get_logger("datasets.load").warning("Using the latest cached version of the dataset")
    print("done")

main(sys.argv[1:])
"""


@pytest.mark.parametrize("debug", [False, True])
def test_third_party_notices_and_retries_go_to_the_debug_log(debug, tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.endswith("_VERBOSITY")}
    done = subprocess.run([sys.executable, "-c", NOISY, *(["--debug"] if debug else []), "noisy"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    if debug:
        assert "use_return_dict" in done.stderr and "old_api() is deprecated" in done.stderr
        assert "Retrying in 1s" in done.stderr and "latest cached version" in done.stderr
    else:
        assert "deprecated" not in done.stderr and "Retrying" not in done.stderr, done.stderr
        assert "latest cached version" not in done.stderr, done.stderr


def test_list_and_plugins(capsys):
    code, out, _ = cli(capsys, "list", "detectors", "segformer*")
    assert code == 0 and "segformer.b2" in out and "segformer.tiny" in out
    code, out, _ = cli(capsys, "list", "generators")
    assert code == 0 and "sdxl" in out
    code, out, _ = cli(capsys, "plugins")
    assert code == 0 and "diffzoo.plugins.segformer" in out and "register_detectors" in out


def test_a_table_wraps_a_long_url_or_name_whole_never_cuts_it(capsys):
    """Where to download a release (its source's URL) never ends in "…" in a terminal
    narrower than the URL: every console table folds a long word instead."""
    from diffzoo.harness.core.plugins import get_registry

    code, out, _ = cli(capsys, "list", "detectors", "--released")
    assert code == 0 and "…" not in out
    cells = "".join(line.split("│")[-2].strip() for line in out.splitlines() if line.count("│") > 2)  # "source"
    urls = {url for e in get_registry().list("detector") for r in e.card.releases
            for url in r.source.split() if url.startswith("https://")}
    assert urls and all(url in cells for url in urls)


@pytest.mark.parametrize(
    "args, expected",
    [
        (["run", "--detector", "segfomer"], "unknown detector 'segfomer'. Did you mean 'segformer'"),
        (["run", "--detector", "segformer.tiny", "--suite", "standrd"], "Did you mean 'standard'"),
        (["run", "--detector", "segformer.tiny", "--dataset", "minni"], "Did you mean 'mini'"),
        (["run", "--detector", "segformer.tiny", "--dataset", "/no/such/dir"], "dataset path /no/such/dir does not exist"),
        (["run", "--detector", ""], "no detector given: '' (an unset shell variable?). Available: "),  # unknown ''
        (["plugins", "check", " "], "no detector given: ' ' (an unset shell variable?). Available: "),
    ],
)
def test_unknown_names_and_paths_give_one_line(capsys, args, expected):
    code, _, err = cli(capsys, *args)
    assert code != 0
    lines = error_lines(err)
    assert len(lines) == 1 and expected in lines[0], err
    assert "Traceback" not in err


@pytest.mark.parametrize("given, expected", [
    ("afile", "checkpoint {} is not a .safetensors file or a checkpoint folder"),
    ("adir", "checkpoint folder {} has no model.safetensors"),
    ("model.pth", "refusing to load {}: .pth files are pickles"),
])
def test_a_checkpoint_path_that_is_not_a_checkpoint_is_a_usage_error(capsys, tmp_path, given, expected):
    path = tmp_path / given
    path.mkdir() if given == "adir" else path.write_bytes(b"x")
    one_line_exit_2(*cli(capsys, "run", "-d", "segformer.tiny", "--dataset", "mini", "--suite", "standard",
                         "--plan", "--checkpoint", path), expected.format(path))


@pytest.mark.parametrize("content, expected", [
    (b"garbage", "checkpoint {} is not a readable safetensors file: "),
    (b"\x80\x04K\x01.", "refusing to load {}: it is a pickle, not safetensors"),
])
def test_a_checkpoint_file_that_holds_no_weights_is_a_usage_error(capsys, tmp_path, content, expected):
    (tmp_path / "model.safetensors").write_bytes(content)
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(tmp_path / "a.png")
    one_line_exit_2(*cli(capsys, "predict", "-d", "segformer.tiny", "--checkpoint", tmp_path / "model.safetensors",
                         tmp_path / "a.png", "--out", tmp_path / "o", "--device", "cpu"),
                    expected.format(tmp_path / "model.safetensors"))


def test_run_on_a_folder_prints_tables_and_writes_records(capsys, diffseg_folder, tmp_path):
    out_dir = tmp_path / "out"
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard",
                         "--dataset", str(diffseg_folder), "--out", str(out_dir), *FAST)
    assert code == 0, err
    assert "standard v2 / binary on ds" in out and "all_background (baseline)" in out
    assert "standard v2 / image" in out and "AP" in out
    records = list((out_dir / "records").glob("*.json"))
    assert len(records) == 3
    assert list((out_dir / "plots").glob("*confusion.png"))
    # diffzoo's INFO lines are kept in the run log, never printed on the console
    run_log = next((out_dir / "logs").glob("*-run.log")).read_text()
    assert f"dataset {diffseg_folder}: recognised as diffseg30k" in run_log
    assert "recognised as" not in err


def _bad_dataset(folder, how):
    from diffzoo import open_dataset

    sid = open_dataset(str(folder)).ids("val")[0]
    val = folder / "train_copy" / f"{sid}.mask.png"
    if how == "size":
        Image.fromarray(np.zeros((5, 7), np.uint8)).save(val)
    elif how == "value":
        Image.fromarray(np.full((32, 32), 9, np.uint8)).save(val)
    return sid


@pytest.mark.parametrize("how, expected, kind", [("size", "mask size", "mask-size"),
                                                 ("value", "mask value 9", "mask-values")])
def test_bad_masks_stop_with_strict_and_are_counted_without(capsys, diffseg_folder, tmp_path, how, expected, kind):
    sid = _bad_dataset(diffseg_folder, how)
    args = ["run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", str(diffseg_folder),
            "--out", str(tmp_path / "o"), *FAST]
    code, _, err = cli(capsys, *args, "--strict")
    lines = error_lines(err)
    assert code != 0 and len(lines) == 1 and expected in lines[0] and sid in lines[0], err
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (tmp_path / "o" / "records").glob("*.json")]
    assert records and all(r["counts"]["skipped"][0]["id"] == sid for r in records)
    assert all(r["counts"]["skipped_total"] == 1 and r["counts"]["skipped_by_reason"] == {kind: 1}
               for r in records)
    assert f"1 sample(s) skipped: 1 {kind}" in out


@pytest.mark.parametrize("args", [["--debug", "run", "--detector", "segfomer"],
                                  ["run", "--detector", "segfomer", "--debug"]])  # where a user types it last
def test_debug_shows_the_traceback_and_keeps_the_exit_code(capsys, args):
    code, _, err = cli(capsys, *args)
    assert code == 2 and "Traceback" in err and "UnknownNameError: unknown detector 'segfomer'" in err, err
    code, _, err = cli(capsys, "--debug", "run", "--detectr", "segformer")  # click's usage error
    assert code == 2 and "No such option: --detectr" in err, err


@pytest.mark.parametrize("raised, code", [(NotADirectoryError(errno.ENOTDIR, "Not a directory", "/a/b"), 2),
                                          (RuntimeError("a bug"), 1)])
def test_debug_keeps_the_exit_code_of_a_path_error_and_of_an_internal_error(capsys, monkeypatch, raised, code):
    def broken():
        raise raised

    monkeypatch.setattr("diffzoo.cli.listing.get_registry", broken)
    plain, debug = cli(capsys, "list", "detectors"), cli(capsys, "--debug", "list", "detectors")
    assert plain[0] == debug[0] == code and "Traceback" not in plain[2], plain
    assert "Traceback" in debug[2] and str(raised) in debug[2], debug


@pytest.mark.parametrize("rank", ["abc", " ", "0"])
def test_a_rank_variable_that_is_no_number_is_not_torchruns_and_the_command_runs(capsys, monkeypatch, rank):
    monkeypatch.setenv("RANK", rank)
    code, out, err = cli(capsys, "list", "detectors", "segformer.tiny")
    assert code == 0 and "segformer.tiny" in out, err


def test_debug_given_a_value_after_the_command_is_said_to_take_none(capsys):
    """Not "No such option: --debug": the flag exists, wherever it is typed."""
    code, _, err = cli(capsys, "list", "detectors", "--debug=1")
    assert code == 2 and "Option '--debug' does not take a value." in err, err


def test_debug_after_a_double_dash_is_an_argument_not_the_flag(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["data", "info", "--", "--debug"])  # a dataset folder named --debug
    assert stop.value.code == 2 and "unknown dataset '--debug'" in capsys.readouterr().err


def test_building_a_dataset_shows_progress(capsys):
    """A factory that takes ``progress`` (the mini builder) drives a progress bar."""
    from diffzoo.cli.console import console
    from diffzoo.cli.progress import RichProgress
    from diffzoo.harness.run.factories import open_dataset

    ds = open_dataset("mini", RichProgress(console), n_images=3, size=32)
    out = capsys.readouterr().out
    assert "building dataset mini" in out and "3/3" in out
    assert len([i for s in ds.splits() for i in ds.ids(s)]) == 3


def test_data_info_describes_a_folder(capsys, diffseg_folder):
    code, out, err = cli(capsys, "data", "info", str(diffseg_folder))
    assert code == 0, err
    assert "fingerprint" in out and "sd2" in out and "train" in out


def test_list_suites_shows_versions_and_cases(capsys):
    code, out, _ = cli(capsys, "list", "suites", "stand*")
    assert code == 0 and "standard" in out and "v2" in out and "semantic" in out


@pytest.mark.parametrize("args, hint", [(["detectors", "segf"], " Did you mean 'segformer'?"),
                                        (["suites", "standrad"], " Did you mean 'standard'?"),
                                        (["suites", "zzz*"], ""),
                                        (["detectors", " "], " An unset shell variable?")])
def test_listing_a_name_that_matches_nothing_is_an_error_with_a_hint(capsys, args, hint):
    code, out, err = cli(capsys, "list", *args)
    kind, pattern = args
    assert code == 2 and not out.strip()
    assert error_lines(err) == [f"error: no {kind} match {pattern!r}.{hint} `diffzoo list {kind}` lists them all"]


def test_listing_an_empty_kind_asks_whether_a_variable_is_unset(capsys):
    code, _, err = cli(capsys, "list", "")
    assert code == 2 and error_lines(err) == ["error: cannot list ''. An unset shell variable? `diffzoo list` takes "
                                              "one of: detectors, generators, datasets, suites, distortions"]


def test_the_cli_reference_documents_every_command():
    """docs/cli.md (docs/make_cli_reference.sh) has a section for each command the app has."""
    import typer.main

    from diffzoo.cli import app

    def paths(command, prefix: str = "") -> list[str]:
        found = [prefix.strip()]
        for name, sub in getattr(command, "commands", {}).items():  # a group's commands
            found += paths(sub, f"{prefix} {name}")
        return found

    reference = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    documented = {line[len("## diffzoo"):].strip() for line in reference.splitlines() if line.startswith("## diffzoo")}
    missing = [p or "(the app)" for p in paths(typer.main.get_command(app)) if p not in documented]
    assert not missing, f"run docs/make_cli_reference.sh after adding {missing} to its list"


def test_after_ctrl_c_a_second_one_while_exiting_is_ignored(capsys, monkeypatch):
    """The second Ctrl-C of two in quick succession printed torch's exit handlers' traceback."""
    import signal

    import diffzoo.api as api

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "evaluate", interrupted)
    code, _, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard")
    assert code == 130 and err.startswith("interrupted")
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_more_workers_than_cores_are_capped_at_the_cores_in_one_warning(capsys, caplog, monkeypatch, diffseg_folder):
    """``--workers 1000`` started a thousand loader processes; the request (the record) keeps 1000."""
    import diffzoo.harness.run.loading as loading
    from diffzoo.harness.run.request import RunRequest
    from diffzoo.harness.run.runner import Runner

    monkeypatch.setattr(loading, "available_cores", lambda: 3)
    assert loading.usable_workers(3) == 3 and not caplog.records
    request = RunRequest(detector="segformer.tiny", dataset=str(diffseg_folder), device="cpu", workers=1000)
    runner = Runner(request)
    assert runner.workers == 3 and runner.config.num_workers == 3 and runner.request.to_dict()["workers"] == 1000
    assert Runner(request).workers == 3  # a reference detector's runner: said once
    (warning,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "workers" in r.getMessage()]
    assert warning == "1000 loader workers asked for, more than the 3 CPU core(s) this process may use: at most 3 " \
                      "are started"
