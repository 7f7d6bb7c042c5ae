"""``diffzoo data``: build and inspect datasets."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path, PurePosixPath
from typing import Any

import typer
from rich.table import Table

from diffzoo.cli.console import console, err_console, folded_table
from diffzoo.cli.options import DATASET_OPTION, FORCE, LABELS, parse_options
from diffzoo.cli.progress import RichProgress
from diffzoo.harness.core.errors import ConfigError, did_you_mean
from diffzoo.harness.core.progress import counter_callback
from diffzoo.harness.core.registry import resolve_target
from diffzoo.harness.run.request import with_own_flags
from diffzoo.leaderboard.render.escape import term, term_text

data_app = typer.Typer(help="Build and inspect datasets.", no_args_is_help=True)


@data_app.command("build")
def build_cmd(
    name: str = typer.Argument(..., help="Dataset to build: mini (the embedded demo dataset)."),
    root: Path | None = typer.Option(None, "--root", help="Where to write it (default: the diffzoo cache)."),
    force: bool = typer.Option(False, "--force", help="Rebuild even if it exists."),
) -> None:
    """Rebuild an embedded dataset from its tiny editors (offline; deterministic on one machine).

    `--dataset mini` reads the copy shipped with diffzoo; a build made here has
    this machine's bytes (the tiny editors' float results depend on the CPU),
    so pass its folder as --dataset to run on it.
    """
    if name != "mini":
        hint = did_you_mean(name, ["mini"])
        raise ConfigError(f"`data build` builds the demo dataset 'mini' alone, not {name!r}.{hint}")
    build = resolve_target("diffzoo.generators.datasets.mini:ensure_mini", "dataset 'mini'",
                           "diffzoo.generators.plugin")
    with counter_callback(RichProgress(console), "building mini") as callback:
        path = build(root=root, force=force, progress=callback)
    console.print(f"mini dataset at {term(str(path))}")
    console.print("note: `--dataset mini` reads the copy shipped with diffzoo; this build's bytes and fingerprint are "
                  f"this machine's (run on it with --dataset {term(str(path))})", soft_wrap=True)


@data_app.command("info")
def info_cmd(
    dataset: str = typer.Argument(..., help="Registered name or path."),
    labels: str | None = LABELS,
    dataset_option: list[str] = DATASET_OPTION,
) -> None:
    """Describe a dataset: layout, splits, label map, fingerprint."""
    from diffzoo.harness.run.factories import open_dataset_with  # the adapters: when the command runs

    ds = open_dataset_with(dataset, None, _open_options(dataset_option, labels),
                           splits="`data info {head}` lists every split")
    fingerprint = ds.fingerprint()  # first: it counts the files' EXIF orientation tags, which describe() shows
    for key, value in ds.describe().items():
        console.print(f"[bold]{key}[/]: {term(value)}")  # names and paths from the data: their markup is text
    console.print(f"[bold]fingerprint[/]: {fingerprint}")


@data_app.command("find")
def find_cmd(
    root: str = typer.Argument(..., help="Folder to look in (or one dataset file)."),  # text: "" is refused, not "."
    depth: int = typer.Option(3, "--depth", min=0, help="Folder levels below ROOT to look at."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document to stdout instead of a table."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also say why each folder or file was not listed."),
    dataset_option: list[str] = DATASET_OPTION,
) -> None:
    """List every dataset under ROOT: adapter, images per split, fingerprint, what it can evaluate.

    Each folder (to --depth levels) and each .zip/.parquet/.arrow file is offered to the adapters,
    as --dataset PATH is; a dataset's folder is not looked into, folder links below ROOT are not
    followed, FIFOs are never opened.  Fingerprints come from the digest cache: a second listing
    reads no image.  `diffzoo run --eval-dataset catalog:ROOT` evaluates on each dataset listed.
    """
    from diffzoo.harness.run.catalog import find_datasets

    catalog = find_datasets(root, depth, parse_options(dataset_option, "--dataset-option"))
    root = str(catalog.root)  # as the catalog's paths begin (~ expanded)
    if as_json:
        typer.echo(json.dumps(catalog.to_dict() if verbose else {k: v for k, v in catalog.to_dict().items()
                                                                  if k != "passed"}, indent=2))
        return
    table = _table(f"datasets under {root}", "path", "adapter", "splits (images)", "fingerprint", "evaluates",
                   text=5)
    for e in catalog.entries:
        rel = e.path.relative_to(catalog.root).as_posix() if e.path != catalog.root else "."
        table.add_row(term_text(rel), e.adapter, term_text(", ".join(f"{s} {n}" for s, n in e.splits.items())),
                      e.fingerprint, ", ".join(e.evaluates))
    if catalog.entries:
        console.print(table)
    else:
        console.print(f"no dataset found under {term(str(root))}" + ("" if verbose else " (--verbose says why)"),
                      soft_wrap=True)
    for path, why in catalog.broken:
        console.print(f"[yellow]not opened:[/] {term(str(path))}: {term(why)}", soft_wrap=True)
    if verbose:
        for path, why in catalog.passed:
            console.print(f"[dim]not listed:[/] {term(str(path))}: {term(why)}", soft_wrap=True)


DEFAULT_STATS_OUT = Path("diffzoo-out")
"""Without --out, plots go to ``diffzoo-out/stats/<dataset>/`` (diffzoo-out is claimed as for ``run``)."""
MAX_ROWS = 12


@data_app.command("stats")
def stats_cmd(
    dataset: str = typer.Argument(..., help="Registered name (e.g. mini) or a path."),
    split: list[str] = typer.Option([], "--split", help="Split to read; repeatable (default: every split)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document to stdout instead of tables."),
    out: Path | None = typer.Option(
        None, "--out", help="Folder for the plots and stats.json (default: diffzoo-out/stats/<dataset>/)."
    ),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Write the plots and stats.json."),
    labels: str | None = LABELS,
    dataset_option: list[str] = DATASET_OPTION,
    force: bool = FORCE,
) -> None:
    """Dataset statistics as in the DiffSeg30k paper: images per editor, turns, base, edited area,
    resolutions, label values."""
    from diffzoo.harness.data.stats import dataset_stats
    from diffzoo.harness.run.factories import open_dataset_with
    from diffzoo.harness.run.request import RunRequest
    from diffzoo.leaderboard.outdir import check_out_unread, claim_output_dir
    from diffzoo.leaderboard.render.stats_plots import stats_pngs

    if not plots and (given := [flag for flag, value in (("--out", out), ("--force", force)) if value]):
        raise ConfigError(f"{' and '.join(given)} name where the plots go; with --no-plots nothing is written")
    options = _open_options(dataset_option, labels)
    if plots:  # refused before any work, made once the stats stand: a dataset or split refused leaves no folder
        folder = _stats_folder(out, dataset)[0]  # as a run's: plots in the dataset's folder would be read as its files
        check_out_unread(folder, RunRequest(detector="", dataset=dataset, dataset_option=options))
        claim_output_dir(folder, force, make=False)
    progress = RichProgress(err_console if as_json else console)
    ds = open_dataset_with(dataset, progress, options,
                           splits="`data stats {head} --split {split}` reads that split alone")
    stats = dataset_stats(ds, split, progress)
    root, sub = _stats_folder(out, ds.name)
    out_dir = claim_output_dir(root, force) if plots else None
    stats["plots"] = {}
    if out_dir is not None:
        with warnings.catch_warnings():  # a label name in a script the font lacks is drawn as boxes, not warned on
            warnings.filterwarnings("ignore", message=r"Glyph \d+ \(.*\) missing from font", category=UserWarning)
            pngs = stats_pngs(stats, lambda name: out_dir.check_writable((sub / name).as_posix()))
        stats["plots"] = {name: str(path) for name, path in pngs.items()}
        stats["plots"]["stats.json"] = str(out_dir.write_text((sub / "stats.json").as_posix(), _json(stats)))
    if as_json:
        typer.echo(_json(stats))
        return
    for table in stats_tables(stats):
        console.print(table)
    for note in stats["notes"]:
        console.print(f"[yellow]note:[/] {term(note)}", soft_wrap=True)
    if stats["plots"]:
        folder = Path(stats["plots"]["stats.json"]).parent
        console.print(f"plots and stats.json in {term(folder)}: {term(', '.join(stats['plots']))}")


def _open_options(dataset_option: list[str], labels: str | None) -> dict[str, Any]:
    """The adapter's keyword options of ``--dataset-option KEY=VALUE`` and ``--labels``: every
    ``data`` command that opens a dataset opens it as ``run --dataset`` does."""
    return with_own_flags(parse_options(dataset_option, "--dataset-option"), label_space=labels)


def _stats_folder(out: Path | None, name: str) -> tuple[Path, PurePosixPath]:
    """The folder ``data stats`` claims and where in it the plots go: without --out, diffzoo-out with
    ``stats/<dataset>/``; an --out directly in diffzoo-out/stats/ (however spelled) is that same place,
    so both spellings claim and mark diffzoo-out alone, unless that folder was claimed as an --out of
    its own; any other --out is claimed itself."""
    from diffzoo.leaderboard.outdir import MARKER, STATS_DIR
    from diffzoo.leaderboard.table import slugify

    if out is None:
        return DEFAULT_STATS_OUT, PurePosixPath(STATS_DIR, slugify(name))
    where = Path(os.path.abspath(out))  # not resolved: a link there is refused when written, not followed
    if where.parent == Path(os.path.abspath(DEFAULT_STATS_OUT / STATS_DIR)) and not (where / MARKER).exists():
        return DEFAULT_STATS_OUT, PurePosixPath(STATS_DIR, where.name)
    return out, PurePosixPath(".")


def _json(stats: dict[str, Any]) -> str:
    return json.dumps(stats, indent=2, allow_nan=False)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _table(title: str, *columns: str, text: int = 1) -> Table:
    """A table whose first ``text`` columns are text (left), the rest numbers (right)."""
    table = folded_table(term_text(title), columns, right=columns[text:])
    table.min_width = len(title)
    return table


def _counts(title: str, column: str, counts: dict[str, int]) -> Table:
    """A table of images per ``column`` value (``counts``, in its order)."""
    table = _table(title, column, "images")
    for key, n in counts.items():
        table.add_row(term_text(key), str(n))
    return table


def _more(table: Table, shown: int, total: int) -> None:
    if total > shown:
        table.add_row(f"... {total - shown} more", *[""] * (len(table.columns) - 1))


def stats_tables(stats: dict[str, Any]) -> list[Table]:
    """Rich tables of :func:`~diffzoo.harness.data.stats.dataset_stats`'s dict."""
    ds = stats["dataset"]
    splits = _counts(f"{ds['name']} (fingerprint {ds['fingerprint']})", "split", stats["splits"])
    if ds.get("mask_encoding"):
        splits.caption = term_text(f"mask values: {ds['mask_encoding']['meaning']}")
    splits.add_row("read", str(stats["read"]))
    splits.add_row("skipped", str(stats["skipped"]["count"]))
    splits.add_row("authentic (no edited pixel)", str(stats["authentic"]))
    if ds.get("exif_orientation") is not None:
        splits.add_row("EXIF orientation tag (scored as stored)", str(ds["exif_orientation"]))

    editors = _table("images per editor, edited area (% of the image's pixels)", "editor", "value",
                     "images (mask)", "images (turns)", "mean", "median", "p10", "p90")
    areas = stats["edited_area"]["editors"]
    rows = [(name, e["value"], e["images"], e["images_from_turns"], areas.get(name))
            for name, e in stats["editors"].items()]
    rows.append(("all editors", None, stats["edited_area"]["overall"]["count"], "", stats["edited_area"]["overall"]))
    for name, value, images, turns, dist in rows:
        dist = dist or {}
        editors.add_row(term_text(name), "" if value is None else str(value), str(images),
                        "unknown" if turns is None else str(turns),
                        *(_pct(dist.get(k)) for k in ("mean", "median", "p10", "p90")))

    turns = _counts(f"images per number of turns ({stats['turns']['with_metadata']} with turn metadata)",
                    "turns", stats["turns"]["counts"])
    base = _counts("base image", "base", stats["base"])
    edit_types = _counts("images per edit type (from metadata; none: no turns)", "edit type",
                         stats.get("edit_types", {}))

    res = stats["resolutions"]
    w, h = res["width"], res["height"]
    span = f"width {w['min']}-{w['max']}, height {h['min']}-{h['max']}" if w["min"] is not None else "none read"
    resolutions = _counts(f"resolutions (W x H; {span})", "size", dict(list(res["counts"].items())[:MAX_ROWS]))
    _more(resolutions, MAX_ROWS, len(res["counts"]))

    values = _table("label values", "value", "class", "pixels", "images", text=2)
    for value, v in stats["label_values"].items():
        style = "" if v["in_label_map"] else "red"
        values.add_row(value, term_text(v["name"], style), str(v["pixels"]), str(v["images"]))
    outside = stats["skipped"]["by_kind"].get("mask-values", 0)
    if outside:
        values.add_row("?", term_text("outside the label map: samples skipped", "red"), "", str(outside))
    tables = [splits, editors, turns, base, *([edit_types] if set(stats.get("edit_types", {})) - {"none"} else []),
              resolutions, values]

    skipped = stats["skipped"]
    if skipped["count"]:
        table = _table(f"skipped samples ({', '.join(f'{n} {k}' for k, n in skipped['by_kind'].items())})",
                       "sample", "kind", "reason", text=3)
        for item in skipped["samples"][:MAX_ROWS]:
            table.add_row(term_text(item["id"]), term_text(item["kind"]), term_text(item["reason"]))
        _more(table, MAX_ROWS, skipped["count"])
        tables.append(table)
    return tables
