"""EvalState: per-image metrics, image level, Top-k, merge, state_dict, slices, bootstrap."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from diffzoo.harness.core.errors import ConfigError, DataError, RecordError
from diffzoo.harness.core.types import BINARY, EditRecord, LabelSpace, SampleMeta
from diffzoo.harness.metrics import METRICS_VERSION, EvalState, per_class_bf1
from diffzoo.harness.records.check import StateSource
from diffzoo.harness.records.model import StateRef

pytestmark = pytest.mark.usefixtures("metric_reduce_path")  # every test on both metric paths

EDITORS = ["sd15", "sdxl", "flux"]
SPACE = LabelSpace.from_editors(EDITORS)
EDIT_TYPES = ["inpaint", "replace", "remove"]


def make_dataset(seed: int, n: int, with_scores: bool = False):
    """Semantic samples with metadata consistent with their GT maps."""
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(n):
        h, w = (int(v) for v in rng.integers(8, 28, size=2))
        gt = np.zeros((h, w), np.uint8)
        turns = []
        for _ in range(int(rng.integers(0, 3))):
            c = int(rng.integers(1, len(EDITORS) + 1))
            y0, x0 = rng.integers(0, h - 2), rng.integers(0, w - 2)
            gt[y0 : y0 + rng.integers(2, h), x0 : x0 + rng.integers(2, w)] = c
            turns.append(EditRecord(EDITORS[c - 1], edit_type=EDIT_TYPES[int(rng.integers(0, 3))]))
        if rng.random() < 0.2:
            gt[: rng.integers(1, 4)] = 255
        pred = gt.copy()
        pred[pred == 255] = 0
        noise = rng.random((h, w)) < rng.uniform(0, 0.1)
        pred[noise] = rng.integers(0, len(EDITORS) + 1, noise.sum())
        if rng.random() < 0.2:
            pred = np.roll(pred, 3, axis=1)
        prob = np.clip((pred > 0) * 0.7 + rng.normal(0.15, 0.2, (h, w)), 0, 1).astype(np.float32)
        meta = SampleMeta(f"s{i:04d}", base=["real", "ai"][i % 2], turns=tuple(turns))
        score = float(np.clip(0.5 * (gt > 0).any() + rng.normal(0.25, 0.2), 0, 1)) if with_scores else None
        samples.append((meta, gt, pred, prob, score))
    return samples


def run(samples, task: str = "semantic", **kwargs) -> EvalState:
    state = EvalState(SPACE, task, **kwargs)
    for meta, gt, pred, prob, score in samples:
        if task == "binary":
            gt = np.where(gt == 255, 255, gt > 0).astype(np.uint8)
            pred = (pred > 0).astype(np.uint8)
        state.update(meta, gt, pred, prob, image_score=score)
    return state


def assert_same_metrics(a: dict, b: dict, tol: float = 0.0) -> None:
    assert list(a) == list(b)
    for k in a:
        if isinstance(a[k], float) and math.isnan(a[k]):
            assert math.isnan(b[k]), k
        else:
            assert abs(a[k] - b[k]) <= tol, (k, a[k], b[k])


# -- per-image metrics -----------------------------------------------------------

def test_giou_fpr_bf1_topk_against_direct_computation():
    samples = make_dataset(1, 120)
    got = run(samples).compute()
    ious, fps, bf1_rows, top1, top3 = [], [], [], [], []
    for _, gt, pred, _, _ in samples:
        valid = gt != 255
        g, p = gt[valid] > 0, pred[valid] > 0
        if g.any():
            ious.append((g & p).sum() / (g | p).sum())
        elif valid.any():
            fps.append(p.mean() > 0.01)
        bf1_rows.append(per_class_bf1(gt, pred, SPACE.num_classes))
        if g.any():
            counts = {c: int((pred[valid] == c).sum()) for c in range(1, SPACE.num_classes)}
            ranked = [c for c in sorted(counts, key=lambda c: (-counts[c], c)) if counts[c] > 0]
            gt_editors = set(np.unique(gt[valid])) - {0}
            top1.append(bool(set(ranked[:1]) & gt_editors))
            top3.append(bool(set(ranked[:3]) & gt_editors))
    assert got["gIoU"] == pytest.approx(np.mean(ious), abs=1e-12)
    assert got["FPR_authentic"] == pytest.approx(np.mean(fps), abs=1e-12)
    assert 0 < len(fps) < len(samples) and 0 < len(ious)
    bf1 = np.array(bf1_rows)
    per_class = [np.mean(col[~np.isnan(col)]) for col in bf1.T if (~np.isnan(col)).any()]
    assert got["bF1"] == pytest.approx(np.mean(per_class), abs=1e-12)
    per_image = [np.mean(r[~np.isnan(r)]) for r in bf1 if (~np.isnan(r)).any()]
    assert got["bF1_image_mean"] == pytest.approx(np.mean(per_image), abs=1e-12)
    assert got["top1"] == pytest.approx(np.mean(top1), abs=1e-12)
    assert got["top3"] == pytest.approx(np.mean(top3), abs=1e-12)
    assert got["num_edited"] == len(ious) and got["num_authentic"] == len(fps)


def test_authentic_images_not_in_giou_but_in_fpr():
    edited_gt = np.array([[0, 1], [1, 1]], np.uint8)
    authentic = np.zeros((2, 2), np.uint8)
    state = EvalState(BINARY, "binary")
    state.update(SampleMeta("e"), edited_gt, edited_gt, None)
    state.update(SampleMeta("a1"), authentic, np.ones((2, 2), np.uint8), None)
    state.update(SampleMeta("a2"), authentic, authentic, None)
    got = state.compute()
    assert got["gIoU"] == 1.0  # not (1 + 0 + 0) / 3
    assert got["FPR_authentic"] == 0.5
    assert got["cIoU"] == pytest.approx(3 / 7)


def test_area_rule_is_strictly_greater_than_threshold():
    gt = np.zeros((10, 10), np.uint8)
    one, two = gt.copy(), gt.copy()
    one[0, 0] = 1
    two[0, :2] = 1
    state = EvalState(BINARY, "binary")
    state.update(SampleMeta("one"), gt, one, None)  # exactly 1%: not edited
    state.update(SampleMeta("two"), gt, two, None)  # 2%: edited
    got = state.compute()
    assert got["FPR_authentic"] == 0.5 and got["img_real_Acc"] == 0.5
    assert state.image_score_source == "edited_area"


def test_image_level_with_detector_scores_against_sklearn():
    samples = make_dataset(2, 150, with_scores=True)
    state = run(samples, score_threshold=0.6)
    got = state.compute()
    assert state.image_score_source == "detector"
    y = np.array([((gt > 0) & (gt != 255)).any() for _, gt, _, _, _ in samples])
    s = np.array([sc for *_, sc in samples])
    decision = s > 0.6
    assert got["img_Acc"] == pytest.approx(np.mean(decision == y))
    assert got["img_real_Acc"] == pytest.approx(np.mean(~decision[~y]))
    assert got["img_edited_Acc"] == pytest.approx(np.mean(decision[y]))
    assert got["img_AP"] == pytest.approx(average_precision_score(y, s), abs=1e-12)
    assert got["img_AUC"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_image_level_from_edited_area_against_sklearn():
    samples = make_dataset(3, 150)
    got = run(samples).compute()
    y, s = [], []
    for _, gt, pred, _, _ in samples:
        valid = gt != 255
        y.append((gt[valid] > 0).any())
        s.append((pred[valid] > 0).mean())
    y, s = np.array(y), np.array(s)
    assert got["img_Acc"] == pytest.approx(np.mean((s > 0.01) == y))
    assert got["img_AP"] == pytest.approx(average_precision_score(y, s), abs=1e-12)
    assert got["img_AUC"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_classifier_without_label_maps():
    state = EvalState(SPACE, "semantic")
    gt_edit = np.ones((4, 4), np.uint8)
    state.update(SampleMeta("a"), gt_edit, None, None, image_score=0.9)
    state.update(SampleMeta("b"), np.zeros((4, 4), np.uint8), None, None, image_score=0.2)
    state.update(SampleMeta("c"), gt_edit * 2, None, None, image_score=0.4,
                 class_scores=np.array([0.0, 0.1, 0.7, 0.2]))
    got = state.compute()
    assert got["img_Acc"] == pytest.approx(2 / 3) and got["img_AUC"] == 1.0
    assert math.isnan(got["mIoU"]) and math.isnan(got["gIoU"]) and math.isnan(got["FPR_authentic"])
    assert got["top1"] == 1.0 and got["top3"] == 1.0  # only image c has a ranking


@pytest.mark.parametrize("score", [1.5, -0.1, float("nan"), float("inf"), "0.9", True, np.array([[0.5]])])
def test_an_image_score_that_is_not_a_probability_is_refused(score):
    """A logit, a text or a bool was taken (a logit of 1.5 ranked and judged as a probability); an array was a
    TypeError."""
    state = EvalState(BINARY, "binary")
    gt = np.zeros((4, 4), np.uint8)
    with pytest.raises(DataError) as info:
        state.update(SampleMeta("x"), gt, gt, None, image_score=score)
    assert str(info.value) == f"sample x: image_score must be a probability in [0, 1], got {score!r}"
    state.update(SampleMeta("x"), gt, gt, None, image_score=np.float32(1.0))  # numpy's scalars are numbers


@pytest.mark.parametrize(("prob", "problem"), [
    (np.ones((4, 4), np.int64), "edited_prob must be floating point, got dtype int64"),
    (np.full((4, 4), 1.5), "edited_prob must hold finite probabilities in [0, 1]"),
    (np.zeros((3, 4)), "edited_prob has shape (3, 4), the GT has (4, 4)"),
])
def test_a_bad_probability_map_names_its_sample(prob, problem):
    """Every other bad input of update names its sample; these three named none."""
    gt = np.zeros((4, 4), np.uint8)
    with pytest.raises(DataError) as info:
        EvalState(BINARY, "binary").update(SampleMeta("x"), gt, gt, prob)
    assert str(info.value) == f"sample x: {problem}"


def test_topk_ties_zero_counts_and_class_scores():
    state = EvalState(SPACE, "semantic", top_k=(1, 2))
    gt = np.full((1, 4), 3, np.uint8)
    state.update(SampleMeta("tie"), gt, np.array([[1, 1, 3, 3]], np.uint8), None)  # tie -> class 1 first
    # nothing predicted: a miss, although class 1 would lead an unfiltered ranking
    state.update(SampleMeta("bg"), np.ones((1, 4), np.uint8), np.zeros((1, 4), np.uint8), None)
    state.update(SampleMeta("cs"), gt, np.zeros((1, 4), np.uint8), None,
                 class_scores=np.array([0.2, 0.3, 0.5]))  # editors only: ranks 3, 2, 1
    got = state.compute()
    assert got["top1"] == pytest.approx(1 / 3) and got["top2"] == pytest.approx(2 / 3)
    with pytest.raises(DataError):
        state.update(SampleMeta("x"), gt, None, None, image_score=0.5, class_scores=np.ones(7))


@pytest.mark.parametrize("scores, problem", [
    (np.array([np.nan, 1, 1]), "class_scores must be finite"),
    (np.ones((1, 3)), "class_scores has shape (1, 3); expected (4,) (background + editors) or (3,) (editors)"),
    (np.ones(7), "class_scores has shape (7,); expected (4,) (background + editors) or (3,) (editors)"),
])
def test_class_scores_are_checked_on_every_image(scores, problem):
    state = EvalState(SPACE, "semantic")
    authentic = np.zeros((1, 4), np.uint8)
    with pytest.raises(DataError) as info:
        state.update(SampleMeta("x"), authentic, authentic, None, class_scores=scores)
    assert str(info.value) == f"sample x: {problem}"


# -- merge and state_dict ------------------------------------------------------------

def test_merge_of_shards_equals_single_pass_exactly():
    samples = make_dataset(4, 90)
    single = run(samples)
    shards = [run(samples[r::3]) for r in range(3)]  # interleaved, like a distributed sampler
    shards[1] = EvalState.from_state_dict(json.loads(json.dumps(shards[1].state_dict(), allow_nan=False)))
    merged = shards[2]
    merged.merge(shards[0])
    merged.merge(shards[1])
    assert merged.num_images == single.num_images == 90
    assert_same_metrics(merged.compute(), single.compute())
    np.testing.assert_array_equal(merged.confusion_matrix(), single.confusion_matrix())
    for key in ("base", "turns", "editor", "edit_type"):
        a, b = merged.slices(key), single.slices(key)
        assert list(a) == list(b)
        for v in a:
            assert_same_metrics(a[v], b[v])
    assert merged.bootstrap(20, seed=3) == single.bootstrap(20, seed=3)


def test_state_dict_round_trip_is_exact():
    state = run(make_dataset(5, 40, with_scores=True))
    d = state.state_dict()
    text = json.dumps(d, allow_nan=False)
    back = EvalState.from_state_dict(json.loads(text))
    assert back.state_dict() == d
    assert_same_metrics(back.compute(), state.compute())
    assert back.image_score_source == "detector"
    assert d["metrics_version"] == METRICS_VERSION == "2"
    empty = EvalState.from_state_dict(EvalState(SPACE, "semantic").state_dict())
    assert empty.num_images == 0 and math.isnan(empty.compute()["mIoU"])


def test_a_state_whose_auc_bins_its_histograms_do_not_have_is_refused_before_any_allocation():
    """A state file edited to auc_bins 10**12 (its histograms 1024 long) ended `leaderboard verify` in
    "internal error: MemoryError: Unable to allocate 14.6 TiB"."""
    d = EvalState(SPACE, "semantic").state_dict()
    d["auc_bins"] = 10**12
    with pytest.raises(RecordError, match="^metric state: pixel-AUC histograms have the wrong length$"):
        EvalState.from_state_dict(d)


@pytest.mark.parametrize("change, message", [
    (lambda d: [d], "metric state must be an object, got list"),
    (lambda d: {k: v for k, v in d.items() if k != "rows"}, "metric state is malformed: field rows is missing"),
    (lambda d: {**d, "prob_images": "3"}, "metric state is malformed: field prob_images must be a count, got '3'"),
    (lambda d: {**d, "prob_images": 2.5}, "metric state is malformed: field prob_images must be a count, got 2.5"),
    (lambda d: {**d, "score_source": "logit"},
     "metric state is malformed: field score_source must be detector, edited_area or null, got 'logit'"),
    (lambda d: {**d, "binding": [1]}, "metric state is malformed: field binding must be an object, got [1]"),
    (lambda d: {**d, "rows": {**d["rows"], "label": [10**20]}},  # past int8: an OverflowError, not caught
     "metric state: per-image rows are malformed (Python int too large to convert to C long)"),
    (lambda d: {**d, "pos_hist": [10**400] * 1024}, "metric state is malformed: int too large to convert to float"),
])
def test_a_malformed_state_is_a_record_error_naming_the_field(change, message):
    """These were a KeyError, an AttributeError and a ValueError out of the loader (or no error at all: prob_images
    2.5 read as 2, an unknown score source loaded), each caught by `leaderboard verify` in a list of Python errors."""
    blob = json.dumps(change(run(make_dataset(6, 1)).state_dict())).encode()
    ref = StateRef("states/x.json", hashlib.sha256(blob).hexdigest())
    with pytest.raises(RecordError) as error:
        EvalState.from_state_dict(json.loads(blob))
    assert str(error.value) == message
    with pytest.raises(RecordError) as error:
        StateSource(attachments={ref.file: blob}).load(ref)
    assert str(error.value) == f"state file states/x.json is not a metric state this diffzoo reads: {message}"


def test_merge_and_load_errors():
    a = EvalState(SPACE, "semantic")
    with pytest.raises(ConfigError):
        a.merge(EvalState(SPACE, "semantic", area_threshold=0.05))
    with pytest.raises(ConfigError):
        a.merge(EvalState(SPACE, "binary"))
    scored, area = run(make_dataset(6, 3, with_scores=True)), run(make_dataset(6, 3))
    with pytest.raises(DataError):
        scored.merge(area)
    d = a.state_dict()
    d["metrics_version"] = "0"
    with pytest.raises(RecordError):
        EvalState.from_state_dict(d)
    d = a.state_dict()
    del d["rows"]["label"]
    with pytest.raises(RecordError):
        EvalState.from_state_dict(d)


# -- slices and bootstrap ------------------------------------------------------------

def test_slices_equal_a_separate_pass_over_each_slice():
    samples = make_dataset(7, 80)
    state = run(samples)
    total = state.compute()
    for key, member in [
        ("base", lambda m: [m.base]),
        ("turns", lambda m: [str(len(m.turns))]),
        ("editor", lambda m: [t.editor for t in m.turns] or ["(none)"]),
        ("edit_type", lambda m: [t.edit_type for t in m.turns] or ["(none)"]),
    ]:
        sliced = state.slices(key)
        expected = sorted({v for meta, *_ in samples for v in member(meta)})
        assert list(sliced) == expected
        for value, got in sliced.items():
            subset = [s for s in samples if value in member(s[0])]
            want = run(subset).compute()
            assert math.isnan(got["pixel_AUC"]) and math.isnan(got["F1_oracle"])  # histogram metrics
            got = dict(got, pixel_AUC=want["pixel_AUC"], F1_oracle=want["F1_oracle"])
            assert_same_metrics(got, want, tol=1e-12)
        counts = sum(s["num_images"] for s in sliced.values())
        if key in ("base", "turns"):  # partitions
            assert counts == total["num_images"]
            assert sum(s["num_edited"] for s in sliced.values()) == total["num_edited"]
        else:  # multi-membership: every image at least once
            assert counts >= total["num_images"]
    with pytest.raises(ConfigError, match="editor"):
        state.slices("editors")


def test_authentic_images_and_one_of_unknown_label_are_sliced_by_their_turns_not_refused():
    """No edited image: "no turns" is the truth, also beside an image whose GT is all 255 (label
    unknown, not edited); that image was read as edited, and every turn slice was refused."""
    state = EvalState(BINARY, "binary")
    blank = np.zeros((4, 4), np.uint8)
    for name, gt in (("a", blank), ("b", blank), ("c", np.full((4, 4), 255, np.uint8))):
        state.update(SampleMeta(name), gt, blank, None)
    counts = {key: {v: m["num_images"] for v, m in state.slices(key).items()}
              for key in ("turns", "multiturn", "editor", "edit_type")}
    assert counts == {"turns": {"0": 3}, "multiturn": {"none": 2, "unknown": 1}, "editor": {"(none)": 3},
                      "edit_type": {"(none)": 3}}


def test_bootstrap_is_deterministic_and_covers_point_estimate():
    state = run(make_dataset(8, 100, with_scores=True))
    point = state.compute()
    ci = state.bootstrap(200, seed=0)
    assert ci == state.bootstrap(200, seed=0)
    assert ci != state.bootstrap(200, seed=1)
    assert "pixel_AUC" not in ci and "num_images" not in ci
    for m in ("aAcc", "mIoU", "F1", "bF1", "gIoU", "img_Acc", "img_AP", "img_AUC", "top1"):
        lo, hi = ci[m]
        assert lo <= point[m] <= hi, m
        assert lo < hi or m == "top1", m  # top1 is 1.0 on this data
    assert set(state.bootstrap(5, metrics=["mIoU"])) == {"mIoU"}
    with pytest.raises(ConfigError, match="mIoU"):
        state.bootstrap(5, metrics=["mIOU"])
    kept = state.bootstrap(5, metrics=["pixel_AUC", "aAcc", "num_images"])  # not resampled: NaN
    assert list(kept) == ["pixel_AUC", "aAcc", "num_images"]
    assert all(math.isnan(v) for v in kept["pixel_AUC"] + kept["num_images"])
    assert kept["aAcc"][0] <= point["aAcc"] <= kept["aAcc"][1]


def test_bootstrap_refuses_a_bad_seed_count_or_metric_list_as_config_errors():
    """Each was numpy's ValueError / TypeError, or a name read letter by letter ("unknown metric 'm'")."""
    state = run(make_dataset(8, 4))
    for kwargs, message in (
        ({"seed": -1}, "bootstrap seed -1 is not a valid seed: give an integer from 0 to 2**63 - 1"),
        ({"n": True}, "bootstrap needs 1 to 100,000 replicates, got True"),
        ({"metrics": "mIoU"}, "bootstrap metrics must be a list of metric names, got 'mIoU'"),
    ):
        with pytest.raises(ConfigError) as info:
            state.bootstrap(**{"n": 5, **kwargs})
        assert str(info.value).startswith(message), info.value


def test_bootstrap_replicate_equals_a_pass_over_the_drawn_images():
    samples = make_dataset(9, 40)
    state = run(samples)
    n = len(samples)
    draw = np.random.default_rng(5).integers(0, n, size=n)  # images in canonical (id) order
    by_id = sorted(samples, key=lambda s: s[0].id)
    replicate = run([by_id[i] for i in draw]).compute()
    ci = state.bootstrap(1, seed=5)
    for m, (lo, hi) in ci.items():
        want = replicate[m]
        assert (math.isnan(lo) and math.isnan(want)) or lo == pytest.approx(want, abs=1e-12), m
        assert (math.isnan(hi) and math.isnan(want)) or hi == pytest.approx(want, abs=1e-12), m


# -- input errors --------------------------------------------------------------------

def test_input_errors():
    with pytest.raises(ConfigError):
        EvalState(SPACE, "classification")
    with pytest.raises(ConfigError):
        EvalState(SPACE, "semantic", top_k=(0,))
    state = EvalState(SPACE, "semantic")
    gt = np.zeros((3, 3), np.uint8)
    meta = SampleMeta("x")
    with pytest.raises(DataError):
        state.update(meta, gt + 4, gt, None)  # label outside 0..3, 255
    with pytest.raises(DataError):
        state.update(meta, gt, gt + 255, None)  # predictions are never 255
    with pytest.raises(DataError):
        state.update(meta, gt, np.zeros((3, 4), np.uint8), None)
    with pytest.raises(DataError):
        state.update(meta, gt.astype(np.float32), gt, None)
    with pytest.raises(DataError):
        state.update(meta, gt, None, None)
    state.update(meta, gt, gt, None)
    with pytest.raises(DataError):
        state.update(SampleMeta("y"), gt, gt, None, image_score=0.3)  # source would change
    assert state.num_images == 1
    binary = EvalState(SPACE, "binary")
    with pytest.raises(DataError):
        binary.update(meta, gt + 2, gt, None)  # binary GT is 0/1/255
    assert binary.metric_names[3:5] == ["IoU.background", "IoU.edited"]
    assert binary.label_space == BINARY


def test_benco_per_image_f1_and_iou_score_images_without_edits_zero():
    """F1_benco / IoU_benco: IMDL-BenCo's per-image means (docs/metrics.md), beside the pooled F1
    and gIoU, which leaves authentic images out."""
    gt = np.zeros((4, 4), np.uint8)
    gt[:2, :2] = 1  # 4 edited pixels
    half = np.zeros((4, 4), np.uint8)
    half[:1, :2] = 1  # 2 of them found, no false positive
    false_alarm = np.zeros((4, 4), np.uint8)
    false_alarm[3, 3] = 1
    state = EvalState(BINARY, "binary")
    state.update(SampleMeta("a"), gt, gt.copy(), None)  # F1 1, IoU 1
    state.update(SampleMeta("b"), gt, half, None)  # F1 2*2/(2*2+2) = 2/3, IoU 2/4
    state.update(SampleMeta("c"), np.zeros((4, 4), np.uint8), false_alarm, None)  # authentic: 0
    state.update(SampleMeta("d"), np.zeros((4, 4), np.uint8), np.zeros((4, 4), np.uint8), None)  # authentic: 0
    m = state.compute()
    assert m["F1_benco"] == pytest.approx((1 + 2 / 3) / 4)
    assert m["IoU_benco"] == pytest.approx((1 + 0.5) / 4)
    assert m["gIoU"] == pytest.approx(0.75)
    assert m["F1"] == pytest.approx(2 * 6 / (2 * 6 + 1 + 2))


def test_pixel_auc_and_f1_oracle_of_a_pass_with_some_edited_prob_cover_those_images(caplog):
    samples = make_dataset(5, 6)
    partial = run([(m, g, p, prob if n % 2 else None, s) for n, (m, g, p, prob, s) in enumerate(samples)])
    alone = run([x for n, x in enumerate(samples) if n % 2])
    with caplog.at_level("WARNING", logger="diffzoo.harness.metrics.state"):
        got = partial.compute()
    assert caplog.messages == ["pixel_AUC and F1_oracle cover only the 3 of 6 images that had edited_prob"]
    want = alone.compute()
    assert (got["pixel_AUC"], got["F1_oracle"]) == (want["pixel_AUC"], want["F1_oracle"])
    assert partial.state_dict()["prob_images"] == 3  # the count, in the state stored with the record


def test_bootstrap_of_one_image_is_undefined_not_a_zero_width_interval(caplog):
    """Every replicate of one image is that image: the interval was (v, v), certainty from one sample."""
    state = run(make_dataset(8, 100, with_scores=True))
    one = state.subset({state.verdicts().popitem()[0]})
    ci = one.bootstrap(50, seed=0, metrics=["F1", "img_Acc"])
    assert list(ci) == ["F1", "img_Acc"] and all(math.isnan(v) for pair in ci.values() for v in pair)
    assert "bootstrap of 1 image (every replicate is that image): every interval is NaN" in caplog.text
