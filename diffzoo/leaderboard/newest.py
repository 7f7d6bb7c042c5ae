"""The one rule for "the newest record": the latest ``environment.date``
(ISO 8601 text, compared as text; a record without one counts as oldest);
of records with equal dates, the one that comes later.  Every place that
keeps one record out of several (a table row per run, the summary's and the
paper report's cell per case, ``leaderboard diff``'s row per detector, a
detector's card and robustness points on the site) asks :func:`newest`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from diffzoo.harness.records.document import ResultRecord

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


def record_date(record: ResultRecord) -> str:
    """When ``record`` was made ('' when it does not say)."""
    return record.body.environment.date or ""


def newest(items: Iterable[T], key: Callable[[T], K], date: Callable[[T], str] = record_date) -> dict[K, T]:
    """The newest item per ``key(item)``, keys in the order they first
    appear; ``date(item)`` says when an item was made (records: their date)."""
    out: dict[K, T] = {}
    for item in items:
        k = key(item)
        if k not in out or date(item) >= date(out[k]):
            out[k] = item
    return out


def newest_record(records: Iterable[ResultRecord]) -> ResultRecord:
    """The newest of ``records`` (at least one)."""
    return newest(records, key=lambda _: None)[None]
