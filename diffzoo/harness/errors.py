"""Errors raised by diffzoo library code.

Every error a user can cause derives from :class:`DiffzooError`; the CLI turns
one into a single line (the message) and a non-zero exit code.  Messages name
the thing that is wrong and, where there is one, the fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class DiffzooError(Exception):
    """Base class of every error diffzoo raises on purpose."""

    exit_code = 1


class UnknownNameError(DiffzooError, KeyError):
    """A detector/suite/dataset/... name that is not registered."""

    exit_code = 2

    def __init__(self, kind: str, name: str, available: Iterable[str]):
        self.kind, self.name = kind, name
        self.available = sorted(available)
        close = difflib.get_close_matches(name, self.available, n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        shown = ", ".join(self.available[:20]) + (" ..." if len(self.available) > 20 else "")
        super().__init__(
            f"unknown {kind} {name!r}.{hint} Available: {shown or '(none)'}; "
            f"see `diffzoo list {kind}s`."
        )

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


class RegistryError(DiffzooError):
    """A registration conflict (duplicate name) or a bad registry entry."""


class PluginError(DiffzooError):
    """A plugin failed to import or raised inside a hook."""


class DataError(DiffzooError):
    """A dataset, image or mask that cannot be used as it is."""


class CorruptSampleError(DataError):
    """One sample is unreadable (corrupt, truncated, inconsistent).

    Runs skip and count these unless ``--strict`` is given.
    """

    def __init__(self, sample_id: str, reason: str):
        self.sample_id, self.reason = sample_id, reason
        super().__init__(f"sample {sample_id}: {reason}")


class ModelError(DiffzooError):
    """A model or checkpoint that cannot be built or loaded."""


class WeightsUnavailableError(ModelError):
    """Weights are not cached locally and cannot be downloaded (offline)."""

    def __init__(self, what: str, source: str, detail: str = "", fetch: str | None = None):
        how = fetch or (f"`huggingface-cli download {source}`, then copy the HF cache "
                        "(~/.cache/huggingface) here or set HF_HOME")
        msg = (
            f"{what}: weights {source!r} are not in the local cache and could not be "
            f"downloaded. Fetch them on a machine with network access, e.g. {how}"
        )
        super().__init__(msg + (f" ({detail})" if detail else ""))


class ConfigError(DiffzooError):
    """Inconsistent options or configuration."""


class RecordError(DiffzooError):
    """A result record that is invalid or cannot be written; ``problems``
    lists each schema violation when there are several."""

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems or [message])
