"""``diffzoo run``: train or load, evaluate, record, print."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.markup import escape

from ..harness.runner import RunRequest, Runner
from ..leaderboard.console import case_tables
from ..leaderboard.plots import confusion_png
from ..leaderboard.store import RecordStore
from .app import app, console
from .progress import RichProgress


@app.command("run")
def run_cmd(
    detector: str = typer.Option(..., "--detector", "-d", help="Detector name (family or family.tag)."),
    suite: str = typer.Option("all", "--suite", "-s", help="Suite name, wildcard, or 'all'."),
    dataset: str = typer.Option("mini", "--dataset", help="Registered dataset name or a path."),
    checkpoint: list[Path] = typer.Option(
        [], "--checkpoint", help="Use this checkpoint (folder or .safetensors); repeat for several tasks."
    ),
    train: bool = typer.Option(True, "--train/--no-train", help="Train when no checkpoint is given or cached."),
    out: Path = typer.Option(Path("diffzoo-out"), "--out", help="Output folder for records and plots."),
    seed: int = typer.Option(0, "--seed"),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:1, ..."),
    strict: bool = typer.Option(False, "--strict", help="Stop at the first corrupt sample instead of skipping it."),
    pretrained: bool | None = typer.Option(
        None, "--pretrained/--no-pretrained", help="Start from the card's pretrained weights (default: card/dataset)."
    ),
    iterations: int | None = typer.Option(None, "--iterations", help="Override training iterations."),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Override training batch size."),
    crop_size: int | None = typer.Option(None, "--crop-size", help="Override training crop size."),
    labels: str | None = typer.Option(
        None, "--labels", help="Label map: JSON file {'names': [...]} or comma-separated editor names."
    ),
    extra_authentic: Path | None = typer.Option(
        None, "--extra-authentic", help="Folder of authentic images added to training with all-zero masks."
    ),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples for 95% CIs (0: none)."),
) -> None:
    """Run benchmark suites for one detector on one dataset."""
    request = RunRequest(
        detector=detector, suites=suite, dataset=dataset, checkpoints=list(checkpoint), train=train,
        seed=seed, device=device, strict=strict, pretrained=pretrained,
        train_overrides={"iterations": iterations, "batch_size": batch_size, "crop_size": crop_size},
        dataset_options={k: v for k, v in (("label_space", labels), ("extra_authentic", extra_authentic)) if v},
        bootstrap=bootstrap, out=out,
    )
    start = time.monotonic()
    runner = Runner(request, RichProgress(console))
    plan = runner.plan()
    ds = runner.dataset
    console.print(f"[bold]dataset[/] {escape(ds.name)} (fingerprint {plan.fingerprint}); "
                  f"classes: {escape(', '.join(ds.label_space.names))}")
    notice = getattr(ds, "notice", None)
    if notice:
        console.print(f"[yellow]note:[/] {escape(notice)}")
    for line in plan.describe():
        console.print(f"[bold]plan[/] {escape(line)}")
    output = runner.run()
    store = RecordStore(out)
    for record in output.records:
        store.add(record)
        conf = record.data.get("confusion")
        if conf:
            name = f"{record.data['detector']['name']}-{record.data['suite']['name']}-{record.data['case']['name']}"
            confusion_png(conf, record.data["label_space"], out / "plots" / f"{name}-confusion.png",
                          title=f"{record.data['detector']['name']} on {ds.name}")
    for table in case_tables(output.records):
        console.print(table)
    skipped = sum(r.data["counts"]["skipped_corrupt"] for r in output.records)
    if skipped:
        console.print(f"[yellow]{skipped} corrupt sample(s) skipped[/] (listed in the records; --strict stops instead)")
    console.print(
        f"{len(output.records)} record(s) written to {store.records_dir} "
        f"in {time.monotonic() - start:.0f} s; dataset {escape(ds.name)}."
    )
    if notice:
        console.print(f"[yellow]note:[/] {escape(notice)}")
