"""A run's training logs in its output folder: ``train/<model>/`` (the log.jsonl
and TensorBoard events the shared training loop wrote beside the checkpoint in
the cache; ``tensorboard --logdir OUT/train`` shows every model of the run)
and ``plots/<model>-training.png`` (loss, learning rate, validation).

A model loaded from the cache brings the log of the training that made it,
when the cache still has it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from diffzoo.harness.core.fsutil import atomic_write_bytes
from diffzoo.harness.models.monitor import LOG_FILE
from diffzoo.leaderboard.outdir import PLOTS_DIR, TRAIN_DIR
from diffzoo.leaderboard.render.training_plots import curves_from_log, read_log, training_png
from diffzoo.leaderboard.table import slugify

if TYPE_CHECKING:
    from diffzoo.harness.run.model_source import CheckpointInfo

log = logging.getLogger(__name__)


def copy_training_logs(checkpoints: Iterable[CheckpointInfo], out: Path) -> dict[str, Path]:
    """Copy each model's log folder to ``out/train/<model>/`` and draw its curves to
    ``out/plots/<model>-training.png``; returns model name -> folder written."""
    written: dict[str, Path] = {}
    for ckpt in checkpoints:
        source = ckpt.log_dir
        if source is None or not Path(source, LOG_FILE).is_file():
            continue
        name = slugify(ckpt.model_name or Path(source).name)
        if name in written:
            continue
        target = Path(out) / TRAIN_DIR / name
        for path in sorted(Path(source).iterdir()):
            if path.is_file() and not path.is_symlink():
                atomic_write_bytes(target / path.name, path.read_bytes())
        curves = curves_from_log(read_log(target / LOG_FILE))
        if not curves.empty:
            training_png(curves, Path(out) / PLOTS_DIR / f"{name}-training.png", title=f"training of {name}")
        written[name] = target
        log.info("training log of %s copied to %s", name, target)
    return written
