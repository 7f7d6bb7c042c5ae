"""``diffzoo predict``: label maps, overlays and verdicts for single images."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from diffzoo.harness.core.parallel import resolve_workers
from diffzoo.harness.core.progress import NullProgress
from diffzoo.leaderboard.render.escape import term
from diffzoo.cli.console import console
from diffzoo.cli.options import WORKERS
from diffzoo.cli.progress import RichProgress

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
    task: str | None = typer.Option(None, "--task", help="binary or semantic: which model to use."),
    out: Path = typer.Option(Path("diffzoo-predictions"), "--out", help="Output folder."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:1, ..."),
    labels: str | None = typer.Option(
        None, "--labels", help="Class names for a semantic checkpoint without card.json (JSON file or comma list)."
    ),
    workers: int | None = WORKERS,
) -> None:
    """Predict edited regions (and editors) of single images.

    Writes <stem>.labels.png (palette PNG, value = class index), <stem>.overlay.png
    and one line per image in predictions.jsonl.
    """
    from diffzoo.harness.metrics import AREA_THRESHOLD, SCORE_THRESHOLD  # torch: not at start-up
    from diffzoo.harness.run.prediction import PREDICTIONS_FILE, collect_images, load_model, predict_files

    paths = collect_images(images)  # a missing image fails before the model is built
    model = load_model(detector, checkpoint, task, device, labels)
    det = model.detector
    classes = ", ".join(det.label_space.names) if det.task == "semantic" else "background, edited"
    console.print(f"[bold]model[/] {term(model.name)} {term(f'[{det.task}]')} from "
                  f"{term(str(model.checkpoint))} (sha256 {model.sha256[:12]}); classes: {term(classes)}")
    progress = RichProgress(console) if len(paths) > 1 else NullProgress()
    rows = predict_files(model, paths, out, progress, resolve_workers(workers, getattr(det, "device", "cpu")))
    console.print(_table(rows, det.task))
    edited = sum(r.get("verdict") == "edited" for r in rows)
    failed = [r for r in rows if "error" in r]
    wrote = f"{PREDICTIONS_FILE} in {term(str(out))}"
    if det.task == "classification":
        wrote += " (a classification detector gives no label maps or overlays)"
    else:
        wrote = "label maps, overlays and " + wrote
    console.print(f"{edited} edited, {len(rows) - edited - len(failed)} authentic of {len(rows)} image(s) "
                  f"(edited: predicted edited area > {AREA_THRESHOLD:.0%} of the image, or the detector's image "
                  f"score > {SCORE_THRESHOLD}); {wrote}")
    if failed:
        console.print(f"[yellow]{len(failed)} image(s) could not be read[/] (see 'error' in {PREDICTIONS_FILE})")
        raise typer.Exit(1)


def _table(rows: list[dict], task: str) -> Table:
    table = Table(title="verdicts")
    table.add_column("image", overflow="fold")
    table.add_column("verdict")
    table.add_column("edited area", justify="right")
    table.add_column("image score", justify="right")
    if task == "semantic":
        table.add_column("top editors")
    for row in rows[:SHOWN_ROWS]:
        if "error" in row:
            table.add_row(term(Path(row["image"]).name), f"[red]error:[/] {term(row['error'])}", "", "",
                          *([""] if task == "semantic" else []))
            continue
        area = "-" if row["edited_fraction"] is None else f"{row['edited_fraction']:.1%}"
        cells = [term(Path(row["image"]).name), "[red]edited[/]" if row["verdict"] == "edited" else "authentic",
                 area, f"{row['image_score']:.3f}"]
        if task == "semantic":
            top = ", ".join(f"{e['editor']} {e['fraction']:.1%}" for e in row["editors"][:3])
            cells.append(term(top or "-"))
        table.add_row(*cells)
    if len(rows) > SHOWN_ROWS:
        from diffzoo.harness.run.prediction import PREDICTIONS_FILE

        table.caption = f"{len(rows) - SHOWN_ROWS} more in {PREDICTIONS_FILE}"
    return table
