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
FORMATS = ("diffzoo-checkpoint-1",)
"""``format`` values of card.json that this version reads."""

_REFUSE_PICKLE = (
    "refusing to load {path}: {why}, which can run arbitrary code when loaded. Convert it "
    "to safetensors (safetensors.torch.save_file) and pass that"
)


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
        raise ModelError(_REFUSE_PICKLE.format(path=path, why=f"{path.suffix} files are pickles"))
    if path.suffix != ".safetensors":
        raise ModelError(f"checkpoint {path} is not a .safetensors file or a checkpoint folder")
    meta = path.with_name(META_FILE)
    return path, meta if meta.exists() else None


def _refuse_pickled_content(weights: Path) -> None:
    """A pickle or ``torch.save`` zip under a safetensors name: refuse by content.

    safetensors would reject it too (it never unpickles); this only makes the
    message say what the file is.  A safetensors file starts with an 8-byte
    little-endian header length and then ``{``.
    """
    with open(weights, "rb") as fh:
        head = fh.read(9)
    if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
        raise ModelError(_REFUSE_PICKLE.format(path=weights, why="it is a pickle, not safetensors"))
    if head[:4] == b"PK\x03\x04":
        raise ModelError(_REFUSE_PICKLE.format(
            path=weights, why="it is a torch.save zip archive (pickled), not safetensors"))


def read_meta(meta_path: Path) -> dict[str, Any]:
    """The card.json of a checkpoint, checked to be a readable JSON object of a known format."""
    try:
        meta = json.loads(Path(meta_path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"checkpoint card {meta_path} is not readable JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise ModelError(f"checkpoint card {meta_path} is not a JSON object")
    fmt = meta.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise ModelError(
            f"checkpoint card {meta_path} has format {fmt!r}; this diffzoo reads {', '.join(FORMATS)} "
            "(was it written by a newer diffzoo?)"
        )
    return meta


def checkpoint_meta(path: Path | str) -> tuple[Path, dict[str, Any]]:
    """(weights file, card) of a checkpoint without reading its tensors; {} without card.json."""
    weights, meta_path = resolve_checkpoint(path)
    return weights, read_meta(meta_path) if meta_path is not None else {}


def load_checkpoint(path: Path | str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read weights (safetensors only) and the card JSON beside them."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    weights, meta = checkpoint_meta(path)
    _refuse_pickled_content(weights)
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ModelError(f"checkpoint {weights} is not a readable safetensors file: {exc}") from exc
    digest = sha256_file(weights)
    if (meta.get("sha256") or digest) != digest:
        raise ModelError(f"checkpoint {weights}: sha256 differs from {META_FILE}; file changed?")
    meta.setdefault("sha256", digest)
    return state, meta


def describe_mismatch(expected: dict[str, Any], given: dict[str, Any], limit: int = 3) -> str | None:
    """What differs between a model's state dict and a checkpoint's, in one line.

    Names missing tensors, unexpected tensors and shape differences (the first
    ``limit`` of each); ``None`` when names and shapes all agree.
    """
    def names(keys: list[str]) -> str:
        return ", ".join(keys[:limit]) + (f" (+{len(keys) - limit} more)" if len(keys) > limit else "")

    missing = [k for k in expected if k not in given]
    unexpected = [k for k in given if k not in expected]
    shapes = [
        f"{k} is {list(given[k].shape)} in the checkpoint, {list(expected[k].shape)} in the model"
        for k in expected
        if k in given and tuple(given[k].shape) != tuple(expected[k].shape)
    ]
    parts = []
    if shapes:
        parts.append(f"{len(shapes)} tensor shape(s) differ: " + "; ".join(shapes[:limit])
                     + (f" (+{len(shapes) - limit} more)" if len(shapes) > limit else ""))
    if missing:
        parts.append(f"{len(missing)} tensor(s) missing from the checkpoint: {names(missing)}")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected tensor(s): {names(unexpected)}")
    return "; ".join(parts) or None


def cache_key(**parts: Any) -> str:
    """Hash of everything that determines a trained model."""
    return stable_hash(parts, length=20)


def cache_dir(detector: str, key: str) -> Path:
    return cache_root() / "checkpoints" / detector / key


def cached_checkpoints(detector: str) -> list[Path]:
    """Checkpoint folders that runs cached for ``detector`` (full name), newest first."""
    folder = cache_dir(detector, "")
    if not folder.is_dir():
        return []
    found = [d for d in folder.iterdir() if (d / WEIGHTS_FILE).is_file()]
    return sorted(found, key=lambda d: (d / WEIGHTS_FILE).stat().st_mtime, reverse=True)
