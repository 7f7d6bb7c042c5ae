"""Errors raised by diffzoo library code.

Every error a user can cause derives from :class:`DiffzooError`; the CLI turns
one into a single line (the message) and a non-zero exit code.  Messages name
the thing that is wrong and, where there is one, the fix.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager


def name_some(items: Sequence[str], limit: int = 3, sep: str = ", ") -> str:
    """The first ``limit`` of ``items``, and how many more there are (``a, b, c and 2 more``)."""
    return sep.join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def did_you_mean(name: str, choices: Sequence[str], n: int = 1) -> str:
    """`` Did you mean 'x'?`` (``'x' or 'y'`` for up to ``n``) naming the ``choices`` closest to
    ``name`` (:func:`difflib.get_close_matches`, case ignored: ``ALL`` finds ``all``), those that
    hold it whole first (``mvss`` finds ``benco.mvss-net``), those starting with it before those
    holding it further in (``seg``: ``segformer``, then ``mmseg``); "" when none is close enough."""
    by_lower = {c.lower(): c for c in reversed(choices)}  # the first of choices equal but for case wins
    key = str(name).lower()
    if key in by_lower:  # equal but for case: that one alone
        return f" Did you mean {by_lower[key]!r}?"
    holding = sorted((c for c in by_lower if len(key) >= 3 and key in c), key=lambda c: (not c.startswith(key), len(c)))
    close = difflib.get_close_matches(key, list(by_lower), n=n, cutoff=0.6)
    named = [by_lower[c] for c in dict.fromkeys(holding + close)][:n]
    return f" Did you mean {' or '.join(map(repr, named))}?" if named else ""


def did_you_mean_each(names: Iterable[str], choices: Sequence[str]) -> str:
    """`` NAME: Did you mean 'x'?`` for each of ``names`` that one of ``choices`` is close to."""
    return "".join(f" {name}:{hint}" for name in names if (hint := did_you_mean(name, choices)))


class DiffzooError(Exception):
    """Base class of every error diffzoo raises on purpose.

    ``exit_code``: 2 for errors the user can fix by changing the command or
    its inputs (usage, configuration, names, a path that is not there:
    :func:`not_found`), 1 for everything else.
    """

    exit_code = 1

    def __reduce__(self):
        # Errors cross process boundaries (DataLoader workers, torchrun):
        # rebuild from the message and attributes, not by calling __init__,
        # whose arguments differ from subclass to subclass.
        return _rebuild, (type(self), self.args, dict(self.__dict__))


def _rebuild(cls: type[DiffzooError], args: tuple, state: dict) -> DiffzooError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


def not_found(error: DiffzooError) -> DiffzooError:
    """``error``, saying that a path the user named is not there (or holds not what it must), as
    the usage error it is: exit 2, as click's own "does not exist" (the fix is another path on the
    command line)."""
    error.exit_code = 2
    return error


class UnknownNameError(DiffzooError, KeyError):
    """A detector/suite/dataset/... name that is not registered."""

    exit_code = 2

    def __init__(self, kind: str, name: str, available: Iterable[str]):
        self.kind, self.name = kind, name
        self.available = sorted(set(available))  # a family that is also an entry's name is listed once
        hint = did_you_mean(name, self.available, n=3)
        shown = ", ".join(self.available[:20]) + (" ..." if len(self.available) > 20 else "")
        blank = not str(name).strip()  # `--detector "$DET"` with DET unset: no name, not a wrong one
        said = f"no {kind} given: {name!r} (an unset shell variable?)" if blank else f"unknown {kind} {name!r}"
        super().__init__(f"{said}.{hint} Available: {shown or '(none)'}; see `diffzoo list {kind}s`.")

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


class RegistryError(DiffzooError):
    """A registration conflict (duplicate name) or a bad registry entry."""


class PluginError(DiffzooError):
    """A plugin failed to import or raised inside a hook."""


def plugins_bug(what: str, exc: BaseException) -> BaseException:
    """``exc``, raised by a plugin's code (``what``: which, e.g. "detector 'x' from plugin 'p': its
    fit"), as diffzoo reports it: a DiffzooError keeps its own words and an OSError its path (the
    CLI names it), anything else is the plugin's bug, a PluginError naming ``what``, never an
    "internal error" (a ``sys.exit()`` too: never a run's silent end)."""
    if isinstance(exc, (DiffzooError, OSError)) or not isinstance(exc, (Exception, SystemExit)):
        return exc
    error = PluginError(f"{what} raised {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


@contextmanager
def plugin_code(what: str) -> Iterator[None]:
    """Run a plugin's code; what it raises is reported as :func:`plugins_bug` says."""
    try:
        yield
    except (Exception, SystemExit) as exc:
        error = plugins_bug(what, exc)
        if error is exc:
            raise
        raise error from exc


class DataError(DiffzooError):
    """A dataset, image or mask that cannot be used as it is."""


class CorruptSampleError(DataError):
    """One sample is unreadable (corrupt, truncated, inconsistent).

    Runs skip and count these unless ``--strict`` is given.  ``kind`` is a
    short, stable category of the reason (``corrupt``, ``too-large``,
    ``mask-size``, ...; see docs/reliability.md) that records count skipped
    samples by; ``reason`` is the full sentence naming the file.
    """

    def __init__(self, sample_id: str, reason: str, kind: str = "corrupt"):
        self.sample_id, self.reason, self.kind = sample_id, reason, kind
        super().__init__(f"sample {sample_id}: {reason}")


class ModelError(DiffzooError):
    """A model or checkpoint that cannot be built or loaded."""


_STACKTRACE_NOTE = re.compile(
    r"\s*\([^()]*(?:stack ?trace|traceback) above[^()]*\)"  # "... (see the root cause in the stacktrace above)"
    r"|[,;]\s*[^,;.()]*(?:stack ?trace|traceback) above[^,;.()]*"  # "..., see the stacktrace above"
    r"|(?<=[.!?])\s+[^.!?]*(?:stack ?trace|traceback) above[^.!?]*[.!?]?",  # "... . See the traceback above."
    re.IGNORECASE)
"""A hub library's pointer to a stack trace above its message: the CLI prints one line and no stack trace."""


def hub_fetch(*repos: str) -> str:
    """How to bring hub repositories ``repos`` to this machine: ``hf download`` elsewhere, then
    its hub cache copied into the one this machine reads (``HF_HUB_CACHE``, else ``HF_HOME/hub``)."""
    try:
        from huggingface_hub import constants

        here = str(constants.HF_HUB_CACHE)
    except ImportError:  # no hub library: its default place
        here = "~/.cache/huggingface/hub"
    return (" and ".join(f"`hf download {repo}`" for repo in repos)
            + f", then copy that machine's hub cache (~/.cache/huggingface/hub) into {here} here "
            "(HF_HUB_CACHE or HF_HOME moves it)")


NO_PRETRAINED = "or pass --no-pretrained to train from random initialisation"
"""The way round pretrained weights that cannot be had, as a WeightsUnavailableError's ``detail`` ends."""


class WeightsUnavailableError(ModelError):
    """Weights are not cached locally and cannot be downloaded (offline).  ``detail`` may hold
    the hub library's own message, less its pointer to a stack trace (see _STACKTRACE_NOTE).
    ``downloaded``: False for weights diffzoo never downloads (released files): then the message
    says only that they are missing and ``fetch``, how to get them."""

    def __init__(self, what: str, source: str, detail: str = "", fetch: str | None = None,
                 downloaded: bool = True):
        detail = _STACKTRACE_NOTE.sub("", detail)
        how = fetch or hub_fetch(source)
        msg = (
            f"{what}: weights {source!r} are not in the local cache and could not be "
            f"downloaded. Fetch them on a machine with network access, e.g. {how}"
        ) if downloaded else f"{what}: weights {source!r} are missing (diffzoo downloads none): {how}"
        super().__init__(msg + (f" ({detail})" if detail else ""))


class WeightsFileError(ModelError):
    """A weights file diffzoo refuses to load (pretrained, released, or a checkpoint's): not a
    regular file, not a plain tensor file (a pickle of other objects, never run), or unreadable
    as weights.  Names the file, the reason and where the right file comes from (a user error:
    exit 2)."""

    exit_code = 2


class ConfigError(DiffzooError):
    """Inconsistent options or configuration (a user error: exit 2)."""

    exit_code = 2


class EnvVarError(ConfigError):
    """A bad value of an environment variable (``DIFFZOO_MAX_PIXELS=abc``): named as the
    environment's, never as an option's or a ``--config`` file's that a check compared with it."""


def no_value(shown: str) -> ConfigError:
    """The refusal of an option ``shown`` as given (``--flag KEY=``) with an empty value: an unset
    shell variable, never a value (pathlib reads ``""`` as the current folder)."""
    return ConfigError(f"{shown} gives no value (an unset shell variable?); give one or leave the option out")


class DetectorError(DiffzooError):
    """A detector broke its protocol: an output of the wrong shape, batch,
    channel count, dtype or range, a missing value, or a method that does not
    behave as docs/plugins.md says.  Names the detector, the sample, what was
    expected and what came back."""

    def __init__(self, detector: str, problem: str, *, sample_id: str | None = None,
                 expected: str | None = None, got: str | None = None):
        self.detector, self.sample_id = detector, sample_id
        self.problem, self.expected, self.got = problem, expected, got
        where = f" on sample {sample_id}" if sample_id is not None else ""
        detail = "".join(f"{part} {value}" for part, value in (("; expected", expected), (", got", got))
                         if value is not None)
        super().__init__(f"detector {detector!r}{where}: {problem}{detail}")


class StorageError(DiffzooError):
    """Writing failed because the disk (or quota) is full: names the path and
    the free space (a user error: exit 2)."""

    exit_code = 2


class RecordError(DiffzooError):
    """A result record that is invalid or cannot be written; ``problems``
    lists each schema violation when there are several."""

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems or [message])


class TrainingStopped(DiffzooError):
    """A training stopped by SIGINT or SIGTERM after step ``step``; its resume
    state is saved (``resumable``), so the same command continues it.  Not a
    failure of diffzoo's: the CLI prints the message as it is (no ``error:``)
    and exits 128 + the signal number, 130 for SIGINT, 143 for SIGTERM."""

    def __init__(self, step: int, total: int, signum: int, resumable: bool):
        import signal

        self.step, self.total, self.signum, self.resumable = step, total, signum, resumable
        self.exit_code = 128 + signum
        name = signal.Signals(signum).name
        then = ("run the same command to resume" if resumable else
                "no resume state is kept here (--save-every 0): the same command trains again "
                "from the start")
        super().__init__(f"stopped at step {step} of {total} ({name}); {then}")
