"""``diffzoo data``: build and inspect datasets."""

from __future__ import annotations

from pathlib import Path

import typer

from ..harness.factories import open_dataset
from ..harness.progress import counter_callback
from ..harness.registry import resolve_target
from .app import app, console
from .progress import RichProgress

data_app = typer.Typer(help="Build and inspect datasets.", no_args_is_help=True)
app.add_typer(data_app, name="data")


@data_app.command("build")
def build_cmd(
    name: str = typer.Argument(..., help="Dataset to build: mini (the embedded demo dataset)."),
    root: Path | None = typer.Option(None, "--root", help="Where to write it (default: the diffzoo cache)."),
    force: bool = typer.Option(False, "--force", help="Rebuild even if it exists."),
) -> None:
    """Build an embedded dataset (offline, deterministic)."""
    if name != "mini":
        from ..harness.errors import UnknownNameError

        raise UnknownNameError("buildable dataset", name, ["mini"])
    build = resolve_target("diffzoo.generators.demo:ensure_mini", "dataset 'mini'", "diffzoo.generators.plugin")
    with counter_callback(RichProgress(console), "building mini") as callback:
        path = build(root=root, force=force, progress=callback)
    console.print(f"mini dataset at {path}")


@data_app.command("info")
def info_cmd(dataset: str = typer.Argument(..., help="Registered name or path.")) -> None:
    """Describe a dataset: layout, splits, label map, fingerprint."""
    ds = open_dataset(dataset)
    for key, value in ds.describe().items():
        console.print(f"[bold]{key}[/]: {value}")
    console.print(f"[bold]fingerprint[/]: {ds.fingerprint()}")
