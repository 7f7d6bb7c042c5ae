"""The diffusers class a card or a tiny build names, looked up without torch's import-time warning.

Kolors' ChatGLM module scripts a helper when it is first imported, and torch warns that
``torch.jit.script`` is deprecated: every lookup of a diffusers class goes through
:func:`diffusers_class`, so whichever comes first (a LoRA check, a load, a tiny build) keeps
that warning from the user.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any


def diffusers_class(name: str, module: str = "diffusers") -> Any:
    """``module``'s attribute ``name`` (diffusers imports lazily: this may import it), or None."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)
        return getattr(importlib.import_module(module), name, None)
