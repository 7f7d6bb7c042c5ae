"""``diffzoo leaderboard``: list, show, validate, add, freeze, versions, diff, publish."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from ..harness.errors import ConfigError, RecordError
from ..harness.metrics.catalog import metric_info
from ..leaderboard.diff import diff as diff_selections
from ..leaderboard.formats import FORMATS
from ..leaderboard.formats import publish as publish_selection
from ..leaderboard.store import RecordStore, expand_record_paths, file_problems
from ..leaderboard.tables import PRIMARY, format_value
from ..leaderboard.versions import freeze as freeze_store, list_versions, resolve, select
from .app import app, console

lb = typer.Typer(help="The versioned leaderboard: stored records, frozen versions, publishing.",
                 no_args_is_help=True)
app.add_typer(lb, name="leaderboard")

STORE_HELP = "Record store: a folder with records/ (any `diffzoo run --out` folder)."


def _store(path: Path, must_exist: bool = True) -> RecordStore:
    store = RecordStore(path)
    if must_exist and not store.records_dir.is_dir():
        raise ConfigError(f"{path} is not a record store (no {store.records_dir}); "
                          "run `diffzoo run --out DIR` or pass --store")
    return store


def _split(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _primary(record) -> str:
    name = PRIMARY.get(record.data["case"].get("task", ""), "")
    info = metric_info(name)
    if not info or name not in record.metrics:
        return ""
    return f"{info.label} {format_value(info, record.metrics[name])}"


@lb.command("list")
def list_cmd(
    store: Path = typer.Option(Path("diffzoo-out"), "--store", help=STORE_HELP),
    suite: list[str] = typer.Option([], "--suite", help="Only these suites (wildcards, commas)."),
    dataset: list[str] = typer.Option([], "--dataset", help="Only these datasets (wildcards, commas)."),
    detector: list[str] = typer.Option([], "--detector", help="Only these detectors (wildcards, commas)."),
) -> None:
    """List stored records."""
    records = select(list(_store(store)), suites=_split(suite), datasets=_split(dataset),
                     detectors=_split(detector))
    table = Table(title=f"{len(records)} record(s) in {escape(str(store))}", title_justify="left")
    for col in ("id", "detector", "suite", "case", "dataset", "primary metric", "date"):
        table.add_column(col)
    for r in sorted(records, key=lambda r: (r.data["suite"]["name"], r.data["case"]["name"],
                                            r.data["detector"]["name"])):
        d = r.data
        table.add_row(r.id, escape(d["detector"]["name"]), escape(f"{d['suite']['name']} v{d['suite']['version']}"),
                      escape(d["case"]["name"]), escape(d["dataset"]["name"]), _primary(r),
                      escape(str(d["environment"].get("date", ""))))
    console.print(table)


@lb.command("show")
def show_cmd(
    record_id: str = typer.Argument(..., help="Record id (or a unique prefix)."),
    store: Path = typer.Option(Path("diffzoo-out"), "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the record's JSON."),
) -> None:
    """Show one record: metrics with CIs and its provenance."""
    record = _store(store).get(record_id)
    if as_json:
        console.print_json(record.to_json())
        return
    d = record.data
    console.print(f"[bold]record[/] {record.id}: {escape(d['detector']['name'])} on "
                  f"{escape(d['dataset']['name'])} ({escape(str(d['dataset']['fingerprint']))}), "
                  f"suite {escape(d['suite']['name'])} v{escape(str(d['suite']['version']))} "
                  f"case {escape(d['case']['name'])}")
    table = Table(show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right")
    ci95 = d.get("ci95") or {}
    for name, value in d["metrics"].items():
        info = metric_info(name)
        ci = ci95.get(name)
        table.add_row(escape(f"{name} {info.arrow if info else ''}".strip()),
                      format_value(info, value) if info else str(value),
                      f"{format_value(info, ci[0])} - {format_value(info, ci[1])}" if info and ci else "")
    console.print(table)
    det, env = d["detector"], d["environment"]
    for label, value in (("checkpoint", det.get("checkpoint_sha256")), ("pretrained", det.get("pretrained")),
                         ("plugin", det.get("plugin")), ("git", env.get("git")), ("date", env.get("date")),
                         ("device", env.get("device")), ("metrics version", d["metrics_version"]),
                         ("evaluated images", d["counts"].get("evaluated"))):
        console.print(f"[bold]{label}[/] {escape(str(value))}")


@lb.command("validate")
def validate_cmd(
    paths: list[Path] = typer.Argument(None, help="Record files or folders (default: the store)."),
    store: Path = typer.Option(Path("diffzoo-out"), "--store", help=STORE_HELP),
) -> None:
    """Check records against the schema; one line per invalid file, exit 1 if any."""
    files = expand_record_paths(paths) if paths else _store(store).paths()
    bad = 0
    for path in files:
        problems = file_problems(path)
        if problems:
            bad += 1
            console.print(f"[red]invalid[/] {escape(str(path))}: {escape('; '.join(problems))}", soft_wrap=True)
    console.print(f"{len(files) - bad} valid, {bad} invalid record file(s)")
    if bad:
        raise typer.Exit(1)


@lb.command("add")
def add_cmd(
    paths: list[Path] = typer.Argument(..., help="Record files or folders (another machine's store or run)."),
    store: Path = typer.Option(Path("diffzoo-out"), "--store", help=STORE_HELP),
) -> None:
    """Import records into the store; invalid or conflicting ones are rejected with a reason."""
    outcomes = _store(store, must_exist=False).import_files(paths)
    counts = {"added": 0, "present": 0, "rejected": 0}
    for o in outcomes:
        counts[o.status] += 1
        if o.status == "rejected":
            console.print(f"[red]rejected[/] {escape(o.source)}: {escape(o.reason)}", soft_wrap=True)
    console.print(f"{counts['added']} added, {counts['present']} already present, "
                  f"{counts['rejected']} rejected (store {escape(str(store))})")
    if counts["rejected"]:
        raise typer.Exit(1)


@lb.command("freeze")
def freeze_cmd(
    name: str = typer.Argument(..., help="Version name, e.g. v1 or 2026-11."),
    store: Path = typer.Option(Path("diffzoo-out"), "--store", help=STORE_HELP),
    suite: list[str] = typer.Option([], "--suite", help="Only these suites (wildcards, commas)."),
    dataset: list[str] = typer.Option([], "--dataset", help="Only these datasets (wildcards, commas)."),
    detector: list[str] = typer.Option([], "--detector", help="Only these detectors (wildcards, commas)."),
    note: str = typer.Option("", "--note", help="A line saying what this version is."),
) -> None:
    """Fix a leaderboard version: the records, dataset fingerprints, suite and metric versions."""
    path = freeze_store(_store(store), name, suites=_split(suite), datasets=_split(dataset),
                        detectors=_split(detector), note=note)
    manifest = json.loads(path.read_text())
    console.print(f"froze version [bold]{escape(name)}[/]: {len(manifest['records'])} record(s); suites "
                  + escape(", ".join(f"{s['name']} v{s['version']}" for s in manifest["suites"]))
                  + f"; metrics v{', '.join(manifest['metrics_versions'])} -> {escape(str(path))}")


@lb.command("versions")
def versions_cmd(store: Path = typer.Option(Path("diffzoo-out"), "--store", help=STORE_HELP)) -> None:
    """List frozen versions."""
    table = Table(title="frozen versions", title_justify="left")
    for col in ("name", "created", "records", "suites", "datasets", "note"):
        table.add_column(col)
    for v in list_versions(_store(store)):
        table.add_row(escape(v["name"]), v.get("created", ""), str(len(v["records"])),
                      escape(", ".join(f"{s['name']} v{s['version']}" for s in v["suites"])),
                      escape(", ".join(d["name"] for d in v["datasets"])), escape(v.get("note", "")))
    console.print(table)


@lb.command("diff")
def diff_cmd(
    a: str = typer.Argument(..., help="A version name, a run/store folder, or a version or record file."),
    b: str = typer.Argument(..., help="The same, to compare with A."),
    store: Path = typer.Option(Path("diffzoo-out"), "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the difference as JSON."),
) -> None:
    """Show what moved between two versions or runs."""
    st = RecordStore(store)
    result = diff_selections(resolve(a, st), resolve(b, st))
    if as_json:
        console.print_json(json.dumps(result.to_dict(), allow_nan=False))
        return
    console.print(f"[bold]A[/] {escape(result.a)}\n[bold]B[/] {escape(result.b)}")
    for t in result.tables:
        title = escape(t.key.title)
        if t.status != "matched":
            console.print(f"[yellow]table {t.status}[/] {title}" + (f" ({escape(t.note)})" if t.note else ""))
            continue
        moved = [r for r in t.rows if r.status != "same"]
        if not moved:
            console.print(f"[green]unchanged[/] {title}")
            continue
        table = Table(title=title, title_justify="left")
        for col in ("detector", "status", "metric", "A", "B", "B - A"):
            table.add_column(col, justify="right" if col in ("A", "B", "B - A") else "left")
        for r in moved:
            if not r.changes:
                table.add_row(escape(r.detector), r.status, "", "", "", "")
            for c in r.changes:
                info = metric_info(c.metric)
                fmt = (lambda v: format_value(info, v)) if info else str
                delta = "" if c.delta is None else (f"{100 * c.delta:+.1f}" if info and info.percent
                                                    else f"{c.delta:+g}")
                table.add_row(escape(r.detector), r.status, escape(c.metric), fmt(c.before), fmt(c.after), delta)
        console.print(table)
    if not result.moved:
        console.print("no differences")


@lb.command("publish")
def publish_cmd(
    version: str | None = typer.Argument(None, help="A frozen version (default: every record in the store)."),
    store: Path = typer.Option(Path("diffzoo-out"), "--store", help=STORE_HELP),
    fmt: list[str] = typer.Option(["md"], "--format", "-f",
                                  help=f"Output format: {'|'.join(FORMATS)}; repeat or comma-separate."),
    out: Path = typer.Option(Path("leaderboard"), "--out", help="Output folder."),
) -> None:
    """Publish tables (Markdown, CSV, LaTeX, JSON) or a static HTML site."""
    formats = _split(fmt)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ConfigError(f"unknown format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    selection = resolve(version, _store(store))
    if version is not None and selection.version is None:
        raise RecordError(f"{version!r} is not a frozen version in {store}; freeze it first "
                          "(`diffzoo leaderboard freeze NAME`) or omit it to publish every record")
    for f in formats:
        path = publish_selection(selection, f, out)
        console.print(f"wrote {f}: {escape(str(path))}")
