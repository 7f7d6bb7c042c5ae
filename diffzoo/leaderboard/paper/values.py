"""Published numbers as data: the DiffSeg30k paper's (``paper_values.csv``)
and the CSV reading every published-number file shares.

The numbers are data, never literals in code: one CSV line per published
cell, lines starting with ``#`` are comments (the source, what is absent and
why).  A cell a file lacks is reported as not printed, never filled in.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from diffzoo.harness.core.errors import ConfigError

VALUES_FILE = Path(__file__).with_name("paper_values.csv")
FIELDS = ("table", "row", "task", "setting", "metric", "value", "source")
TABLES = ("2", "3", "4", "5", "6", "7", "8")
"""The paper tables the report reproduces (8b is diffzoo's own, not in the paper)."""
TASKS = ("binary", "semantic", "image")

Key = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class PaperValue:
    table: str
    row: str
    task: str
    setting: str
    metric: str
    value: float
    source: str

    @property
    def key(self) -> Key:
        return (self.table, self.row, self.task, self.setting, self.metric)


def comment_lines(text: str) -> list[str]:
    """The ``#`` lines of a data file, without the ``#``."""
    return [line.lstrip()[1:].strip() for line in text.splitlines() if line.lstrip().startswith("#")]


def read_rows(text: str, source: str, fields: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
    """The data lines of a published-number CSV as (where, stripped fields);
    the header must be ``fields`` (a :class:`ConfigError` otherwise)."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    if tuple(reader.fieldnames or ()) != fields:
        raise ConfigError(f"{source}: the header must be {','.join(fields)}, got {','.join(reader.fieldnames or [])}")
    return [(f"{source}, data line {n}", {k: (raw.get(k) or "").strip() for k in fields})
            for n, raw in enumerate(reader, 2)]


def fraction(text: str, where: str) -> float:
    """A published number as a fraction in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{where}: value {text!r} is not a number") from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ConfigError(f"{where}: value {value} must be a fraction in [0, 1] (write 50% as 0.5)")
    return value


def read_text(path: Path, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {what} from {path}: {exc}") from exc


def parse_values(text: str, source: str = "paper values") -> dict[Key, PaperValue]:
    """Parse the CSV text; a malformed line is a :class:`ConfigError` naming
    its line number, the field and what was expected."""
    out: dict[Key, PaperValue] = {}
    for where, row in read_rows(text, source, FIELDS):
        if row["table"] not in TABLES:
            raise ConfigError(f"{where}: table {row['table']!r} is not one of the paper's tables {', '.join(TABLES)}")
        if row["task"] not in TASKS:
            raise ConfigError(f"{where}: task {row['task']!r} must be one of {', '.join(TASKS)}")
        if not row["row"] or not row["metric"] or not row["source"]:
            raise ConfigError(f"{where}: row, metric and source must not be empty")
        item = PaperValue(row["table"], row["row"], row["task"], row["setting"], row["metric"],
                          fraction(row["value"], where), row["source"])
        if item.key in out:
            raise ConfigError(f"{where}: a second value for table {item.table}, {item.row}, {item.task}, "
                              f"setting {item.setting!r}, {item.metric}")
        out[item.key] = item
    return out


def load_values() -> dict[Key, PaperValue]:
    """The paper's numbers, keyed by (table, row, task, setting, metric)."""
    return parse_values(read_text(VALUES_FILE, "the paper's numbers"), str(VALUES_FILE))
