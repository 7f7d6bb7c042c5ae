"""The datasets under a folder: ``diffzoo data find ROOT`` and ``--eval-dataset catalog:ROOT``.

ROOT is walked breadth-first to :data:`MAX_DEPTH` levels.  Each folder (and each ``.zip``,
``.parquet`` or ``.arrow`` file) is offered to the registered adapters' ``sniff(path)`` in
name order by the loop ``--dataset PATH`` uses (:func:`~diffzoo.harness.run.factories.recognise`; a sniffer
that fails recognises nothing here), and a dataset recognised is opened by the adapter found:

- a folder an adapter recognises is a dataset and is not descended into (its subfolders are
  its splits or its parts);
- folder links below ROOT are never followed (data/walk.py's rule: a link back up would loop
  for ever, one to ``/`` would walk the whole disk); ROOT itself may be one;
- a FIFO, socket or device is never opened (it may never end), nor offered to a sniffer;
- a folder or file no adapter recognises is not listed; :attr:`Catalog.passed` says why;
- a sniffer that raises anything else (a plugin's bug) recognises nothing there either: the
  path is passed over naming the adapter and its error, and the other adapters are still asked;
- an adapter that fails to open a dataset it recognised, whatever it raises but a ConfigError
  (an option it does not take), leaves that dataset in :attr:`Catalog.broken`;
- an empty ROOT is refused (ConfigError), never read as the current folder.

Each dataset's fingerprint comes from the digest cache (data/fingerprint.py), so a second
listing of unchanged data reads no image.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import ConfigError, DataError, DiffzooError, not_found
from diffzoo.harness.core.fsutil import file_kind
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.run.factories import folder_note, open_recognised, recognise, sniffing_adapters

log = logging.getLogger(__name__)

MAX_DEPTH = 3
"""How many folder levels below ROOT are looked at (ROOT is level 0)."""
FILE_SUFFIXES = (".zip", ".parquet", ".arrow")
"""Files offered to the sniffers one by one (a folder of them is offered as a folder too)."""


@dataclass
class CatalogEntry:
    """One dataset found: where, read by which adapter, and what it can evaluate."""

    path: Path
    adapter: str
    dataset: Dataset
    splits: dict[str, int]
    fingerprint: str
    evaluates: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "adapter": self.adapter, "name": self.dataset.name,
                "splits": self.splits, "fingerprint": self.fingerprint, "evaluates": list(self.evaluates)}


@dataclass
class Catalog:
    """:func:`find_datasets`'s answer: the datasets found, those recognised that could not be
    opened (path, the error), the paths passed over (path, why), and every path recognised
    (path, adapter name), opened or not."""

    root: Path
    entries: list[CatalogEntry] = field(default_factory=list)
    broken: list[tuple[Path, str]] = field(default_factory=list)
    passed: list[tuple[Path, str]] = field(default_factory=list)
    recognised: list[tuple[Path, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "datasets": [e.to_dict() for e in self.entries],
                "broken": [{"path": str(p), "error": why} for p, why in self.broken],
                "passed": [{"path": str(p), "why": why} for p, why in self.passed]}


def evaluates(dataset: Dataset) -> tuple[str, ...]:
    """What a dataset's labels can score: every adapter gives each sample a label map (a mask,
    or all background / all edited where the data says so), so ``binary`` pixels and ``image``
    verdicts; ``semantic`` (which editor) only where its label space names two editors or more."""
    return ("binary", "semantic", "image") if len(dataset.label_space.editors) > 1 else ("binary", "image")


def find_datasets(root: Path | str, depth: int = MAX_DEPTH, options: Mapping[str, Any] | None = None,
                  flag: str = "--dataset-option", *, open_found: bool = True) -> Catalog:
    """Every dataset the registered adapters recognise under ``root`` (see the module's rules),
    in breadth-first, name order; ``options``: adapter options for each (``flag`` names them
    in errors).  A ``root`` that does not exist, or is not a folder or a regular file, is a
    DataError; a dataset recognised but not opened is in :attr:`Catalog.broken`.  With
    ``open_found`` False nothing recognised is opened (no image is read): only
    :attr:`Catalog.recognised` is filled."""
    if not str(root).strip():  # Path("") is ".": an unset variable must not list the current folder
        raise ConfigError("no folder given to look for datasets in (an empty path): give ROOT, e.g. "
                          "`diffzoo data find DIR` or `--eval-dataset catalog:DIR` (`.` is this folder)")
    root = Path(os.path.expanduser(root))
    if not os.path.lexists(root):
        raise not_found(DataError(f"{root} does not exist: nothing to look for datasets in"))
    kind = file_kind(root)
    if kind is not None and kind != "a folder":
        raise not_found(DataError(f"{root}: cannot look for datasets in it: it is {kind}"))
    catalog = Catalog(root)
    adapters = sniffing_adapters()
    options = options or {}

    crashed: list[str] = []  # the sniffers that crashed on the path offered last

    def visit(path: Path) -> bool:
        """Offer ``path`` to the sniffers (one that fails recognises nothing); True when it is a
        dataset (listed or broken)."""
        crashed.clear()
        try:
            found = recognise(path, adapters, tolerate=(OSError, ValueError), crashed=crashed)
        except DataError as exc:  # a sniffer's layout, wrong in a way it names: said as a dataset not opened is
            catalog.broken.append((path, str(exc)))
            return True
        if found is None:
            return False
        catalog.recognised.append((path, found[0].name))
        if not open_found:
            return True
        try:
            ds = open_recognised(found, path, dict(options), flag)
            catalog.entries.append(CatalogEntry(path, found[0].name, ds, {s: len(ds.ids(s)) for s in ds.splits()},
                                                ds.fingerprint(), evaluates(ds)))
        except ConfigError:  # an option the adapter does not take: the user's to fix, said as is
            raise
        except Exception as exc:  # one dataset that does not open never ends the listing of the others
            name = found[0].name
            # the callers print each broken entry (find's "not opened", a run's note): said once, there
            log.info("%s: recognised as %s but not opened: %s", path, name, exc)
            what = "" if isinstance(exc, (DiffzooError, OSError)) else f"{type(exc).__name__}: "
            catalog.broken.append((path, f"{name}: {what}{exc}"))
        return True

    def passed(path: Path, why: str, failed: list[str]) -> tuple[Path, str]:
        """``path`` passed over for ``why``, naming the sniffers that crashed on it."""
        return path, "; ".join([why, *failed])

    if kind is None:  # a file: the dataset, or nothing
        if not visit(root):
            catalog.passed.append(passed(root, "no dataset adapter recognises this file", crashed))
        return catalog
    level = [root]
    for d in range(depth + 1):
        if not level:  # no folder left: a --depth past the tree's is never counted through
            break
        below: list[Path] = []
        for folder in level:
            if visit(folder):
                continue
            failed = list(crashed)  # its children's sniffing reuses ``crashed``
            try:
                children = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError as exc:
                if folder == root:  # nothing could be looked at: an error, not "no dataset found"
                    raise DataError(f"{root}: cannot list the folder ({exc.strerror or exc}): nothing to look "
                                    "for datasets in") from None
                catalog.passed.append(passed(folder, f"cannot list the folder ({exc.strerror or exc})", failed))
                continue
            subfolders, said = 0, len(catalog.passed)
            for child in children:
                path = Path(child.path)
                if child.name.startswith("."):
                    continue
                try:
                    linked, mode = child.is_symlink(), os.stat(child.path).st_mode  # follows a link
                except OSError:
                    catalog.passed.append((path, f"{file_kind(path)}: not followed"))
                    continue
                if stat.S_ISDIR(mode):
                    if linked:  # below ROOT a folder link may loop or leave the tree
                        catalog.passed.append((path, f"folder link to {os.path.realpath(path)} not followed (pass "
                                                     "it as ROOT or as a dataset path itself)"))
                    elif d == depth:
                        catalog.passed.append((path, f"deeper than {depth} levels below {root}: not looked at"))
                    else:
                        below.append(path)
                        subfolders += 1
                elif not stat.S_ISREG(mode):  # a FIFO, socket or device: opening it may never return
                    catalog.passed.append((path, f"{file_kind(path)}: never opened"))
                elif path.suffix.lower() in FILE_SUFFIXES and not visit(path):
                    catalog.passed.append(passed(path, "no dataset adapter recognises this file", crashed))
            catalog.passed.insert(said, passed(folder, "no dataset adapter recognises this folder; " + (
                "looked in its subfolders" if subfolders else "it has no subfolder to look in")
                + folder_note(folder, adapters), failed))
        level = below
    return catalog
