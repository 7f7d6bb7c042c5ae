"""Released weights, read as their authors released them (``--weights released:NAME``).

A card lists the trained checkpoints its authors released (:class:`~..core.cards.Release`):
their file names, where they are published, what they were trained on, and how their tensors
reach the detector's own keys.  Reading one:

1. the files are found under ``$DIFFZOO_CACHE/weights/released/<detector>/<release>/`` or
   where ``--checkpoint`` points (a file, or a folder holding the release's files);
2. each is read by the one weights loader (``weights_only=True``, with the release's short
   allow-list of harmless types, e.g. a saved ``argparse.Namespace``; nothing in a file is
   ever run), hash-checked against the sha256 the authors publish, else against the one
   recorded at its first use (recorded once the release converted, step 5);
3. the tensors are taken out of their wrapper dict (``model``, ``state_dict``...), stripped
   of prefixes (``module.``), given their part's prefix (a multi-file release) and mapped by
   the family's own converter, if any;
4. the result must hold exactly the detector's keys with its shapes: a missing, unexpected or
   misshapen key is a :class:`ReleaseError` naming the keys, the release and the files;
5. it is written once as a diffzoo checkpoint (safetensors + card.json naming the release,
   its files and their sha256) in the checkpoint cache, which every later run loads (one whose
   weights no longer match its card is converted again); a ``--checkpoint`` whose card.json names
   the release is taken as it only when its weights and record are such a conversion's.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from diffzoo.harness.core.cards import DetectorCard, Release, stable_hash
from diffzoo.harness.core.errors import ConfigError, ModelError, WeightsUnavailableError, name_some, no_value, not_found
from diffzoo.harness.core.fsutil import cache_root, file_kind
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.protocols import Detector
from diffzoo.harness.models.checkpoints import (
    META_FILE,
    WEIGHTS_FILE,
    cache_dir,
    checkpoint_meta,
    describe_mismatch,
    read_meta,
    save_checkpoint,
    verify_weights,
)
from diffzoo.harness.models.divergence import nonfinite
from diffzoo.harness.models.weights import built_from, load_checked

log = logging.getLogger(__name__)

PREFIX = "released:"
"""How ``--weights`` names a release: ``released:NAME``."""

HARMLESS: dict[str, type] = {"argparse.Namespace": argparse.Namespace}
"""The non-tensor types a release may declare in ``allow``: plain records of values that run
nothing when rebuilt.  Anything else in a file is refused by the weights loader."""

SHOWN = 8
"""How many keys an error names before it counts the rest."""


class ReleaseError(ModelError):
    """A release's files do not hold what the release says (a key missing, unexpected or of
    another shape; no tensors under its wrapper keys): a user error, exit 2."""

    exit_code = 2


@dataclass(frozen=True)
class ReleaseFile:
    """One file of a release as loaded: its name as given, its path and its sha256."""

    name: str
    path: Path
    sha256: str


def release_name(weights: str | None) -> str | None:
    """The release named by a ``--weights`` value (``released:NAME``); None without one."""
    if weights is None:
        return None
    if weights == "":  # an unset variable: never the trained model in place of the release asked for
        raise no_value("--weights ''")
    if not weights.startswith(PREFIX) or not weights[len(PREFIX):].strip():
        raise ConfigError(f"--weights takes released:NAME (a release the detector's card lists), got {weights!r}")
    return weights[len(PREFIX):].strip()


def releases_holding(names: Collection[str], detector: str | None = None) -> list[tuple[str, str]]:
    """(detector, release) of every detector's card (``detector``'s alone, when named) with a release whose
    files include each of the file ``names``."""
    registry = get_registry()
    entries = [registry.get("detector", detector)] if detector is not None else registry.list("detector")
    return [(e.name, r.name) for e in entries for r in getattr(e.card, "releases", ()) if set(names) <= set(r.files)]


def release_dir(card: DetectorCard, release: Release) -> Path:
    """Where a release's files are looked for: ``$DIFFZOO_CACHE/weights/released/<card>/<release>/``."""
    return cache_root() / "weights" / "released" / card.name / release.name


def release_source(release: Release) -> str:
    """How a weights record and an error name where a release comes from."""
    return f"released:{release.name} ({release.source})"


def find_files(card: DetectorCard, release: Release, given: Sequence[Path] = ()) -> list[Path]:
    """The release's files: ``given`` (its files in order, or one folder holding them), else
    its folder in the cache.  A missing file is a WeightsUnavailableError saying where to get
    it and where to put it."""
    paths = [Path(p).expanduser() for p in given]
    folder = None  # where the release's files are looked for under their own names
    # one folder holds the release's files, unless it is named as one: a folder in that file's place
    if not paths or (len(paths) == 1 and paths[0].is_dir() and paths[0].name not in release.files):
        folder = paths[0] if paths else release_dir(card, release)
        paths = [folder / name for name in release.files]
    elif len(paths) != len(release.files):
        raise ConfigError(f"release {release.name} of {card.name} is {len(release.files)} file(s) "
                          f"({', '.join(release.files)}); --checkpoint gave {len(paths)}: pass each, in that order, "
                          "or the folder that holds them")
    elif sorted(p.name for p in paths) == sorted(release.files):  # under the release's names: in any order
        paths = sorted(paths, key=lambda p: release.files.index(p.name))
    missing = [(path, name) for path, name in zip(paths, release.files) if file_kind(path) is not None]
    if missing:
        first, names = missing[0][0], ", ".join(name for _, name in missing)  # the release's names, not the paths'
        fetch = (f"--checkpoint {first} is not the file; download {names} from {release.source} and give its path"
                 if folder is None else f"download {names} from {release.source} into {folder}"
                 + ("" if given else " (diffzoo run also takes them as --checkpoint PATH)"))  # given: the one named
        if not given and (astray := _astray(card, release, [name for _, name in missing])):
            fetch += (f"; found in the wrong folder: {', '.join(map(str, astray))}: "
                      f"move {'it' if len(astray) == 1 else 'them'} into {folder}")
        error = WeightsUnavailableError(f"detector {card.name}", release_source(release),
                                        f"{file_kind(first)}: {first}", downloaded=False, fetch=fetch)
        raise not_found(error) if given else error  # files (or a folder) the user named: another path is the fix
    return paths


def _astray(card: DetectorCard, release: Release, names: Sequence[str]) -> list[Path]:
    """The release's files ``names`` put in the wrong folder of the cache: ``weights/released/<card>/`` itself or
    another of its immediate subfolders (no deeper: nothing walks a tree)."""
    home = release_dir(card, release)
    try:
        places = [home.parent, *sorted(p for p in home.parent.iterdir() if p.is_dir() and p != home)]
    except OSError:  # no released folder for this detector yet
        return []
    return [place / name for place in places for name in names if (place / name).is_file()]


def release_paths(card: DetectorCard, release: Release, given: Sequence[Path] = ()) -> list[Path] | None:
    """The release's files (:func:`find_files`), or None when ``given`` is the release as diffzoo
    converted it: what :func:`install` reads, found without reading a file."""
    if len(given) == 1 and converted_release(given[0]) == release.name:
        # a card.json names a release by hand as easily as diffzoo does: its weights and record must be a conversion
        # diffzoo made here of the release's files (their sha256 checked as published or first recorded)
        meta = checkpoint_meta(given[0])[1]
        any_made = _converted_dir(card, release, "*")
        made = map(read_meta, any_made.parent.glob(f"{any_made.name}/{META_FILE}"))
        if not any((m.get("sha256"), m.get("release")) == (meta.get("sha256"), meta["release"]) for m in made):
            raise ReleaseError(f"checkpoint {given[0]}: its card.json names release {release.name} of {card.name}, "
                               "but its weights are not that release as diffzoo converted it here; give the "
                               f"release's own file ({', '.join(release.files)}) as --checkpoint")
        return None
    return find_files(card, release, given)


def converted_release(path: Path) -> str | None:
    """The name of the release the diffzoo checkpoint ``path`` (a folder or its .safetensors) was
    converted from, as its card.json says; None for any other path."""
    path = Path(path).expanduser()
    meta = path / META_FILE if path.is_dir() else path.with_name(META_FILE) if path.suffix == ".safetensors" else None
    if meta is None or not meta.is_file():
        return None
    release = read_meta(meta).get("release")
    return str(release["name"]) if isinstance(release, dict) and release.get("name") else None


def _tensors(obj: Any, release: Release, path: Path) -> dict[str, Any]:
    """The flat name -> tensor dict inside what a release file holds, out of its wrapper dicts."""
    import torch

    seen: set[int] = set()  # a wrapper that holds itself (a hostile file) ends the search, never loops
    under = "the file's top level"
    while isinstance(obj, dict) and not all(isinstance(v, torch.Tensor) for v in obj.values()):
        key = next((k for k in release.unwrap if k in obj), None)
        others = [f"{k} ({type(v).__name__})" for k, v in obj.items() if not isinstance(v, torch.Tensor)]
        if key is None and len(others) < len(obj):  # a state dict, as torch's strict load_state_dict reads one
            raise ReleaseError(f"release {release.name}: {path} holds a non-tensor value under {under} beside its "
                               f"tensors: {name_some(sorted(others), SHOWN)}")
        under = str(key)
        if key is None or id(obj) in seen:
            held = name_some(sorted(map(str, obj)), SHOWN)
            raise ReleaseError(f"release {release.name}: {path} holds no tensors under "
                               f"{' / '.join(release.unwrap)} (its keys: {held})")
        seen.add(id(obj))
        obj = obj[key]
    if not isinstance(obj, dict) or not obj:
        found = "an empty dict" if isinstance(obj, dict) else type(obj).__name__
        raise ReleaseError(f"release {release.name}: {path} holds no name -> tensor dict (found {found})")
    return obj


def _renamed(state: dict[str, Any], release: Release, prefix: str, path: Path) -> dict[str, Any]:
    """``state`` with each of the release's ``strip`` prefixes taken off every key, in turn, and ``prefix`` put on;
    two keys of two tensors that become one are a ReleaseError naming both (which is the release's, the file does
    not say); two of one tensor (aliased entries) are one."""
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for key, value in state.items():
        name = prefix + functools.reduce(str.removeprefix, release.strip, str(key))
        if name in out and out[name] is not value:
            raise ReleaseError(f"release {release.name}: {path} holds {origin[name]} and {key}, one key once "
                               f"{' and '.join(release.strip)} is taken off")
        out[name], origin[name] = value, str(key)
    return out


def read_release(card: DetectorCard, release: Release, paths: Sequence[Path]) -> tuple[dict[str, Any],
                                                                                       list[ReleaseFile]]:
    """(the release's tensors under the detector's own key names, its files as loaded)."""
    unknown = [name for name in release.allow if name not in HARMLESS]
    if unknown:
        raise ModelError(f"release {release.name}: allow names {', '.join(unknown)}, which diffzoo does not rebuild; "
                         f"it rebuilds only {', '.join(HARMLESS)}")
    allow = [HARMLESS[name] for name in release.allow]
    state: dict[str, Any] = {}
    files = []
    for index, path in enumerate(paths):
        what = f"detector {card.name}, release {release.name}"
        # hash-checked (against the sha256 the release publishes for this file, if any) and read
        # once; its first-use hash is recorded only once the release converts (install)
        file_card = replace(card, weights_sha256=release.sha256[index] if index < len(release.sha256) else None)
        digest, obj = load_checked(file_card, path, release_source(release), what=what, allow=allow,
                                   name=release.files[index])  # a renamed download is still this file
        part = _renamed(_tensors(obj, release, path), release,
                        release.prefixes[index] if index < len(release.prefixes) else "", path)
        twice = sorted(set(part) & set(state))
        if twice:
            raise ReleaseError(f"release {release.name}: {path} repeats key(s) of an earlier file: "
                               f"{name_some(twice, SHOWN)}")
        state.update(part)
        files.append(ReleaseFile(release.files[index], Path(path), digest))
    if release.convert is not None:  # the family's own mapping of the flat dict onto the detector's keys
        module, _, function = release.convert.partition(":")
        try:
            convert = getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError) as exc:
            raise ModelError(f"release {release.name}: its converter {release.convert} cannot be loaded "
                             f"({exc})") from exc
        try:
            state = convert(state, card)
        except ReleaseError:
            raise
        except ModelError as exc:  # the family's own check of the layout: the user's file, exit 2
            raise ReleaseError(f"release {release.name} ({', '.join(str(f.path) for f in files)}): {exc}") from exc
    return state, files


def install(det: Detector, card: DetectorCard, release: Release, given: Sequence[Path] = ()) -> Path:
    """The diffzoo checkpoint of ``release`` for ``det`` (its cache folder), converted from the
    release's files at first use; ``given``: ``--checkpoint`` paths to those files."""
    paths = release_paths(card, release, given)
    if paths is None:  # the release as diffzoo converted it: loading it checks its detector, task and sha256
        return Path(given[0]).expanduser()
    # each file's first use is recorded once the release converted: a file that does not fit the detector is
    # never taken for the release's, so the right one put there later loads
    with built_from():
        return _converted(det, card, release, paths)


def _converted_dir(card: DetectorCard, release: Release, key: str) -> Path:
    """The cache folder of ``release`` converted from the files whose sha256 ``key`` hashes ("*": any of them)."""
    return cache_dir(card.name, f"released-{release.name}-{key}")


def _converted(det: Detector, card: DetectorCard, release: Release, paths: Sequence[Path]) -> Path:
    """The cache folder of ``release`` converted from its files ``paths`` (converted now, unless it is there)."""
    import tempfile

    from safetensors import safe_open

    state, files = read_release(card, release, paths)
    folder = _converted_dir(card, release, stable_hash({"card": card.fingerprint(), "release": release.name,
                                                        "files": [f.sha256 for f in files]}))
    if (folder / WEIGHTS_FILE).is_file() and (folder / META_FILE).is_file():
        try:
            verify_weights(folder / WEIGHTS_FILE, folder / META_FILE, read_meta(folder / META_FILE))
            return folder  # these very files converted (the key holds their sha256)
        except ModelError:  # a copy derived from the release files, which were just verified: made again
            log.warning("%s: the converted release %s in %s is damaged (its weights no longer match its card); "
                        "converting it again", card.name, release.name, folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    # the model's own keys and card, as it saves them (a dot-folder: a killed run's is swept)
    with tempfile.TemporaryDirectory(prefix=f".{folder.name}.", dir=folder.parent) as scratch:
        det.save(Path(scratch), extra={})
        meta = read_meta(Path(scratch) / META_FILE)
        with safe_open(str(Path(scratch) / WEIGHTS_FILE), framework="pt") as fh:
            reference = {k: fh.get_tensor(k).to("meta") for k in fh.keys()}  # shapes and dtypes, no values held
            for key in release.built:  # a constant of the model's class, which the release does not hold
                if key in reference and key not in state:
                    state[key] = fh.get_tensor(key)
    problem = describe_mismatch(reference, state, limit=SHOWN)  # the detector's own keys, shapes and kinds, strictly
    if problem:
        raise ReleaseError(f"release {release.name} ({', '.join(str(f.path) for f in files)}) does not fit the "
                           f"detector: {problem}")
    bad = nonfinite(state)  # the authors' file, not a training here: never cached or scored
    if bad:
        raise ReleaseError(f"release {release.name} ({', '.join(str(f.path) for f in files)}) holds NaN or inf "
                           f"weights ({name_some(bad, SHOWN)}): the file is damaged or not the release; replace it "
                           f"with the file from {release.source}")
    meta["release"] = release_record(release, files)
    save_checkpoint(folder, {k: state[k] for k in reference}, meta)
    log.info("%s: release %s converted once to %s", card.name, release.name, folder)
    return folder


def release_record(release: Release, files: Sequence[ReleaseFile]) -> dict[str, Any]:
    """What a checkpoint card and every record say of the release its weights are: the name,
    where it is published, what it was trained on, and each original file with its sha256."""
    return {"name": release.name, "source": release.source, "trained_on": release.trained_on,
            "protocol": release.protocol, "files": [{"name": f.name, "sha256": f.sha256} for f in files]}
