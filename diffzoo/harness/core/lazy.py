"""Names a package exports but imports on first use (PEP 562 module ``__getattr__``).

Importing a package runs its ``__init__``, and so does importing any of its
submodules: a package that re-exports every adapter or metric would load
numpy, Pillow and the rest for ``diffzoo --help`` and ``diffzoo list``.
Such a package maps each exported name to the module that defines it, and
that module is imported only when the name is first read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``names[name]`` is the module
    (absolute, or relative to ``package`` when it starts with '.') that
    defines ``name``."""

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(names[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
