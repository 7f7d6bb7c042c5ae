"""Name registry for detectors, generators, datasets, suites and distortions.

Entries are lazy (``"module:attr"`` strings resolved on first use), names are
``family.tag`` with one default tag per family, listing takes fnmatch
wildcards with natural sort, and unknown names get a did-you-mean message.
"""

from __future__ import annotations

import builtins
import fnmatch
import importlib
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from diffzoo.harness.core.cards import family_of
from diffzoo.harness.core.errors import PluginError, RegistryError, UnknownNameError
from diffzoo.harness.core.types import SLICE_SEPARATOR, SLICED

log = logging.getLogger(__name__)

KINDS = ("detector", "generator", "dataset", "suite", "distortion")


def natural_key(name: str) -> list[Any]:
    """Sort "b10" after "b2" (timm-style natural sort)."""
    # Between numbers, text order ("-" before "."): every character counts, so no two names tie. The leaderboard's
    # version_order reads "." and "-" as separators only (v2.1 before v2-rc1); one key would reorder one's lists.
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


@dataclass
class Entry:
    kind: str
    name: str
    target: Any  # "module:attr" or the object itself
    source: str  # plugin that registered it
    card: Any = None
    default: bool = False
    description: str = ""
    _loaded: Any = field(default=None, repr=False)

    @property
    def family(self) -> str:
        return family_of(self.name)

    def load(self) -> Any:
        """Import and return the target object (cached)."""
        if self._loaded is None:
            self._loaded = resolve_target(self.target, f"{self.kind} {self.name!r}", self.source)
        return self._loaded


def resolve_target(target: Any, what: str, source: str) -> Any:
    if not isinstance(target, str):
        return target
    module_name, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except (Exception, SystemExit) as exc:  # import errors of optional deps included; a sys.exit() too
        raise PluginError(
            f"{what} from plugin {source!r} cannot be loaded ({target}): "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return obj


class Registry:
    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}

    def copy(self) -> Registry:
        """A registry holding the same entries (entries are shared, the name tables are not)."""
        other = Registry()
        other._entries = {k: dict(v) for k, v in self._entries.items()}
        return other

    def _kind(self, kind: str) -> dict[str, Entry]:
        if kind not in self._entries:
            raise RegistryError(f"unknown registry kind {kind!r}; kinds: {', '.join(KINDS)}")
        return self._entries[kind]

    def add(
        self,
        kind: str,
        name: str,
        target: Any,
        *,
        card: Any = None,
        default: bool = False,
        description: str = "",
        source: str = "?",
    ) -> Entry:
        entries = self._kind(kind)
        if not name or name != name.strip() or " " in name or SLICE_SEPARATOR in name:
            raise RegistryError(f"{kind} name {name!r} from plugin {source!r} is not a valid name: a name is not empty "
                                f"and holds no space and no {SLICE_SEPARATOR!r}, {SLICED}")
        if name in entries:
            raise RegistryError(
                f"{kind} {name!r} is registered twice: by plugin {entries[name].source!r} "
                f"and by plugin {source!r}; rename one or uninstall a plugin"
            )
        if kind == "detector" and getattr(card, "name", None) != name:  # records, plans and checkpoints name the card
            raise RegistryError(f"detector {name!r} from plugin {source!r} is registered "
                                + ("without card=: a detector needs its DetectorCard" if card is None else
                                   f"with the card of {getattr(card, 'name', None)!r}: register it as that name, "
                                   "or give it a card of its own (dataclasses.replace(card, name=...))"))
        entry = Entry(kind, name, target, source, card, default, description or getattr(card, "description", ""))
        if default and (other := self._default_of(kind, entry.family)) is not None:
            raise RegistryError(
                f"{kind} family {entry.family!r} has two defaults: {other.name!r} "
                f"(plugin {other.source!r}) and {name!r} (plugin {source!r})"
            )
        entries[name] = entry
        return entry

    def _default_of(self, kind: str, family: str) -> Entry | None:
        return next((e for e in self._entries[kind].values() if e.default and e.family == family), None)

    def resolve(self, kind: str, name: str) -> str:
        """Full registered name for ``name`` (a bare family means its default tag)."""
        entries = self._kind(kind)
        if name in entries:
            return name
        if (default := self._default_of(kind, name)) is not None:
            return default.name
        family = [e.name for e in entries.values() if e.family == name]
        if len(family) == 1:
            return family[0]
        raise UnknownNameError(kind, name, list(entries) + sorted({e.family for e in entries.values()}))

    def get(self, kind: str, name: str) -> Entry:
        return self._kind(kind)[self.resolve(kind, name)]

    def has(self, kind: str, name: str) -> bool:
        try:
            self.resolve(kind, name)
        except UnknownNameError:
            return False
        return True

    def list(self, kind: str, pattern: str = "*") -> list[Entry]:
        """Entries whose name (or family) matches ``pattern`` (fnmatch), in natural name order."""
        return sorted((e for e in self._kind(kind).values()
                       if fnmatch.fnmatchcase(e.name, pattern) or fnmatch.fnmatchcase(e.family, pattern)),
                      key=lambda e: natural_key(e.name))

    def expand(self, kind: str, spec: str) -> builtins.list[Entry]:  # `list` is the method above
        """``all`` -> everything; a wildcard -> its matches; a name -> that entry.

        Comma-separated specs are expanded one by one, duplicates dropped.
        """
        seen: dict[str, Entry] = {}
        for part in (p.strip() for p in spec.split(",") if p.strip()):
            if part == "all":
                found = self.list(kind)
            elif any(c in part for c in "*?["):
                found = self.list(kind, part)
                if not found:
                    raise UnknownNameError(kind, part, self._kind(kind))
            else:
                try:
                    found = [self.get(kind, part)]
                except UnknownNameError as exc:  # here "all" is a name too, and the hint may name it
                    raise UnknownNameError(kind, part, [*exc.available, "all"]) from None
            for e in found:
                seen.setdefault(e.name, e)
        if not seen:
            raise UnknownNameError(kind, spec, self._kind(kind))
        return list(seen.values())
