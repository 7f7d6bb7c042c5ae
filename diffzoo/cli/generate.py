"""``diffzoo generate``: write a new DiffSeg30k-style dataset with exact labels.

Resumable (finished samples are skipped) and sharded under torchrun (every
rank makes its part; rank 0 prints and writes the manifest).
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path
from typing import Any

import typer

from diffzoo.cli.console import console
from diffzoo.cli.options import SEED, WORKERS, request_command
from diffzoo.cli.progress import RichProgress, rank_output
from diffzoo.generators.generate.defaults import GenerateConfig as G
from diffzoo.harness.core.errors import ConfigError, no_value
from diffzoo.harness.core.progress import counter_callback
from diffzoo.leaderboard.render.escape import term


def parse_loras(values: list[str], editors: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``EDITOR=FILE`` pairs; a bare ``FILE`` goes to the only editor."""
    out = []
    for value in values:
        editor, sep, path = value.partition("=")
        if not (path if sep else value).strip():  # pathlib reads "" as the current folder
            raise no_value(f"--lora {value or repr(value)}")
        if not sep:
            if len(editors) != 1:
                raise ConfigError(f"--lora {value}: with several editors write EDITOR=FILE "
                                  f"(editors: {', '.join(editors)})")
            editor, path = editors[0], value
        out.append((editor.strip(), path.strip()))
    return tuple(out)


def expand_home(spec: str | None) -> str | None:
    """A ``--bases`` or ``--regions`` value with the ``~`` that starts each of its paths expanded
    (``--bases=~/photos``, ``coco:~/a.json:~/images``, ``masks:~/m``): the shell leaves a tilde after
    ``--flag=``, and these options take text, which the CLI's path options' rule does not reach."""
    if spec is None:
        return None
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in ("coco", "masks"):
        return os.path.expanduser(spec)
    return f"{kind}:" + ":".join(os.path.expanduser(p) for p in rest.split(":", 1 if kind == "coco" else 0))


def generate_cmd(
    out: Path = typer.Option(..., "--out", help="Output folder (empty, or an earlier run's to resume it)."),
    editors: str = typer.Option(
        ..., "--editors", help="Comma-separated editors, e.g. sd2,sdxl,flux1 or sd2.tiny,sdxl.tiny."
    ),
    bases: str | None = typer.Option(
        None, "--bases", help="Real bases: a folder of images, or coco:ANNOTATIONS.json:IMAGE_DIR."
    ),
    regions: str | None = typer.Option(
        None, "--regions", help="masks:DIR, coco, open-vocab or random (default: coco for COCO bases, else random)."
    ),
    n: int = typer.Option(
        G.n, "--n", "--samples", help="Number of sample ids (0..n-1); rejected samples are left out. "
        "Under torchrun write --samples: torchrun takes --n for its own --nnodes/--nproc-per-node."
    ),
    turns: str = typer.Option(":".join(map(str, G.turns)), "--turns", help="Ratio of samples with 1:2:3 edits."),
    ai_bases: float = typer.Option(G.ai_fraction, "--ai-bases", help="Fraction of AI (text-to-image) bases."),
    seed: int = SEED,
    *,
    lora: list[str] = typer.Option(
        [], "--lora",
        help="EDITOR=FILE.safetensors: load a LoRA into that editor (FILE alone with one editor); repeatable.",
    ),
    lora_scale: float = typer.Option(G.lora_scale, "--lora-scale", help="LoRA adapter weight."),
    device: str = typer.Option(G.device, "--device", help="auto, cpu, cuda, ... (under torchrun: one GPU per rank)."),
    threads: int = typer.Option(
        G.threads, "--threads", help="torch CPU threads (fixed so results do not depend on the machine)."
    ),
    workers: int | None = WORKERS,
    **options: Any,
) -> None:
    """Generate a multi-turn edited dataset (DiffSeg30k layout + manifest.jsonl)."""
    from diffzoo.generators.generate import pipeline  # the generators: when the command runs
    from diffzoo.generators.generate.schedule import parse_turn_ratio
    from diffzoo.leaderboard.outdir import OutputDir

    chosen = tuple(e.strip() for e in editors.split(",") if e.strip())
    config = pipeline.GenerateConfig(
        out=out, editors=chosen, bases=expand_home(bases), n=n, loras=parse_loras(lora, chosen),
        lora_scale=lora_scale, regions=expand_home(regions), turns=parse_turn_ratio(turns), ai_fraction=ai_bases,
        seed=seed, device=device, threads=threads, workers=workers, **options,
    )  # fmt: skip
    with rank_output(console):
        generator = pipeline.DatasetGenerator(config)
        out_dir = OutputDir(out)
        for relpath in pipeline.WRITES:  # a link inside --out would take the dataset's files outside it
            out_dir.check_writable(relpath)
        with counter_callback(RichProgress(console), "generating") as callback:
            summary = generator.run(progress=callback)
    if summary is None:  # torchrun rank > 0
        return
    console.print(
        f"{summary.accepted} sample(s) in {term(str(summary.out))} ({summary.made} made now, "
        f"{summary.reused} from earlier runs, {summary.rejected} rejected by the quality filter"
        f"{pipeline.beyond_note(summary.beyond, n)}); "
        f"classes: {term(', '.join(summary.label_space.names))}"
    )
    if summary.rejected:
        console.print(f"rejections are listed in {term(str(summary.out / pipeline.SUMMARY_FILE))}")


request_command(generate_cmd, tuple(f.name for f in fields(G) if f.metadata), own_first=True, of=G)
