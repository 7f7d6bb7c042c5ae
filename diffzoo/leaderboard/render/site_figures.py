"""The figures of a detector's page on the static site (:mod:`.site`):
robustness curves (computed by :func:`diffzoo.leaderboard.robustness.distortion_curves`),
confusion matrices, per-editor IoU bars and training curves (:mod:`.training_plots`),
written as PNGs under one ``plots/`` folder with distinct names made from slugs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from diffzoo.harness.core.registry import natural_key
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.index import newest_record
from diffzoo.leaderboard.render import plots
from diffzoo.leaderboard.render.training_plots import curves_from_training, training_png
from diffzoo.leaderboard.robustness import distortion_curves
from diffzoo.leaderboard.table import info_of, slugify, unique_name


@dataclass(frozen=True)
class Figure:
    """A figure of a page: ``kind`` (a ``data-kind`` the tests and the CSS know), the PNG's link
    (``src``, made of a slug), its caption and its ``file`` name in ``plots/``."""

    kind: str
    src: str
    caption: str
    file: str


def plot_file(used: set[str], stem: str, *parts: str) -> str:
    """A distinct PNG name from slugs (``used`` is shared by the whole site)."""
    return unique_name(slugify("-".join((stem[:60], *parts)))[:110], used) + ".png"


def figure(kind: str, path: Path, caption: str, prefix: str = "../") -> Figure:
    return Figure(kind, f"{prefix}plots/{quote(path.name)}", caption, path.name)


def _where(r: ResultRecord) -> str:
    b = r.body
    return f"{b.suite.name} v{b.suite.version} / {b.case_name} on {b.dataset.name}"


def robustness_figures(name: str, records: list[ResultRecord], stem: str, plot_dir: Path,
                       used: set[str]) -> list[Figure]:
    """Primary metric over distortion strength, per (task, dataset, distortion) with at least two
    strengths, each line from its clean point (the undistorted case)."""
    figures = []
    for curve in distortion_curves(records):
        label = info_of(curve.metric).label
        file = plot_file(used, stem, "robustness", curve.task, curve.distortion, curve.dataset)
        title = f"{name}: {label} under {curve.distortion} on {curve.dataset}"
        plots.robustness_png(curve.series, plot_dir / file, xlabel=f"{curve.distortion} {curve.parameter}",
                             ylabel=label, title=title, clean=curve.clean, ticks=curve.ticks)
        figures.append(figure("robustness", plot_dir / file, f"{title} ({curve.task} task; {curve.parameter} on "
                                                              "the x axis from the clean point, mildest first)"))
    return figures


def semantic_figures(name: str, records: list[ResultRecord], stem: str, plot_dir: Path,
                    used: set[str]) -> tuple[list[Figure], list[Figure]]:
    confusion, bars = [], []
    by_dataset: dict[tuple[str, str], dict[str, dict[str, float | None]]] = {}
    for r in records:
        b = r.body
        if b.task != "semantic":
            continue
        labels = list(b.label_space)
        if b.confusion and labels:
            file = plot_file(used, stem, "confusion", r.id)
            plots.confusion_png(b.confusion, labels, plot_dir / file, title=f"{name}: {_where(r)}")
            confusion.append(figure("confusion", plot_dir / file,
                                     f"{_where(r)}: rows = ground truth ({', '.join(labels)})"))
        background = labels[0] if labels else "background"
        names = [*labels, *sorted(m[4:] for m in r.metrics if m.startswith("IoU.") and m[4:] not in labels)]
        ious = {n: r.metrics[f"IoU.{n}"] for n in names if f"IoU.{n}" in r.metrics and n != background}
        if ious:
            key = (b.dataset.name, b.dataset.fingerprint)
            label = f"{b.suite.name} v{b.suite.version} / {b.case_name}"
            series = by_dataset.setdefault(key, {})
            series[label if label not in series else f"{label} [{r.id[:8]}]"] = ious
    for (dataset, fingerprint), series in sorted(by_dataset.items(), key=lambda kv: (natural_key(kv[0][0]), kv[0])):
        file = plot_file(used, stem, "editor-iou", dataset, fingerprint[:8])
        title = f"{name}: per-editor IoU on {dataset}"
        plots.editor_iou_png(series, plot_dir / file, title=title)
        bars.append(figure("editor-iou", plot_dir / file, f"{title} (one bar per semantic case)"))
    return confusion, bars


def model_key(r: ResultRecord) -> str:
    """The trained model a record was made with: its checkpoint cache key (``config.cache_key``),
    else its checkpoint's sha256."""
    key = r.body.config.get("cache_key")
    return key if isinstance(key, str) and key else r.body.detector.checkpoint_sha256


def _training_of(r: ResultRecord) -> tuple[str, list[str], str]:
    """(task, held-out editors, training dataset) of the model behind ``r``, as its config says
    (``train_subset``, ``train_dataset``), else as its case's ``train`` says."""
    config: dict[str, Any] = r.body.config
    spec = config.get("train_subset") if isinstance(config.get("train_subset"), dict) else r.body.case.get("train")
    spec = spec if isinstance(spec, dict) else {}
    editors = spec.get("exclude_editors")
    editors = [str(x) for x in editors] if isinstance(editors, (list, tuple)) else []
    train_dataset = config.get("train_dataset")
    dataset = train_dataset.get("name") if isinstance(train_dataset, dict) else None
    return str(spec.get("task") or r.body.task or "?"), editors, str(dataset or r.body.dataset.name)


def training_figures(name: str, records: list[ResultRecord], stem: str, plot_dir: Path,
                     used: set[str]) -> list[Figure]:
    """One training figure per distinct trained model (:func:`model_key`) whose records carry
    a training curve (``training.curve``, ``validation`` or the older sampled ``losses``),
    drawn from the newest such record of that model."""
    by_model: dict[str, list[ResultRecord]] = {}
    for r in records:
        if curves_from_training(r.body.training) is not None:
            by_model.setdefault(model_key(r), []).append(r)
    figures = []
    for key, group in sorted(by_model.items(), key=lambda kv: (_training_of(kv[1][0]), kv[0])):
        r = newest_record(group)
        curves = curves_from_training(r.body.training)
        assert curves is not None  # by_model holds records with a curve
        task, editors, dataset = _training_of(r)
        held_out = f"; held-out editors: {', '.join(editors)}" if editors else "; no editor held out"
        what = f"{task} model trained on {dataset}{held_out}; cache key {key[:16]}"
        file = plot_file(used, stem, "training", key[:12])
        training_png(curves, plot_dir / file, title=f"{name}: {what}")
        steps = " (steps inferred from the sampled losses of an older record)" if curves.approximate_steps else ""
        figures.append(figure("training", plot_dir / file,
                               f"Training of the {what}{steps}: loss (thin: as logged, bold: smoothed), "
                               "learning rate, validation metrics when the run logged any"))
    return figures
