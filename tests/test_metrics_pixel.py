"""Pixel metrics of EvalState against torchmetrics and sklearn on random datasets."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import confusion_matrix, jaccard_score, precision_recall_fscore_support
from torchmetrics.classification import MulticlassJaccardIndex

from diffzoo.harness.core.types import LabelSpace, SampleMeta
from diffzoo.harness.metrics import EvalState, iou_per_class

pytestmark = pytest.mark.usefixtures("metric_reduce_path")  # every test on both metric paths

SPACE = LabelSpace.from_editors(["sd15", "sdxl", "flux", "kandinsky"])


def random_label_map(rng: np.random.Generator, h: int, w: int, n_classes: int) -> np.ndarray:
    """Blocky maps with some classes absent, sometimes all background, some ignore."""
    kind = rng.integers(0, 5)
    if kind == 0:
        out = np.zeros((h, w), np.uint8)
    elif kind == 1:
        out = rng.integers(0, n_classes, (h, w)).astype(np.uint8)
    else:
        out = np.zeros((h, w), np.uint8)
        for c in rng.choice(np.arange(1, n_classes), size=rng.integers(1, min(3, n_classes)), replace=False):
            y0, x0 = rng.integers(0, h), rng.integers(0, w)
            out[y0 : y0 + rng.integers(1, h + 1), x0 : x0 + rng.integers(1, w + 1)] = c
    return out


def random_case(rng: np.random.Generator, n_classes: int, n_images: int):
    images = []
    for _ in range(n_images):
        h, w = (int(v) for v in rng.integers(1, 24, size=2))
        gt = random_label_map(rng, h, w, n_classes)
        if rng.random() < 0.5:
            gt[rng.random((h, w)) < 0.1] = 255
        if rng.random() < 0.3:
            pred = gt.copy()
            pred[pred == 255] = rng.integers(0, n_classes)
            pred[rng.random((h, w)) < 0.2] = rng.integers(0, n_classes)
        else:
            pred = random_label_map(rng, h, w, n_classes)
        images.append((gt, pred))
    return images


def evaluate(images, space: LabelSpace, task: str) -> EvalState:
    state = EvalState(space, task)
    for i, (gt, pred) in enumerate(images):
        state.update(SampleMeta(f"img{i:03d}"), gt, pred, None)
    return state


def same(a: float, b: float, tol: float = 1e-12) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


@pytest.mark.parametrize("task", ["semantic", "binary"])
def test_random_datasets_against_torchmetrics_and_sklearn(task):
    rng = np.random.default_rng(2024 if task == "semantic" else 7)
    n_classes = SPACE.num_classes if task == "semantic" else 2
    names = SPACE.names if task == "semantic" else ("background", "edited")
    for case in range(110):
        images = random_case(rng, n_classes, int(rng.integers(1, 5)))
        if task == "binary":
            images = [(np.where(g == 255, 255, g > 0).astype(np.uint8), (p > 0).astype(np.uint8))
                      for g, p in images]
        state = evaluate(images, SPACE, task)
        got = state.compute()

        gt_all = np.concatenate([g.ravel() for g, _ in images]).astype(np.int64)
        pred_all = np.concatenate([p.ravel() for _, p in images]).astype(np.int64)
        valid = gt_all != 255
        g, p = gt_all[valid], pred_all[valid]

        ref_conf = confusion_matrix(g, p, labels=list(range(n_classes)))
        np.testing.assert_array_equal(state.confusion_matrix(), ref_conf)
        assert state.confusion_matrix().dtype == np.int64

        jac = MulticlassJaccardIndex(num_classes=n_classes, average="none", ignore_index=255)
        ref_iou = jac(torch.from_numpy(pred_all), torch.from_numpy(gt_all)).double().numpy()
        union = np.bincount(g, minlength=n_classes) + np.bincount(p, minlength=n_classes)
        ref_iou[union == 0] = np.nan  # torchmetrics gives 0; docs/metrics.md: NaN, skipped
        for c, name in enumerate(names):
            assert same(got[f"IoU.{name}"], ref_iou[c], 1e-6), (case, name)
        editors = ref_iou[1:]
        ref_miou = float(np.mean(editors[~np.isnan(editors)])) if (~np.isnan(editors)).any() else math.nan
        assert same(got["mIoU"], ref_miou, 1e-6), case

        assert same(got["aAcc"], float(np.mean(g == p)) if g.size else math.nan)
        support = np.bincount(g, minlength=n_classes)[1:]
        per_class_acc = [np.mean(p[g == c] == c) for c in range(1, n_classes) if support[c - 1]]
        assert same(got["mAcc"], float(np.mean(per_class_acc)) if per_class_acc else math.nan)

        gb, pb = g > 0, p > 0
        prec, rec, f1, _ = precision_recall_fscore_support(
            gb, pb, average="binary", zero_division=np.nan
        ) if g.size else (math.nan,) * 4
        if not gb.any() and not pb.any():
            f1 = math.nan  # no edited pixel at all: docs/metrics.md leaves F1 undefined
        assert same(got["precision"], float(prec)), case
        assert same(got["recall"], float(rec)), case
        assert same(got["F1"], float(f1)), case
        ref_ciou = jaccard_score(gb, pb) if (gb | pb).any() else math.nan
        assert same(got["cIoU"], float(ref_ciou)), case
        if task == "binary":
            assert same(got["mIoU"], got["cIoU"])
            assert same(got["mAcc"], got["recall"])


def test_iou_per_class_zero_union_is_nan():
    conf = np.array([[5, 1, 0], [2, 3, 0], [0, 0, 0]])
    iou = iou_per_class(conf)
    assert iou[0] == pytest.approx(5 / 8) and iou[1] == pytest.approx(3 / 6)
    assert math.isnan(iou[2])


def test_absent_class_is_nan_and_skipped_in_miou():
    gt = np.array([[0, 1, 1], [0, 2, 2]], np.uint8)
    pred = np.array([[0, 1, 0], [0, 2, 2]], np.uint8)
    got = evaluate([(gt, pred)], SPACE, "semantic").compute()
    assert math.isnan(got["IoU.flux"]) and math.isnan(got["IoU.kandinsky"])
    assert got["IoU.sd15"] == pytest.approx(0.5) and got["IoU.sdxl"] == 1.0
    assert got["mIoU"] == pytest.approx(0.75)
    assert got["mAcc"] == pytest.approx(0.75)


def test_background_false_positives_count():
    # background IoU is dropped, background pixels are not: a false positive lowers IoU
    gt = np.array([[0, 0, 1, 1]], np.uint8)
    pred = np.array([[1, 0, 1, 1]], np.uint8)
    got = evaluate([(gt, pred)], SPACE, "semantic").compute()
    assert got["mIoU"] == pytest.approx(2 / 3)
    assert got["aAcc"] == pytest.approx(3 / 4)


def test_all_background():
    z = np.zeros((6, 5), np.uint8)
    got = evaluate([(z, z), (z, z)], SPACE, "semantic").compute()
    assert got["aAcc"] == 1.0 and got["IoU.background"] == 1.0
    for key in ("mIoU", "mAcc", "precision", "recall", "F1", "cIoU", "gIoU", "bF1",
                "bF1_image_mean", "img_edited_Acc", "img_AP", "img_AUC", "top1", "top3"):
        assert math.isnan(got[key]), key
    assert got["FPR_authentic"] == 0.0 and got["img_real_Acc"] == 1.0
    assert (got["num_images"], got["num_edited"], got["num_authentic"]) == (2, 0, 2)


def test_all_ignore():
    gt = np.full((4, 4), 255, np.uint8)
    pred = np.ones((4, 4), np.uint8)
    state = evaluate([(gt, pred)], SPACE, "semantic")
    got = state.compute()
    assert state.confusion_matrix().sum() == 0
    assert (got["num_images"], got["num_edited"], got["num_authentic"]) == (1, 0, 0)
    for key, value in got.items():
        if not key.startswith("num_"):
            assert math.isnan(value), key


def test_ignore_pixels_dropped_everywhere():
    gt = np.array([[0, 255, 1, 1]], np.uint8)
    pred = np.array([[0, 1, 1, 0]], np.uint8)
    got = evaluate([(gt, pred)], SPACE, "binary").compute()
    assert got["precision"] == 1.0 and got["recall"] == 0.5
    assert got["aAcc"] == pytest.approx(2 / 3)
    assert got["gIoU"] == pytest.approx(0.5)
