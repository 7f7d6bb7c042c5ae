"""Stopping a training on a signal: SIGINT (Ctrl-C) and SIGTERM (what SLURM and
other schedulers send before they preempt a job) end it cleanly.

While the shared training loop runs, :class:`StopSignals` replaces both
handlers with one that only notes the signal; the loop finishes the step it
is in, saves its resume state (:mod:`.resume`) and raises
:class:`~diffzoo.harness.core.errors.TrainingStopped`, which the CLI prints
as one line and turns into exit 130 (SIGINT) or 143 (SIGTERM), the codes a
shell gives a process those signals killed.  A second signal before the loop
has stopped is not waited for: SIGINT raises KeyboardInterrupt at once,
SIGTERM ends the process, as they would without diffzoo.  Under torchrun the
ranks agree on the stop (:func:`~diffzoo.harness.core.distributed.mean_and_any`)
so that every rank stops after the same step, and rank 0 saves the state of
every rank (:meth:`~.resume.Resume.save_all`) before any rank stops.

The loader's worker processes ignore both signals (:func:`quiet_worker`): a
Ctrl-C reaches every process of the terminal's group, and a worker killed by
it would break the batch the loop is waiting for; the workers end with the
loader.
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def quiet_worker(_worker_id: int) -> None:
    """A DataLoader ``worker_init_fn``: the worker ignores SIGINT and SIGTERM (the
    main process decides when training stops and ends its workers)."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


class StopSignals:
    """Notes SIGINT/SIGTERM while the ``with`` block runs (main thread only; in
    another thread nothing is installed and ``signum`` stays None)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def _note(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:  # the second one: do what the signal does without us
            self._restore()
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            signal.raise_signal(signum)
            return
        self.signum = signum
        log.info("%s received: the training stops after this step and saves its state",
                    signal.Signals(signum).name)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._previous[sig] = signal.signal(sig, self._note)
        return self

    def _restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def __exit__(self, *exc: Any) -> None:
        self._restore()
