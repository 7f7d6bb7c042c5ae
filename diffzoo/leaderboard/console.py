"""Console tables of result records (rich)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.markup import escape
from rich.table import Table

from ..harness.records import ResultRecord

SHOWN = {
    "binary": ("aAcc", "mIoU", "bF1", "F1", "pixel_AUC", "gIoU", "FPR_authentic"),
    "semantic": ("aAcc", "mAcc", "mIoU", "bF1", "top1", "top3"),
    "image": ("img_Acc", "img_real_Acc", "img_edited_Acc", "img_AP", "img_AUC"),
}
LABELS = {"img_Acc": "Acc", "img_AP": "AP", "img_AUC": "AUC", "img_real_Acc": "real Acc",
          "img_edited_Acc": "edited Acc", "pixel_AUC": "pixel AUC", "FPR_authentic": "FPR auth."}


def fmt(value: float | None, ci: list[float] | None = None) -> str:
    if value is None:
        return "-"
    text = f"{100 * value:.1f}" if abs(value) <= 1.0 else f"{value:.3g}"
    if ci and None not in ci:
        text += f" [dim]±{100 * (ci[1] - ci[0]) / 2:.1f}[/]"
    return text


def case_tables(records: Iterable[ResultRecord]) -> list[Table]:
    """One table per (suite, case task): rows are detectors, values in %."""
    groups: dict[tuple[str, str, str], list[ResultRecord]] = {}
    for r in records:
        key = (r.data["suite"]["name"], r.data["case"]["name"], r.data["case"]["task"])
        groups.setdefault(key, []).append(r)
    tables = []
    for (suite, case, task), recs in groups.items():
        dataset = recs[0].data["dataset"]["name"]
        cols = SHOWN.get(task, tuple(recs[0].metrics))
        table = Table(title=escape(f"{suite} / {case} on {dataset}") + "  (%, ± = half 95% CI)", title_justify="left")
        table.add_column("detector", style="bold")
        for c in cols:
            table.add_column(LABELS.get(c, c), justify="right")
        for r in recs:
            ci = r.data.get("ci95", {})
            table.add_row(escape(r.data["detector"]["name"]), *(fmt(r.metrics.get(c), ci.get(c)) for c in cols))
            for name, values in (r.data.get("baselines") or {}).items():
                table.add_row(f"[dim]{name} (baseline)[/]", *(fmt(values.get(c)) for c in cols))
        tables.append(table)
    return tables
