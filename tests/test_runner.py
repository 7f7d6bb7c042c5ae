"""End to end through the runner on a tiny SegFormer and a dataset made here."""

import datetime
import json
from importlib import metadata

import numpy as np
import pytest

from diffzoo.harness.core.errors import CorruptSampleError, ModelError
from diffzoo.harness.core.fsutil import sha256_file
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.models.checkpoints import cache_dir
from diffzoo.harness.records.document import REQUIRED, SCHEMA_VERSION, ResultRecord
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.runner import run

FAST = {"iterations": 40, "batch_size": 4, "crop_size": 32}


def request(dataset, **kw):
    base = dict(detector="segformer.tiny", suite="standard", dataset=str(dataset), device="cpu", bootstrap=50, **FAST)
    base.update(kw)
    return RunRequest(**base)


def state_of(record) -> EvalState:
    """The metric state a record carries (its numbers are computed from it)."""
    return EvalState.from_state_dict(json.loads(record.attachments[record.data["state_file"]]))


def edited_iou(state: EvalState) -> float:
    """Binary mIoU (docs/metrics.md: the IoU of class 1), counted from the state's confusion matrix."""
    conf = state.confusion_matrix()
    return conf[1, 1] / (conf[1, 1] + conf[0, 1] + conf[1, 0])


def test_standard_suite_records_and_provenance(diffseg_folder, tmp_path):
    from diffzoo import open_dataset
    from diffzoo.harness.core.plugins import get_registry
    from diffzoo.harness.records.document import git_hash, keep_state
    from diffzoo.harness.run.runner import Runner

    output = Runner(request(diffseg_folder), write=lambda state: keep_state(tmp_path / "out", state)).run()
    dataset = open_dataset(str(diffseg_folder))
    val = dataset.ids("val")
    standard = get_registry().get("suite", "standard").load()
    by_case = {r.data["case"]["name"]: r for r in output.records}
    assert set(by_case) == {"binary", "semantic", "image"}
    assert len(output.plan.jobs) == 2  # binary + image share one model
    for r in output.records:
        for key in REQUIRED:
            assert key in r.data
        d = r.data
        assert d["schema_version"] == SCHEMA_VERSION
        weights = cache_dir("segformer.tiny", d["config"]["cache_key"]) / "model.safetensors"
        assert d["detector"]["checkpoint_sha256"] == sha256_file(weights)
        assert d["suite"] == {"name": "standard", "version": "2", "definition_hash": standard.definition_hash()}
        assert d["dataset"]["fingerprint"] == dataset.fingerprint() and d["seed"] == 0
        assert d["environment"]["packages"]["torch"] == metadata.version("torch")
        assert d["environment"]["git"] == git_hash()
        assert datetime.datetime.fromisoformat(d["environment"]["date"]).tzinfo == datetime.UTC
        assert d["counts"]["evaluated"] == len(val) == state_of(r).num_images
        ResultRecord(json.loads(r.to_json())).validate()
    binary = by_case["binary"].data
    state = state_of(by_case["binary"])
    conf = state.confusion_matrix()
    assert binary["metrics"]["mIoU"] == pytest.approx(edited_iou(state), rel=1e-12)
    assert binary["metrics"]["aAcc"] == pytest.approx(np.trace(conf) / conf.sum(), rel=1e-12)
    edited_share = conf[1].sum() / conf.sum()  # all edited: IoU = |GT edited| / |all pixels|
    assert binary["baselines"] == {
        "all_background": {"mIoU": 0.0, "aAcc": pytest.approx(1 - edited_share, rel=1e-12), "bF1": 0.0, "F1": 0.0},
        "all_edited": {"mIoU": pytest.approx(edited_share, rel=1e-12), "aAcc": pytest.approx(edited_share, rel=1e-12),
                       "bF1": 0.0, "F1": pytest.approx(2 * edited_share / (1 + edited_share), rel=1e-12)}}
    assert set(binary["slices"]) == {"base", "turns", "multiturn", "editor", "edit_type"}
    assert set(binary["slices"]["base"]) == {dataset.load(i).meta.base for i in val} == {"real", "ai"}
    semantic = by_case["semantic"].data
    state = state_of(by_case["semantic"])
    conf = state.confusion_matrix()
    assert semantic["label_space"] == ["background", "sd2", "sdxl"]
    assert semantic["confusion"] == conf.tolist() and conf.shape == (3, 3)
    assert set(semantic["metrics"]) == {"aAcc", "mAcc", "mIoU", "bF1", "bF1_image_mean", "top1", "top3",
                                        "IoU.background", "IoU.sd2", "IoU.sdxl"}
    ious = [conf[k, k] / (conf[k].sum() + conf[:, k].sum() - conf[k, k]) for k in range(3)]
    assert [semantic["metrics"][f"IoU.{c}"] for c in semantic["label_space"]] == pytest.approx(ious, rel=1e-12)
    assert semantic["metrics"]["mIoU"] == pytest.approx(np.mean(ious[1:]), rel=1e-12, abs=1e-15)
    image = by_case["image"].data
    verdicts = state_of(by_case["image"]).verdicts()  # id -> (edited, predicted edited)
    assert sorted(verdicts) == sorted(i for i in val if dataset.load(i).meta.turns)  # val: edited images only
    assert image["metrics"] == {
        "img_Acc": sum(label == int(said) for label, said in verdicts.values()) / len(verdicts),
        "img_edited_Acc": sum(said for _, said in verdicts.values()) / len(verdicts),
        "img_real_Acc": None, "img_AUC": None,  # no authentic image in val: undefined, not a number
        "img_AP": 1.0, "img_Acc_oracle": 1.0}  # every scored image is edited: any ranking is perfect
    state_file = tmp_path / "out" / binary["state_file"]
    assert sha256_file(state_file) == binary["state_sha256"]


def test_same_seed_same_metrics_and_cache_reuse(diffseg_folder, tmp_path, monkeypatch):
    first = run(request(diffseg_folder, suite="standard", bootstrap=0))
    again = run(request(diffseg_folder, suite="standard", bootstrap=0))  # from the cache
    assert [r.data["detector"]["checkpoint_source"] for r in again.records] == ["cache"] * 3
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "fresh-cache"))
    retrained = run(request(diffseg_folder, suite="standard", bootstrap=0))
    assert [r.data["detector"]["checkpoint_source"] for r in retrained.records] == ["trained"] * 3
    cases = [[r.data["case"]["name"] for r in o.records] for o in (first, again, retrained)]
    assert cases == [["binary", "image", "semantic"]] * 3  # binary and image share the first model
    for a, b, c in zip(first.records, again.records, retrained.records):
        assert a.metrics == b.metrics == c.metrics
        assert a.data["detector"]["checkpoint_sha256"] == c.data["detector"]["checkpoint_sha256"]


def test_training_lowers_the_loss(diffseg_folder):
    out = run(request(diffseg_folder, bootstrap=0, iterations=60))
    log = out.records[0].data["training"]
    assert log["final_loss"] < log["first_loss"]


def test_corrupt_sample_is_skipped_and_counted_or_stops_with_strict(diffseg_folder, tmp_path):
    out = run(request(diffseg_folder, bootstrap=0))
    val_ids = out.plan.dataset.ids("val")
    bad = diffseg_folder / "train_copy" / f"{val_ids[0]}.image.png"
    bad.write_bytes(bad.read_bytes()[:60])  # truncated PNG
    out = run(request(diffseg_folder, bootstrap=0))
    counts = out.records[0].data["counts"]
    assert counts["skipped_total"] == 1 and counts["skipped_by_reason"] == {"corrupt": 1}
    assert counts["skipped"][0]["id"] == val_ids[0]
    assert counts["evaluated"] == len(val_ids) - 1
    with pytest.raises(CorruptSampleError, match=val_ids[0]):
        run(request(diffseg_folder, bootstrap=0, strict=True))


@pytest.mark.isolated_cache  # nothing cached: a shared cache may hold this very model
def test_no_train_without_checkpoint_is_a_clear_error(diffseg_folder):
    with pytest.raises(ModelError, match="--checkpoint PATH or drop --no-train"):
        run(request(diffseg_folder, train=False))


def test_given_checkpoint_is_used(diffseg_folder, tmp_path):
    out = run(request(diffseg_folder, bootstrap=0))
    assert out.records[0].data["case"]["name"] == "binary"
    ckpt = cache_dir("segformer.tiny", out.records[0].data["config"]["cache_key"])
    assert (ckpt / "model.safetensors").exists()
    again = run(request(diffseg_folder, bootstrap=0, train=False, suite="standard",
                        checkpoint=[ckpt]))
    binary = [r for r in again.records if r.data["case"]["name"] == "binary"][0]
    assert binary.data["detector"]["checkpoint_source"] == "given"
    assert binary.metrics == out.records[0].metrics
    assert binary.data["detector"]["checkpoint_sha256"] == sha256_file(ckpt / "model.safetensors")
    conf = state_of(binary).confusion_matrix()
    assert binary.metrics["aAcc"] == pytest.approx(np.trace(conf) / conf.sum(), rel=1e-12)


def test_extra_authentic_images_join_training_only(diffseg_folder, tmp_path):
    import numpy as np
    from PIL import Image

    extra = tmp_path / "coco"
    extra.mkdir()
    for i in range(5):
        Image.fromarray(np.full((32, 32, 3), 40 * i, np.uint8)).save(extra / f"a{i}.png")
    base = run(request(diffseg_folder, bootstrap=0, suite="standard"))
    more = run(request(diffseg_folder, bootstrap=0, suite="standard",
                       dataset_option={"extra_authentic": extra}))
    n_train = [r.data["training"]["num_train_images"] for r in (base.records[0], more.records[0])]
    assert n_train[1] == n_train[0] + 5
    assert base.records[0].data["counts"]["evaluated"] == more.records[0].data["counts"]["evaluated"]
    assert base.records[0].data["dataset"]["fingerprint"] != more.records[0].data["dataset"]["fingerprint"]


def test_training_subset_drops_images_of_held_out_editors(diffseg_folder):
    from diffzoo import open_dataset
    from diffzoo.harness.run.plan import training_ids
    from diffzoo.harness.suites import TrainSpec

    ds = open_dataset(str(diffseg_folder))
    kept = training_ids(ds, TrainSpec("binary", exclude_editors=("sdxl",)))
    everything = training_ids(ds, TrainSpec("binary"))
    with_sdxl = {i for i in everything if any(t.editor == "sdxl" for t in ds.load(i).meta.turns)}
    assert with_sdxl and sorted(kept) == sorted(set(everything) - with_sdxl)
    assert all(2 not in ds.load(i).label for i in kept)
    assert all(2 in ds.load(i).label for i in with_sdxl)


# -- the paper's suites on a small dataset labelled like DiffSeg30k -------------------

@pytest.fixture(scope="module")
def eight_editor_folder(tmp_path_factory):
    from diffzoo.harness.data.labelmaps import DIFFSEG30K_EDITORS

    from helpers.data import make_diffseg_folder

    return make_diffseg_folder(tmp_path_factory.mktemp("ds8"), n=60, size=32, editors=DIFFSEG30K_EDITORS)


def paper_request(folder, **kw):
    """The paper's suites on the eight-editor fixture; the LoRA suite's generator where it is run
    (a --generator no case reads is refused)."""
    lora = {"generator": {"sdxl.hyper-sd-8step": "sdxl.tiny-lora"}} if kw.get("suite") in ("all", "lora") else {}
    return request(folder, bootstrap=0, iterations=10, dataset_option={"calib_fraction": 0.15}, **lora, **kw)


@pytest.fixture(scope="module")
def suite_all(eight_editor_folder, tmp_path_factory):
    """``--suite all`` on the eight-editor fixture, once per module: (runner,
    output, the evaluation passes that ran, the output folder)."""
    from diffzoo.harness.records.document import keep_state
    from diffzoo.harness.run import evaluate as evaluate_module
    from diffzoo.harness.run.runner import Runner

    passes = []
    real = evaluate_module.evaluate

    def counting(det, dataset, split, distortion, params, **kw):
        # the detector itself, not id(det): holding it keeps ids of freed models from being reused
        passes.append((det, det.task, split, getattr(distortion, "__name__", "?"),
                       tuple(sorted(params.items()))))
        return real(det, dataset, split, distortion, params, **kw)

    out = tmp_path_factory.mktemp("suite-all") / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("diffzoo.harness.run.evaluate.evaluate", counting)
        runner = Runner(paper_request(eight_editor_folder, suite="all"), write=lambda state: keep_state(out, state))
        output = runner.run()
    return runner, output, passes, out


def test_every_suite_runs_and_gives_a_record_per_case(suite_all):
    from diffzoo.harness.core.plugins import get_registry
    from diffzoo.harness.data.labelmaps import DIFFSEG30K_EDITORS

    runner, output, passes, _ = suite_all
    got = {(r.data["suite"]["name"], r.data["case"]["name"]) for r in output.records}
    suites = {e.name: e.load() for e in get_registry().list("suite")}
    expected = {(s.name, c.name) for s in suites.values() for c in s.cases}
    noted = {tuple(n.split(":")[0].split("/")) for n in runner.notes}
    # the cases that evaluate other datasets are skipped, saying why: this run names none
    skipped = {(s.suite.name, s.case.name): s.reason for s in output.plan.skipped}
    assert set(skipped) == {(s, c) for s in ("cross-dataset", "opensdi") for c in ("binary", "image")} | {
        ("cross-dataset", "binary.editor")}
    assert all(reason.startswith("no --eval-dataset given") for reason in skipped.values())
    assert got | noted | set(skipped) == expected and not got & noted
    # the only cases without a record: the per-editor classification cases of the editors val lacks
    dataset = output.plan.dataset
    val = dataset.ids("val")
    in_val = {t.editor for i in val for t in dataset.load(i).meta.turns}
    absent = [e for e in DIFFSEG30K_EDITORS if e not in in_val]
    assert absent == ["sd3.5", "hunyuandit1.1"]
    assert runner.notes == [f"classification/{e}: no image of {e} in {dataset.name}/val; no record" for e in absent]

    # passes: one per (model, split, distortion setting); subsets and slices need none of their own
    assert len(passes) == len(set(passes))
    settings = {c.distortion + str(sorted(c.distortion_params)) for c in suites["distortions"].cases}
    models = {}
    for p in passes:
        models.setdefault(p[0], []).append(p)
    sizes = sorted(len(v) for v in models.values())
    # 3 held-out binary models (one pass each), the semantic model (clean + settings + LoRA re-edit),
    # the binary model (clean + settings + 4 re-encodings + LoRA re-edit)
    assert sizes == [1, 1, 1, len(settings) + 1, len(settings) + 5]

    records = {(r.data["suite"]["name"], r.data["case"]["name"]): r for r in output.records}
    by = {key: r.data for key, r in records.items()}
    jpeg = by[("distortions", "jpeg60.binary")]
    assert jpeg["case"]["distortion_params"] == {"quality": 60}
    assert jpeg["metrics"]["mIoU"] == pytest.approx(edited_iou(state_of(records[("distortions", "jpeg60.binary")])),
                                                    rel=1e-12)
    resized, clean = by[("distortions", "resize50.binary")], by[("standard", "binary")]
    assert resized["counts"]["evaluated"] == clean["counts"]["evaluated"]

    slices = by[("slices", "turns.binary")]["metrics"]
    standard_slices = by[("standard", "binary")]["slices"]["turns"]
    case = next(c for c in suites["slices"].cases if c.name == "turns.binary")
    assert set(standard_slices) == {"0", "1"}  # the fixture makes single-turn edits and authentic images
    assert set(slices) == {f"{m}@turns={w}" for m in case.metrics for w in standard_slices} | {"num_images"}
    assert slices["num_images"] == len(val)
    for key, value in slices.items():
        if key != "num_images":
            metric, _, where = key.partition("@turns=")
            assert value == standard_slices[where][metric]  # the same pass, no re-inference

    parity = by[("format-parity", "png")]["metrics"]
    assert parity["verdict_flip_rate"] == 0.0 and parity["format_shortcut"] == 0.0  # PNG is lossless

    lora = by[("lora", "sdxl-lora.semantic")]
    assert lora["config"]["distortion_params"]["generator"] == "sdxl.tiny-lora"
    assert by[("lora", "sdxl.semantic")]["counts"]["evaluated"] == lora["counts"]["evaluated"]

    pair = [k for k in by if k[0] == "unseen-generators" and ".seen." not in k[1]]
    assert sorted(name for _, name in pair) == [f"{p}.{t}" for p in ("Flux_Hunyuan", "Glide_Kolors", "SD2_SD3.5")
                                                for t in ("binary", "image")]
    for key in pair:
        d = by[key]
        held = d["config"]["train_subset"]["exclude_editors"]
        assert held == d["case"]["editors"]
        # evaluated: the authentic images and those of the held-out editors
        shown = [i for i in val if not dataset.load(i).meta.turns
                 or {t.editor for t in dataset.load(i).meta.turns} & set(held)]
        assert d["counts"]["evaluated"] == len(shown)
        seen = by[(key[0], key[1].replace(".binary", ".seen.binary").replace(".image", ".seen.image"))]
        assert seen["counts"]["evaluated"] == d["counts"]["evaluated"]  # the same images
        assert seen["config"]["train_subset"]["exclude_editors"] == []


def test_calibrated_thresholds_are_recorded_and_never_chosen_on_the_evaluated_split(eight_editor_folder, tmp_path,
                                                                                   caplog):
    from diffzoo.harness.core.errors import ConfigError
    from diffzoo.harness.core.plugins import get_registry
    from diffzoo.harness.run.evaluate import evaluate
    from diffzoo.harness.run.prediction import load_model

    out = run(paper_request(eight_editor_folder, suite="standard", thresholds="calibrated"))
    binary = next(r.data for r in out.records if r.data["case"]["name"] == "binary")
    policy = binary["threshold_policy"]
    calib = out.plan.dataset.ids("calib")
    assert policy["mode"] == "calibrated" and policy["calibrated_on"] == f"calibrated on calib ({len(calib)} images)"
    # the pixel threshold is the best one on calib, scored again here with the card's fixed thresholds
    model = load_model(checkpoints=[cache_dir("segformer.tiny", binary["config"]["cache_key"])], device="cpu")
    none = get_registry().get("distortion", "none").load()
    on_calib = evaluate(model.detector, out.plan.dataset, "calib", none, {}).states["binary"]
    assert on_calib.num_images == len(calib)
    assert policy["values"]["pixel"] == on_calib.best_thresholds()["pixel"]
    semantic = next(r.data for r in out.records if r.data["case"]["name"] == "semantic")
    assert semantic["threshold_policy"]["mode"] == "fixed"  # argmax
    assert "optimistic" not in caplog.text  # calib is held out from the training split
    with pytest.raises(ConfigError, match="evaluates that split"):
        run(paper_request(eight_editor_folder, suite="standard", thresholds="calibrated", calibration_split="val"))
    # calibrating on the model's own training images is allowed, and said
    on_train = run(paper_request(eight_editor_folder, suite="standard", thresholds="calibrated",
                                 calibration_split="train"))
    train = on_train.plan.dataset.ids("train")
    assert (f"thresholds calibrated on 'train', where segformer.tiny [binary] was trained on {len(train)} of its "
            f"{len(train)} images: its scores there are optimistic") in caplog.text
    assert next(r.data for r in on_train.records if r.data["case"]["name"] == "binary")["threshold_policy"][
        "calibrated_on"] == f"calibrated on train ({len(train)} images)"
    with pytest.raises(ConfigError, match="no 'calib' split"):
        run(request(eight_editor_folder, suite="standard", thresholds="calibrated", bootstrap=0))



def test_thresholds_calibrated_on_copies_of_extra_authentic_images_are_said_optimistic(diffseg_folder, tmp_path,
                                                                                      caplog):
    """Calibrating on a split whose images --extra-authentic also trained on (copies, with ids of their own) was
    called held out: the calibration split was compared with the training ids by id alone."""
    import shutil

    from diffzoo import open_dataset
    from diffzoo.harness.run.runner import Runner

    calib = open_dataset(str(diffseg_folder), calib_fraction=0.3).ids("calib")
    coco = tmp_path / "coco"
    coco.mkdir()
    for sid in calib:
        shutil.copy(diffseg_folder / "train_copy" / f"{sid}.image.png", coco / f"copy-{sid}.png")
    with caplog.at_level("WARNING"):
        Runner(request(diffseg_folder, thresholds="calibrated",
                       dataset_option={"calib_fraction": 0.3, "extra_authentic": coco}))
    assert (f"thresholds calibrated on 'calib', where segformer.tiny [binary] was trained on {len(calib)} of its "
            f"{len(calib)} images: its scores there are optimistic") in caplog.text

def test_extra_authentic_copies_of_training_images_are_warned_of_at_the_plan(diffseg_folder, tmp_path, caplog):
    """An --extra-authentic byte copy of a training image was trained as unedited beside the split's own label of
    the same pixels, unsaid: the leakage check compared the extra images with the evaluated splits alone."""
    import shutil

    from diffzoo import open_dataset
    from diffzoo.harness.run.runner import Runner

    train = open_dataset(str(diffseg_folder)).ids("train")[:2]
    coco = tmp_path / "coco"
    coco.mkdir()
    for sid in train:
        shutil.copy(diffseg_folder / "train_copy" / f"{sid}.image.png", coco / f"copy-{sid}.png")
    with caplog.at_level("WARNING"):
        Runner(request(diffseg_folder, dataset_option={"extra_authentic": coco}))
    assert ("--extra-authentic: 2 of its images are copies of images of the 'train' split segformer.tiny [binary] "
            "trains on: the same pixels are trained as unedited and as that split labels them; remove them from the "
            "folder") in caplog.text


def test_two_checkpoints_for_one_task_are_refused(diffseg_folder, tmp_path):
    from diffzoo.harness.core.errors import ConfigError
    from diffzoo.harness.run.runner import Runner

    out = Runner(request(diffseg_folder, bootstrap=0)).train("binary")
    with pytest.raises(ConfigError, match="never chooses between checkpoints"):
        run(request(diffseg_folder, checkpoint=[out.checkpoint.path, out.checkpoint.path]))


def test_the_paper_report_after_suite_all_shows_every_column_of_tables_2_to_8(suite_all, capsys, tmp_path):
    """Every column of Tables 2-8 has our value or says why not, beside the paper's value and the
    difference; the section names label map, split and versions; every cell of Tables 2-8 the
    paper prints shows its paper value."""
    from diffzoo.leaderboard.index import RecordIndex
    from diffzoo.leaderboard.layouts.paper import build_report, paper_cells
    from diffzoo.leaderboard.paper import load_values

    from helpers.cli import cli

    _, output, _, _ = suite_all
    det = "segformer.tiny"
    [section] = build_report(output.records)
    assert [t.id for t in section.tables] == ["2a", "2b", "2c", "3", "4", "5", "6", "7", "8", "parity", "X"]
    for table in section.tables:
        rows = [r for r in table.rows if r.detector]
        if table.id == "X":  # cross-dataset: no --eval-dataset, no rows
            assert not rows
            continue
        assert {r.detector for r in rows} == {det}, table.id
        for row in rows:
            for col in table.columns:
                cell, where = row.cells[col.key], (table.id, row.group, row.label, col.key)
                reasons = [table.note(n).text for n in (*cell.notes, *row.notes)]
                assert cell.value is not None or cell.status == "undefined" or reasons, where
                assert not any("no record" in text for text in reasons), where  # --suite all filled every case
                if cell.value is not None and cell.paper is not None:
                    assert cell.delta == cell.value - cell.paper
    # every number of Tables 2-8 the paper prints, in its cell
    [group] = RecordIndex(output.records).groups()
    cells = {(t.id, r.group, r.label, key): c for t in section.tables for r in t.rows for key, c in r.cells.items()}
    values = load_values()
    located = paper_cells(group, values)
    shown = {key: cells[(p.table, p.group, p.label, p.column)].paper for key, p in located.items()}
    assert {k: v for k, v in shown.items() if v is not None} == {key: v.value for key, v in values.items()}
    assert len(values) == 148
    by_id = {t.id: t for t in section.tables}

    def mine(tid):
        return [r for r in by_id[tid].rows if r.detector == det]

    for tid, key in (("2a", "mIoU"), ("2b", "mIoU"), ("3", "binary:mIoU"), ("4", "held-out:mIoU"),
                     ("7", "binary:mIoU")):  # what the fixture supports has values throughout (but the
        # paper's baseline rows of Table 4, whose records are Table 2a's)
        assert all(r.cells[key].value is not None for r in mine(tid) if not r.label.startswith("baseline")), tid
    resize = next(r for r in mine("3") if r.label.startswith("resize200"))
    assert resize.cells["binary:mIoU"].paper == 0.898  # the paper's number, from the data file
    assert resize.cells["binary:mIoU"].delta == resize.cells["binary:mIoU"].value - 0.898
    base = {r.label for r in mine("8") if r.group.endswith(": base") or r.group == "base"
            if all(r.cells[k].value is not None for k in ("binary:aAcc", "binary:mIoU", "binary:bF1"))}
    assert base == {"real", "ai"}, base

    from diffzoo.leaderboard.store import RecordStore

    store = RecordStore(tmp_path / "store")  # where `diffzoo run` puts them
    assert {store.add(r).status for r in output.records} == {"added"}
    code, stdout, stderr = cli(capsys, "report", "paper", "--store", str(tmp_path / "store"),
                               "--out", str(tmp_path / "rep"))
    assert code == 0, stderr
    text = (tmp_path / "rep" / "paper.md").read_text()
    split = output.records[0].body.dataset.split["id"]
    label_map = output.records[0].body.dataset.label_map
    assert split == "diffzoo-hash-v1-seed0-val20-calib15"
    assert label_map["source"] == "labels.json" and label_map["verified"] is True
    for table in ("Table 2a", "Table 3", "Table 4", "Table 5", "Table 6", "Table 7", "Table 8"):
        assert f"### {table}" in text or f"## {table}" in text, table
    conditions = [line for line in text.splitlines() if f"split {split}" in line]
    assert conditions and all(label_map["sha256"][:12] in line and "metrics v2" in line and "recipe native" in line
                              for line in conditions)
