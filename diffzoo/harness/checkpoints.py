"""Checkpoints: safetensors weights + a JSON card, and the checkpoint cache.

Weights are only ever read with safetensors; pickle-based files (``.pt``,
``.pth``, ``.bin``, ``.ckpt``, ``.pkl``) are refused, never unpickled.  The
cache key hashes (detector card, train config, dataset fingerprint, subset,
seed), so a changed recipe or dataset never reuses a stale model.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .cards import stable_hash
from .errors import ModelError
from .fsutil import atomic_write_text, cache_root, sha256_file

log = logging.getLogger(__name__)

WEIGHTS_FILE = "model.safetensors"
META_FILE = "card.json"
PICKLE_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt", ".pkl", ".pickle")


def save_checkpoint(directory: Path, state_dict: dict[str, Any], meta: dict[str, Any]) -> Path:
    """Write ``directory/model.safetensors`` and ``directory/card.json``.

    The folder appears complete or not at all (built in a temp folder, then
    renamed).  Returns the weights path; ``meta`` gains ``sha256``.
    """
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        tensors = {k: v.detach().contiguous().cpu() for k, v in state_dict.items()}
        save_file(tensors, str(tmp / WEIGHTS_FILE))
        meta = {**meta, "sha256": sha256_file(tmp / WEIGHTS_FILE)}
        atomic_write_text(tmp / META_FILE, json.dumps(meta, indent=2, sort_keys=True))
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory / WEIGHTS_FILE


def resolve_checkpoint(path: Path | str) -> tuple[Path, Path | None]:
    """(weights file, meta file or None) for a checkpoint folder or file."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ModelError(f"checkpoint {path} does not exist")
    if path.is_dir():
        weights = path / WEIGHTS_FILE
        if not weights.exists():
            raise ModelError(f"checkpoint folder {path} has no {WEIGHTS_FILE}")
        return weights, path / META_FILE if (path / META_FILE).exists() else None
    if path.suffix.lower() in PICKLE_SUFFIXES:
        raise ModelError(
            f"refusing to load {path}: {path.suffix} files are pickles, which can run "
            "arbitrary code. Convert it to safetensors (safetensors.torch.save_file) and pass that"
        )
    if path.suffix != ".safetensors":
        raise ModelError(f"checkpoint {path} is not a .safetensors file or a checkpoint folder")
    meta = path.with_name(META_FILE)
    return path, meta if meta.exists() else None


def load_checkpoint(path: Path | str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read weights (safetensors only) and the card JSON beside them."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    weights, meta_path = resolve_checkpoint(path)
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ModelError(f"checkpoint {weights} is not a readable safetensors file: {exc}") from exc
    meta: dict[str, Any] = {}
    if meta_path is not None:
        meta = json.loads(meta_path.read_text())
        expected = meta.get("sha256")
        if expected and expected != sha256_file(weights):
            raise ModelError(f"checkpoint {weights}: sha256 differs from {meta_path.name}; file changed?")
    meta.setdefault("sha256", sha256_file(weights))
    return state, meta


def cache_key(**parts: Any) -> str:
    """Hash of everything that determines a trained model."""
    return stable_hash(parts, length=20)


def cache_dir(detector: str, key: str) -> Path:
    return cache_root() / "checkpoints" / detector / key
