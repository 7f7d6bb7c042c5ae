"""``diffzoo leaderboard``: list, show, validate, verify, add, freeze, versions, diff, publish;
``diffzoo report paper`` (the paper report, as ``publish --format paper``) and ``diffzoo report
reproduce`` (released checkpoints' published numbers beside ours).

Every string that comes from a record (names, notes, problems quoting a
value) is printed through :mod:`diffzoo.leaderboard.render.escape`: control
characters and ESC sequences are shown escaped, rich markup as text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from diffzoo.cli.console import console, err_console, folded_table
from diffzoo.cli.options import FORCE
from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.metrics.catalog import metric_info
from diffzoo.leaderboard.formats import FORMATS
from diffzoo.leaderboard.render.escape import shown_name, term, term_text

# The store, its verification and the renderers load the metric code (numpy): each command
# imports what it uses when it runs, so that `diffzoo --help` and `diffzoo list` stay light.
if TYPE_CHECKING:
    from diffzoo.leaderboard.store import RecordStore
    from diffzoo.leaderboard.verify import Report
    from diffzoo.leaderboard.versions import Selection

lb = typer.Typer(help="The versioned leaderboard: stored records, frozen versions, publishing.",
                 no_args_is_help=True)

FORMAT_HELP = f"Output format: {'|'.join(FORMATS)}; repeat or comma-separate."
STORE = typer.Option(Path("diffzoo-out"), "--store", help="Record store: a folder with records/ (any `diffzoo run "
                     "--out` folder).")
VERSION = typer.Argument(None, help="A frozen version (default: every record in the store).")
MIXED_HELP = ("Publish rows made under different label maps, splits or evaluator versions in one table, "
              "with a column naming each (refused without it).")
CLEAN_HELP = "Remove temp files left by killed writes (under the store's lock)."
SUITES, DATASETS, DETECTORS = (typer.Option([], f"--{name}", help=f"Only these {name}s (wildcards, commas).")
                               for name in ("suite", "dataset", "detector"))


def open_store(path: Path, must_exist: bool = True) -> RecordStore:
    """The record store at ``path``; a folder that is not one is the user's to fix (exit 2)."""
    from diffzoo.harness.records.document import STORE_DIRS
    from diffzoo.harness.records.model import RECORDS_DIR
    from diffzoo.leaderboard.outdir import claim_output_dir
    from diffzoo.leaderboard.store import RecordStore

    store = RecordStore(path)
    if store.absent:
        if must_exist:
            # a store's own folder given for the store: the fix is its parent, not another run
            inner = Path(path).name in STORE_DIRS and (Path(path).parent / RECORDS_DIR).is_dir()
            fix = (f"give the store it is part of: --store {Path(path).parent}" if inner
                   else "give --store the folder of a record store (any `diffzoo run --out DIR` folder)")
            raise ConfigError(f"{store.absent}; {fix}")
        claim_output_dir(path)  # a new store: never in a folder diffzoo did not make
    return store


def _split(values: list[str], flag: str = "") -> list[str]:
    """The comma-separated items of a repeated option; a filter ``flag`` given only empty values (an
    unset shell variable) is refused, since no pattern at all means every record."""
    items = [v.strip() for item in values for v in item.split(",") if v.strip()]
    if flag and values and not items:
        raise ConfigError(f"{flag} is empty (an unset shell variable?): give a pattern or leave the option out")
    return items


def _filters(suite: list[str], dataset: list[str], detector: list[str]) -> dict[str, list[str]]:
    """The ``--suite``, ``--dataset`` and ``--detector`` patterns, as :func:`~.versions.select` takes them."""
    return {"suites": _split(suite, "--suite"), "datasets": _split(dataset, "--dataset"),
            "detectors": _split(detector, "--detector")}


def _primary(record) -> str:
    from diffzoo.leaderboard.layouts.cases import PRIMARY
    from diffzoo.leaderboard.table import format_value

    name = PRIMARY.get(record.body.task, "")
    info = metric_info(name)
    if not info or name not in record.metrics:
        return ""
    return f"{info.label} {format_value(info, record.metrics[name])}"


@lb.command("list")
def list_cmd(
    store: Path = STORE,
    suite: list[str] = SUITES, dataset: list[str] = DATASETS, detector: list[str] = DETECTORS,
) -> None:
    """List stored records."""
    from diffzoo.leaderboard.versions import select, unmatched

    loaded = open_store(store).load()
    filters = _filters(suite, dataset, detector)
    records = select(loaded.records, **filters)
    if not records and loaded.records:  # an empty answer says which filter left nothing
        err_console.print(f"[yellow]no record matches:[/] {term(unmatched(loaded.records, **filters))}",
                          soft_wrap=True)
    table = folded_table(term_text(f"{len(records)} record(s) in {store}"),
                         ("id", "detector", "suite", "case", "dataset", "primary metric", "date"))
    for r in sorted(records, key=lambda r: (r.body.suite.name, r.body.case_name, r.body.detector.name)):
        b = r.body
        table.add_row(r.id, *(term_text(shown_name(n)) for n in (b.detector.name, f"{b.suite.name} v{b.suite.version}",
                                                                 b.case_name, b.dataset.name)), _primary(r),
                      term_text(b.environment.date or ""))
    console.print(table)
    _skipped(loaded.skipped)


def _skipped(skipped) -> None:
    """Say on stderr (stdout may be JSON) how many files of the store were skipped as not valid
    records, and each one and why."""
    if skipped:
        err_console.print(f"[yellow]skipped {len(skipped)} file(s)[/] that are not valid records "
                          "(`diffzoo leaderboard verify` checks them):", soft_wrap=True)
    for path, why in skipped:
        err_console.print(f"  [yellow]skipped[/] {term(path)}: {term(why)}", soft_wrap=True)


@lb.command("show")
def show_cmd(
    record_id: str = typer.Argument(..., help="Record id (or a unique prefix)."),
    store: Path = STORE,
    as_json: bool = typer.Option(False, "--json", help="Print the record's JSON."),
) -> None:
    """Show one record: metrics with CIs and its provenance."""
    from diffzoo.leaderboard.table import format_value

    record = open_store(store).get(record_id)
    if as_json:
        console.print_json(record.to_json())  # JSON escapes every control character
        return
    b = record.body
    detector, dataset, suite, case = (term(shown_name(n)) for n in (b.detector.name, b.dataset.name, b.suite.name,
                                                                      b.case_name))
    console.print(f"[bold]record[/] {record.id}: {detector} on {dataset} ({term(b.dataset.fingerprint)}), suite "
                  f"{suite} v{term(b.suite.version)} case {case}")
    table = folded_table(None, ("metric", "value", "95% CI"), right=("value", "95% CI"))
    for name, value in b.metrics.items():
        info = metric_info(name)
        ci = b.ci95.get(name)
        table.add_row(term_text(f"{name} {info.arrow if info else ''}".strip()),
                      format_value(info, value) if info else term_text(value),
                      f"{format_value(info, ci[0])} - {format_value(info, ci[1])}" if info and ci else "")
    console.print(table)
    d, env, counts = b.detector, b.environment, b.counts
    skipped = ", ".join(f"{k}: {n}" for k, n in counts.skipped_by_reason.items())
    for label, value in (("checkpoint", d.checkpoint_sha256), ("pretrained", d.pretrained), ("plugin", d.plugin),
                         ("plugin version", d.plugin_version), ("git", env.git), ("date", env.date),
                         ("device", env.device), ("metrics version", b.metrics_version), ("seed", b.seed),
                         ("evaluated images", counts.evaluated),
                         ("skipped samples", f"{counts.skipped_total}" + (f" ({skipped})" if skipped else "")),
                         ("predictions digest", b.predictions_digest), ("state", b.state.file if b.state else None)):
        console.print(f"[bold]{label}[/] {term(value)}")


REASON_LIMIT = 2000
"""The most characters of one refusal's reason a line shows: a hostile record's own can run to megabytes."""


def _reason(text: str) -> str:
    """``text`` cut to :data:`REASON_LIMIT` characters, saying how many more there were."""
    left = len(text) - REASON_LIMIT
    return text if left <= 0 else f"{text[:REASON_LIMIT]}\u2026 ({left} more characters)"


def _report(report: Report, good: str, bad: str, by_path: bool = False) -> None:
    """One line per bad record (named by its file with ``by_path``, else by
    its id and file) and per temp file, a summary line; exit 1 unless all is well."""
    for row in report.bad:
        if by_path and row.path is not None:
            name = str(row.path)
        else:
            name = row.label + (f" ({row.path})" if row.path is not None and row.label != str(row.path) else "")
        console.print(f"[red]{bad}[/] {term(name)}: {term(_reason('; '.join(row.problems)))}", soft_wrap=True)
    for path in report.cleaned:
        console.print(f"removed temp file {term(path)}", soft_wrap=True)
    for path in report.temp_files:
        console.print(f"[yellow]temp file[/] {term(path)}: left by a killed write; not a record "
                      "(remove it, or run again with --clean)", soft_wrap=True)
    if orphans := report.orphan_states:
        console.print(f"[yellow]warning[/]: {len(orphans)} state file(s) named by no record of records/ or replaced/ "
                      f"(first: {term(orphans[0])}): their records were removed, or a run stopped before writing "
                      "them", soft_wrap=True)
    versions = len(report.bad) - report.bad_records
    console.print(f"{report.checked - report.bad_records} {good}, {report.bad_records} {bad} record(s); "
                  + (f"{versions} frozen-version problem(s); " if versions else "")
                  + f"{len(report.temp_files)} temp file(s) left ({term(report.label)})")
    if not report.ok:
        raise typer.Exit(1)


@lb.command("validate")
def validate_cmd(
    paths: list[Path] = typer.Argument(None, help="Record files or folders (default: the store)."),
    store: Path = STORE,
    clean: bool = typer.Option(False, "--clean", help=CLEAN_HELP),
) -> None:
    """Check records: schema, edits, ids and every number against its state;
    one line per invalid file or leftover temp file, exit 1 if any."""
    from diffzoo.leaderboard.verify import verify_files

    report = verify_files(paths or [open_store(store).root], clean=clean)
    _report(report, "valid", "invalid", by_path=True)


@lb.command("verify")
def verify_cmd(
    version: str | None = typer.Argument(None, help="A frozen version (default: the whole store)."),
    store: Path = STORE,
    clean: bool = typer.Option(False, "--clean", help=CLEAN_HELP),
) -> None:
    """Verify a whole store or a frozen version: every record recomputed from
    its state, every version's records as frozen; one line per bad row, exit 1 if any."""
    from diffzoo.leaderboard.verify import verify_store

    _report(verify_store(open_store(store), version, clean=clean), "good", "bad")


@lb.command("add")
def add_cmd(
    paths: list[Path] = typer.Argument(..., help="Record files or folders (another machine's store or run)."),
    store: Path = STORE,
) -> None:
    """Import records (with their states) into the store; invalid, unverifiable
    or conflicting ones are rejected with a reason."""
    from diffzoo.leaderboard.store import expand_record_paths

    files = expand_record_paths(paths)  # a path that is no record fails before the store is made
    st = open_store(store, must_exist=False)
    outcomes = [st.import_file(path) for path in files]
    counts = {"added": 0, "present": 0, "rejected": 0}
    for o in outcomes:
        counts[o.status] += 1
        if o.status == "rejected":
            console.print(f"[red]rejected[/] {term(o.source)}: {term(_reason(o.reason))}", soft_wrap=True)
    console.print(f"{counts['added']} added, {counts['present']} already present, "
                  f"{counts['rejected']} rejected (store {term(store)})")
    if counts["rejected"]:
        raise typer.Exit(1)


def _suites(manifest: dict) -> str:
    """A version's suites, each ``NAME vVERSION`` through :func:`shown_name` as ``list`` shows a record's."""
    return ", ".join(shown_name(f"{s['name']} v{s['version']}") for s in manifest["suites"])


@lb.command("freeze")
def freeze_cmd(
    name: str = typer.Argument(..., help="Version name, e.g. v1 or 2026-11."),
    store: Path = STORE,
    suite: list[str] = SUITES, dataset: list[str] = DATASETS, detector: list[str] = DETECTORS,
    note: str = typer.Option("", "--note", help="A line saying what this version is."),
) -> None:
    """Fix a leaderboard version: the records, dataset fingerprints, suite and metric versions."""
    from diffzoo.leaderboard.versions import freeze as freeze_store
    from diffzoo.leaderboard.versions import read_manifest

    st = open_store(store)
    path = freeze_store(st, name, **_filters(suite, dataset, detector), note=note)
    manifest = read_manifest(st, name)
    metrics = ", ".join(manifest["metrics_versions"])
    console.print(f"froze version [bold]{term(name)}[/]: {len(manifest['records'])} record(s); suites "
                  f"{term(_suites(manifest))}; metrics v{term(metrics)} -> {term(path)}", soft_wrap=True)


@lb.command("versions")
def versions_cmd(store: Path = STORE) -> None:
    """List frozen versions."""
    from diffzoo.leaderboard.versions import dataset_order, list_versions

    versions, bad = list_versions(open_store(store))
    if not versions and not bad:
        console.print(f"no frozen versions in {term(store)} (`diffzoo leaderboard freeze NAME` makes one)")
        return
    table = folded_table("frozen versions", ("name", "created", "records", "suites", "datasets", "note"))
    for v in versions:
        datasets = ", ".join(shown_name(d["name"]) for d in dataset_order(v["datasets"]))  # one frozen in text order
        table.add_row(term_text(v["name"]), term_text(v.get("created", "")), str(len(v["records"])),
                      term_text(_suites(v)), term_text(datasets),
                      term_text(shown_name(v.get("note", ""))))
    if versions:
        console.print(table)
    for why in bad:  # each file that is no version, after those that are
        err_console.print(f"[bold red]error:[/] {term(why)}", highlight=False, soft_wrap=True)
    if bad:
        raise typer.Exit(1)


@lb.command("diff")
def diff_cmd(
    a: str = typer.Argument(..., help="A version name, a run/store folder, or a version or record file."),
    b: str = typer.Argument(..., help="The same, to compare with A."),
    store: Path = STORE,
    as_json: bool = typer.Option(False, "--json", help="Print the difference as JSON."),
) -> None:
    """Show what moved between two versions or runs."""
    from diffzoo.leaderboard.diff import diff as diff_selections
    from diffzoo.leaderboard.diff import diff_console
    from diffzoo.leaderboard.store import RecordStore
    from diffzoo.leaderboard.versions import resolve

    st = RecordStore(store)
    sa, sb = resolve(a, st), resolve(b, st)
    _skipped(list(dict.fromkeys([*sa.skipped, *sb.skipped])))  # a file both sides read is one file
    result = diff_selections(sa, sb)
    if as_json:
        console.print_json(json.dumps(result.to_dict(), allow_nan=False))
        return
    for renderable in diff_console(result):
        console.print(renderable)


@lb.command("publish")
def publish_cmd(
    version: str | None = VERSION,
    store: Path = STORE,
    fmt: list[str] = typer.Option(["md"], "--format", "-f",
                                  help=FORMAT_HELP),
    out: Path = typer.Option(Path("leaderboard"), "--out", help="Output folder."),
    allow_mixed: bool = typer.Option(False, "--allow-mixed", help=MIXED_HELP),
    force: bool = FORCE,
) -> None:
    """Publish tables (Markdown, CSV, LaTeX, JSON), a static HTML site, or
    the DiffSeg30k paper report (`paper`: Tables 2-8 beside the paper's numbers)."""
    formats = list(dict.fromkeys(_split(fmt)))  # a format named twice is written once
    if not formats:  # an unset shell variable: never a publish of nothing
        raise ConfigError(f"--format is empty: choose from {', '.join(FORMATS)}")
    _publish(version, store, formats, out, allow_mixed, force)


def _selection(version: str | None, store: Path, omitted: str) -> Selection:
    """The records of frozen ``version`` (None: every record of the store), the files skipped said;
    ``omitted``: what leaving the version out does, said when it names no frozen version."""
    from diffzoo.leaderboard.versions import resolve

    selection = resolve(version, open_store(store))
    if version is not None and selection.version is None:
        raise ConfigError(f"{version!r} is not a frozen version in {store}; freeze it first "
                          f"(`diffzoo leaderboard freeze NAME`) or omit it to {omitted}")
    _skipped(selection.skipped)
    return selection


def _publish(version: str | None, store: Path, formats: list[str], out: Path, allow_mixed: bool, force: bool) -> None:
    from diffzoo.leaderboard.render import text

    text.check_publish(out, formats, force)  # an unknown format or a refused --out, before the store is read
    if out.resolve() == store.resolve():  # the published files never lie beside the store's records/ and a run's own
        raise ConfigError(f"--out {out} is the record store {store}: choose another folder (a new one in it, such as "
                          f"{store / 'board'}, is fine)")
    selection = _selection(version, store, "publish every record")
    text.publish_formats(selection, formats, out, allow_mixed=allow_mixed, force=force)
    print_published(out, formats)


def print_published(out: Path, formats: Sequence[str]) -> None:
    """``wrote FORMAT: PATH`` for every file the publish of ``formats`` into ``out`` wrote, each under
    the format that wrote it: what ``leaderboard publish``, ``report paper`` and ``sweep`` print."""
    from diffzoo.leaderboard.render import text

    written = text.PUBLISHED.files(out)
    for f in formats:
        for name in sorted(n for n in written if n.split("/")[0] in text.format_names(f)):
            console.print(f"wrote {f}: {term(out / name)}", soft_wrap=True)  # a path is one line, to copy


report = typer.Typer(help="Reports built from stored records.", no_args_is_help=True)


@report.command("paper")
def report_paper_cmd(
    version: str | None = VERSION,
    store: Path = STORE,
    out: Path = typer.Option(Path("leaderboard"), "--out", help="Output folder (writes paper.md)."),
    allow_mixed: bool = typer.Option(False, "--allow-mixed", help=MIXED_HELP),
    force: bool = FORCE,
) -> None:
    """The DiffSeg30k paper's Tables 2-8 from stored records (= `leaderboard publish --format paper`)."""
    _publish(version, store, ["paper"], out, allow_mixed, force)


@report.command("reproduce")
def report_reproduce_cmd(
    version: str | None = VERSION,
    store: Path = STORE,
    out: Path | None = typer.Option(None, "--out", help="Also write the table to this folder (reproduce.md)."),
    force: bool = FORCE,
) -> None:
    """Released checkpoints' published numbers beside ours (Δ, protocol), or the run that gives ours."""
    from diffzoo.leaderboard.outdir import claim_output_dir
    from diffzoo.leaderboard.paper.reproduce import REPORT_FILE, reproduce_markdown, write_reproduce

    selection = _selection(version, store, "read every record")
    if out is not None:  # a refused --out is said before the table, never after it as if the table were wrong
        claim_output_dir(out, force, make=False, writes=[REPORT_FILE])
    text = reproduce_markdown(selection)
    console.print(text, markup=False, highlight=False, soft_wrap=True)  # record names print as written (escaped)
    if out is not None:
        console.print(f"wrote reproduce: {term(write_reproduce(selection, out, force, text))}", soft_wrap=True)
