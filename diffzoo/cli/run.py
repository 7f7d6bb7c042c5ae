"""``diffzoo run``: train or load, evaluate, record, print.

Under torchrun every rank runs the command; rank 0 alone prints and writes
(other ranks print errors only).  The options shared with ``diffzoo train``
are defined once here.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import typer

from ..harness import distributed
from ..harness.errors import ConfigError
from ..harness.references import reference_requests
from ..harness.runner import RunRequest, Runner
from ..leaderboard.console import case_tables
from ..leaderboard.escape import term
from ..leaderboard.plots import confusion_png
from ..leaderboard.outdir import claim_output_dir
from ..leaderboard.store import AddOutcome, RecordStore
from ..leaderboard.tables import slugify
from .app import app, console
from .options import RECIPE, SEED
from .progress import RichProgress, rank_output


MAX_CASE_TABLES = 6
"""Above this many cases (e.g. --suite all) the console shows the summary only;
every case's table is in the output folder's summary and records."""

# -- options shared by `run` and `train` (one definition each) ----------------
DETECTOR = typer.Option(..., "--detector", "-d", help="Detector name (family or family.tag).")
DATASET = typer.Option("mini", "--dataset", help="Registered dataset name or a path.")
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
SAVE_EVERY = typer.Option(
    None, "--save-every",
    help="Training steps between resume saves (default: a tenth of the iterations; 0: never). "
    "A killed training resumes from the last one. Not part of the cache key.",
)
DATASET_OPTION = typer.Option(
    [], "--dataset-option",
    help="KEY=VALUE passed to the dataset adapter (e.g. calib_fraction=0.05, split=test); repeatable.",
)


def parse_options(items: list[str], what: str) -> dict[str, object]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (JSON values where they parse)."""
    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{what} takes KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def make_request(*, detector: str, dataset: str, seed: int, device: str, pretrained: bool | None,
                 iterations: int | None, batch_size: int | None, crop_size: int | None,
                 labels: str | None, extra_authentic: Path | None, dataset_option: list[str] = (),
                 recipe: str = "native", **rest) -> RunRequest:
    """A RunRequest from the shared options (``rest``: RunRequest's other fields)."""
    options = parse_options(list(dataset_option), "--dataset-option")
    options.update({k: v for k, v in (("label_space", labels), ("extra_authentic", extra_authentic)) if v})
    return RunRequest(
        detector=detector, dataset=dataset, seed=seed, device=device, pretrained=pretrained,
        train_overrides={"iterations": iterations, "batch_size": batch_size, "crop_size": crop_size,
                         "recipe": recipe},
        dataset_options=options,
        **rest,
    )


@app.command("run")
def run_cmd(
    detector: str = DETECTOR,
    suite: str = typer.Option("all", "--suite", "-s", help="Suite name, wildcard (e.g. 'dist*'), or 'all'."),
    dataset: str = DATASET,
    checkpoint: list[Path] = typer.Option(
        [], "--checkpoint", help="Use this checkpoint (folder or .safetensors); one per task."
    ),
    train: bool = typer.Option(True, "--train/--no-train", help="Train when no checkpoint is given or cached."),
    out: Path = typer.Option(Path("diffzoo-out"), "--out", help="Output folder for records, summary and plots."),
    seed: int = SEED,
    device: str = DEVICE,
    strict: bool = typer.Option(False, "--strict", help="Stop at the first corrupt sample instead of skipping it."),
    pretrained: bool | None = PRETRAINED,
    iterations: int | None = ITERATIONS,
    batch_size: int | None = BATCH_SIZE,
    crop_size: int | None = CROP_SIZE,
    recipe: str = RECIPE,
    labels: str | None = LABELS,
    extra_authentic: Path | None = EXTRA_AUTHENTIC,
    dataset_option: list[str] = DATASET_OPTION,
    save_every: int | None = SAVE_EVERY,
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples for 95% CIs (0: none)."),
    thresholds: str = typer.Option(
        "fixed", "--thresholds",
        help="fixed (card / METRICS.md thresholds) or calibrated (on --calibration-split, never an evaluated one).",
    ),
    calibration_split: str = typer.Option("calib", "--calibration-split", help="Split to calibrate thresholds on."),
    holdout: list[str] = typer.Option(
        [], "--holdout", help="Held-out editor pair for unseen-generators, e.g. sd2,glide; repeatable "
        "(replaces the paper's pairs)."
    ),
    generator: list[str] = typer.Option(
        [], "--generator",
        help="NAME=CARD: use generator card CARD where a suite names NAME (e.g. the LoRA suite's "
        "sdxl.hyper-sd-8step); repeatable.",
    ),
    references: bool = typer.Option(
        True, "--references/--no-references",
        help="Also run the reference detectors a suite names (classification: CNNSpot, UniversalFakeDetect).",
    ),
    force: bool = typer.Option(
        False, "--force",
        help="Use an --out folder that is not empty and was not made by diffzoo (its files are never overwritten).",
    ),
    rerun: bool = typer.Option(
        False, "--rerun",
        help="Replace results already recorded for the same run (the old record is kept under replaced/).",
    ),
) -> None:
    """Run benchmark suites for one detector on one dataset (under torchrun: sharded over ranks)."""
    request = make_request(
        detector=detector, dataset=dataset, seed=seed, device=device, pretrained=pretrained,
        iterations=iterations, batch_size=batch_size, crop_size=crop_size, labels=labels,
        extra_authentic=extra_authentic, dataset_option=dataset_option, suites=suite,
        checkpoints=list(checkpoint), train=train, strict=strict, bootstrap=bootstrap, out=out,
        thresholds=thresholds, calibration_split=calibration_split, unseen_pairs=_pairs(holdout),
        generators={k: str(v) for k, v in parse_options(generator, "--generator").items()},
        save_every=save_every, recipe=recipe,
    )
    start = time.monotonic()
    # before any work: an --out folder that is not diffzoo's is refused now, not after hours of training
    out_dir = claim_output_dir(out, force) if distributed.launch_rank() == 0 else None
    if out_dir is not None:
        for name in OUTPUTS_OUTSIDE_STORE:
            out_dir.check_writable(name)
    runner = Runner(request, RichProgress(console))
    with rank_output(console):
        _run(runner, out, start, references, rerun)


OUTPUTS_OUTSIDE_STORE = ("summary.md", "plots")
"""What a run writes in --out besides the store (records/, states/): checked up front."""


def stored_line(outcomes: list[AddOutcome]) -> str:
    """``"3 record(s) added, 95 already recorded with the same numbers (...)"``: what the store did."""
    counts = Counter(o.status for o in outcomes)
    same = sum(1 for o in outcomes if o.status == "present" and not o.differs)
    parts = [f"{counts['added']} record(s) added"]
    if same:
        parts.append(f"{same} already recorded with the same numbers (one row each; --rerun replaces them)")
    if counts["present"] - same:
        parts.append(f"{counts['present'] - same} already recorded with DIFFERENT numbers")
    if counts["replaced"]:
        parts.append(f"{counts['replaced']} replaced (--rerun; old ones under replaced/)")
    return ", ".join(parts)


def skipped_line(skipped: dict[str, dict[str, str]]) -> str:
    """``"3 sample(s) skipped: 2 too-large, 1 corrupt"``: distinct samples, by reason."""
    kinds = Counter(item["kind"] for item in skipped.values())
    return f"{len(skipped)} sample(s) skipped: " + ", ".join(f"{n} {term(k)}" for k, n in kinds.most_common())


def _pairs(items: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        names = tuple(n.strip() for n in item.replace("+", ",").split(",") if n.strip())
        if len(names) != 2:
            raise ConfigError(f"--holdout takes two editor names, e.g. sd2,glide; got {item!r}")
        pairs.append(names)
    return pairs


def _run(runner: Runner, out: Path, start: float, references: bool, rerun: bool) -> None:
    from ..leaderboard.summary import build_summary, summary_console, write_summary

    runner.plan()
    ds = runner.dataset
    console.print(f"[bold]dataset[/] {term(ds.name)} (fingerprint {runner.plan_.fingerprint}); "
                  f"classes: {term(', '.join(ds.label_space.names))}")
    notice = getattr(ds, "notice", None)
    if notice:
        console.print(f"[yellow]note:[/] {term(notice)}")
    for line in runner.plan_.describe():
        console.print(f"[bold]plan[/] {term(line)}")
    runners = [runner]
    if references:
        for ref in reference_requests(runner.request, runner.suites):
            other = Runner(ref, runner.progress)
            other.plan()
            for line in other.plan_.describe():
                console.print(f"[bold]plan[/] [dim](reference)[/] {term(line)}")
            runners.append(other)
    records = []
    skipped: dict[str, dict[str, str]] = {}
    run_notes: list[str] = []
    for r in runners:
        output = r.run()
        records.extend(output.records)
        skipped.update(output.skipped)
        run_notes.extend(output.notes)
    if not distributed.is_main():
        return
    for line in run_notes:  # cases without images; passes that reused the undistorted one
        console.print(f"[yellow]note:[/] {term(line)}")
    store = RecordStore(out)
    outcomes = [store.add(record, replace=rerun) for record in records]
    for record in records:
        body = record.body
        if body.confusion:
            name = slugify(f"{body.detector.name}-{body.suite.name}-{body.case_name}")
            confusion_png(body.confusion, body.label_space, out / "plots" / f"{name}-confusion.png",
                          title=f"{body.detector.name} on {ds.name}")
    tables = case_tables(records)
    if len(tables) <= MAX_CASE_TABLES:
        for table in tables:
            console.print(table)
    notes = [notice] if notice else []
    summary = build_summary(records)
    for renderable in summary_console(summary):
        console.print(renderable)
    written = write_summary(summary, out, title=f"diffzoo run: {runner.entry.name} on {ds.name}", notes=notes)
    if skipped:
        console.print(f"[yellow]{skipped_line(skipped)}[/] (each listed in the records with its reason; "
                      "--strict stops at the first instead)")
    console.print(
        f"{stored_line(outcomes)} in {term(store.records_dir)}; summary {term(written['summary.md'])} "
        f"({time.monotonic() - start:.0f} s; dataset {term(ds.name)})."
    )
    if notice:
        console.print(f"[yellow]note:[/] {term(notice)}")
    differing = [o for o in outcomes if o.status == "present" and o.differs]
    for o in differing:
        console.print(f"[bold red]{term(o.reason)}[/]", soft_wrap=True)
    if differing:
        raise ConfigError(
            f"{len(differing)} result(s) of this run were already recorded with different numbers (listed above): "
            "the same run is not reproducible here; the stored records were kept. Re-run with --rerun to "
            "replace them (the old ones are kept under replaced/), or find what differs (device, library versions)"
        )
