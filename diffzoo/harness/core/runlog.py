"""The log a long-running command leaves beside its outputs, ``logs/<UTC time>-<name>.log``.

:class:`RunLog` keeps what the command tells it (:meth:`RunLog.note`) and, attached to the
``diffzoo`` logger (:meth:`RunLog.attached`), every line that logger passes.  Lines wait in
memory until the command's folder is its own (``where`` gives the file then, None before: a
command refused before it claims its folder leaves none), then each is appended as it comes,
so a killed command keeps all it said.  A log that cannot be written (a foreign ``logs/``, a
full disk) stops being written, with a warning; the command goes on.
"""

from __future__ import annotations

import datetime as _dt
import logging
import platform
import shlex
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from diffzoo.harness.core.errors import DiffzooError
from diffzoo.harness.core.fsutil import append_line
from diffzoo.harness.core.visible import VisibleFormatter
from diffzoo.version import __version__

log = logging.getLogger(__name__)

LOGS_DIR = "logs"


_SAID: set[tuple[str, str]] = set()


def warn_once(logger: logging.Logger, key: str, msg: str, *args: object) -> None:
    """``logger.warning(msg, *args)`` the first time this process says it of ``key`` (a path, a
    dataset): a fact found by every adapter that looks, or by every pass, is one line."""
    if (logger.name, key) not in _SAID:
        _SAID.add((logger.name, key))
        logger.warning(msg, *args)


def log_relpath(name: str) -> str:
    """``logs/<UTC time>-<name>.log``; the time to the microsecond, so two commands never share a log."""
    return f"{LOGS_DIR}/{_dt.datetime.now(_dt.UTC).strftime('%Y%m%dT%H%M%S.%fZ')}-{name}.log"


class RunLog(logging.Handler):
    """The log at ``path``, written once ``where()`` gives the file to write (see the module)."""

    def __init__(self, path: Path, where: Callable[[], Path | None], level: int = logging.INFO):
        super().__init__(level)
        self.path, self.where = Path(path), where
        self.target: Path | None = None
        self.pending: list[str] = []
        self.broken = False
        # names from the data are written as their visible characters: none forges or splits a line
        self.setFormatter(VisibleFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if self.broken:
            return
        try:
            self.pending.append(self.format(record))
            if self.target is None and (target := self.where()) is not None:
                self.target = target
            if self.target is not None:
                append_line(self.target, "\n".join(self.pending))
                self.pending = []
        except (DiffzooError, OSError) as exc:  # a foreign logs/ (--force), a full disk: the command goes on
            self.broken = True
            log.warning("the log %s is not written from here on: %s", self.path, exc)

    def note(self, message: str, level: int = logging.INFO, exc: BaseException | None = None) -> None:
        """``message`` into this log alone (never the console: the caller prints its own)."""
        exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
        self.handle(logging.LogRecord("diffzoo.run", level, __file__, 0, message, None, exc_info))

    def note_command(self) -> None:
        """The first line: diffzoo's version, the host, the folder and the command line."""
        self.note(f"diffzoo {__version__} (Python {platform.python_version()}) on {socket.gethostname()}, in "
                  f"{Path.cwd()}: {shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])}")

    def _terminated(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM (a scheduler's time limit) said, in this log and on the console (a process that
        dies of it silently leaves its user guessing), then left to end the process as it would."""
        logging.getLogger("diffzoo.run").error("stopped: SIGTERM received")  # reaches this log: it is attached
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)

    @contextmanager
    def attached(self) -> Iterator[RunLog]:
        """This log on the ``diffzoo`` logger for the block; an exception leaving the block is
        logged with its traceback, a Ctrl-C as such, a SIGTERM before the process ends (only where
        nothing else handles SIGTERM: a training's own handler stops it as it documents)."""
        logger = logging.getLogger("diffzoo")
        logger.addHandler(self)
        watch = threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        if watch:
            signal.signal(signal.SIGTERM, self._terminated)
        try:
            yield self
        except KeyboardInterrupt:
            self.note("interrupted (Ctrl-C)", logging.ERROR)
            raise
        except BaseException as exc:  # a bug's traceback is kept; a user's error is its message
            self.note(f"stopped: {type(exc).__name__}: {exc}", logging.ERROR,
                      None if isinstance(exc, DiffzooError) else exc)
            raise
        finally:
            if watch and signal.getsignal(signal.SIGTERM) == self._terminated:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
            logger.removeHandler(self)
