"""``diffzoo list`` and ``diffzoo plugins``."""

from __future__ import annotations

from enum import Enum

import typer
from rich.markup import escape
from rich.table import Table

from ..harness.plugins import get_plugin_system, get_registry
from .app import app, console


class Kind(str, Enum):
    detectors = "detectors"
    generators = "generators"
    datasets = "datasets"
    suites = "suites"
    distortions = "distortions"


@app.command("list")
def list_cmd(
    kind: Kind = typer.Argument(..., help="What to list."),
    pattern: str = typer.Argument("*", help="fnmatch wildcard, e.g. 'segformer*'."),
) -> None:
    """List registered detectors, generators, datasets, suites or distortions."""
    registry = get_registry()
    singular = kind.value[:-1]
    entries = registry.list(singular, pattern)
    if not entries:
        console.print(f"no {kind.value} match {pattern!r}; see `diffzoo list {kind.value}`")
        return
    table = Table(title=f"{kind.value} matching {pattern!r}", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("default", justify="center")
    table.add_column("plugin")
    table.add_column("description")
    for e in entries:
        desc = e.description
        if kind is Kind.suites:
            suite = e.load()
            desc = f"v{suite.version}, cases: {', '.join(c.name for c in suite.cases)}. {desc}"
        table.add_row(escape(e.name), "*" if e.default else "", escape(e.source), escape(desc))
    console.print(table)


@app.command("plugins")
def plugins_cmd() -> None:
    """Installed plugins: name, version and the hooks each implements."""
    system = get_plugin_system()
    table = Table(title="diffzoo plugins", title_justify="left")
    table.add_column("plugin", style="bold")
    table.add_column("version")
    table.add_column("kind")
    table.add_column("hooks")
    for info in system.info():
        table.add_row(escape(info.name), escape(info.version), "built-in" if info.builtin else "installed",
                      ", ".join(info.hooks))
    for failure in system.failures:
        table.add_row(escape(failure.plugin), "-", "[red]failed[/]", escape(failure.message))
    console.print(table)
