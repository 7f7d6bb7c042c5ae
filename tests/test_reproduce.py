"""A run's options as one request: ``diffzoo run --config FILE`` (the command line wins), the
request every record stores, and ``diffzoo reproduce RECORD_ID`` running a row again from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.run.request import RunRequest

from helpers.cli import cli, one_line_exit_2
from helpers.data import make_diffseg_folder

FAST = ["--iterations", "3", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


def spy_evaluate(monkeypatch) -> list[dict]:
    """Calls of diffzoo.evaluate, by keyword (what `diffzoo run` hands it)."""
    import diffzoo.api as api

    calls = []
    real = api.evaluate
    monkeypatch.setattr(api, "evaluate", lambda *a, **k: calls.append(k) or real(*a, **k))
    return calls


def test_config_file_gives_the_options_and_the_command_line_wins(capsys, tmp_path, monkeypatch):
    folder = make_diffseg_folder(tmp_path / "ds", editors=("sd2", "sdxl", "glide"))  # glide's images outlive --holdout
    config = tmp_path / "run.yaml"
    config.write_text(f"detector: segformer.tiny\nsuite: standard,unseen-generators\ndataset: {folder}\n"
                      "iterations: 3\n"
                      "batch-size: 2\nseed: 5\ndataset_option:\n  calib_fraction: 0.1\nholdout: [\"sd2,glide\"]\n"
                      "references: false\n")
    calls = spy_evaluate(monkeypatch)
    code, out, err = cli(capsys, "run", "--config", config, "--seed", "7", "--device", "cpu", "--plan",
                         "--holdout", "sd2,sdxl")
    assert code == 0, err
    request, = (call["request"] for call in calls)
    assert request.seed == 7  # given on the command line
    assert request.holdout == [("sd2", "sdxl")]  # the command line's, not the file's
    assert (request.iterations, request.batch_size) == (3, 2)  # from the file (either spelling of a flag)
    assert request.dataset_option == {"calib_fraction": 0.1} and request.device == "cpu"
    assert calls[0]["references"] is False and calls[0]["plan_only"] is True
    assert "plan segformer.tiny [binary]" in out

    config.write_text("detector: segformer.tiny\niteration: 3\n")
    code, _, err = cli(capsys, "run", "--config", config, "--plan")
    assert code == 2 and "unknown option(s) iteration" in err and len(err.strip().splitlines()) == 1
    assert err.rstrip().endswith("(e.g. batch_size for --batch-size). iteration: Did you mean 'iterations'?"), err
    config.write_text("detector: segformer.tiny\ntask: semantic\n")  # a file written for train
    code, _, err = cli(capsys, "run", "--config", config, "--plan")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.rstrip().endswith("(task is an option of diffzoo predict and diffzoo train)"), err
    config.write_text("detector: segformer.tiny\nconfig: base.yaml\n")  # an option of run itself, never a file's
    code, _, err = cli(capsys, "run", "--config", config, "--plan")
    assert (code, err.strip()) == (2, f"error: --config {config}: a --config file cannot name another (config: "
                                      "base.yaml); give its options in this one")
    code, _, err = cli(capsys, "run", "--plan")
    assert code == 2 and "needs a detector" in err


@pytest.mark.parametrize("dataset, option, said", [
    ("mini", "bogus: 1", "dataset 'mini' does not take --dataset-option bogus. Valid options: cache, "),
    ("folder", "calib_fractio: 0.1", "does not take --dataset-option calib_fractio. Did you mean 'calib_fraction'?"),
    ("folder", "calib_fraction: abc", "--dataset-option calib_fraction takes a number, got 'abc'"),
])
def test_a_config_files_dataset_option_the_adapter_refuses_is_said_as_the_files(capsys, tmp_path, dataset, option,
                                                                              said):
    """An adapter's refusal of a dataset_option key or value read from a --config file did not name the file."""
    spec = make_diffseg_folder(tmp_path / "ds") if dataset == "folder" else dataset
    config = tmp_path / "run.yaml"
    config.write_text(f"detector: segformer.tiny\ndataset: {spec}\ndataset_option:\n  {option}\n")
    line = one_line_exit_2(*cli(capsys, "run", "--config", config, "--plan", "--suite", "standard"))
    assert line.startswith(f"error: --config {config}: ") and said in line, line
    code, _, err = cli(capsys, "run", "--config", config, "--plan", "--suite", "standard", "--dataset-option",
                       "calib_fraction=0.1")  # the command line's options win: the file's are not the adapter's
    assert code == 0, err


def test_the_request_is_one_declaration():
    request = RunRequest.of(detector="segformer.tiny", holdout=["sd2,glide"], dataset_option=["calib_fraction=0.1"],
                            checkpoint=["a/b"])
    assert request.holdout == [("sd2", "glide")] and request.dataset_option == {"calib_fraction": 0.1}
    assert RunRequest.from_dict(json.loads(json.dumps(request.to_dict()))) == request  # a record's round trip
    with pytest.raises(ConfigError, match="unknown option.*iteration\\b.*Did you mean 'iterations'"):
        RunRequest.of(detector="segformer.tiny", iteration=3)
    with pytest.raises(ConfigError, match="unknown option.*plan, suites;.* suites: Did you mean 'suite'"):
        RunRequest.of(detector="segformer.tiny", suites="standard", plan=True)  # each close one is named
    with pytest.raises(ConfigError, match="unknown option.*detectors.* Did you mean 'detector'"):
        RunRequest.of(detectors="segformer.tiny")  # misspelt, not missing
    with pytest.raises(ConfigError, match="--recipe 'bogus'"):
        RunRequest.of(detector="segformer.tiny", recipe="bogus")
    with pytest.raises(ConfigError, match="--seed -1"):
        RunRequest.of(detector="segformer.tiny", seed=-1)


def test_reproduce_runs_a_stored_row_again_with_identical_numbers(capsys, diffseg_folder, tmp_path):
    out = tmp_path / "out"
    code, _, err = cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset", diffseg_folder,
                       "--out", out, *FAST)
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    image = next(r for r in records if r["case"]["name"] == "image")
    assert image["request"]["detector"] == "segformer.tiny" and image["request"]["iterations"] == 3
    assert image["request"]["dataset"] == str(diffseg_folder)

    again = tmp_path / "again"
    code, stdout, err = cli(capsys, "reproduce", image["record_id"][:10], "--store", out, "--out", again)
    assert code == 0, err
    text = " ".join(stdout.split())
    assert "every metric identical" in text and "the same record id" in text
    assert all(name in stdout for name in image["metrics"])
    stored = [json.loads(p.read_text()) for p in (again / "records").glob("*.json")]
    assert [r["case"]["name"] for r in stored] == ["image"]  # only the row asked for
    assert stored[0]["record_id"] == image["record_id"] and stored[0]["metrics"] == image["metrics"]

    code, _, err = cli(capsys, "reproduce", "0" * 16, "--store", out)
    assert code != 0 and "no record" in err

    # an --out that is not diffzoo's is refused naming --force, which reproduce takes as run does (it did not)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    code, stdout, err = cli(capsys, "reproduce", image["record_id"], "--store", out, "--out", mine)
    one_line_exit_2(code, stdout, err, f"--out {mine} is not empty (notes.txt)", "pass --force")
    code, stdout, err = cli(capsys, "reproduce", image["record_id"], "--store", out, "--out", mine, "--force")
    assert code == 0 and "every metric identical" in " ".join(stdout.split()), err
    assert (mine / "notes.txt").read_text() == "mine" and (mine / "records").is_dir()


def test_a_record_whose_state_file_is_gone_from_the_store_is_said_so_and_still_compared(capsys, diffseg_folder,
                                                                                       tmp_path):
    """reproduce said "every metric identical" of a record whose state file was gone from its store, unsaid."""
    out = tmp_path / "out"
    code, _, err = cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset", diffseg_folder,
                       "--out", out, *FAST)
    assert code == 0, err
    image = next(r for r in map(json.loads, map(Path.read_text, (out / "records").glob("*.json")))
                 if r["case"]["name"] == "image")
    (out / image["state_file"]).unlink()
    code, stdout, err = cli(capsys, "reproduce", image["record_id"], "--store", out, "--out", tmp_path / "again")
    said = " ".join(stdout.split())
    assert code == 0 and "every metric identical" in said, stdout + err
    assert (f"note: record {image['record_id']}: state file {image['state_file']} that the record names is missing "
            f"(looked in {out / 'states'}); its numbers cannot be checked: copy the store's states/ folder with its "
            "records/") in said


@pytest.mark.parametrize("given", [True, False])
def test_a_store_that_is_not_there_says_to_give_store_one_whether_or_not_it_was_given(capsys, tmp_path, monkeypatch,
                                                                                     given):
    """reproduce ID --store nonexist said "... or pass --store", --store being passed."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "nonexist" if given else Path("diffzoo-out")
    code, stdout, err = cli(capsys, "reproduce", "0" * 16, *(["--store", store] if given else []))
    line = one_line_exit_2(code, stdout, err, f"{store} is not a record store (no {store / 'records'})")
    assert line.endswith("; give --store the folder of a record store (any `diffzoo run --out DIR` folder)"), line


def test_reproduce_runs_a_row_on_another_device_than_the_records(capsys, diffseg_folder, tmp_path, monkeypatch):
    out = tmp_path / "out"
    code, _, err = cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset", diffseg_folder,
                       "--out", out, *FAST)  # made with --device cpu
    assert code == 0, err
    image = next(r for r in map(json.loads, map(Path.read_text, (out / "records").glob("*.json")))
                 if r["case"]["name"] == "image")
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    code, stdout, err = cli(capsys, "reproduce", image["record_id"], "--store", out, "--device", "cuda:3")
    one_line_exit_2(code, stdout, err, "--device cuda:3: CUDA is not available")  # the device asked, not the record's
    code, stdout, err = cli(capsys, "reproduce", image["record_id"], "--store", out, "--device", "")
    line = one_line_exit_2(code, stdout, err, "--device '' is not a device diffzoo can use")  # an unset variable
    assert line.startswith("error: --device ''"), line  # the value typed here, never said as the record's request's
    code, stdout, err = cli(capsys, "reproduce", image["record_id"], "--store", out, "--device", "auto")
    assert code == 0, err
    assert "every metric identical" in " ".join(stdout.split())


def test_a_row_whose_data_changed_since_says_so_not_see_the_notes(capsys, diffseg_folder, tmp_path):
    """Reproducing a row after its dataset lost an image said "the run made no record of ... (see the notes
    above)", with no note above: the run's record was of other data (another fingerprint)."""
    import shutil

    data = tmp_path / "copy" / "ds"
    shutil.copytree(diffseg_folder, data)
    code, _, err = cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset", data, "--out",
                       tmp_path / "out", *FAST)
    assert code == 0, err
    binary = next(r for r in map(json.loads, map(Path.read_text, (tmp_path / "out" / "records").glob("*.json")))
                  if r["case"]["name"] == "binary")
    last = sorted(data.rglob("*.image.png"))[-1]
    last.unlink()
    last.with_name(last.name.replace(".image.", ".mask.")).unlink()
    code, stdout, err = cli(capsys, "reproduce", binary["record_id"], "--store", tmp_path / "out", "--out",
                            tmp_path / "again")
    said = " ".join(stdout.split())
    assert code == 1 and ("the run made no record of segformer.tiny / standard / binary on ds (it read ds as "
                          "fingerprint ") in said, stdout + err
    assert (f", the record's is {binary['dataset']['fingerprint']}: the data changed since, or another copy of it "
            "is read)") in said


def test_a_stored_request_that_is_no_valid_run_is_said_to_be_the_records(tmp_path):
    """A record whose stored options are refused said "--iterations takes an integer, got 'abc'" alone, naming
    an option the user of `diffzoo reproduce ID` never typed."""
    from diffzoo.api import reproduce

    from helpers.records import make_record

    for request, said in (({"detector": "segformer.tiny", "iterations": "abc"}, "--iterations takes an integer, "
                           "got 'abc'"), ({"suite": "standard"}, "a run needs a detector: --detector NAME")):
        record = make_record(request=request)
        with pytest.raises(ConfigError) as error:
            reproduce(record, tmp_path / "out")
        assert str(error.value).startswith(f"record {record.id}'s stored request: {said}")
    assert not (tmp_path / "out").exists()


def test_a_record_that_cannot_be_made_again_here_is_one_line_before_any_work(capsys, tmp_path):
    """A record of a detector whose plugin is not installed, one whose stored request was edited by hand
    (its digests sealed again: another detector or seed, the record's id unchanged), and one of another
    suite or metrics version: each refused in one line before any work. The edited request trained and
    compared another model's numbers with the record's; the older record compared numbers of another
    suite definition and said "every metric identical", exit 0."""
    from diffzoo.api import reproduce
    from diffzoo.harness.core.plugins import get_registry
    from diffzoo.leaderboard.store import RecordStore

    from helpers.records import make_record, resealed

    suite = get_registry().get("suite", "standard").load()
    nowhere = tmp_path / "nowhere"
    current = make_record("segformer.tiny", suite_version=suite.version, config={"overrides": {"recipe": "native"}},
                          request={"detector": "segformer.tiny", "dataset": str(nowhere)})
    with pytest.raises(ConfigError, match=f"^record {current.id}'s run read --dataset {nowhere}, not found"):
        reproduce(current, tmp_path / "out")  # a record this diffzoo can make again: its data is asked for
    acme = resealed(current, lambda d: (d["detector"].update(name="acme.det", plugin="acme-diffzoo"),
                                        d["request"].update(detector="acme.det")))
    other = resealed(current, lambda d: d["request"].update(detector="fcn8s.tiny", seed=7))
    older = resealed(current, lambda d: (d["suite"].update(version="1"), d.update(metrics_version="1")))
    cases = [(acme, f"record {acme.id}'s detector 'acme.det' is not installed here: install its plugin "
                    "'acme-diffzoo' (diffzoo list detectors lists those installed)"),
             (other, f"record {other.id}'s stored request runs detector 'fcn8s.tiny' (the record's: 'segformer.tiny'), "
                     "seed 7 (the record's: 0): it was edited after the run, and would make another row"),
             (older, f"record {older.id} was made with suite standard version 1 (this diffzoo's: {suite.version}), "
                     "metrics version 1 (this diffzoo's: 2): this diffzoo cannot make its row again; reproduce it "
                     "with the diffzoo that made it (0.1.0)")]
    assert other.id == current.id  # the request is no part of the identity
    store = RecordStore(tmp_path / "store")
    for record, said in cases:
        with pytest.raises(ConfigError) as error:
            reproduce(record, tmp_path / "out")
        assert str(error.value) == said
        assert store.add(record).status == "added"
        assert one_line_exit_2(*cli(capsys, "reproduce", record.id, "--store", store.root)) == f"error: {said}"
    assert not (tmp_path / "out").exists()


CALIBRATED = {"mode": "calibrated", "source": "calibrated on calib (10 images)",
              "calibrated_on": "calibrated on calib (10 images)"}


@pytest.mark.parametrize("edit, said", [
    ({"iterations": 30}, "iterations 30 (the record's: 3)"),
    ({"batch_size": 4}, "batch_size 4 (the record's: None)"),  # an option the record's overrides do not give
    ({"pretrained": True}, "pretrained True (the record's: False)"),
    ({"recipe": "paper", "bootstrap": 100}, "recipe 'paper' (the record's: 'native'), bootstrap 100 (the record's: 0)"),
    ({"thresholds": "fixed", "calibration_split": "calib"}, "thresholds 'fixed' (the record's: 'calibrated')"),
    ({"calibration_split": "val"}, "calibration_split 'val' (the record's: 'calib')"),
    ({"weights": "released:ade20k"}, "weights 'released:ade20k' (the record's: None)"),
    ({"strict": True}, "strict True (the record's: False)"),
])
def test_a_stored_request_edited_in_any_field_the_record_states_is_named_before_any_work(tmp_path, edit, said):
    """Only the detector and the seed were compared: a request edited to 30 iterations or fixed thresholds trained
    and ran another row, and ended in "record A then, B now: what made it differs"."""
    from diffzoo.api import reproduce
    from diffzoo.harness.core.plugins import get_registry

    from helpers.records import make_record, resealed

    nowhere = tmp_path / "nowhere"
    record = make_record(
        "segformer.tiny", suite_version=get_registry().get("suite", "standard").load().version,
        threshold_policy=CALIBRATED, config={"overrides": {"iterations": 3, "recipe": "native", "pretrained": False},
                                             "strict": False, "bootstrap": {"resamples": 0, "seed": 0}},
        request={"detector": "segformer.tiny", "dataset": str(nowhere), "iterations": 3, "pretrained": False,
                 "thresholds": "calibrated", "bootstrap": 0})
    with pytest.raises(ConfigError, match=f"^record {record.id}'s run read --dataset {nowhere}, not found"):
        reproduce(record, tmp_path / "out")  # as stored: the check passes, and the data is asked for
    edited = resealed(record, lambda d: d["request"].update(edit))
    with pytest.raises(ConfigError) as error:
        reproduce(edited, tmp_path / "out")
    assert str(error.value) == (f"record {record.id}'s stored request runs {said}: it was edited after the run, and "
                                "would make another row")
    assert not (tmp_path / "out").exists()


def test_fields_a_record_does_not_state_are_not_compared(tmp_path):
    """A semantic model is never calibrated (its records say fixed under --thresholds calibrated), and a training
    option the request leaves to the dataset (iterations: null) is the dataset's in the record's overrides."""
    from diffzoo.api import reproduce
    from diffzoo.harness.core.plugins import get_registry

    from helpers.records import make_record

    nowhere = tmp_path / "nowhere"
    record = make_record("segformer.tiny", task="semantic", config={"overrides": {"iterations": 3, "recipe": "native"}},
                         suite_version=get_registry().get("suite", "standard").load().version,
                         request={"detector": "segformer.tiny", "dataset": str(nowhere), "thresholds": "calibrated"})
    with pytest.raises(ConfigError, match=f"^record {record.id}'s run read --dataset {nowhere}, not found"):
        reproduce(record, tmp_path / "out")


@pytest.mark.parametrize("recorded, said", [(3, "iterations None (the record's: 3)"), (60, None)])
def test_a_training_option_edited_to_null_is_named_unless_the_dataset_gives_the_recorded_value(tmp_path, recorded,
                                                                                                said):
    """A request edited from iterations 3 to null was not compared (null read as "not stated"), and the run
    trained the mini dataset's own 60 iterations: another row.  A null the dataset's own value fills (60) runs."""
    from diffzoo.api import reproduce
    from diffzoo.harness.core.plugins import get_registry

    from helpers.records import make_record

    class Planned(Exception):
        pass

    def stop(_):
        raise Planned

    record = make_record("segformer.tiny", config={"overrides": {"iterations": recorded, "recipe": "native"}},
                         suite_version=get_registry().get("suite", "standard").load().version,
                         request={"detector": "segformer.tiny", "dataset": "mini", "iterations": None,
                                  "device": "cpu"})
    with pytest.raises(ConfigError if said else Planned) as error:
        reproduce(record, tmp_path / "out", on_plan=stop)
    if said:
        assert str(error.value) == (f"record {record.id}'s stored request runs {said}: it was edited after the run, "
                                    "and would make another row")


def test_a_row_run_with_a_checkpoint_of_one_task_is_reproduced_and_a_changed_checkpoint_said(capsys, diffseg_folder,
                                                                                              tmp_path):
    """A run given a binary --checkpoint trains its semantic model: reproducing the semantic row was refused
    ("--checkpoint ck is a binary model, but no case of this run scores one"), and the binary row of a checkpoint
    changed since was run, its numbers compared as moved, with no word of the checkpoint."""
    import shutil

    train = ["-d", "segformer.tiny", "--dataset", diffseg_folder, *FAST[:6], "--device", "cpu"]
    for seed, folder in ((0, "ck"), (1, "other")):
        code, _, err = cli(capsys, "train", *train, "--seed", seed, "--out", tmp_path / folder)
        assert code == 0, err
    out = tmp_path / "out"
    code, _, err = cli(capsys, "run", *train, "--suite", "standard", "--checkpoint", tmp_path / "ck", "--bootstrap",
                       "0", "--no-references", "--out", out)
    assert code == 0, err
    rows = {r["case"]["name"]: r for r in map(json.loads, map(Path.read_text, (out / "records").glob("*.json")))}
    code, stdout, err = cli(capsys, "reproduce", rows["semantic"]["record_id"], "--store", out)
    assert code == 0 and "every metric identical" in " ".join(stdout.split()), stdout + err
    shutil.rmtree(tmp_path / "ck")
    shutil.copytree(tmp_path / "other", tmp_path / "ck")
    binary = rows["binary"]
    one_line_exit_2(*cli(capsys, "reproduce", binary["record_id"], "--store", out),
                    f"record {binary['record_id']}'s run read --checkpoint {tmp_path / 'ck'}, whose weights are now "
                    f"sha256 {json.loads((tmp_path / 'other' / 'card.json').read_text())['sha256'][:12]}, the "
                    f"record's {binary['detector']['checkpoint_sha256'][:12]}: the checkpoint changed since")


def test_a_row_made_again_under_another_identity_names_the_fields_that_differ(capsys, diffseg_folder, tmp_path):
    """A stored request edited where the record states nothing of it (a dataset option that moves the split
    scheme) makes the same numbers under another record id: it said "what made it differs", naming nothing."""
    from helpers.records import resealed

    out = tmp_path / "out"
    code, _, err = cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset", diffseg_folder,
                       "--out", out, *FAST)
    assert code == 0, err
    path = next(p for p in (out / "records").glob("*.json") if json.loads(p.read_text())["case"]["name"] == "binary")
    record = ResultRecord.read(path)
    path.write_text(json.dumps(resealed(record, lambda d: d["request"].update(dataset_option={"val_fraction": 0.3}))
                               .data))
    code, stdout, err = cli(capsys, "reproduce", record.id, "--store", out)
    assert code == 0, stdout + err
    assert f"record {record.id} then, " in stdout and " now: what made it differs in split)" in " ".join(stdout.split())


def test_a_row_run_with_no_train_is_reproduced_where_no_cache_holds_its_model(capsys, diffseg_folder, tmp_path,
                                                                            monkeypatch):
    """A row whose run loaded its model from the cache (--no-train) ended, on a machine whose cache holds none, in
    "pass --checkpoint PATH or drop --no-train": options reproduce does not take. The model is trained anew from
    the record's options, as every row of a trained model is on another machine."""
    out = tmp_path / "out"
    for train in ("--train", "--no-train"):  # trained, then a run that loads it
        code, _, err = cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset", diffseg_folder,
                           "--out", out, train, "--rerun", *FAST)
        assert code == 0, err
    record = next(r for r in map(json.loads, map(Path.read_text, (out / "records").glob("*.json")))
                  if r["case"]["name"] == "binary")
    assert record["request"]["train"] is False
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "another-machine"))
    code, stdout, err = cli(capsys, "reproduce", record["record_id"], "--store", out)
    assert code == 0, stdout + err
    assert f"every metric identical (13 compared; the same record id {record['record_id']})" in " ".join(stdout.split())


def test_a_row_run_on_relative_paths_is_reproduced_from_the_folder_it_ran_in(capsys, diffseg_folder, tmp_path,
                                                                             monkeypatch):
    import shutil

    project = tmp_path / "project"
    shutil.copytree(diffseg_folder, project / "data" / "ds")
    monkeypatch.chdir(project)
    code, _, err = cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset", "data/ds",
                       "--out", "out", *FAST)
    assert code == 0, err
    image = next(r for r in map(json.loads, map(Path.read_text, (project / "out" / "records").glob("*.json")))
                 if r["case"]["name"] == "image")
    assert image["request"]["dataset"] == "data/ds"  # as given: no user's folder in a published record

    monkeypatch.chdir(tmp_path)
    code, stdout, err = cli(capsys, "reproduce", image["record_id"], "--store", "project/out")
    one_line_exit_2(code, stdout, err, f"record {image['record_id']}'s run read --dataset data/ds, relative to the "
                    f"folder it was started in", f"not found from {tmp_path}", "--from-folder DIR")
    code, stdout, err = cli(capsys, "reproduce", image["record_id"], "--store", "project/out", "--from-folder",
                            "project", "--out", "again")
    assert code == 0, err
    assert "every metric identical" in " ".join(stdout.split())
    assert (tmp_path / "again" / "records").is_dir() and not (project / "again").exists()  # --out read from here


def test_a_row_run_on_absolute_paths_not_on_this_machine_is_one_line_saying_where_to_put_them(
        capsys, diffseg_folder, tmp_path):
    """A dataset folder, --extra-authentic and a dataset option's file named by absolute paths the
    machine does not have: one line before any work, each named (it was the first one's bare "does
    not exist", with no word of how to give reproduce the data)."""
    import shutil

    data, authentic, splits = tmp_path / "data" / "ds", tmp_path / "authentic", tmp_path / "splits.json"
    shutil.copytree(diffseg_folder, data)
    authentic.mkdir()
    shutil.copy(next(data.rglob("*.image.png")), authentic / "a.png")
    ids = [json.loads(line)["id"] for line in (data / "manifest.jsonl").read_text().splitlines()]
    splits.write_text(json.dumps({"train": ids[:6], "val": ids[6:]}))
    out = tmp_path / "out"
    code, _, err = cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset", data, "--out", out,
                       "--extra-authentic", authentic, "--dataset-option", f"split_file={splits}", *FAST)
    assert code == 0, err
    image = next(r for r in map(json.loads, map(Path.read_text, (out / "records").glob("*.json")))
                 if r["case"]["name"] == "image")
    data.rename(tmp_path / "data" / "elsewhere")
    shutil.rmtree(authentic)
    splits.unlink()
    code, stdout, err = cli(capsys, "reproduce", image["record_id"], "--store", out)
    one_line_exit_2(code, stdout, err, f"record {image['record_id']}'s run read --dataset {data}, "
                    f"--dataset-option split_file={splits}, --extra-authentic {authentic}, not found on this "
                    f"machine: reproduce reads what its run read, so put each there (a link to the copy here will "
                    f"do: ln -s COPY {data})")


def test_reproduce_compares_within_the_tolerance():
    from diffzoo.cli.reproduce import compare

    rows, moved = compare({"mIoU": 0.5, "F1": None, "img_AP": 0.9}, {"mIoU": 0.504, "F1": None, "img_AP": 0.9}, 0.0)
    assert moved == ["mIoU"] and [r[0] for r in rows] == ["F1", "img_AP", "mIoU"]
    assert compare({"mIoU": 0.5}, {"mIoU": 0.504}, 0.01)[1] == []
    assert compare({"mIoU": 0.5}, {"mIoU": None}, 0.01)[1] == ["mIoU"]  # undefined now: not the same number
    assert compare({"mIoU": 0.5}, {}, 0.01)[1] == ["mIoU"]


def test_a_tolerance_that_is_no_finite_number_is_a_usage_error(capsys, tmp_path):
    """inf passed every metric (NaN fails click's bound already): neither compares anything."""
    code, _, err = cli(capsys, "reproduce", "abc", "--store", tmp_path, "--tolerance", "inf")
    assert code == 2 and "Invalid value for '--tolerance': inf is no finite number" in err, err
    assert cli(capsys, "reproduce", "abc", "--store", tmp_path, "--tolerance", "nan")[0] == 2
