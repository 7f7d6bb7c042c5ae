"""``diffzoo sweep`` as a hostile user drives it (docs/suites.md, "Sweeps"): released weights
through a sweep, and every odd input or store state said in one line or handled, never a
traceback or a silently wrong sweep."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import submitit
from submitit.core.utils import cloudpickle_dump

from diffzoo.leaderboard.store import RecordStore

from helpers.cli import cli, one_line, one_line_exit_2
from helpers.data import make_diffseg_folder
from helpers.dinov3iml import RELEASE, released

FAST = ["--iterations", "2", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


def plan(capsys, tmp_path, *args):
    return cli(capsys, "sweep", "--plan", "--out", tmp_path / "store", *args)


def refuse_runs(monkeypatch) -> None:
    """Any job run from here on fails the test: the sweep must skip every job."""
    import diffzoo.api

    def refuse(*args, **kwargs):
        raise AssertionError("a finished job was run again")

    monkeypatch.setattr(diffzoo.api, "evaluate", refuse)


# -- released weights through a sweep ------------------------------------------------------------
@pytest.mark.isolated_cache
def test_a_sweep_runs_released_weights_from_the_cache_groups_them_and_skips_them_after(capsys, tmp_path,
                                                                                       monkeypatch):
    # the release as its authors publish it, where a released job finds it (every node sees $DIFFZOO_CACHE)
    cache = Path(os.environ["DIFFZOO_CACHE"])
    released(cache / "weights" / "released" / "dinov3iml.tiny" / RELEASE)
    out = tmp_path / "store"
    args = ["sweep", "--detectors", "dinov3iml.tiny", "--weights", "released", "--suite", "standard", "--out", out,
            "--bootstrap", "0", "--device", "cpu"]
    code, stdout, stderr = cli(capsys, *args)
    assert code == 0, stdout + stderr
    rows = RecordStore(out).load().records
    assert rows and all(r.data["detector"]["checkpoint_source"] == "released" for r in rows)
    assert all(r.data["detector"]["release"]["name"] == RELEASE for r in rows)
    assert f"job dinov3iml.tiny [released:{RELEASE}] (zero-shot) on mini: done: {len(rows)} record(s)" in stdout
    code, text, err = cli(capsys, "leaderboard", "verify", "--store", out)
    assert code == 0 and f"{len(rows)} good, 0 bad" in text, text + err

    overview = (out / "board" / "overview.md").read_text()
    assert "released weights, zero-shot" in overview
    released_part = overview[overview.index("released weights, zero-shot"):]
    assert f"dinov3iml.tiny \\[released:{RELEASE}\\]" in released_part or \
        f"dinov3iml.tiny [released:{RELEASE}]" in released_part

    # the same sweep again: the released job is done, nothing runs, the store is unchanged
    ids = {r.id for r in rows}
    refuse_runs(monkeypatch)
    code, stdout, stderr = cli(capsys, *args)
    assert code == 0, stdout + stderr
    assert f"job dinov3iml.tiny [released:{RELEASE}] (zero-shot) on mini: done before: {len(rows)} record(s)" \
        in stdout
    assert {r.id for r in RecordStore(out).load().records} == ids


def test_training_options_are_the_trained_jobs_and_refused_by_released_jobs_alone(capsys, tmp_path):
    """A released job never trains: --iterations was taken into its request and never read."""
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "dinov3iml.tiny", "--weights", "trained,released",
                                "--iterations", "5")
    assert code == 0 and f"job dinov3iml.tiny [released:{RELEASE}] (zero-shot) on mini" in stdout, stdout + stderr
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "dinov3iml.tiny", "--weights", "released",
                                "--iterations", "5")
    one_line_exit_2(code, stdout, stderr, f"--iterations is read only by a training, and none is run here: released "
                    f"weights {RELEASE} are scored as they are; drop it")


# -- options: every one checked before the plan, one line each ------------------------------------
@pytest.mark.parametrize("args, needles", [
    (["--executor", "nope"], ["--executor 'nope'", "local, submitit-local, slurm"]),
    (["--no-wait"], ["--executor local does not use --no-wait", "only --executor slurm"]),
    (["--executor", "submitit-local", "--no-wait"], ["--executor submitit-local does not use --no-wait"]),
    (["--executor", "submitit-local", "--partition", "gpu", "--parallel", "2", "--slurm-option", "qos=high"],
     ["does not use --partition, --parallel, --slurm-option (only --executor slurm)"]),
    (["--time", "30", "--cpus-per-job", "2"],
     ["--executor local does not use --time, --cpus-per-job (only --executor slurm or submitit-local)"]),
    (["--executor", "slurm", "--slurm-option", "account"], ["--slurm-option takes KEY=VALUE", "'account'"]),
    (["--dataset", ""], ["--dataset is empty"]),
    (["--weights", " , "], ["--weights is empty"]),
])
def test_a_plan_refuses_what_the_sweep_would_refuse_or_ignore(capsys, tmp_path, args, needles):
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny", *args)
    one_line_exit_2(code, stdout, stderr, *needles)
    assert "job " not in stdout and not (tmp_path / "store").exists()


def test_a_dataset_option_the_adapter_does_not_take_is_refused_once_before_any_job(capsys, tmp_path):
    """Every job would stop on it, as run --plan does; the plan listed the job "to run"."""
    folder = make_diffseg_folder(tmp_path / "ds")
    lines = []
    for option in ("a=1", "calib_fraction=abc"):
        code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny,fcn8s.tiny", "--dataset", folder,
                                    "--dataset", "mini", "--dataset-option", option)
        line = one_line_exit_2(code, stdout, stderr)
        assert "job " not in stdout and not (tmp_path / "store").exists()
        code, stdout, stderr = cli(capsys, "run", "--plan", "--detector", "segformer.tiny", "--dataset", folder,
                                   "--dataset-option", option, "--out", tmp_path / "run")
        assert one_line_exit_2(code, stdout, stderr) == line
        lines.append(line)
    assert lines[0].startswith(f"error: dataset adapter 'diffseg30k' (for {folder}) does not take --dataset-option a.")
    assert lines[1] == "error: --dataset-option calib_fraction takes a number, got 'abc'"


def test_a_catalog_root_no_job_could_read_is_refused_once_before_any_job(capsys, tmp_path):
    """Every job would stop on it, each after the ones before had trained."""
    (tmp_path / "empty").mkdir()
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny,fcn8s.tiny", "--eval-dataset",
                                f"catalog:{tmp_path / 'empty'}")
    one_line_exit_2(code, stdout, stderr, "no dataset to evaluate on under", "data find")
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny,fcn8s.tiny", "--eval-dataset",
                                f"catalog:{tmp_path / 'nowhere'}")
    one_line_exit_2(code, stdout, stderr, "nowhere does not exist")
    assert "job " not in stdout
    config = tmp_path / "sweep.yaml"  # one --eval-dataset as text, not a list: read as the jobs read it
    config.write_text(f"detectors: segformer.tiny\neval_dataset: catalog:{tmp_path / 'empty'}\n")
    code, stdout, stderr = plan(capsys, tmp_path, "--config", config)
    one_line_exit_2(code, stdout, stderr, "no dataset to evaluate on under")
    assert not (tmp_path / "store").exists()


def test_a_suite_every_job_would_stop_on_is_refused_and_a_path_not_found_is_said_before_any_job(capsys, caplog,
                                                                                                 tmp_path):
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny", "--suite", "nosuch")
    one_line_exit_2(code, stdout, stderr, "unknown suite 'nosuch'")
    assert "job " not in stdout
    # a suite of cases evaluated on --eval-dataset only, without one: no job could serve any case of it
    for suite in ("cross-dataset", "cross*,opensdi"):
        code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny,fcn8s.tiny", "--suite", suite)
        one_line_exit_2(code, stdout, stderr, f"--suite {suite}: each of its cases evaluates the model on other "
                        "datasets, and no --eval-dataset is given")
        assert "job " not in stdout
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny", "--suite", "cross-dataset,standard")
    assert code == 0 and stdout.count("job ") == 1, stdout + stderr
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny", "--dataset", "mini", "--dataset",
                                "nosuchname", "--extra-authentic", "/nonexistent/neg")
    assert code == 0 and stdout.count("job ") == 2  # a job fails alone: the plan lists it, and warns
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1 and said[0].startswith(
        "not found: --dataset nosuchname; --extra-authentic /nonexistent/neg (paths are read from")


def test_a_plan_refuses_an_out_that_is_a_file(capsys, tmp_path):
    (tmp_path / "store").write_text("not a folder")
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny")
    one_line_exit_2(code, stdout, stderr, "--out", "not a folder")


def test_a_folder_not_diffzoos_is_refused_by_the_plan_too_and_force_uses_it(capsys, tmp_path, monkeypatch):
    """The refusal names --force, which a sweep takes as diffzoo run does, and its plan refuses what
    the sweep would refuse: it never lists jobs the sweep then refuses to run."""
    fake_runs(monkeypatch)
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "notes.txt").write_text("mine")
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny", "--suite", "standard")
    one_line_exit_2(code, stdout, stderr, f"--out {tmp_path / 'store'} is not empty (notes.txt)", "pass --force")
    assert "job " not in stdout
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny", "--suite", "standard", "--force")
    assert code == 0 and "(to run;" in stdout, stdout + stderr
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == ["notes.txt"]  # the plan writes nothing
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny", "--suite", "standard", "--out",
                               tmp_path / "store", "--force")
    assert code == 0 and "job segformer.tiny trained on mini: done: 0 record(s)" in stdout, stdout + stderr
    assert (tmp_path / "store" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("args", [["--parallel", "0"], ["--gpus", "0"], ["--gpus", "-1"], ["--time", "-5"],
                                  ["--cpus-per-job", "0"], ["--detector", "x"], ["--checkpoint", "x.pth"]])
def test_values_out_of_range_and_run_options_the_sweep_sets_are_usage_errors(capsys, tmp_path, args):
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny", *args)
    assert code == 2 and "Error:" in stderr and "Traceback" not in stderr and "job " not in stdout, stderr


@pytest.mark.parametrize("text, needle", [("detector: fcn8s.tiny\n", "a sweep sets detector per job"),
                                          ("checkpoint: [x.pth]\n", "a sweep sets checkpoint per job")])
def test_a_config_file_setting_what_the_sweep_sets_per_job_is_refused(capsys, tmp_path, text, needle):
    config = tmp_path / "sweep.yaml"
    config.write_text(text)
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny", "--config", config)
    one_line_exit_2(code, stdout, stderr, needle, "--config")


def test_a_config_file_may_name_one_detector_dataset_and_weights_as_text(capsys, tmp_path):
    config = tmp_path / "sweep.yaml"
    config.write_text("detectors: segformer.tiny\ndataset: mini\nweights: trained\n")
    code, stdout, stderr = plan(capsys, tmp_path, "--config", config)
    assert code == 0, stderr
    assert [line.rpartition(" (")[0] for line in stdout.splitlines() if line.startswith("job ")] == [
        "job segformer.tiny trained on mini"]


def test_a_config_file_holds_the_sweeps_own_options_and_the_executor_rules_read_them(capsys, tmp_path):
    """executor, time, cpus-per-job, wait, plan: keys as the flag names, as every other option (they were
    "unknown option(s)"); an executor's option under another executor is refused as on the command line."""
    config = tmp_path / "sweep.yaml"
    config.write_text("detectors: segformer.tiny\nexecutor: submitit-local\ntime: 30\ncpus-per-job: 2\n"
                      "plan: true\n")
    code, stdout, stderr = cli(capsys, "sweep", "--out", tmp_path / "store", "--config", config)
    assert code == 0, stderr
    assert stdout.splitlines()[-1] == f"1 job(s); suites standard; store {tmp_path / 'store'}"
    assert not (tmp_path / "store").exists()  # plan: true read from the file, nothing run or written
    code, stdout, stderr = cli(capsys, "sweep", "--out", tmp_path / "store", "--config", config, "--executor",
                               "local")  # the command line wins, and local takes no --time
    one_line_exit_2(code, stdout, stderr, "--executor local does not use --time")
    config.write_text("detectors: segformer.tiny\nwait: false\nplan: true\n")
    one_line_exit_2(*cli(capsys, "sweep", "--out", tmp_path / "store", "--config", config),
                    "--executor local does not use --no-wait")


def test_a_config_file_gives_slurm_option_a_mapping_as_the_user_guide_says_and_the_plan_shows_it(
        capsys, tmp_path, monkeypatch):
    """KEY=VALUE options take a mapping in --config; the sweep's own was refused ("takes a list")."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\nexit 0\n")  # a login node: the plan asks SLURM nothing here
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    config = tmp_path / "sweep.yaml"
    config.write_text("detectors: segformer.tiny\nexecutor: slurm\nslurm_option: {account: x, mem_gb: 40}\n")
    code, stdout, stderr = plan(capsys, tmp_path, "--config", config)
    assert code == 0, stderr
    assert stdout.splitlines()[-1] == (f"1 job(s); suites standard; store {tmp_path / 'store'}; "
                                       "--slurm-option account=x; --slurm-option mem_gb=40")
    config.write_text("detectors: segformer.tiny\nexecutor: slurm\nslurm_option: [account=y]\n")
    code, stdout, stderr = plan(capsys, tmp_path, "--config", config)
    assert code == 0 and stdout.splitlines()[-1].endswith("; --slurm-option account=y"), stdout + stderr
    config.write_text("detectors: segformer.tiny\nexecutor: slurm\nslurm_option: account\n")
    one_line_exit_2(*plan(capsys, tmp_path, "--config", config), "--slurm-option takes KEY=VALUE, got 'account'")


def test_names_patterns_and_datasets_given_twice_make_each_job_once(capsys, tmp_path):
    code, stdout, stderr = plan(capsys, tmp_path, "--detectors", "segformer.tiny,segformer.tiny", "--detectors",
                                "segformer.t*,dinov3iml.tiny", "--weights", "released,trained", "--weights",
                                f"released:{RELEASE}", "--dataset", "mini", "--dataset", "mini,mini")
    assert code == 0, stderr
    jobs = [line.rpartition(" (")[0] for line in stdout.splitlines() if line.startswith("job ")]
    assert jobs == ["job segformer.tiny trained on mini",
                    f"job dinov3iml.tiny [released:{RELEASE}] (zero-shot) on mini", "job dinov3iml.tiny trained on mini"]
    assert stdout.count("skipped:") == 2  # segformer.tiny has neither release asked for: said once each


# -- the store's state, and jobs that break --------------------------------------------------------
class _Result:
    def __init__(self, records):
        self.records = records


def fake_runs(monkeypatch, answer=lambda request: []) -> list:
    """``diffzoo.evaluate`` replaced: each job's records are ``answer(request)`` (records with an
    ``id``), so a test of the sweep's bookkeeping runs no model; returns the requests it saw."""
    import diffzoo.api

    seen: list = []

    def evaluate(*, request, **kwargs):
        seen.append(request)
        return _Result(answer(request))

    monkeypatch.setattr(diffzoo.api, "evaluate", evaluate)
    return seen


def test_a_done_file_whose_record_ids_are_not_text_runs_its_job_again(capsys, tmp_path, monkeypatch):
    fake_runs(monkeypatch)
    args = ["sweep", "--detectors", "segformer.tiny", "--suite", "standard", "--no-publish", "--out",
            tmp_path / "store"]
    code, stdout, stderr = cli(capsys, *args)
    assert code == 0 and "done: 0 record(s)" in stdout, stdout + stderr
    [done] = (tmp_path / "store" / "sweep" / "done").glob("*.json")
    data = json.loads(done.read_text())
    data["records"] = [{"id": "x"}, ["y"]]
    done.write_text(json.dumps(data))
    code, stdout, stderr = cli(capsys, *args, "--plan")
    assert code == 0 and "(to run;" in stdout and "Traceback" not in stderr, stdout + stderr
    code, stdout, stderr = cli(capsys, *args)
    assert code == 0 and "done: 0 record(s)" in stdout, stdout + stderr
    assert json.loads(done.read_text())["records"] == []  # made again by the job


def test_a_done_jobs_record_no_table_shows_fails_the_job_in_one_line_and_is_not_run_again(capsys, tmp_path,
                                                                                         monkeypatch):
    """A record in the store dated after this machine's clock is shown by no table: its job is not done, and
    running it again would end on the file holding its place; the job says so, and --rerun replaces it."""
    from helpers.records import make_record, make_state

    ahead = make_record("segformer.tiny", state=make_state(), date="2999-01-01T00:00:00+00:00")
    seen = fake_runs(monkeypatch, lambda request: [ahead])
    store = tmp_path / "store"
    args = ["sweep", "--detectors", "segformer.tiny", "--suite", "standard", "--no-publish", "--out", store]
    code, stdout, stderr = cli(capsys, *args)
    assert code == 0 and "done: 1 record(s)" in stdout, stdout + stderr
    RecordStore(store).add(ahead)  # the run's store holds it, as another machine's clock wrote it
    said = (f"job segformer.tiny trained on mini: FAILED: its record {ahead.id} is in the store, but no table shows "
            f"it: record {ahead.id} is dated 2999-01-01T00:00:00+00:00, more than 1 hour after this machine's clock")
    code, stdout, stderr = cli(capsys, *args, "--plan")
    assert code == 0 and f"(not run: its record {ahead.id} is in the store, but no table shows it" in one_line(
        stdout), stdout + stderr
    code, stdout, stderr = cli(capsys, *args)
    assert code == 1 and said in one_line(stdout) and "fix its date (or the clock of the machine that made it); --rerun replaces it" in one_line(stdout)
    assert one_line(stderr) == "error: 1 of 1 job(s) failed (listed above); run the same command with --rerun to retry them"
    assert len(seen) == 1  # not run again
    code, stdout, stderr = cli(capsys, *args, "--rerun")
    assert code == 0 and "done: 1 record(s)" in stdout and len(seen) == 2, stdout + stderr


def test_a_job_that_crashes_fails_alone_and_the_others_run(capsys, caplog, tmp_path, monkeypatch):
    def answer(request):
        if request.detector == "segformer.tiny":
            raise RuntimeError("a bug in the detector")
        return []

    seen = fake_runs(monkeypatch, answer)
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny,fcn8s.tiny", "--suite", "standard",
                               "--out", tmp_path / "store")
    assert code == 1, stdout + stderr
    assert [r.detector for r in seen] == ["segformer.tiny", "fcn8s.tiny"]
    assert "job segformer.tiny trained on mini: FAILED: internal error: RuntimeError: a bug in the detector" in stdout
    assert "job fcn8s.tiny trained on mini: done: 0 record(s)" in stdout
    assert "1 of 2 job(s) failed" in stderr and "Traceback" not in stdout + stderr
    # said once, as the job's outcome: no log line (which the command shows on stderr) says it again
    assert "a bug in the detector" not in caplog.text
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny", "--suite", "standard", "--out",
                               tmp_path / "store")  # every job failed: there are no others' records to point at
    assert code == 1 and " ".join(stderr.split()) == \
        "error: 1 of 1 job(s) failed (listed above); run the same command again to retry them", stderr


def test_a_submitit_job_returns_its_failure_as_data_and_its_log_keeps_a_bugs_traceback(capsys, tmp_path,
                                                                                      monkeypatch):
    """What the job's process returns is what the sweep says: its error, as a local job says it (the
    sweep read it back out of submitit's quoted traceback, importing whatever module the text named)."""
    import signal

    from diffzoo.harness.core.errors import TrainingStopped
    from diffzoo.harness.run.request import RunRequest
    from diffzoo.sweep import SweepOptions, run_job

    errors = iter([RuntimeError("a bug in the detector"), TrainingStopped(3, 10, signal.SIGTERM, resumable=True)])

    def answer(request):
        raise next(errors)

    fake_runs(monkeypatch, answer)
    request = RunRequest.of(detector="segformer.tiny", suite="standard").to_dict()
    how = SweepOptions(executor="submitit-local")
    assert run_job(request, str(tmp_path / "store"), how) == {
        "status": "failed", "error": "internal error: RuntimeError: a bug in the detector (its traceback is in the "
        "job's log)"}
    err = capsys.readouterr().err  # a submitit job's stderr is its log
    assert err.startswith("Traceback") and err.rstrip().endswith("RuntimeError: a bug in the detector")
    # a signal to the job's own process fails that job; the sweep goes on
    assert run_job(request, str(tmp_path / "store"), how) == {
        "status": "failed", "error": "stopped at step 3 of 10 (SIGTERM); run the same command to resume"}


def test_a_stop_signal_during_a_job_stops_the_whole_sweep(capsys, tmp_path, monkeypatch):
    import signal

    from diffzoo.harness.core.errors import TrainingStopped

    def answer(request):
        raise TrainingStopped(3, 10, signal.SIGTERM, resumable=True)

    seen = fake_runs(monkeypatch, answer)
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny,fcn8s.tiny", "--suite", "standard",
                               "--out", tmp_path / "store")
    assert code == 143, stdout + stderr
    assert [r.detector for r in seen] == ["segformer.tiny"]  # the next job never starts
    assert "stopped at step 3 of 10 (SIGTERM); run the same command to resume" in stderr


def test_ctrl_c_on_a_submitit_local_sweep_stops_its_job_processes_too(tmp_path, monkeypatch):
    """The job processes are the sweep's children: a Ctrl-C that ends the sweep ends them, so none
    goes on writing into the store while the same command, run again, runs its job a second time."""
    import _thread
    import threading

    import diffzoo.sweep
    from diffzoo.sweep import SweepOptions, plan_sweep, run_sweep

    handles: list = []

    def submit(jobs, out, how):  # the real submission; Ctrl-C once the processes are started
        handles.extend(real(jobs, out, how))
        threading.Timer(1.0, _thread.interrupt_main).start()
        return handles

    real = diffzoo.sweep.submit
    monkeypatch.setattr(diffzoo.sweep, "submit", submit)
    plan = plan_sweep(["segformer.tiny"], options={"suite": "standard", "iterations": 2, "batch_size": 2,
                                                   "crop_size": 32, "bootstrap": 0, "device": "cpu"})
    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, tmp_path / "store", SweepOptions(executor="submitit-local"))
    [handle] = handles
    handle._process.wait()  # the job's own process: stopped, never finishing its job
    assert handle.state == "INTERRUPTED"
    assert not (tmp_path / "store" / "sweep" / "done").exists()


def test_several_gpus_per_job_run_under_torchrun_with_the_local_executor_too(capsys, tmp_path, monkeypatch):
    import diffzoo.sweep

    runs: list = []
    monkeypatch.setattr(diffzoo.sweep, "_torchrun", lambda request, out, how: runs.append(how.gpus) or [])
    refuse_runs(monkeypatch)  # one process here would use one GPU of the two asked for
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny", "--gpus", "2", "--suite",
                               "standard", "--out", tmp_path / "store")
    assert code == 0, stdout + stderr
    assert runs == [2]


# -- a catalog's benchmarks, released files in a plan, SLURM jobs submitted before -----------------
def catalog_sweep(capsys, tmp_path, root, *more):
    return cli(capsys, "sweep", "--detectors", "segformer.tiny", "--suite", "standard,cross-dataset",
               "--eval-dataset", f"catalog:{root}", "--no-publish", "--out", tmp_path / "store", *more)


def test_a_benchmark_added_or_removed_under_a_catalog_root_runs_the_job_again(capsys, caplog, tmp_path,
                                                                             monkeypatch):
    from helpers.data import make_diffseg_folder, make_tpgt

    root = tmp_path / "benchmarks"
    make_tpgt(root / "tpgt")
    seen = fake_runs(monkeypatch)
    code, stdout, stderr = catalog_sweep(capsys, tmp_path, root)
    assert code == 0 and "done: 0 record(s)" in stdout, stdout + stderr
    [done] = (tmp_path / "store" / "sweep" / "done").glob("*.json")
    assert json.loads(done.read_text())["catalogs"] == {str(root): [{"path": str(root / "tpgt"), "adapter": "tpgt"}]}

    code, stdout, stderr = catalog_sweep(capsys, tmp_path, root)  # nothing changed: done
    assert code == 0 and "done before" in stdout and len(seen) == 1, stdout + stderr

    make_diffseg_folder(root / "edits", editors=("sd2", "sdxl"))  # a new benchmark under the same ROOT
    code, stdout, stderr = catalog_sweep(capsys, tmp_path, root, "--plan")
    assert code == 0 and "(to run;" in stdout, stdout + stderr
    caplog.clear()
    code, stdout, stderr = catalog_sweep(capsys, tmp_path, root)
    assert code == 0 and "done: 0 record(s)" in stdout and len(seen) == 2, stdout + stderr
    assert f"benchmarks under {root} changed since the job ran: +{root / 'edits'} (diffseg30k); the job runs again" \
        in caplog.text

    import shutil

    shutil.rmtree(root / "tpgt")  # one removed
    caplog.clear()
    code, stdout, stderr = catalog_sweep(capsys, tmp_path, root)
    assert code == 0 and len(seen) == 3, stdout + stderr
    assert f"changed since the job ran: -{root / 'tpgt'} (tpgt);" in caplog.text

    shutil.rmtree(root)  # a ROOT no longer there: the run's own usage error, in one line; nothing run
    code, stdout, stderr = catalog_sweep(capsys, tmp_path, root)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and len(seen) == 3, stdout + stderr
    assert f"{root} does not exist: nothing to look for datasets in" in lines[0] and "Traceback" not in stderr


@pytest.mark.isolated_cache
def test_a_plan_says_whether_each_released_jobs_files_are_in_the_cache_and_fetches_nothing(capsys, tmp_path):
    cache = Path(os.environ["DIFFZOO_CACHE"])
    folder = cache / "weights" / "released" / "dinov3iml.tiny" / RELEASE
    args = ["--detectors", "dinov3iml.tiny,segformer.tiny", "--weights", "trained,released"]
    code, stdout, stderr = plan(capsys, tmp_path, *args)
    assert code == 0, stdout + stderr
    text = one_line(stdout)
    assert "release files missing: detector dinov3iml.tiny: weights 'released:" in text
    assert f"into {folder}" in text and "Traceback" not in stderr
    lines = stdout.splitlines()
    released_at = next(i for i, line in enumerate(lines) if f"[released:{RELEASE}]" in line)
    assert lines[released_at + 1].startswith("  release files missing: ")
    # the trained jobs' lines are as before: one line each, nothing after them
    trained = [i for i, line in enumerate(lines) if " trained on mini (to run; key " in line]
    assert len(trained) == 2 and all(not lines[i + 1].startswith("  ") for i in trained)
    assert not folder.exists() and not (tmp_path / "store").exists()

    released(folder)
    code, stdout, stderr = plan(capsys, tmp_path, *args)
    assert code == 0 and f"release files present in {folder}" in one_line(stdout), stdout + stderr


def fake_slurm(tmp_path, monkeypatch) -> Path:
    """A stand-in ``sbatch`` (each call a new job id from 7001, its script kept) and ``sacct``
    (it prints ``sacct.txt``): the scheduler's side of submitit, without a cluster."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(
        f'#!/bin/sh\nn=$(cat {bin_dir}/count 2>/dev/null || echo 7000)\nn=$((n+1))\necho $n > {bin_dir}/count\n'
        f'cp "$1" {bin_dir}/submitted-$n.sh\necho "Submitted batch job $n"\n')
    (bin_dir / "sacct").write_text(f"#!/bin/sh\ncat {bin_dir}/sacct.txt\n"
                                   f"if [ -f {bin_dir}/after-sacct.sh ]; then sh {bin_dir}/after-sacct.sh; fi\n")
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return bin_dir


def test_a_slurm_sweep_run_again_does_not_submit_jobs_still_queued_and_resubmits_ended_ones(capsys, caplog,
                                                                                           tmp_path, monkeypatch):
    bin_dir = fake_slurm(tmp_path, monkeypatch)
    refuse_runs(monkeypatch)
    out = tmp_path / "store"
    args = ["sweep", "--detectors", "segformer.tiny,fcn8s.tiny", "--suite", "standard", "--executor", "slurm",
            "--no-wait", "--out", out]
    code, stdout, stderr = cli(capsys, *args)
    assert code == 0 and stdout.count("submitted (log") == 2, stdout + stderr
    records = {json.loads(p.read_text())["job_id"] for p in (out / "sweep" / "submitted").glob("*.json")}
    assert records == {"7001_0", "7001_1"}

    # one job still running, the other ended without a done file (it failed on its node)
    (bin_dir / "sacct.txt").write_text("JobID|State|NodeList\n7001_0|RUNNING|n1\n7001_1|FAILED|n2\n")
    code, stdout, stderr = cli(capsys, *args)
    assert code == 0, stdout + stderr
    assert "job segformer.tiny trained on mini: not submitted again: SLURM job 7001_0 submitted" in one_line(stdout)
    assert "is still RUNNING" in stdout
    assert "job fcn8s.tiny trained on mini: submitted (log" in stdout
    assert "fcn8s.tiny trained on mini: its SLURM job 7001_1 (submitted " in caplog.text
    assert "ended (FAILED) and the job is not done; it is submitted again" in caplog.text
    # only the ended job is submitted again: one sbatch, one job (submitit gives a lone job no array)
    assert (bin_dir / "count").read_text().strip() == "7002" and "--array" not in \
        (bin_dir / "submitted-7002.sh").read_text()
    records = {json.loads(p.read_text())["job_id"] for p in (out / "sweep" / "submitted").glob("*.json")}
    assert records == {"7001_0", "7002"}

    # both pending or running: nothing is submitted
    (bin_dir / "sacct.txt").write_text("JobID|State|NodeList\n7001_0|RUNNING|n1\n7002|PENDING|\n")
    code, stdout, stderr = cli(capsys, *args)
    assert code == 0 and stdout.count("not submitted again") == 2 and "2 job(s) submitted or queued" in stdout, \
        stdout + stderr
    assert (bin_dir / "count").read_text().strip() == "7002"

    # --plan asks SLURM as the sweep does: both jobs are queued, neither is to run
    code, stdout, stderr = cli(capsys, *args, "--plan")
    assert code == 0 and one_line(stdout).count("(queued: SLURM job ") == 2 and "to run" not in stdout, \
        stdout + stderr
    assert "7001_0 submitted" in one_line(stdout) and "is still PENDING" in one_line(stdout)

    # without --no-wait the sweep waits for the jobs an earlier sweep queued and submits neither
    # again; their results land while it waits (sacct's stand-in writes them after answering): what
    # one job returned, and the other's process ending in an error outside the job (its log says which)
    staged = []
    for job_id, outcome in (("7001_0", ("success", {"status": "done", "records": []})),
                            ("7002", ("error", "Traceback (most recent call last):\nKeyboardInterrupt"))):
        result = submitit.SlurmJob(folder=out / "sweep" / "logs" / "%j", job_id=job_id).paths.result_pickle
        cloudpickle_dump(outcome, tmp_path / f"{job_id}.pkl")
        staged.append(f"mkdir -p {result.parent} && cp {tmp_path / f'{job_id}.pkl'} {result}")
    (bin_dir / "after-sacct.sh").write_text("\n".join(staged) + "\n")
    code, stdout, stderr = cli(capsys, *[a for a in args if a != "--no-wait"])
    text = one_line(stdout)
    assert code == 1 and text.count("done: 0 record(s) (not submitted again: SLURM job ") == 1, stdout + stderr
    assert "job fcn8s.tiny trained on mini: FAILED: its process ended without an outcome (state PENDING); its log " \
           f"says why (log {out / 'sweep' / 'logs' / '7002'}) (not submitted again: SLURM job 7002" in text
    assert "submitted or queued" not in stdout and (bin_dir / "count").read_text().strip() == "7002"

    # submitit's own log lines (here: no sacct to ask) are the CLI's, said once, never on stdout; in a
    # process of its own, so that submitit asks again rather than answer from this process's cache
    (bin_dir / "sacct").unlink()
    for path in (out / "sweep" / "done").glob("*.json"):
        path.unlink()
    done = subprocess.run([sys.executable, "-m", "diffzoo", *map(str, args), "--plan"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and one_line(done.stdout).count("is still UNKNOWN") == 2, done.stdout + done.stderr
    assert "submitit" not in done.stdout and done.stderr.count("Bypassing sacct error") == 1, done.stderr
