"""Metric states and result records with realistic fields, for the record, leaderboard and report tests."""

from __future__ import annotations

import numpy as np

from diffzoo.harness.metrics import METRICS_VERSION

CASE_METRICS = {"binary": ("aAcc", "mIoU", "bF1", "F1", "pixel_AUC", "gIoU", "FPR_authentic"),
                "semantic": ("aAcc", "mAcc", "mIoU", "bF1", "top1", "top3"),
                "image": ("img_Acc", "img_real_Acc", "img_edited_Acc", "img_AP", "img_AUC")}


def make_state(task: str = "binary", n: int = 8, seed: int = 0, editors: tuple[str, ...] = ("sd2", "sdxl")):
    """A small real metric state (``task`` binary, semantic or image): 16x16
    label maps, every third image authentic, predictions a noisy copy of the
    GT; ``seed`` changes the predictions, not the images."""
    from diffzoo.harness.core.types import EditRecord, LabelSpace, SampleMeta
    from diffzoo.harness.metrics import EvalState, prediction_digest

    space = LabelSpace(("background", *editors))
    state = EvalState(space, "semantic" if task == "semantic" else "binary")
    rng = np.random.default_rng(seed)
    for i in range(n):
        gt = np.zeros((16, 16), np.uint8)
        turns = ()
        if i % 3:
            k = 1 + i % len(editors)
            gt[3:11, 4:12] = k if task == "semantic" else 1
            turns = (EditRecord(editors[k - 1], "a cat", "object_addition"),)
        pred = np.where(rng.random(gt.shape) < 0.1, 0, gt).astype(np.uint8)
        prob = np.clip((gt > 0) * 0.8 + rng.random(gt.shape) * 0.2, 0, 1)
        meta = SampleMeta(f"{i:04d}", "real" if i % 2 else "ai", turns)
        state.update(meta, gt, pred, prob, digest=prediction_digest(pred, prob, None))
    return state


def make_record(detector: str = "det", *, suite: str = "standard", suite_version: str = "1",
                case: str = "binary", task: str = "binary", dataset: str = "mini",
                fingerprint: str = "fp0001", metrics: dict | None = None, ci95: dict | None = None,
                seed: int = 0, checkpoint: str = "ab" * 32, date: str = "2026-11-29T12:00:00+00:00",
                state=None, case_fields: dict | None = None, dataset_fields: dict | None = None, **extra):
    """A valid ResultRecord with realistic fields, for leaderboard tests.

    Without ``state`` its metrics are the ones given (or typical ones): a
    record that renders but cannot be verified.  With ``state`` (see
    :func:`make_state`) every number comes from the state by the writer's
    code path, and the record carries the state: a record ``leaderboard
    add`` and ``verify`` accept."""
    from diffzoo.harness.records.document import ResultRecord

    if detector != detector.strip():  # a name ResultRecord.create refuses: the record another tool would write
        return sealed_by_hand(make_record(detector.strip(), suite=suite, suite_version=suite_version, case=case,
                                          task=task, dataset=dataset, fingerprint=fingerprint, metrics=metrics,
                                          ci95=ci95, seed=seed, checkpoint=checkpoint, date=date, state=state,
                                          case_fields=case_fields, dataset_fields=dataset_fields, **extra), detector)
    if metrics is None:
        metrics = {"binary": {"aAcc": 0.9, "mIoU": 0.6, "bF1": 0.3, "F1": 0.7, "pixel_AUC": 0.8,
                              "gIoU": 0.5, "FPR_authentic": 0.1},
                   "semantic": {"aAcc": 0.85, "mAcc": 0.5, "mIoU": 0.4, "bF1": 0.2, "top1": 0.6,
                                "top3": 0.9, "IoU.sd2": 0.5, "IoU.sdxl": 0.3},
                   "image": {"img_Acc": 0.8, "img_real_Acc": 0.7, "img_edited_Acc": 0.9,
                             "img_AP": 0.85, "img_AUC": 0.88}}[task]
    case_def = {"name": case, "task": task, "split": "val", "distortion": "none", "distortion_params": {},
                **(case_fields or {})}
    fields = dict(
        detector={"name": detector, "checkpoint_sha256": checkpoint, "pretrained": False,
                  "plugin": "tests", "task": task},
        suite={"name": suite, "version": suite_version, "definition_hash": f"h{suite}{suite_version}"},
        case=case_def,
        dataset={"name": dataset, "fingerprint": fingerprint, **(dataset_fields or {})},
        label_space=["background", "sd2", "sdxl"] if task == "semantic" else ["background", "edited"],
        metrics=metrics, ci95=ci95 or {}, metrics_version=METRICS_VERSION, threshold_policy={"pixel": "fixed"},
        counts={"evaluated": 10}, seed=seed, config={},
        environment={"date": date, "git": "0123456789abcdef", "packages": {"diffzoo": "0.1.0"}},
    )
    if state is not None:
        from diffzoo.harness.records.check import recomputed

        case_def.update(metrics=list(CASE_METRICS[task]),
                        train={"task": "semantic" if task == "semantic" else "binary", "split": "train",
                               "exclude_editors": []})
        labels = list(state.label_space.names)
        numbers = recomputed(case_def, tuple(labels), state)
        fields.update(label_space=labels, metrics=numbers["metrics"], slices=numbers["slices"],
                      counts={"evaluated": state.num_images},
                      confusion=numbers["confusion"] if task == "semantic" else None)
    fields.update(extra)
    return ResultRecord.create(state=state, **fields)


def sealed_by_hand(record, name: str):
    """``record`` with its detector renamed and its id and digests made again, as another tool
    writing records seals them: a record :meth:`ResultRecord.create` refuses to make (a name with
    outer whitespace) that a store still reads."""
    return resealed(record, lambda data: data["detector"].update(name=name))


def resealed(record, change):
    """``record`` changed by ``change(data)``, its id and digests made again: an edit by hand
    that no digest or id check catches."""
    import json

    from diffzoo.harness.records.document import ResultRecord, field_digests, record_id_of

    data = json.loads(json.dumps(record.data))
    change(data)
    data["record_id"] = record_id_of(data)
    data["digests"] = field_digests(data)
    return ResultRecord(data)
