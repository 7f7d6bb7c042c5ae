"""Checkpoints: safetensors weights + a JSON card, and the checkpoint cache.

Weights are only ever read with safetensors; pickle-based files (``.pt``,
``.pth``, ``.bin``, ``.ckpt``, ``.pkl``) are refused, never unpickled.  The
cache key hashes (detector card, train config, dataset fingerprint, subset,
seed), so a changed recipe or dataset never reuses a stale model.

Kills and strangers.  A folder is written in ``.NAME.RANDOM/`` beside its
final place and renamed into it (:func:`atomic_dir`), so a killed write
leaves only a dot-folder that no reader lists or loads.  While it writes,
the writer holds an exclusive lock (:func:`~diffzoo.harness.core.fsutil.lock_open_file`)
on ``.incomplete`` inside it; the next start deletes a dot-folder whose lock
is free (its writer died) and leaves one whose lock is held (another process
is still writing).  For a dot-folder with no ``.incomplete``, or on a
filesystem without locks, only age counts: untouched for :data:`STALE_AFTER_S`.  A checkpoint's card.json
records the sha256 of its weights; a card without one, or weights that no
longer match it, are refused with the file named and the fix.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from diffzoo.harness.core.cards import stable_hash
from diffzoo.harness.core.errors import ConfigError, ModelError, WeightsFileError, name_some, not_found
from diffzoo.harness.core.fsutil import (
    atomic_write_text,
    cache_root,
    check_usable_dir,
    lock_open_file,
    make_dir,
    new_mode,
    sha256_file,
    writing,
)
from diffzoo.harness.models.divergence import refuse_nonfinite

log = logging.getLogger(__name__)

WEIGHTS_FILE = "model.safetensors"
META_FILE = "card.json"
PICKLE_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt", ".pkl", ".pickle")
FORMATS = ("diffzoo-checkpoint-1",)
"""``format`` values of card.json that this version reads."""
CARD_FIELDS: dict[str, tuple[type, ...]] = {
    "card": (dict,), "task": (str,), "label_space": (dict,), "train_config": (dict,), "train_subset": (dict,),
    "release": (dict,), "training": (dict, type(None)),  # null: a detector that trains nothing
}
"""The fields of card.json that readers take as a JSON object or string (or null), with that type."""
INCOMPLETE = ".incomplete"
"""Marker inside a folder still being written; its writer holds a lock on it."""
STALE_AFTER_S = 24 * 3600
"""A dot-folder without a lockable marker is abandoned once untouched this long."""
_PARTIAL = re.compile(r"^\..+\.[a-z0-9_]{8}$")  # tempfile.mkdtemp(prefix=".NAME.")
RESUME_STEP = re.compile(r"^step-(\d+)$")
"""The folder of a training's resume state after step N (:mod:`.resume`), in ``<key>.resume/`` in the cache."""

_REFUSE_PICKLE = (
    "refusing to load {path}: {why}, which can run arbitrary code when loaded. Convert it "
    "to safetensors (safetensors.torch.save_file) and pass that"
)


# -- folders that appear complete or not at all ----------------------------------------
def _hold_marker(folder: Path) -> IO[str]:
    """Create ``folder/.incomplete`` locked by this process: locked under another
    name first, then renamed, so no sweeper ever finds it unlocked while we live."""
    pending = folder / f"{INCOMPLETE}.new"
    fh = open(pending, "w")
    try:
        lock_open_file(fh)
        os.replace(pending, folder / INCOMPLETE)
    except BaseException:
        fh.close()
        raise
    return fh


def _writer_is_gone(folder: Path) -> bool:
    """Whether a dot-folder was abandoned: its marker's lock is free, or (no
    marker, or no locks here) nothing in it changed for :data:`STALE_AFTER_S`."""
    try:
        fh = open(folder / INCOMPLETE)
    except OSError:
        pass  # no marker (yet, or any more): go by age
    else:
        with fh:
            try:
                return lock_open_file(fh, wait=False)  # free: the kernel freed a dead writer's lock
            except OSError:
                pass  # a filesystem without locks: go by age
    try:
        newest = max([folder.stat().st_mtime, *(p.lstat().st_mtime for p in folder.iterdir())])
    except OSError:
        return False
    return time.time() - newest > STALE_AFTER_S


def sweep_partial(folder: Path) -> list[Path]:
    """Delete the abandoned ``.NAME.RANDOM/`` folders directly in ``folder``, a
    folder of diffzoo's cache (see the module docstring); returns those removed."""
    removed: list[Path] = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for entry in entries:
        if _PARTIAL.match(entry.name) and entry.is_dir() and not entry.is_symlink() and _writer_is_gone(entry):
            shutil.rmtree(entry, ignore_errors=True)
            log.info("removed %s, left by an interrupted write", entry)
            removed.append(entry)
    return removed


def _publish_tree(folder: Path) -> None:
    """Sync ``folder``'s files and give them and it the modes a plain open/mkdir would: mkdtemp
    makes the folder 0700 and safetensors its files 0600, unreadable to the rest of a group."""
    for path in folder.iterdir():
        if path.is_file():
            with open(path, "rb") as fh:
                os.fchmod(fh.fileno(), new_mode())
                os.fsync(fh.fileno())
    folder.chmod(new_mode(folder=True))
    if hasattr(os, "O_DIRECTORY"):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _swap_in(tmp: Path, target: Path) -> None:
    """Rename ``tmp`` to ``target``; an existing ``target`` is first renamed away
    (into a dot-folder that is then deleted), never deleted in place."""
    try:
        os.replace(tmp, target)  # no target yet (an empty one is replaced too)
        return
    except OSError:
        if not target.exists():
            raise
    trash = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    os.replace(target, trash / "replaced")
    os.replace(tmp, target)
    shutil.rmtree(trash, ignore_errors=True)


@contextmanager
def atomic_dir(target: Path) -> Iterator[Path]:
    """Yield a temp folder ``.NAME.RANDOM/`` beside ``target``; on a clean exit its
    files are synced and it replaces ``target`` in one rename.  An exception
    removes it; a kill leaves it to :func:`sweep_partial`, which the readers
    of diffzoo's cache call (never on folders outside the cache: a user's
    folder may hold dot-folders of its own).  A full disk, in any writer of
    the block, is a StorageError naming the file (or else ``target``) and the
    free space of its filesystem."""
    target = Path(target)
    with writing(target):  # a full disk anywhere in the write names the folder and its free space
        make_dir(target.parent)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            marker = _hold_marker(tmp)
            try:
                yield tmp
                (tmp / INCOMPLETE).unlink()
                _publish_tree(tmp)
                _swap_in(tmp, target)
            finally:
                marker.close()
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # nothing half-written stays, whatever stopped it
            raise


def save_checkpoint(directory: Path, state_dict: dict[str, Any], meta: dict[str, Any]) -> Path:
    """Write ``directory/model.safetensors`` and ``directory/card.json``.

    The folder appears complete or not at all (:func:`atomic_dir`).  Returns
    the weights path; ``meta`` gains ``sha256``.  Weights holding NaN or inf
    are refused before anything is written.
    """
    from safetensors.torch import save_file

    directory = Path(directory)
    tensors: dict[str, Any] = {}
    storages: set[int] = set()
    for key, value in state_dict.items():
        tensor = value.detach().contiguous().cpu()
        storage = tensor.untyped_storage().data_ptr()
        # safetensors refuses tensors that share memory (tied weights, a release file's aliased
        # entries): each tensor is written from storage of its own
        tensors[key] = tensor.clone() if storage in storages else tensor
        storages.add(storage)
    refuse_nonfinite(tensors, f"the model to be saved in {directory}")  # a diverged model is never written
    with atomic_dir(directory) as tmp:
        with writing(directory / WEIGHTS_FILE):  # safetensors wraps ENOSPC in its own error
            save_file(tensors, str(tmp / WEIGHTS_FILE))
        meta = {**meta, "sha256": sha256_file(tmp / WEIGHTS_FILE)}
        atomic_write_text(tmp / META_FILE, json.dumps(meta, indent=2, sort_keys=True))
    return directory / WEIGHTS_FILE


def _retrain(folder: Path) -> str:
    return f"delete {folder} and run again to train it anew (or pass an intact checkpoint)"


def _no_card(folder: Path) -> ModelError:
    return ModelError(
        f"cached checkpoint {folder} has {WEIGHTS_FILE} but no {META_FILE}: diffzoo did not write it "
        f"(or an old write was cut short); {_retrain(folder)}"
    )


def _resume_state(folder: Path) -> str:
    """What ``folder`` (without weights) is when it is a training's resume state: a ``step-N`` folder, or the
    ``<key>.resume`` folder holding them; "" for any other folder."""
    try:
        steps = [int(m[1]) for p in (folder, *folder.iterdir()) if (m := RESUME_STEP.match(p.name)) and p.is_dir()]
    except OSError:
        return ""
    return (f": it is the resume state of a training that did not finish, saved after step {max(steps)}; run the "
            "same `diffzoo train` (or `diffzoo run`) command again to finish it, and pass the checkpoint it writes "
            "(`diffzoo train` prints its folder)") if steps else ""


def resolve_checkpoint(path: Path | str) -> tuple[Path, Path | None]:
    """(weights file, meta file or None) for a checkpoint folder or file.  A path that holds no
    checkpoint is refused as a usage error (:func:`not_found`: another path is the fix)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise not_found(ModelError(f"checkpoint {path} does not exist"))
    if path.is_dir():
        if (path / INCOMPLETE).exists():
            raise not_found(ModelError(
                f"checkpoint folder {path} is an unfinished write (its writer was killed or is still "
                "writing); use the finished checkpoint beside it, or delete this folder"
            ))
        if not (path / WEIGHTS_FILE).exists():
            raise not_found(ModelError(f"checkpoint folder {path} has no {WEIGHTS_FILE}{_resume_state(path)}"))
        path = path / WEIGHTS_FILE  # a .safetensors file: the card is beside it, as beside any given file
    if (suffix := pickle_suffix(path)) is not None:
        raise not_found(ModelError(_REFUSE_PICKLE.format(path=path, why=f"{suffix} files are pickles")))
    if path.suffix != ".safetensors":
        raise not_found(ModelError(f"checkpoint {path} is not a .safetensors file or a checkpoint folder"))
    meta = path.with_name(META_FILE)
    return path, meta if meta.exists() else None


def pickle_suffix(path: Path) -> str | None:
    """The suffix that names ``path`` a pickle (``.pth``; ``.pth.tar`` too, as CAT-Net's and TruFor's
    releases are named); None for any other name."""
    suffixes = Path(path).suffixes[-2:]
    if len(suffixes) == 2 and suffixes[1].lower() == ".tar" and suffixes[0].lower() in PICKLE_SUFFIXES:
        return "".join(suffixes)
    return suffixes[-1] if suffixes and suffixes[-1].lower() in PICKLE_SUFFIXES else None


ZIP_MAGIC = b"PK\x03\x04"
"""How a ``torch.save`` file (a zip archive) starts; one of the old format starts with a pickle."""
PICKLE_PROTOCOL = 0x80
"""The first byte of a pickle of protocol 2 or later (every ``torch.save`` of the old format)."""


def safetensors_inside(path: Path, head: bytes) -> bool:
    """Whether ``path``, whose first bytes are ``head``, starts as a safetensors file does, whatever
    its name: the header's length (8 bytes, little-endian, within the file), then the header's ``{``."""
    return len(head) == 9 and head[8:] == b"{" and int.from_bytes(head[:8], "little") <= path.stat().st_size - 8


def pickled_kind(path: Path, head: bytes) -> str | None:
    """What ``path``, whose first 9 bytes are ``head``, is when it is a ``torch.save`` file and no
    safetensors file (whose header length may start with the same bytes); None otherwise."""
    if safetensors_inside(path, head):
        return None
    if head[:len(ZIP_MAGIC)] == ZIP_MAGIC:
        return "a torch.save zip archive (pickled)"
    return "a pickle" if head[:1] == bytes([PICKLE_PROTOCOL]) else None


def _refuse_pickled_content(weights: Path) -> None:
    """A pickle or ``torch.save`` zip under a safetensors name: refuse by content (safetensors
    would reject it too, it never unpickles; this only makes the message say what the file is)."""
    with open(weights, "rb") as fh:
        kind = pickled_kind(weights, fh.read(9))
    if kind is not None:
        raise WeightsFileError(_REFUSE_PICKLE.format(path=weights, why=f"it is {kind}, not safetensors"))


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
    for key, kind in CARD_FIELDS.items():  # every reader of a card takes these as diffzoo writes them
        if key in meta and not isinstance(meta[key], kind):
            raise ModelError(
                f"checkpoint card {meta_path}: {key} is {json.dumps(meta[key])[:60]}, not a JSON "
                f"{'object' if kind[0] is dict else 'string'} as diffzoo writes it (the card was edited or made by "
                "hand); correct it, or pass the .safetensors file without a card.json"
            )
    return meta


def checkpoint_meta(path: Path | str) -> tuple[Path, dict[str, Any]]:
    """(weights file, card) of a checkpoint without reading its tensors; {} without card.json."""
    weights, meta_path = resolve_checkpoint(path)
    return weights, read_meta(meta_path) if meta_path is not None else {}


def verify_weights(weights: Path, meta_path: Path | None, meta: dict[str, Any]) -> str:
    """The sha256 of ``weights``, checked against the one its card.json records.

    diffzoo writes the hash into every card.json, so a card without one was
    edited or made by hand, and weights that differ changed after the card
    was written: both are refused.  A bare ``.safetensors`` without a card
    has nothing to check against.
    """
    digest = sha256_file(weights)
    if meta_path is None:
        return digest
    expected = meta.get("sha256")
    where = Path(weights).parent
    if not isinstance(expected, str) or not expected:
        raise ModelError(
            f"checkpoint card {meta_path} records no sha256 of {weights} (diffzoo always writes one: "
            f"the card was edited or made by hand); {_retrain(where)}. For weights you made yourself, "
            "pass the .safetensors file without a card.json, or write its sha256 into the card"
        )
    if expected != digest:
        raise ModelError(
            f"checkpoint {weights}: sha256 differs from {meta_path} (the file hashes to {digest}, the card "
            f"records {expected}): the weights changed after the checkpoint was written; {_retrain(where)}"
        )
    return digest


def load_checkpoint(path: Path | str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read weights (safetensors only, hash-checked before parsing) and the card beside them."""
    weights, meta_path = resolve_checkpoint(path)
    meta = read_meta(meta_path) if meta_path is not None else {}
    _refuse_pickled_content(weights)  # said as what it is, before its hash is checked
    digest = verify_weights(weights, meta_path, meta)
    state = read_weights(weights)
    refuse_nonfinite(state, f"checkpoint {weights}")
    meta["sha256"] = digest
    return state, meta


def read_weights(weights: Path, header_only: bool = False) -> dict[str, Any]:
    """The tensors of the checkpoint's safetensors file ``weights`` (``header_only``: their names, no tensor
    read); a WeightsFileError naming the file when it is none (a pickle, an empty or cut-short file)."""
    from safetensors import SafetensorError, safe_open
    from safetensors.torch import load_file

    _refuse_pickled_content(weights)
    try:
        if header_only:
            with safe_open(str(weights), framework="pt") as fh:  # parses and checks the header only
                return dict.fromkeys(fh.keys())
        return load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as exc:
        raise WeightsFileError(f"checkpoint {weights} is not a readable safetensors file: {exc}") from exc


def _shape(value: Any, tuples: bool = False) -> tuple[int, ...] | None:
    """A tensor's shape (or, with ``tuples``, a shape given as a tuple); ``None`` for anything else."""
    if hasattr(value, "shape"):
        return tuple(value.shape)
    return tuple(value) if tuples and isinstance(value, tuple) else None


def _shown(shape: tuple[int, ...] | None) -> str:
    return "not a tensor" if shape is None else str(list(shape))


def _unheld(value: Any) -> str | None:
    """What a file's tensor that holds no weight values is (one on the meta device, a sparse one); None
    for any other value."""
    if getattr(value, "is_meta", False):
        return "a meta tensor (no values)"
    layout = str(getattr(value, "layout", "torch.strided"))
    return None if layout == "torch.strided" else f"a {layout.removeprefix('torch.')} tensor"


def _kind(value: Any) -> str | None:
    """A torch tensor's kind of value (bool, int, float or complex); ``None`` for anything else.
    Loading casts faithfully between precisions of a kind (a float16 release into a float32
    model), never between kinds (an int tensor cast into float weights is not those weights)."""
    dtype: Any = getattr(value, "dtype", None)
    if not hasattr(dtype, "is_floating_point"):
        return None
    return ("complex" if dtype.is_complex else "float" if dtype.is_floating_point
            else "bool" if str(dtype) == "torch.bool" else "int")


def _other_kind(given: Any, expected: Any) -> bool:
    """Whether two tensors hold values of different kinds (:func:`_kind`)."""
    kinds = {_kind(given), _kind(expected)}
    return len(kinds) == 2 and None not in kinds


def describe_mismatch(expected: Mapping[str, Any], given: Mapping[str, Any], limit: int = 3) -> str | None:
    """What differs between a model's state dict and a checkpoint's, in one line.

    The one wording of a key, shape or dtype mismatch, for diffzoo's own
    checkpoints and for released files alike.  ``expected`` maps tensor names
    to tensors or to shape tuples, ``given`` to tensors (anything else in it
    is "not a tensor").  Names missing tensors, unexpected tensors, shape
    differences and dtypes of another kind (int where the model's tensor is
    float, float where it is int or bool; float16 where it is float32 is the
    same kind) (the first ``limit`` of each); ``None`` when all agree.
    """
    missing = [k for k in expected if k not in given]
    unexpected = [k for k in given if k not in expected]
    shapes = [
        f"{k} is {_unheld(given[k]) or _shown(_shape(given[k]))} in the checkpoint, "
        f"{_shown(_shape(expected[k], True))} in the model"
        for k in expected
        if k in given
        and (_unheld(given[k]) or _shape(given[k]) is None or _shape(given[k]) != _shape(expected[k], True))
    ]
    kinds = [f"{k} is {str(given[k].dtype).removeprefix('torch.')} in the checkpoint, "
             f"{str(expected[k].dtype).removeprefix('torch.')} in the model"
             for k in expected if k in given and _other_kind(given[k], expected[k])]
    parts = [f"{len(keys)} {what}: {name_some(keys, limit, sep)}" for keys, what, sep in (
        (shapes, "tensor shape(s) differ", "; "), (kinds, "tensor dtype(s) of another kind", "; "),
        (missing, "tensor(s) missing from the checkpoint", ", "), (unexpected, "unexpected tensor(s)", ", ")) if keys]
    return "; ".join(parts) or None


def cache_key(**parts: Any) -> str:
    """Hash of everything that determines a trained model."""
    return stable_hash(parts, length=20)


def cache_dir(detector: str, key: str) -> Path:
    return cache_root() / "checkpoints" / detector / key


def cached_meta(folder: Path, key: str) -> dict[str, Any]:
    """The card of the cache entry ``folder``, checked to be one diffzoo wrote
    for cache key ``key`` (the weights' hash is checked when they are loaded)."""
    folder = Path(folder)
    _, meta_path = resolve_checkpoint(folder)
    if meta_path is None:
        raise _no_card(folder)
    meta = read_meta(meta_path)
    if meta.get("cache_key") != key:
        raise ModelError(
            f"cached checkpoint {folder} was written for cache key {meta.get('cache_key')!r}, not {key!r} "
            f"(moved or copied there); {_retrain(folder)}"
        )
    return meta


def cached_checkpoints(detector: str) -> list[Path]:
    """Checkpoint folders that runs cached for ``detector`` (full name), newest first.

    Dot-folders (writes in progress or cut short) are never listed, and those
    abandoned are removed; a folder with weights but no card.json is refused.
    """
    folder = cache_dir(detector, "")
    if not folder.is_dir():
        return []
    sweep_partial(folder)
    found = []
    for d in folder.iterdir():
        if d.name.startswith(".") or not (d / WEIGHTS_FILE).is_file():
            continue
        if not (d / META_FILE).is_file():
            raise _no_card(d)
        found.append(d)
    return sorted(found, key=lambda d: (d / WEIGHTS_FILE).stat().st_mtime, reverse=True)


def copy_checkpoint(src: Path, dst: Path) -> Path:
    """Write checkpoint ``src`` (verified on read) to folder ``dst``; returns ``dst``.

    ``dst`` must be new, empty, or a checkpoint folder (it is replaced).
    """
    check_copy_target(dst)
    state, meta = load_checkpoint(src)
    meta.pop("sha256", None)  # recomputed from the written file
    save_checkpoint(dst, state, meta)
    return dst


def check_copy_target(dst: Path) -> None:
    """``dst`` (a training's ``--out``) may receive a checkpoint copy: new (and makeable), empty, or a
    checkpoint folder, never one in the checkpoint cache (a copy there replaces the model cached for another
    cache key)."""
    cache = cache_dir("", "")
    if Path(os.path.realpath(dst)).is_relative_to(os.path.realpath(cache)):
        raise ConfigError(f"--out {dst} is inside the checkpoint cache {cache}, whose models a copy would replace; "
                          "choose a folder outside it (the trained model is cached there already)")
    if dst.exists() and (not dst.is_dir() or any(p.name not in (WEIGHTS_FILE, META_FILE) for p in dst.iterdir())):
        raise ConfigError(f"--out {dst} exists and is not a checkpoint folder; give a new or empty folder")
    check_usable_dir(dst, "--out")  # checked before training: the copy is written after it
