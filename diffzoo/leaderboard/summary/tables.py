"""The summary's tables, one builder per table of the DiffSeg30k paper
(Table 2: the standard suite, 3: distortions, 4 and 6: unseen generators,
5: classification, 7: LoRA, 8: slices) plus format parity, each reading
the newest records of one dataset and one version of its suite from a
:class:`~.model.RecordIndex`.
"""

from __future__ import annotations

import re

from diffzoo.harness.metrics.catalog import SLICE_SEPARATOR, metric_info
from diffzoo.harness.metrics.slices import NO_TURNS, SLICE_KEYS, missing_metadata_message
from diffzoo.harness.suites.paper import CLASSIFICATION_EDITORS, FORMAT_PARITY, PAIR_NAMES, PARITY_METRICS
from diffzoo.leaderboard.summary.model import (
    RecordIndex,
    Row,
    SummaryTable,
    cells,
    column,
    metric_columns,
    per_detector,
    prefixed_columns,
    summary_table,
)
from diffzoo.leaderboard.summary.settings import CLEAN, PAPER_SETTINGS, SWEEP_SETTINGS, setting_label, setting_of
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.newest import newest
from diffzoo.leaderboard.tables import Cell

PAPER_PIXEL_METRICS = ("aAcc", "mIoU", "bF1")
"""The paper's columns of Tables 2, 3, 4 and 8 (its "Acc" is aAcc)."""
ACC_NOTE = "aAcc is the paper's Acc (pixel accuracy, background included)"
PAPER_PAIR_NAMES = tuple(PAIR_NAMES.values())
PARITY_FORMATS = tuple(c.name for c in FORMAT_PARITY.cases)


# -- Table 2: the standard suite ------------------------------------------------------
BINARY_COLUMNS = ("mIoU", "F1", "aAcc", "bF1", "gIoU", "FPR_authentic", "pixel_AUC", "F1_oracle")
SEMANTIC_COLUMNS = ("mIoU", "aAcc", "bF1", "mAcc", "top1", "top3")
IMAGE_COLUMNS = ("img_Acc", "img_real_Acc", "img_edited_Acc", "img_AP", "img_AUC", "img_Acc_oracle")


def table2(idx: RecordIndex) -> list[SummaryTable]:
    binary = metric_columns(BINARY_COLUMNS)
    semantic_recs = idx.records("standard", ["semantic"])
    editors = list(dict.fromkeys(
        [n for r in semantic_recs for n in r.body.label_space[1:]]
        + [m[4:] for r in semantic_recs for m in r.metrics if m.startswith("IoU.")]))
    semantic = metric_columns([*SEMANTIC_COLUMNS, *(f"IoU.{e}" for e in editors)])
    image = metric_columns(IMAGE_COLUMNS)
    return [
        summary_table(idx, "standard", ["binary"], "2a", "Table 2a: binary localization (standard / binary)",
                      "detector", binary, per_detector(idx, "standard", "binary", binary)),
        summary_table(idx, "standard", ["semantic"], "2b",
                      "Table 2b: editor attribution, semantic segmentation (standard / semantic)", "detector",
                      semantic, per_detector(idx, "standard", "semantic", semantic),
                      notes=["Top-k: an edited image is a hit when one of its editors is among the k editors "
                             "with most predicted pixels; IoU.<editor>: per-editor IoU"]),
        summary_table(idx, "standard", ["image"], "2c",
                      "Table 2c: image-level detection from the binary mask (standard / image)", "detector", image,
                      per_detector(idx, "standard", "image", image),
                      notes=["an image counts as edited when its predicted edited area exceeds 1% of the image"]
                      + ([OWN_SCORE_NOTE] if any(r.body.own_score for r in idx.records("standard", ["image"])) else [])),
    ]


OWN_SCORE_NOTE = ("a row marked (own image score) judges images by the detector's own image probability "
                  "(> 0.5 unless calibrated; IMDL-BenCo's pred_label) instead of the predicted area")


# -- Table 3: distortions --------------------------------------------------------------
DISTORTION_COLUMNS = tuple((task, m) for task in ("binary", "semantic") for m in PAPER_PIXEL_METRICS) + (
    ("image", "img_Acc"),)


def table3(idx: RecordIndex) -> SummaryTable:
    """Rows: (detector, setting), the clean and paper settings always, sweeps and
    others when run; columns: the paper's Acc, mIoU, bF1 of both tasks, image Acc."""
    found = list(dict.fromkeys(setting_of(c)[0] for c in idx.cases("distortions")))
    settings = list(dict.fromkeys([CLEAN, *PAPER_SETTINGS, *(s for s in SWEEP_SETTINGS if s in found), *found]))
    cols = prefixed_columns(DISTORTION_COLUMNS)

    def rows(det: str) -> list[Row]:
        out = []
        for s in settings:
            row: dict[str, Cell] = {}
            for task, m in DISTORTION_COLUMNS:
                row |= cells(idx.get("distortions", f"{s}.{task}", det), {f"{task}:{m}": m})
            out.append(Row(setting_label(s), row, group=det))
        return out

    return summary_table(idx, "distortions", None, "3", "Table 3: robustness per distortion setting (distortions)",
                         "setting", cols, rows, group_header="detector",
                         notes=[ACC_NOTE, f"rows: {CLEAN}; the paper's settings ({', '.join(PAPER_SETTINGS)}); "
                                "sweeps beyond the paper and other settings when run",
                                "resize: the detector sees the image with its shorter side at that multiple of its "
                                "training resolution, scored at the label's resolution (the paper's resize 256 / 1024 "
                                "at its 512-px training resolution)"])


# -- Tables 4 and 6: unseen generators ------------------------------------------------------
def _pair_of(case_name: str) -> str:
    """``Flux_Hunyuan`` of ``Flux_Hunyuan.seen.binary`` (pair names may hold dots: ``SD2_SD3.5``)."""
    pair = setting_of(case_name)[0]
    return pair.removesuffix(".seen")


def unseen_pairs(idx: RecordIndex) -> list[str]:
    """The held-out pairs the unseen-generators records of ``idx`` name: the paper's first, in its order."""
    found = list(dict.fromkeys(_pair_of(c) for c in idx.cases("unseen-generators")))
    return [p for p in PAPER_PAIR_NAMES if p in found] + [p for p in found if p not in PAPER_PAIR_NAMES]


def _pair_label(idx: RecordIndex, pair: str, det: str) -> str:
    for case in (f"{pair}.binary", f"{pair}.image", f"{pair}.seen.binary", f"{pair}.seen.image"):
        r = idx.get("unseen-generators", case, det)
        editors = r.body.editors if r else ()
        if editors:
            return f"{pair} ({' + '.join(map(str, editors))})"
    return pair


def unseen_table(idx: RecordIndex, tid: str, task: str, metrics: tuple[str, ...]) -> SummaryTable:
    pairs = unseen_pairs(idx)
    cols = prefixed_columns((where, m) for where in ("seen", "held-out") for m in metrics)

    def rows(det: str) -> list[Row]:
        out = []
        for pair in pairs:
            seen = cells(idx.get("unseen-generators", f"{pair}.seen.{task}", det),
                         {f"seen:{m}": m for m in metrics})
            held = cells(idx.get("unseen-generators", f"{pair}.{task}", det),
                         {f"held-out:{m}": m for m in metrics})
            if seen or held:
                out.append(Row(_pair_label(idx, pair, det), {**seen, **held}, group=det))
        return out

    what = "binary localization" if task == "binary" else "image-level detection"
    return summary_table(idx, "unseen-generators", None, tid,
                         f"Table {tid}: unseen editors, {what} (unseen-generators)", "held-out pair", cols, rows,
                         group_header="detector",
                         notes=[ACC_NOTE] * (task == "binary") + [
                             "held-out: model trained without the pair's editors; seen: model trained on every "
                             "editor; both scored on the pair's validation images plus the authentic ones"])


# -- Table 5: classification -----------------------------------------------------------------
def table5(idx: RecordIndex) -> SummaryTable:
    found = [c for c in idx.cases("classification") if c != "all"]
    editors = [*CLASSIFICATION_EDITORS, *(c for c in found if c not in CLASSIFICATION_EDITORS)]
    cols = prefixed_columns((e, m) for e in editors for m in ("img_Acc", "img_AP"))
    cols += [column("img_Acc", "img_Acc"), column("img_AP", "img_AP"), column("mAP", "img_AP", "mAP"),
             column("img_Acc_oracle", "img_Acc_oracle")]
    partial: list[str] = []

    def rows(det: str) -> list[Row]:
        row = cells(idx.get("classification", "all", det), {"img_Acc": "img_Acc", "img_AP": "img_AP",
                                                            "img_Acc_oracle": "img_Acc_oracle"})
        for e in editors:
            row |= cells(idx.get("classification", e, det), {f"{e}:{m}": m for m in ("img_Acc", "img_AP")})
        aps = [row[f"{e}:img_AP"].value for e in editors if f"{e}:img_AP" in row]
        aps = [v for v in aps if v is not None]
        if aps:
            row["mAP"] = Cell(sum(aps) / len(aps))
            if len(aps) < len(editors):
                partial.append(f"{det} ({len(aps)} of {len(editors)})")
        return [Row(det, row)]

    table = summary_table(idx, "classification", None, "5",
                          "Table 5: image-level detection, segmenters and classifiers (classification)", "detector",
                          cols, rows, notes=["per-editor columns: that editor's images plus the authentic ones; "
                                             "Acc and AP: the whole split; mAP = mean of the per-editor APs; "
                                             "segmenters: edited if predicted edited area > 1% of the image, "
                                             "classifiers: image probability > 0.5"])
    if partial:
        table.notes.append("mAP over fewer editors (not comparable with full rows): " + ", ".join(partial))
    return table


# -- Table 7: LoRA ----------------------------------------------------------------------------
LORA_COLUMNS = (("binary:mIoU", "binary", "mIoU", "binary mIoU"), ("semantic:mIoU", "semantic", "mIoU",
                "semantic mIoU"), ("IoU.sdxl", "semantic", "IoU.sdxl", None), ("top1", "semantic", "top1", None))


def table7(idx: RecordIndex) -> SummaryTable:
    cols = [column(key, metric, label) for key, _, metric, label in LORA_COLUMNS]

    def rows(det: str) -> list[Row]:
        out = []
        for variant, label in (("sdxl", "SDXL"), ("sdxl-lora", "SDXL-LoRA")):
            row: dict[str, Cell] = {}
            for key, task, metric, _ in LORA_COLUMNS:
                row |= cells(idx.get("lora", f"{variant}.{task}", det), {key: metric})
            out.append(Row(label, row, group=det))
        return out

    return summary_table(idx, "lora", None, "7", "Table 7: SDXL vs SDXL + Hyper-SD LoRA re-edits (lora)", "editor",
                         cols, rows, group_header="detector",
                         notes=["SDXL regions only; LoRA re-edited regions keep the SDXL label, so predicting SDXL "
                                "for them is correct"])


# -- Table 8: slices ---------------------------------------------------------------------------
SLICE_COLUMNS = (*((task, m) for task in ("binary", "semantic") for m in PAPER_PIXEL_METRICS),
                 ("binary", "F1"), ("binary", "gIoU"), ("binary", "img_Acc"), ("semantic", "top1"))


def _natural(text: str) -> tuple:
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p)


def table8(idx: RecordIndex) -> SummaryTable:
    cols = prefixed_columns(SLICE_COLUMNS)
    several = len(idx.detectors("slices")) > 1
    left_out: dict[str, None] = {}

    def rows(det: str) -> list[Row]:
        out = []
        for key in SLICE_KEYS:
            values: dict[str, dict[str, Cell]] = {}
            recs = [r for task in ("binary", "semantic") if (r := idx.get("slices", f"{key}.{task}", det))]
            for r in recs:
                task = r.body.case_name.rpartition(".")[2]
                for name in r.metrics:
                    base, _, where = name.partition(SLICE_SEPARATOR)
                    k, _, value = where.partition("=")
                    if k == key and (task, base) in SLICE_COLUMNS:
                        values.setdefault(value, {}).update(cells(r, {f"{task}:{base}": name}))
            if recs and not any(SLICE_SEPARATOR in name for r in recs for name in r.metrics):
                left_out[f"{key}: {missing_metadata_message(key)}"] = None  # no metadata on any image
            out += [Row(value, values[value], group=f"{det}: {key}" if several else key)
                    for value in sorted(values, key=_natural)]
        return out

    table = summary_table(idx, "slices", None, "8", "Table 8: results by slice (slices)", "value", cols, rows,
                          group_header="slice",
                          notes=[ACC_NOTE, "base: real or AI-generated base image; turns: number of edits; "
                                 "multiturn: single (1 turn) or multi (2+), none for authentic images; editor and "
                                 "edit type: an image counts in every slice its edits name"])
    table.notes += [f"left out, {line}" for line in left_out]
    return table


# -- format parity ------------------------------------------------------------------------------
PARITY_COLUMNS = PARITY_METRICS


def parity_table(idx: RecordIndex) -> tuple[SummaryTable, list[str]]:
    """The table and one FLAG line per detector with a format shortcut."""
    found = idx.cases("format-parity")
    formats = [*PARITY_FORMATS, *(c for c in found if c not in PARITY_FORMATS)]
    cols = [column(m, m, flag=m == "format_shortcut") for m in PARITY_COLUMNS]
    flags: list[str] = []

    def rows(det: str) -> list[Row]:
        out, shortcut, tolerances = [], [], set()
        for fmt in formats:
            r = idx.get("format-parity", fmt, det)
            if r is None:
                continue
            out.append(Row(fmt, cells(r, {m: m for m in PARITY_COLUMNS}), group=det))
            if (r.metrics.get("format_shortcut") or 0) >= 0.5:
                shortcut.append(fmt)
                tolerances.add(r.body.case_option("tolerance"))
        if shortcut:
            tol = " / ".join(f"{t:.0%}" for t in sorted(t for t in tolerances if t is not None)) or "the tolerance"
            flags.append(f"{det} changes its image-level verdict on more than {tol} of the images when they "
                         f"are re-encoded as {', '.join(shortcut)}: a format shortcut, not edit evidence")
        return out

    table = summary_table(idx, "format-parity", None, "parity", "Format parity: verdicts under re-encoding "
                          "(format-parity)", "format", cols, rows, group_header="detector",
                          notes=["verdicts moved: fraction of images whose edited/authentic verdict differs from the "
                                 "native file's; ΔAcc: Acc minus the native Acc"])
    return table, flags


# -- cross-dataset: the run's model on other datasets ----------------------------------------
CROSS_METRICS = (("binary", "mIoU"), ("binary", "F1"), ("image", "img_Acc"), ("image", "img_AP"))
"""Per evaluation dataset: binary mIoU and F1, image-level Acc and AP (OpenSDI's board shows pixel
IoU/F1 and image F1/Acc)."""


def cross_table(records: list[ResultRecord], detector_order: list[str]) -> SummaryTable:
    """Rows: detectors (trained on this group's dataset); columns: each evaluation dataset and
    split (``name/split``) by :data:`CROSS_METRICS`, as OpenSDI's board lays them out."""
    cross = newest(
        (r for r in records if is_cross_record(r)),
        key=lambda r: (r.body.row_name, r.body.case_name, eval_place(r)))
    places = sorted({eval_place(r) for r in cross.values()})
    per_generator = {where: list(dict.fromkeys(  # F1 per generator, from the binary.editor slice case
        m for (_, case, w), r in cross.items() if case == "binary.editor" and w == where for m in r.metrics
        if m.startswith(f"F1{SLICE_SEPARATOR}editor=") and not m.endswith(f"={NO_TURNS}"))) for where in places}
    cols = []
    for where in places:
        cols += [column(f"{where}:{metric}", metric, f"{where} {'image ' if task == 'image' else ''}"
                        f"{metric_info(metric).label}") for task, metric in CROSS_METRICS]
        cols += [column(f"{where}:{m}", "F1", f"{where} {m.partition('=')[2]} F1") for m in per_generator[where]]
    detectors = sorted({k[0] for k in cross}, key=lambda n: (detector_order.index(n) if n in detector_order
                                                               else len(detector_order), n))
    rows = []
    for det in detectors:
        found: dict[str, Cell] = {}
        for where in places:
            for task, metric in CROSS_METRICS:
                found.update(cells(cross.get((det, task, where)), {f"{where}:{metric}": metric}))
            found.update(cells(cross.get((det, "binary.editor", where)),
                               {f"{where}:{m}": m for m in per_generator[where]}))
        rows.append(Row(det, found))
    return SummaryTable("X", "Cross-dataset: the model trained here, evaluated on other datasets (cross-dataset, "
                        "opensdi)",
                        "detector", cols, rows,
                        notes=["columns: evaluation dataset/split (and its generators' F1, where its metadata "
                               "names them); image-level columns judge images by the predicted edited area "
                               "(1% rule)"] if rows else [],
                        hint="no records: run diffzoo run with --suite cross-dataset (or opensdi) --eval-dataset PATH[:SPLIT]",
                        fed=bool(rows))


def is_cross_record(record: ResultRecord) -> bool:
    """A record of a case evaluated on an ``--eval-dataset`` (suites cross-dataset, opensdi)."""
    return (record.body.case.get("options") or {}).get("eval_dataset") == "other"


def eval_place(record: ResultRecord) -> str:
    """``name/split`` of the dataset a cross-dataset record evaluated."""
    return f"{record.body.dataset.name}/{record.body.case.get('split', '')}"


def cross_tables(records: list[ResultRecord]) -> list[SummaryTable]:
    """One cross-dataset table per training dataset of ``records`` (the published leaderboard's
    overview of the cross-dataset suite; empty without such records)."""
    by_train: dict[tuple[str, str], list[ResultRecord]] = {}
    for r in records:
        trained = r.body.config.get("train_dataset") or {}
        if is_cross_record(r) and trained:
            by_train.setdefault((trained.get("name", ""), trained.get("fingerprint", "")), []).append(r)
    out = []
    for (name, fingerprint), recs in by_train.items():
        table = cross_table(recs, list(dict.fromkeys(r.body.row_name for r in recs)))
        table.title = f"Cross-dataset: trained on {name} ({fingerprint[:12]}), evaluated on other datasets"
        out.append(table)
    return out
