"""``diffzoo predict``: label maps, overlays and verdicts for single images.

The verdicts are the leaderboard's (``metrics/verdict.py``): one per image row the
detector has, named as that row.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from diffzoo.cli.console import console
from diffzoo.cli.options import FORCE, WORKERS
from diffzoo.cli.progress import RichProgress
from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.parallel import resolve_workers
from diffzoo.harness.core.progress import NullProgress
from diffzoo.harness.core.types import TASKS
from diffzoo.harness.metrics.verdict import rule_text, threshold_text
from diffzoo.harness.records.policy import PIXEL_RULES
from diffzoo.harness.run.request import POLICIES, check_threshold_policy
from diffzoo.leaderboard.render.escape import term

SHOWN_ROWS = 20


def predict_cmd(
    images: list[Path] = typer.Argument(..., metavar="IMAGE", help="Image files or folders of images (any size)."),
    detector: str | None = typer.Option(
        None, "--detector", "-d", help="Detector name; optional when the checkpoint's card.json names it."
    ),
    checkpoint: list[Path] = typer.Option(
        [], "--checkpoint", help="Checkpoint folder or .safetensors (repeat; --task picks one). "
        "Default: the one checkpoint of --detector in the cache."
    ),
    task: str | None = typer.Option(None, "--task", help=f"{', '.join(TASKS)}: which model to use."),
    out: Path = typer.Option(Path("diffzoo-predictions"), "--out", help="Output folder."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:1, ..."),
    labels: str | None = typer.Option(
        None, "--labels", help="Class names for a semantic checkpoint without card.json (JSON file or comma list)."
    ),
    thresholds: str = typer.Option(
        "fixed", "--thresholds", callback=check_threshold_policy,
        help=f"{' or '.join(POLICIES)}: the card's thresholds and the 1% area rule "
        "(docs/metrics.md), or those `diffzoo run --thresholds calibrated` recorded for this model in --records."
    ),
    records: Path | None = typer.Option(
        None, "--records",
        help="The `diffzoo run --out` folder whose records hold the model's calibrated thresholds "
        "(with --thresholds calibrated; default: diffzoo-out)."
    ),
    workers: int | None = WORKERS,
    force: bool = FORCE,
) -> None:
    """Predict edited regions (and editors) of single images.

    Writes <stem>.labels.png (palette PNG, value = class index), <stem>.overlay.png
    and one line per image in predictions.jsonl; those of an earlier predict in
    --out are removed (.diffzoo-predict.json lists them).  Each verdict is the one the
    leaderboard's image row of that name gives (docs/metrics.md).
    """
    from diffzoo.harness.data.imageio import max_pixels
    from diffzoo.harness.run.loading import usable_workers
    from diffzoo.harness.run.prediction import (  # torch: not at start-up
        IMAGE_OUTPUTS,
        PREDICTIONS_FILE,
        collect_images,
        load_model,
        output_names,
        predict_files,
        prediction_thresholds,
    )
    from diffzoo.leaderboard.outdir import Manifest, claim_output_dir

    if records is not None and thresholds != "calibrated":  # never an option given and left unread
        raise ConfigError(f"--records is read only with --thresholds calibrated (they are {thresholds} here)")
    paths = collect_images(images, out)  # a missing image fails before the model is built
    max_pixels()  # a bad $DIFFZOO_MAX_PIXELS, read as each image is decoded, fails before the folder is claimed
    model = load_model(detector, checkpoint, task, device, labels)
    model.thresholds = prediction_thresholds(model, thresholds, records or Path("diffzoo-out"))
    names = output_names(paths, model.detector.task)
    made = Manifest(".diffzoo-predict.json", "diffzoo_predict", {"": IMAGE_OUTPUTS}, "predict manifest",
                    "it names the label maps and overlays predict wrote there: remove it (those then stay)")
    # made once nothing else can fail before the first image: a file it may not write stops it unmarked
    folder = claim_output_dir(out, force, writes=[*names, made.name])
    # the folder holds one run: the label maps and overlays of the last one here that this one does not write go
    if stale := made.replace(out, made.files(out), names[1:]):
        console.print(f"removed {len(stale)} label map(s) and overlay(s) of the images predicted there before")
    det = model.detector
    classes = ", ".join(det.label_space.names) if det.task == "semantic" else "background, edited"
    console.print(f"[bold]model[/] {term(model.name)} {term(f'[{det.task}]')} from "
                  f"{term(str(model.checkpoint))} (sha256 {model.sha256[:12]}); classes: {term(classes)}")
    t = model.thresholds
    console.print(f"[bold]thresholds[/] {term(t.source)}: pixels "
                  f"{PIXEL_RULES[det.task].format(threshold_text(t.pixel))}; "
                  f"area {threshold_text(t.area)}, score {threshold_text(t.score)}")
    progress = RichProgress(console) if len(paths) > 1 else NullProgress()
    workers = usable_workers(resolve_workers(workers, getattr(det, "device", "cpu")))
    rows = predict_files(model, paths, out, progress, workers, place=folder.check_writable)
    console.print(_table(rows, det.task))
    failed = [r for r in rows if "error" in r]
    for name, verdicts in _by_row(rows).items():
        edited = sum(v["verdict"] == "edited" for v in verdicts)
        console.print(f"{term(name)}: {edited} edited, {len(verdicts) - edited} authentic of {len(verdicts)} "
                      f"image(s) ({term(rule_text(verdicts[0]['source'], t))})")
    wrote = f"{PREDICTIONS_FILE} in {term(str(out))}"
    if det.task == "classification":
        wrote += " (a classification detector gives no label maps or overlays)"
    else:
        wrote = "label maps, overlays and " + wrote
    console.print(f"each verdict is that of the leaderboard's image row of its name (docs/metrics.md); {wrote}")
    if failed:
        console.print(f"[yellow]{len(failed)} image(s) could not be read[/] (see 'error' in {PREDICTIONS_FILE})")
        raise typer.Exit(1)


def _by_row(rows: list[dict]) -> dict[str, list[dict]]:
    """Leaderboard row name -> the verdicts of the images predicted, in row order."""
    out: dict[str, list[dict]] = {}
    for row in rows:
        for verdict in row.get("verdicts", []):
            out.setdefault(verdict["row"], []).append(verdict)
    return out


def _table(rows: list[dict], task: str) -> Table:
    table = Table(title="verdicts")
    table.add_column("image", overflow="fold")
    names = list(_by_row(rows))
    pixels = task != "classification"
    own = any(r.get("own_image_score") is not None for r in rows)
    for name in names:
        table.add_column(term(name), overflow="fold")
    if pixels:
        table.add_column("edited area", justify="right", overflow="fold")
    if own:
        table.add_column("own image score", justify="right", overflow="fold")
    if task == "semantic":
        table.add_column("top editors", overflow="fold")
    blank = [""] * (len(names) + pixels + own + (task == "semantic"))
    for row in rows[:SHOWN_ROWS]:
        if "error" in row:
            table.add_row(term(Path(row["image"]).name), f"[red]error:[/] {term(row['error'])}", *blank[1:])
            continue
        verdicts = {v["row"]: v["verdict"] for v in row["verdicts"]}
        cells = [term(Path(row["image"]).name)]
        cells += ["[red]edited[/]" if verdicts.get(n) == "edited" else verdicts.get(n, "-") for n in names]
        if pixels:
            cells.append("-" if row["edited_fraction"] is None else f"{row['edited_fraction']:.1%}")
        if own:
            cells.append("-" if row["own_image_score"] is None else f"{row['own_image_score']:.3f}")
        if task == "semantic":
            top = ", ".join(f"{e['editor']} {e['fraction']:.1%}" for e in row["editors"][:3])
            cells.append(term(top or "-"))
        table.add_row(*cells)
    if len(rows) > SHOWN_ROWS:
        from diffzoo.harness.run.prediction import PREDICTIONS_FILE

        table.caption = f"{len(rows) - SHOWN_ROWS} more in {PREDICTIONS_FILE}"
    return table
