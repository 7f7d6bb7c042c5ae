"""``diffzoo sweep`` (docs/suites.md, "Sweeps"): detectors x weights x training data, each job an
ordinary run into one store that ``leaderboard verify`` accepts, finished jobs skipped on a second
run, the board published with a column group per benchmark (and per generator), and the same
records through submitit's local executor."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from diffzoo.leaderboard.store import RecordStore

from helpers.cli import cli, one_line_exit_2
from helpers.data import make_diffseg_folder, make_tpgt

FAST = ["--iterations", "2", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]
DETECTORS = "segformer.tiny,fcn8s.tiny"


@pytest.fixture
def benchmarks(tmp_path) -> Path:
    """Two test-made benchmarks under one root: TP-GT (no generator metadata) and a DiffSeg30k-layout
    folder whose images name their editors (sd2, sdxl)."""
    root = tmp_path / "benchmarks"
    make_tpgt(root / "tpgt")
    make_diffseg_folder(root / "edits", editors=("sd2", "sdxl"))
    return root


def sweep(capsys, out, root, *args):
    return cli(capsys, "sweep", "--detectors", DETECTORS, "--eval-dataset", f"catalog:{root}", "--out", out, *FAST,
               *args)


def stored(out: Path) -> dict[str, dict]:
    return {r.id: {"metrics": r.metrics, "digest": r.data.get("predictions_digest"), "row": r.body.row_name,
                   "suite": r.body.suite.name, "case": r.body.case_name, "dataset": r.body.dataset.name}
            for r in RecordStore(out).load().records}


def test_a_sweep_stores_every_job_publishes_the_board_and_skips_finished_jobs(capsys, tmp_path, benchmarks,
                                                                              monkeypatch):
    out = tmp_path / "store"
    code, stdout, stderr = sweep(capsys, out, benchmarks)
    assert code == 0, stderr
    records = stored(out)
    for det in ("segformer.tiny", "fcn8s.tiny"):
        mine = [r for r in records.values() if r["row"] == det]
        # the standard suite on mini, and binary, image and per-generator cases on each benchmark
        assert {(r["suite"], r["dataset"]) for r in mine} == {
            ("standard", "mini"), ("cross-dataset", "tpgt"), ("cross-dataset", "edits")}, det
        assert f"job {det} trained on mini: done: {len(mine)} record(s)" in stdout
    code, text, err = cli(capsys, "leaderboard", "verify", "--store", out)
    assert code == 0 and f"{len(records)} good, 0 bad" in text, text + err

    overview = (out / "board" / "overview.md").read_text()
    header = next(line for line in overview.splitlines() if line.startswith("|") and "detector" in line)
    for column in ("tpgt/val: mIoU", "tpgt/val: F1", "tpgt/val: image Acc", "edits/val: mIoU",
                   "edits/val: sd2 F1", "edits/val: sdxl F1", "cross-dataset: mean mIoU"):
        assert column in header, (column, header)
    assert "tpgt/val: sd2 F1" not in header  # TP-GT names no generator
    site = (out / "board" / "index.html").read_text()
    assert 'data-kind="benchmarks"' in site and "binary mIoU per benchmark" in site

    # a second run: every job is done, nothing is trained or evaluated, the store is unchanged
    import diffzoo.api

    def refuse(*args, **kwargs):
        raise AssertionError("a finished job was run again")

    monkeypatch.setattr(diffzoo.api, "evaluate", refuse)
    code, stdout, stderr = sweep(capsys, out, benchmarks)
    assert code == 0, stderr
    assert stdout.count("done before:") == 2 and stored(out) == records
    # each sweep leaves its log beside its jobs' run logs: the command, each job's outcome, how it ended
    first, second = [p.read_text() for p in sorted((out / "logs").glob("*-sweep.log"))]
    assert len(list((out / "logs").glob("*-run.log"))) == 2  # one per job run
    assert first.count(": done: ") == 2 and "2 job(s): 2 done" in first
    assert second.count(": done before: ") == 2 and "2 job(s): 2 skipped" in second
    for done in (out / "sweep" / "done").glob("*.json"):  # each job named by its key, as its done file is
        assert f"job {done.stem} " in second

    # a record deleted from the store runs its job again (and only that job)
    monkeypatch.undo()
    victim = next(p for p in (out / "records").glob("*.json") if json.loads(p.read_text())["detector"]["name"]
                  == "fcn8s.tiny")
    victim.unlink()
    code, stdout, stderr = sweep(capsys, out, benchmarks)
    assert code == 0, stderr
    assert "job segformer.tiny trained on mini: done before" in stdout
    assert "job fcn8s.tiny trained on mini: done: " in stdout
    assert stored(out) == records  # the same record made again

    # a done file that is not one (a kill mid-write leaves none; a stranger's edit, this) runs its job again
    for path in (out / "sweep" / "done").glob("*.json"):
        if json.loads(path.read_text())["request"]["detector"] == "segformer.tiny":
            path.write_text("{not json")
    code, stdout, stderr = sweep(capsys, out, benchmarks)
    assert code == 0, stderr
    assert "job segformer.tiny trained on mini: done: " in stdout and "job fcn8s.tiny trained on mini: done before" \
        in stdout
    assert stored(out) == records


def test_the_same_sweep_through_submitits_local_executor_gives_the_same_records(capsys, tmp_path, benchmarks):
    code, _, stderr = sweep(capsys, tmp_path / "here", benchmarks)
    assert code == 0, stderr
    code, stdout, stderr = sweep(capsys, tmp_path / "submitit", benchmarks, "--executor", "submitit-local",
                                 "--time", "20")
    assert code == 0, stdout + stderr
    here, there = stored(tmp_path / "here"), stored(tmp_path / "submitit")
    assert here and here == there
    logs = list((tmp_path / "submitit" / "sweep" / "logs").glob("*/*_log.out"))
    assert len(logs) == 2  # one process per job, each with its log
    # only the jobs' own folders: none named by submitit's pattern (%j), which its processes make too
    assert sorted(p.name for p in (tmp_path / "submitit" / "sweep" / "logs").iterdir()) == sorted(
        p.parent.name for p in logs)
    code, text, err = cli(capsys, "leaderboard", "verify", "--store", tmp_path / "submitit")
    assert code == 0, text + err


def test_plan_lists_jobs_of_patterns_weights_and_datasets(capsys, tmp_path):
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "dinov3iml.tiny,segformer.tiny", "--weights",
                               "trained,released", "--dataset", "mini", "--dataset", str(tmp_path / "other"),
                               "--plan", "--out", tmp_path / "store")
    assert code == 0, stderr
    jobs = [line for line in stdout.splitlines() if line.startswith("job ")]
    assert [j.rpartition(" (")[0] for j in jobs] == [
        "job dinov3iml.tiny trained on mini", f"job dinov3iml.tiny trained on {tmp_path / 'other'}",
        "job dinov3iml.tiny [released:cat-lora-r32] (zero-shot) on mini",
        "job segformer.tiny trained on mini", f"job segformer.tiny trained on {tmp_path / 'other'}"]
    assert "segformer.tiny --weights released: no such release (it lists no released weights)" in stdout
    assert all("to run" in j for j in jobs) and not (tmp_path / "store").exists()  # --plan writes nothing


def test_a_sweep_out_in_a_dataset_folder_is_refused_by_the_plan_and_the_sweep(capsys, tmp_path):
    """Each job's run refuses an --out its dataset reads from; the plan passed it, then every job failed."""
    data = make_tpgt(tmp_path / "DATA")
    before = sorted(os.listdir(data / "Tp"))
    for plan in (["--plan"], []):
        code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny", "--dataset", data, *plan,
                                   "--out", data / "Tp")
        assert one_line_exit_2(code, stdout, stderr) == (
            f"error: --out {data / 'Tp'} lies in the folder of the dataset {data}, whose files diffzoo reads: what it "
            "writes there would be read as the dataset's the next time; choose a folder outside it (or a new one "
            "directly in it)")
    assert sorted(os.listdir(data / "Tp")) == before  # the sweep wrote nothing there


@pytest.mark.parametrize("args, needles", [
    (["--weights", "pretrained"], ["--weights 'pretrained'", "released:NAME"]),
    (["--weights", "released:nope"], ["the sweep has no job", "segformer.tiny --weights released:nope"]),
    (["--detector", "x"], ["No such option"]),
])
def test_sweep_mistakes_are_one_line(capsys, tmp_path, args, needles):
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny", *args, "--out", tmp_path / "s")
    if needles == ["No such option"]:  # click's usage error
        assert code == 2 and "No such option" in stderr
        return
    one_line_exit_2(code, stdout, stderr, *needles)


def test_slurm_without_a_cluster_is_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny", "--executor", "slurm",
                               "--out", tmp_path / "s", *FAST)
    one_line_exit_2(code, stdout, stderr, "--executor slurm")
    # --plan asks SLURM about earlier submissions as the sweep does: refused the same way, not "UNKNOWN"
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny", "--executor", "slurm",
                               "--out", tmp_path / "s", "--plan")
    one_line_exit_2(code, stdout, stderr, "--executor slurm: sbatch is not on PATH")


def test_a_failing_job_is_reported_and_the_others_still_run(capsys, tmp_path):
    missing = tmp_path / "no-such-dataset"
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny", "--dataset", "mini", "--dataset",
                               missing, "--suite", "standard", "--out", tmp_path / "s", *FAST)
    assert code == 1, stdout + stderr
    assert "job segformer.tiny trained on mini: done:" in stdout
    assert f"job segformer.tiny trained on {missing}: FAILED:" in stdout
    assert "1 of 2 job(s) failed" in stderr and "Traceback" not in stderr
    assert (tmp_path / "s" / "board" / "overview.md").exists()  # the board of what was done
    # the board's files said as `leaderboard publish` says them: every file, not only each format's main one
    code, published, _ = cli(capsys, "leaderboard", "publish", "--store", tmp_path / "s", "-f", "md,html", "--out",
                             tmp_path / "s" / "other")
    wrote = [line for line in stdout.splitlines() if line.startswith("wrote ")]
    assert code == 0 and len(wrote) > 2 and wrote == [line for line in published.replace("other", "board").splitlines()
                                                      if line.startswith("wrote ")]


def test_a_job_failing_in_its_submitit_process_is_said_with_its_own_error(capsys, tmp_path):
    """The job's error as a local job says it, never the last line of submitit's wrapper (a log file's path)."""
    missing = tmp_path / "no-such-dataset"
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", "segformer.tiny", "--dataset", missing, "--suite",
                               "standard", "--out", tmp_path / "s", "--executor", "submitit-local", "--time", "5")
    assert code == 1, stdout + stderr
    [job] = (tmp_path / "s" / "sweep" / "logs").iterdir()
    assert f"job segformer.tiny trained on {missing}: FAILED: dataset path {missing} does not exist (log " \
           f"{tmp_path / 's' / 'sweep' / 'logs' / job.name})" in " ".join(stdout.split())


def test_slurm_submits_one_job_array_with_the_gpu_request_of_the_command_line(capsys, tmp_path, monkeypatch):
    """A stand-in ``sbatch`` keeps the script submitit hands it: the array, its GPUs, partition,
    time and extra parameters are the command line's; --no-wait returns once submitted."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\ncp "$1" {bin_dir}/submitted.sh\necho "Submitted batch job 4242"\n')
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    out = tmp_path / "s"
    code, stdout, stderr = cli(capsys, "sweep", "--detectors", DETECTORS, "--executor", "slurm", "--partition", "gpu",
                               "--gpus", "2", "--parallel", "1", "--time", "90", "--slurm-option", "account=forensics",
                               "--no-wait", "--out", out, *FAST)
    assert code == 0, stdout + stderr
    script = (bin_dir / "submitted.sh").read_text()
    for line in ("#SBATCH --array=0-1%1", "#SBATCH --gpus-per-node=2", "#SBATCH --partition=gpu",
                 "#SBATCH --time=90", "#SBATCH --account=forensics", "#SBATCH --ntasks-per-node=1"):
        assert line in script, (line, script)
    assert stdout.count("submitted (log") == 2 and "2 job(s) submitted" in stdout
    assert not (out / "board").exists() and not list((out / "sweep").glob("done/*"))  # nothing ran here
