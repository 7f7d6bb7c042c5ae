"""GLIDE files: the official checkpoints and tokenizer files, cached under diffzoo's cache.

The checkpoints are torch pickles of plain state dicts.  diffzoo never runs
pickle code from a downloaded file: they are read by the one weights loader
(``harness.models.weights.load_weights``, ``weights_only=True``), which rebuilds
only tensors and plain containers and refuses any other object in one line, and
the result must be a flat ``{name: tensor}`` dict or it is refused too.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from diffzoo.generators.editors.glide.model import GlideConfig, GlideUNet
from diffzoo.harness.core.errors import ModelError, WeightsUnavailableError
from diffzoo.harness.core.fsutil import cache_root
from diffzoo.harness.core.hub import hub_offline
from diffzoo.harness.models.weights import load_weights

log = logging.getLogger(__name__)


def cached_path(url: str) -> Path:
    """Where the official GLIDE file at ``url`` is kept: ``<diffzoo cache>/glide/<its file name>``."""
    return cache_root() / "glide" / url.rsplit("/", 1)[-1]


def missing(urls: list[str], what: str) -> tuple[list[str], str]:
    """The ``urls`` not kept here and how to fetch them; offline (``HF_HUB_OFFLINE``) any missing is
    the WeightsUnavailableError saying so, before any model is built."""
    todo = [u for u in urls if not cached_path(u).is_file()]
    how = "; ".join(f"download {u} to {cached_path(u)}" for u in todo)
    if todo and hub_offline():
        raise WeightsUnavailableError(what, todo[0], f"offline; {len(todo)} file(s) missing", fetch=how)
    return todo, how


def fetch(urls: list[str], what: str) -> list[Path]:
    """Local paths of ``urls``; downloads the :func:`missing` ones."""
    todo, how = missing(urls, what)
    for url in todo:
        target = cached_path(url)
        target.parent.mkdir(parents=True, exist_ok=True)
        log.info("downloading %s to %s", url, target)
        try:  # writes a temporary file next to target and renames it when complete
            torch.hub.download_url_to_file(url, str(target), progress=False)
        except Exception as exc:  # urllib / ssl / socket errors have no common base
            raise WeightsUnavailableError(what, url, f"{type(exc).__name__}: {exc}", fetch=how) from exc
    return [cached_path(u) for u in urls]


def load_state_dict(path: Path, source: str = "the official GLIDE release") -> dict[str, torch.Tensor]:
    """A ``{name: tensor}`` state dict from a torch pickle (:func:`load_weights`: a file that is
    not one is a WeightsFileError naming it, exit 2)."""
    state = load_weights(path, source, what="GLIDE")
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise ModelError(f"{path}: refused, expected a flat dict of name -> tensor")
    return state


def load_model(cfg: GlideConfig, state: dict[str, torch.Tensor], what: str) -> GlideUNet:
    """Build ``cfg`` without allocating (meta device) and adopt ``state`` with strict key/shape checks."""
    with torch.device("meta"):
        model = GlideUNet(cfg)
    try:
        model.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as exc:
        raise ModelError(f"{what}: checkpoint does not match the GLIDE config: {str(exc)[:500]}") from exc
    return model.float().eval().requires_grad_(False)
