"""``--device``: the one place every command turns a device name into a torch device."""

from __future__ import annotations

import re
from typing import Any

import torch

from diffzoo.harness.core.errors import ConfigError

DEVICE_FORMS = "auto, cpu, cuda, cuda:N (N = the GPU's index) or mps"
_DEVICE = re.compile(r"auto|cpu|mps|cuda(?::(\d{1,4}))?")


def device_form(device: Any) -> re.Match[str]:
    """``device`` read by the forms in :data:`DEVICE_FORMS` (whether or not this machine has
    it); a ConfigError naming the value for any other."""
    match = _DEVICE.fullmatch(device) if isinstance(device, str) else None
    if match is None:
        raise ConfigError(f"--device {device!r} is not a device diffzoo can use; give one of {DEVICE_FORMS}")
    return match


def resolve_device(device: str) -> torch.device:
    """The torch device that ``--device`` names, checked to exist here.

    ``auto`` is cuda if available, else cpu.  Anything but the forms in
    :data:`DEVICE_FORMS`, or a device this machine lacks, is a ConfigError
    naming the value (the one place every command resolves ``--device``).
    """
    match = device_form(device)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(f"--device {device}: CUDA is not available on this machine; use --device cpu")
        count = torch.cuda.device_count()
        if match[1] is not None and int(match[1]) >= count:
            raise ConfigError(f"--device {device}: this machine has {count} CUDA device(s), "
                              f"cuda:0 to cuda:{count - 1}")
    if device == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("--device mps: MPS is not available on this machine; use --device cpu")
    return torch.device(device)
