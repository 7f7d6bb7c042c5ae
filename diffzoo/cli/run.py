"""``diffzoo run``: train or load, evaluate, record, print.

Under torchrun every rank runs the command; rank 0 alone prints and writes
(other ranks print errors only).  The options shared with ``diffzoo train``
are defined once here.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.markup import escape

from ..harness import distributed
from ..harness.runner import RunRequest, Runner
from ..leaderboard.console import case_tables
from ..leaderboard.plots import confusion_png
from ..leaderboard.store import RecordStore
from .app import app, console
from .progress import RichProgress, rank_output


# -- options shared by `run` and `train` (one definition each) ----------------
DETECTOR = typer.Option(..., "--detector", "-d", help="Detector name (family or family.tag).")
DATASET = typer.Option("mini", "--dataset", help="Registered dataset name or a path.")
SEED = typer.Option(0, "--seed")
DEVICE = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:1, ... (under torchrun: one GPU per rank).")
PRETRAINED = typer.Option(
    None, "--pretrained/--no-pretrained", help="Start from the card's pretrained weights (default: card/dataset)."
)
ITERATIONS = typer.Option(None, "--iterations", help="Override training iterations.")
BATCH_SIZE = typer.Option(None, "--batch-size", help="Override training batch size (global under torchrun).")
CROP_SIZE = typer.Option(None, "--crop-size", help="Override training crop size.")
LABELS = typer.Option(
    None, "--labels", help="Label map: JSON file {'names': [...]} or comma-separated editor names."
)
EXTRA_AUTHENTIC = typer.Option(
    None, "--extra-authentic", help="Folder of authentic images added to training with all-zero masks."
)


def make_request(*, detector: str, dataset: str, seed: int, device: str, pretrained: bool | None,
                 iterations: int | None, batch_size: int | None, crop_size: int | None,
                 labels: str | None, extra_authentic: Path | None, **rest) -> RunRequest:
    """A RunRequest from the shared options (``rest``: RunRequest's other fields)."""
    return RunRequest(
        detector=detector, dataset=dataset, seed=seed, device=device, pretrained=pretrained,
        train_overrides={"iterations": iterations, "batch_size": batch_size, "crop_size": crop_size},
        dataset_options={k: v for k, v in (("label_space", labels), ("extra_authentic", extra_authentic)) if v},
        **rest,
    )


@app.command("run")
def run_cmd(
    detector: str = DETECTOR,
    suite: str = typer.Option("all", "--suite", "-s", help="Suite name, wildcard, or 'all'."),
    dataset: str = DATASET,
    checkpoint: list[Path] = typer.Option(
        [], "--checkpoint", help="Use this checkpoint (folder or .safetensors); repeat for several tasks."
    ),
    train: bool = typer.Option(True, "--train/--no-train", help="Train when no checkpoint is given or cached."),
    out: Path = typer.Option(Path("diffzoo-out"), "--out", help="Output folder for records and plots."),
    seed: int = SEED,
    device: str = DEVICE,
    strict: bool = typer.Option(False, "--strict", help="Stop at the first corrupt sample instead of skipping it."),
    pretrained: bool | None = PRETRAINED,
    iterations: int | None = ITERATIONS,
    batch_size: int | None = BATCH_SIZE,
    crop_size: int | None = CROP_SIZE,
    labels: str | None = LABELS,
    extra_authentic: Path | None = EXTRA_AUTHENTIC,
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples for 95% CIs (0: none)."),
) -> None:
    """Run benchmark suites for one detector on one dataset (under torchrun: sharded over ranks)."""
    request = make_request(
        detector=detector, dataset=dataset, seed=seed, device=device, pretrained=pretrained,
        iterations=iterations, batch_size=batch_size, crop_size=crop_size, labels=labels,
        extra_authentic=extra_authentic, suites=suite, checkpoints=list(checkpoint), train=train,
        strict=strict, bootstrap=bootstrap, out=out,
    )
    start = time.monotonic()
    runner = Runner(request, RichProgress(console))
    with rank_output(console):
        _run(runner, out, start)


def _run(runner: Runner, out: Path, start: float) -> None:
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
    if not distributed.is_main():
        return
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
