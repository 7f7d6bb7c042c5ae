"""Where pretrained weights come from, and whether they may be fetched now."""

from __future__ import annotations

import os

_TRUE = {"1", "true", "yes", "on"}


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set now.

    huggingface_hub reads the variable once, at import; diffzoo reads it at
    call time and honours it for every weight source (HF hub, torchvision,
    smp), so an offline run never attempts a download.
    """
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE
