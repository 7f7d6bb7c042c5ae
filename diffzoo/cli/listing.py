"""``diffzoo list`` and ``diffzoo plugins``."""

from __future__ import annotations

import typer

from diffzoo.cli.console import console, folded_table
from diffzoo.cli.options import SEED
from diffzoo.harness.core.errors import ConfigError, did_you_mean
from diffzoo.harness.core.plugins import get_plugin_system, get_registry
from diffzoo.leaderboard.render.escape import term

KINDS = ("detectors", "generators", "datasets", "suites", "distortions")


def _hint(value: str, choices: list[str] | tuple[str, ...]) -> str:
    """`` Did you mean 'x'?`` for the choice closest to ``value``; for a blank one (``"$KIND"`` with
    KIND unset), whether a shell variable is unset."""
    return " An unset shell variable?" if not value.strip() else did_you_mean(value, choices)


def _kind(value: str) -> str:
    """The plural kind ``value`` names (singular accepted); else a one-line
    ConfigError with a did-you-mean."""
    plural = value if value in KINDS else f"{value}s"
    if plural in KINDS:
        return plural
    raise ConfigError(f"cannot list {value!r}.{_hint(value, KINDS)} `diffzoo list` takes one of: {', '.join(KINDS)}")


def list_cmd(
    kind: str = typer.Argument(..., help=f"What to list: {', '.join(KINDS)}."),
    pattern: str = typer.Argument("*", help="fnmatch wildcard, e.g. 'segformer*'."),
    released: bool = typer.Option(False, "--released", help="detectors: the trained weights their authors "
                                  "released (--weights released:NAME), with source, training data and "
                                  "published numbers."),
) -> None:
    """List registered detectors, generators, datasets, suites or distortions.

    A pattern that matches nothing is an error (exit 2) naming the closest registered name."""
    kind = _kind(kind)
    registry = get_registry()
    singular = kind[:-1]
    entries = registry.list(singular, pattern)
    if released and kind != "detectors":
        raise ConfigError("--released lists detectors' released weights: `diffzoo list detectors --released`")
    if not entries:  # a name that lists nothing is a mistake to correct, as `run --detector` says it is
        known = [e.name for e in registry.list(singular)]
        known += sorted({e.family for e in registry.list(singular)} - set(known))
        raise ConfigError(f"no {kind} match {pattern!r}.{_hint(pattern, known)} `diffzoo list {kind}` lists them all")
    if released:
        _released(entries, pattern)
        return
    table = folded_table(f"{kind} matching {term(repr(pattern))}", ("name", "default", "plugin", "description"))
    for e in entries:
        desc = e.description
        if kind == "suites":
            suite = e.load()
            desc = f"v{suite.version}, cases: {', '.join(c.name for c in suite.cases)}. {desc}"
        table.add_row(term(e.name), "*" if e.default else "", term(e.source), term(desc))
    console.print(table)


def _released(entries: list, pattern: str) -> None:
    """One row per (detector, release): the weights its authors released."""
    table = folded_table(f"released weights of detectors matching {term(repr(pattern))}",
                         ("detector", "release", "files", "trained on", "sha256", "published", "source"))
    for e in entries:
        for r in e.card.releases:
            sha = "published" if any(r.sha256) else "unpublished (recorded at first use)"
            numbers = "; ".join(f"{p.benchmark} {p.metric} {p.value:g}" for p in r.published) or "none on file"
            table.add_row(term(e.name), term(r.name), term(", ".join(r.files)), term(r.trained_on), sha,
                          term(numbers), term(r.source))
    if not table.row_count:
        console.print(f"no detector matching {term(repr(pattern))} lists released weights")
        return
    console.print(table)


plugins_app = typer.Typer(
    help="Installed plugins (name, version, hooks); `plugins check NAME` tests a detector against its protocol.",
    invoke_without_command=True,
)


@plugins_app.callback()
def plugins_cmd(ctx: typer.Context) -> None:
    """Installed plugins: name, version and the hooks each implements."""
    if ctx.invoked_subcommand is not None:
        return
    system = get_plugin_system()
    table = folded_table("diffzoo plugins", ("plugin", "version", "kind", "hooks"))
    for info in system.info():
        table.add_row(term(info.name), term(info.version), "built-in" if info.builtin else "installed",
                      ", ".join(info.hooks))
    for failure in system.failures:
        table.add_row(term(failure.plugin), "-", "[red]failed[/]", term(failure.message))
    console.print(table)


@plugins_app.command("check")
def check_cmd(
    name: str = typer.Argument(..., help="A detector (family or family.tag) or a plugin name."),
    task: list[str] = typer.Option([], "--task", help="Only this task (binary, semantic, classification); repeatable."),
    device: str = typer.Option("cpu", "--device", help="Device to run the checks on."),
    seed: int = SEED,
) -> None:
    """Run a detector through a tiny built-in fixture and report every protocol violation."""
    from diffzoo.harness.core.device import resolve_device
    from diffzoo.harness.models.conformance import check_plugin

    findings = check_plugin(name, task or None, str(resolve_device(device)), seed)
    table = folded_table(f"plugins check {term(name)}", ("detector", "task", "check", "result"))
    for f in findings:
        ok = "[green]ok[/]" + (f" ({term(f.message)})" if f.message else "")
        result = ok if f.ok else f"[red]FAIL[/] {term(f.message)}"
        table.add_row(term(f.detector), term(f.task), term(f.check), result)
    console.print(table)
    failed = [f for f in findings if not f.ok]
    console.print(f"{len(findings) - len(failed)} check(s) passed, {len(failed)} failed")
    if failed:
        raise typer.Exit(1)
