"""Where pretrained weights come from, whether they may be fetched now, and
whether they are still the bytes diffzoo saw.

Every in-tree detector reads its pretrained weights through
:func:`hub_weights` (Hugging Face hub: SegFormer, smp encoders, open_clip)
or :func:`url_weights` (torch hub URLs: torchvision, mmseg backbones).  Both
resolve the local file (downloading it unless ``HF_HUB_OFFLINE`` is set),
then :func:`check_weights` hashes it: against the card's published
``weights_sha256`` when it has one, else against the sha256 recorded at the
file's first use in ``$DIFFZOO_CACHE/weights/<card>/``, keyed by the card
name, the weights source and the file name.  A file that changed since is
refused; nothing is silently re-recorded.

Every weights file is read through :func:`load_weights` (or checked by it
before a library reads it): a regular file, safetensors or a ``torch.save``
file read with ``weights_only=True``, so a pickled object other than tensors
is refused, never run.  A refused file is one :class:`WeightsFileError`
naming it, the reason and where the right file comes from, and its sha256 is
never recorded: a first-use hash is only ever that of a file that loaded.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import urlparse

from diffzoo.harness.core.cards import DetectorCard, stable_hash
from diffzoo.harness.core.errors import (
    NO_PRETRAINED,
    ModelError,
    WeightsFileError,
    WeightsUnavailableError,
    hub_fetch,
    name_some,
)
from diffzoo.harness.core.fsutil import atomic_write_text, cache_root, file_kind, sha256_file
from diffzoo.harness.core.hub import hub_offline, hub_unreachable
from diffzoo.harness.models.checkpoints import ZIP_MAGIC, describe_mismatch, pickled_kind, safetensors_inside

log = logging.getLogger(__name__)

def check_weights(card: DetectorCard, path: Path | str, source: str, *, what: str | None = None,
                  allow: Sequence[type] = ()) -> str:
    """The sha256 of ``card``'s pretrained weights file ``path`` (from ``source``), checked.

    With a published ``card.weights_sha256`` the file must match it.  Without
    one the first use records the hash and every later use must match the
    record.  A mismatch is a :class:`ModelError` naming the card, the file
    and both hashes.  The file must also load as weights (:func:`load_weights`,
    reading no more than the tensors' index): one that does not is a
    :class:`WeightsFileError` and its hash is not recorded.
    """
    return load_checked(card, path, source, what=what, allow=allow, probe=True)[0]


def record_first_use(card: DetectorCard, path: Path, source: str, digest: str, record: Path) -> None:
    """Record ``digest`` as the sha256 of ``card``'s weights file ``path`` from ``source`` in ``record``,
    unless one is recorded already or the card publishes one."""
    if (card.weights_sha256 or "").strip() or record.exists():
        return
    atomic_write_text(record, json.dumps({
        "card": card.name, "source": source, "file": path.name, "path": str(path), "sha256": digest,
        "recorded": datetime.now(UTC).isoformat(timespec="seconds"),
    }, indent=2, sort_keys=True))
    log.info("%s: first use of weights %s (%s), sha256 %s recorded in %s", card.name, path, source, digest, record)


def load_checked(card: DetectorCard, path: Path | str, source: str, *, what: str | None = None,
                 allow: Sequence[type] = (), probe: bool = False, name: str | None = None) -> tuple[str, Any]:
    """(sha256, what the file holds) of ``card``'s weights file ``path``, hash-checked as by
    :func:`check_weights` and read once, whole (``probe``: only as much as shows it is weights), by
    :func:`load_weights`; its first-use hash is recorded only once it has loaded (inside
    :func:`built_from`, once the block completes), under ``name`` (the file's as its source names it;
    default: the path's)."""
    what = what or f"detector {card.name}"
    path = Path(path)
    _regular(path, source, what)  # before hashing: a FIFO would block the reader for ever
    digest = sha256_file(path)
    published = (card.weights_sha256 or "").strip().lower()
    # where the sha256 of the card's file of this name from this source is recorded at its first use
    record_path = cache_root() / "weights" / card.name / f"{stable_hash([source, name or path.name])}.json"
    held = load_weights(path, source, what=what, probe=probe, allow=allow)  # a file that is no weights says so first
    if published and digest != published:
        raise ModelError(
            f"{what}: weights file {path} has sha256 {digest}, but the card publishes "
            f"{published} for {source}; the file is damaged or not the published one. "
            "Delete it and fetch it again"
        )
    if not published and record_path.exists():
        try:
            saved: Any = json.loads(record_path.read_text(encoding="utf-8"))
            expected = saved["sha256"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelError(
                f"{what}: the weights record {record_path} is unreadable ({exc}); "
                f"delete it to record the sha256 of {path} anew"
            ) from None
        if digest != expected:
            raise ModelError(
                f"{what}: weights file {path} has sha256 {digest}, but {expected} was recorded "
                f"at its first use ({saved.get('recorded', '?')}, in {record_path}): the file changed since "
                "(a new upstream revision, a damaged download or an edit). Delete the file and fetch it again; "
                f"if the new weights are intended, delete {record_path} (results made with the old weights will "
                "not be comparable)"
            )
    pending = _PENDING.get()
    if pending is not None:  # inside built_from: once the model is built from it
        pending.append((card, path, source, digest, record_path))
    else:  # only once it has loaded; record_first_use keeps a published or recorded hash as it is
        record_first_use(card, path, source, digest, record_path)
    return digest, held


_PENDING: ContextVar[list[tuple[DetectorCard, Path, str, str, Path]] | None] = ContextVar("_PENDING", default=None)


@contextmanager
def built_from() -> Iterator[None]:
    """Record the first use of each weights file checked inside the block only once the block
    completes: a file is taken for the card's once a model was built from it, and one that loads
    as weights but does not fit the model (another model's file) is refused unrecorded, so the
    right file put in its place then loads."""
    pending: list[tuple[DetectorCard, Path, str, str, Path]] = []
    token = _PENDING.set(pending)
    try:
        yield
    finally:
        _PENDING.reset(token)
    for card, path, source, digest, record in pending:  # the block completed
        log.info("%s: built from pretrained weights %s (%s)", card.name, path, source)
        record_first_use(card, path, source, digest, record)


# -- reading a weights file --------------------------------------------------------------
SAFETENSORS_SUFFIX = ".safetensors"


def load_weights(path: Path | str, source: str, *, what: str = "weights", probe: bool = False,
                 allow: Sequence[type] = ()) -> Any:
    """What the weights file ``path`` holds: a safetensors file's tensors, or a ``torch.save``
    file's tensors and plain containers, read with ``weights_only=True`` (nothing in it is run).

    Anything else is one :class:`WeightsFileError` (exit 2) naming ``what``, the file and why
    it is refused, with the fix: replace it with the file from ``source``.  ``probe``: load
    only as much as shows the file is weights (a safetensors header; a ``torch.save``
    archive's pickle with its tensors mapped, not read), for a file a library reads next.
    ``allow``: harmless types the file may hold besides tensors and plain containers (a
    release's saved ``argparse.Namespace``), rebuilt by ``weights_only``'s allow-list.
    """
    path = Path(path)
    _regular(path, source, what)
    try:
        with open(path, "rb") as fh:  # the file's start, read once, tells which reader it is for
            head = fh.read(9)
        if path.suffix == SAFETENSORS_SUFFIX:  # torch.load too reads a file of this name as safetensors
            if pickled_kind(path, head):
                raise _NotWeights(f"it is a torch.save file under a safetensors file's name ({path.name}): "
                                  "give it its .pth name")
            return _safetensors(path, probe)
        if safetensors_inside(path, head):  # e.g. a release converted, kept under its released .pth name
            if probe:  # a library reads the file next, by its name: as a torch.save file
                raise _NotWeights(f"it is a safetensors file under a torch.save file's name ({path.name})")
            return _safetensors(path, probe)
        return _torch_file(path, head[:len(ZIP_MAGIC)], probe, allow)
    except (WeightsFileError, MemoryError):
        raise
    except Exception as exc:  # whatever torch, pickle, zipfile or safetensors say: the file is not weights
        raise _refused(path, source, what, _why(path, exc)) from exc


def _regular(path: Path, source: str, what: str) -> None:
    kind = file_kind(path)
    if kind is not None:
        raise _refused(path, source, what, f"it is {kind}")


def _refused(path: Path, source: str, what: str, why: str) -> WeightsFileError:
    return WeightsFileError(f"{what}: refusing to load weights file {path}: {why}; replace it with the file from "
                            f"{source}")


def _safetensors(path: Path, probe: bool) -> Any:
    from safetensors import safe_open
    from safetensors.torch import load_file

    if probe:
        with safe_open(str(path), framework="pt") as fh:  # parses and checks the header only
            return list(fh.keys())
    return load_file(str(path))


def _torch_file(path: Path, head: bytes, probe: bool, allow: Sequence[type] = ()) -> Any:
    """The ``torch.save`` file ``path``, whose first bytes are ``head`` (as many as :data:`ZIP_MAGIC`)."""
    import torch

    zipped = head == ZIP_MAGIC
    if not head:
        raise _NotWeights("it is empty")
    if zipped or pickled_kind(path, head) is None:
        packed = _archive(path, head)
        if packed:
            raise _NotWeights(f"it is {packed}, not a weights file: unpack it and give the file inside")
        if not zipped:
            raise _NotWeights(f"it is neither a torch.save file nor a safetensors file (it starts with {head!r})")
    with warnings.catch_warnings():  # a refusal is one line: not also torch's note on the pickle protocol
        warnings.filterwarnings("ignore", message="Detected pickle protocol")
        warnings.filterwarnings("ignore", message="Validating sparse tensor invariants")
        # mmap (an archive only): the pickle is read and checked, the tensors' bytes are mapped, not read
        with torch.serialization.safe_globals([*_numpy_scalars(), *_PATHS, *allow]):
            return torch.load(path, map_location="cpu", weights_only=True, mmap=probe and zipped)


_PACKED = {b"\x1f\x8b": "a gzip file", b"BZh": "a bzip2 file", b"\xfd7zXZ": "an xz file",
           b"7z\xbc\xaf": "a 7-Zip archive", b"Rar!": "a RAR archive"}
"""How the archives a release may be downloaded as start, and what each is called."""


def _archive(path: Path, head: bytes) -> str | None:
    """What archive ``path`` (starting with ``head``) is when it packs files, not tensors: a zip that is no
    ``torch.save`` archive (which holds a ``data.pkl``), a tar, or one of :data:`_PACKED`; None otherwise."""
    import tarfile
    import zipfile

    if head[:len(ZIP_MAGIC)] == ZIP_MAGIC:
        try:
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if not n.endswith("/")]
        except zipfile.BadZipFile:  # cut short (no central directory): torch's reader says so
            return None
        is_torch = any(n.rsplit("/", 1)[-1] == "data.pkl" for n in names)
        return None if is_torch else f"a zip archive holding {name_some([Path(n).name for n in names])}"
    kind = next((kind for magic, kind in _PACKED.items() if head.startswith(magic)), None)
    return kind or ("a tar archive" if tarfile.is_tarfile(path) else None)


def _numpy_scalars() -> list[Any]:
    """The globals that rebuild numpy scalars and nothing else (an authors' ``'best_score': np.float64``),
    as torch's ``weights_only`` notes allow them: numpy's ``scalar`` (under numpy 2's and numpy 1's module
    name), ``dtype`` and the numeric dtypes' classes."""
    import numpy as np

    scalar = np.float64(0).__reduce__()[0]
    codes = "?" + np.typecodes["AllInteger"] + np.typecodes["AllFloat"]
    return [(scalar, f"numpy.{core}.multiarray.scalar") for core in ("_core", "core")] + [
        np.dtype, *{type(np.dtype(code)) for code in codes}]


_PATHS = [(pure, f"{module}.{name}") for module in ("pathlib", "pathlib._local")
          for pure in (PurePosixPath, PureWindowsPath) for name in (pure.__name__, pure.__name__[4:])]
"""The globals that rebuild a pickled path (an authors' saved ``args.data_path``), each as the pure path it
is (a ``WindowsPath`` cannot be built on Linux, nor a ``PosixPath`` on Windows), under Python's module names
before and since 3.13."""


class _NotWeights(Exception):
    """A file that is plainly no weights file, said before any reader sees it."""


def _why(path: Path, exc: Exception) -> str:
    """Why ``path`` is refused, in words, from the error its reader raised (never the
    reader's advice to load it unsafely)."""
    text = str(exc)
    if isinstance(exc, _NotWeights):
        return f"could not be read as weights: {text}"
    if isinstance(exc, pickle.UnpicklingError) or "Weights only load failed" in text:
        kind = _pickled_type(path, text)
        held = f"a pickled object of type {kind}" if kind else "pickled objects other than tensors"
        return f"not a plain tensor file: it holds {held} (nothing in it was run)"
    if isinstance(exc, EOFError) or "unexpected EOF" in text or "failed finding central directory" in text:
        return "could not be read as weights: it ends early (truncated)"
    lines = [line.strip() for line in text.splitlines() if line.strip() and "weights_only" not in line]
    first = lines[0].split(". ")[0].rstrip(".") if lines else ""
    return f"could not be read as weights: {type(exc).__name__}" + (f": {first[:300]}" if first else "")


_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")


def _pickled_type(path: Path, message: str) -> str | None:
    """The first object type, other than tensors and plain containers, the pickle in ``path``
    holds: from the reader's message, else read off the pickle's opcodes (never run)."""
    found = _GLOBAL.search(message)
    if found:
        return found.group(1)
    import torch

    try:  # a torch.save archive: its pickle's globals, read without running it
        unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(path)
        if unsafe:
            return str(unsafe[0])
    except Exception:  # not an archive (or not a readable one): its opcodes, below
        pass
    import pickletools

    strings: list[str] = []
    try:  # a plain pickle: the globals its opcodes name, read (never run) until it ends or breaks
        with open(path, "rb") as fh:
            for op, arg, _ in pickletools.genops(fh):
                name = None
                if op.name == "GLOBAL" and isinstance(arg, str):
                    name = arg.replace(" ", ".")
                elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                    name = f"{strings[-2]}.{strings[-1]}"
                elif isinstance(arg, str):
                    strings.append(arg)
                if name and not name.startswith(("torch.", "collections.")):
                    return name
    except Exception:  # a damaged pickle: no type named before it broke
        pass
    return None


def hub_weights(card: DetectorCard, repo_id: str, filenames: Sequence[str], *, revision: str | None = None,
                also: Sequence[str] = (), what: str | None = None, detail: str = "") -> Path:
    """The local path of the first of ``filenames`` that hub repo ``repo_id`` has
    (downloaded unless offline), with the files in ``also`` (e.g. config.json)
    fetched beside it, hash-checked by :func:`check_weights`."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    offline = hub_offline() or hub_unreachable(repo_id)
    what = what or f"detector {card.name}"
    path = None
    try:
        for name in also:
            hf_hub_download(repo_id, filename=name, revision=revision, local_files_only=offline)
        for name in filenames:
            try:
                path = hf_hub_download(repo_id, filename=name, revision=revision, local_files_only=offline)
                break
            except EntryNotFoundError:  # not in the repo, or (offline) not in the cache: the next one
                continue
    except OSError as exc:  # LocalEntryNotFoundError, OfflineModeIsEnabled, HfHubHTTPError
        raise WeightsUnavailableError(what, repo_id, detail) from exc
    if path is None:
        raise WeightsUnavailableError(what, repo_id, f"none of {', '.join(filenames)}; {detail}".rstrip("; "))
    source = f"hf://{repo_id}" + (f"@{revision}" if revision else "")
    check_weights(card, path, source, what=what)
    return Path(path)


def hub_pretrained(card: DetectorCard, load: Callable[..., Any], filenames: Sequence[str], *, detail: str,
                   head: tuple[str, ...] = ()) -> Any:
    """``load(folder)`` of the hub repo ``card.weights`` for transformers' ``from_pretrained``:
    the first of ``filenames`` and its ``config.json`` resolved and hash-checked first
    (:func:`hub_weights`), so that it reads exactly those files.  A card without weights is a
    ModelError (:meth:`DetectorCard.check_pretrained`); a folder ``load`` cannot read, a
    WeightsUnavailableError; a file that leaves a tensor of the model outside ``head`` (the
    task's head, new by design) missing or of another shape, a WeightsFileError naming them:
    never a model built partly from random weights."""
    repo = card.check_pretrained(True)
    with built_from():
        path = hub_weights(card, repo, filenames, also=("config.json",), detail=detail)
        try:
            model, info = load(path.parent, output_loading_info=True)
        except OSError as exc:
            raise WeightsUnavailableError(f"detector {card.name}", repo,
                                          f"{path.parent} is incomplete ({exc}); {detail}") from exc
        unread = [str(k[0] if isinstance(k, tuple) else k) for name in ("missing_keys", "mismatched_keys")
                  for k in info.get(name, ())]  # a mismatched key is (name, shape in the file, shape in the model)
        unread = sorted(k for k in unread if not k.startswith(head) and not k.endswith("num_batches_tracked"))
        if unread:
            raise _refused(path, f"hf://{repo}", f"detector {card.name}", f"{len(unread)} tensor(s) of the model "
                           f"are missing from it or of another shape ({name_some(unread, 5)}): it is not {repo}'s "
                           "model")
    return model


def url_weights(card: DetectorCard, url: str, *, label: str | None = None, detail: str = "") -> Path:
    """The torch hub cache file of ``url`` (downloaded unless offline, its name's
    hash prefix checked as torch.hub does), hash-checked by :func:`check_weights`."""
    target = _url_file(card, url, label, detail)
    check_weights(card, target, url)
    return target


def _url_target(url: str) -> tuple[Path, str]:
    """(the torch hub cache file of ``url``, how to put it there by hand)."""
    import torch

    target = Path(torch.hub.get_dir()) / "checkpoints" / Path(urlparse(url).path).name
    return target, f"download {url} to {target} (the torch hub cache; TORCH_HOME moves it)"


def _url_file(card: DetectorCard, url: str, label: str | None, detail: str) -> Path:
    """The torch hub cache file of ``url``, downloaded first unless it is there or diffzoo is offline."""
    import torch

    target, fetch = _url_target(url)
    if not target.exists():
        if hub_offline():
            raise WeightsUnavailableError(f"detector {card.name}", label or url, detail, fetch=fetch)
        match = torch.hub.HASH_REGEX.search(target.name)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            torch.hub.download_url_to_file(url, str(target), match.group(1) if match else None, progress=False)
        except (OSError, RuntimeError) as exc:  # URLError is an OSError; a wrong hash prefix a RuntimeError
            raise WeightsUnavailableError(f"detector {card.name}", label or url, f"{detail}; {exc}",
                                          fetch=fetch) from exc
    return target


def url_into(card: DetectorCard, module: Any, url: str, *, label: str | None = None, detail: str = "",
             state: Callable[[Any], Mapping[str, Any]] = dict, new: tuple[str, ...] = (),
             others: bool = False) -> None:
    """Load the torch file at ``url`` (see :func:`url_weights`) into the torch ``module``, strictly:
    ``state`` maps what the file holds onto the module's names (a family's own mapping); ``new``:
    prefixes of the module's tensors the file is not for (a task head, built anew); ``others``:
    tensors the module has not are left (a backbone file's classifier).  A file that does not fit
    (a tensor missing, of another shape or kind, unexpected; another model's file) is one
    WeightsFileError naming the file and the tensors, and its first-use sha256 is recorded only
    once it has loaded, so the right file put in its place then loads."""
    path = _url_file(card, url, label, detail)
    with built_from():
        held = load_checked(card, path, url)[1]
        try:
            given = dict(state(held))
        except (KeyError, TypeError, AttributeError, ValueError, RuntimeError) as exc:  # the mapping met other contents
            raise _refused(path, url, f"detector {card.name}", f"it does not hold the model's tensors "
                           f"({type(exc).__name__}: {exc})") from exc
        own = module.state_dict()
        problem = describe_mismatch({k: v for k, v in own.items() if not k.startswith(new) or k in given},
                                    {k: v for k, v in given.items() if k in own or not others}, limit=5)
        if problem:
            raise _refused(path, url, f"detector {card.name}", f"it does not fit the model: {problem}")
        module.load_state_dict({k: v for k, v in given.items() if k in own}, strict=False)


def url_state(card: DetectorCard, url: str, *, label: str | None = None, detail: str = "") -> Any:
    """What the torch file at ``url`` holds (see :func:`url_weights`), read with
    ``weights_only=True`` by :func:`load_weights`: anything but tensors and plain
    containers is refused, never unpickled, and its hash is not recorded."""
    return load_checked(card, _url_file(card, url, label, detail), url)[1]


def placed_weights(card: DetectorCard, name: str, source: str) -> Path:
    """The weights file ``name`` that cannot be downloaded, put by hand (from ``source``) in
    ``$DIFFZOO_CACHE/weights/<family>/``, hash-checked by :func:`check_weights`; a
    WeightsUnavailableError saying where to put it when it is not there."""
    path = _placed(card, name)
    if not os.path.lexists(path):
        raise WeightsUnavailableError(f"detector {card.name}", name, source, downloaded=False,
                                      fetch=f"download {name} from {source} to {path}")
    check_weights(card, path, source)  # also refuses, by name, a folder, FIFO or broken link there
    return path


def _placed(card: DetectorCard, name: str) -> Path:
    return cache_root() / "weights" / card.family / name


_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")
_TORCHVISION = re.compile(r"(?:torchvision )?(\w+_Weights\.\w+)")
_FILE_NAME = re.compile(r"[\w.-]+\.(?:pth|pt|bin|safetensors|tar|ckpt)")


def pretrained_place(card: DetectorCard, pretrained: bool = True, always: Sequence[str] = (),
                     url_of: Callable[[str], str | None] = lambda source: None) -> str:
    """Where ``card``'s pretrained weights come from and whether they are here, as a plan says it:
    a file or hub cache folder looked for, nothing read or downloaded.  ``card.weights`` (sources
    joined by `` + ``) is read as a URL or a torchvision weights name (the torch hub cache), a hub
    repository (the hub cache) or a file name (put by hand, :func:`placed_weights`); weights not
    here that will not be downloaded (offline, or put by hand) are the WeightsUnavailableError
    building the detector would raise, before any work.  ``always``: the sources building reads
    whatever ``pretrained`` says, the only ones looked for without it ("" when none), which
    --no-pretrained does not spare.  ``url_of``: the URL a source of its family's own form names (mmseg's
    ``open-mmlab://NAME``), looked for as that URL; None for any other."""
    said, missing = [], []
    for source in card.check_pretrained(True).split(" + ") if pretrained else always:
        found = _local(card, url_of(source) or source)
        if found is None:  # a form read by its family's own code alone
            said.append(source)
            continue
        place, fetch, downloads = found
        if place.is_file() or (place.is_dir() and any(place.iterdir())):
            said.append(f"{source} (in {place})")
        elif downloads and not hub_offline():
            said.append(f"{source} (not in {place}: downloaded when the model is built)")
        else:
            missing.append((source, fetch, downloads))
    if missing:  # every file to fetch in one line
        hub = [source for source, fetch, _ in missing if fetch is None]
        how = [fetch for _, fetch, _ in missing if fetch] + ([hub_fetch(*hub)] if hub else [])
        spared = not {m[0] for m in missing} & set(always)
        raise WeightsUnavailableError(f"detector {card.name}", " and ".join(m[0] for m in missing),
                                      NO_PRETRAINED if spared else "its build reads them even with --no-pretrained",
                                      fetch="; ".join(how), downloaded=all(m[2] for m in missing))
    return ("pretrained weights " if pretrained else "weights it always reads ") + ", ".join(said) if said else ""


def _local(card: DetectorCard, source: str) -> tuple[Path, str | None, bool] | None:
    """(where ``source`` is kept on this machine, how to bring it there, whether it is downloaded
    when missing); None for a form this does not know."""
    torchvision = _TORCHVISION.fullmatch(source)
    if torchvision:
        from torchvision.models import get_weight

        try:
            source = get_weight(torchvision.group(1)).url
        except (ValueError, KeyError):  # a name torchvision has not: its family's own
            return None
    if source.startswith(("https://", "http://")):
        return (*_url_target(source), True)
    if _FILE_NAME.fullmatch(source):
        published = f" (the card's recipe: {card.recipe['pretrained'].source})" if "pretrained" in card.recipe else ""
        return _placed(card, source), f"put {source} at {_placed(card, source)}{published}", False
    if _HUB_ID.fullmatch(source):
        return hub_snapshots(source), None, True
    return None


def hub_snapshots(model_id: str) -> Path:
    """The hub cache folder of hub model ``model_id``'s downloaded snapshots (it holds one once a
    download finished): where looking, with no network, shows whether the model is here."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE) / f"models--{model_id.replace('/', '--')}" / "snapshots"
