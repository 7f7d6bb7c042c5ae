"""The DiffSeg30k paper's published numbers, read from ``paper_values.csv``.

The numbers are data, never literals in code: one CSV line per published
cell (table, row, task, setting, metric, value, note), lines starting with
``#`` are comments (the source).  A cell the CSV lacks is reported as not
found, never filled in.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from diffzoo.harness.core.errors import ConfigError

VALUES_FILE = Path(__file__).with_name("paper_values.csv")
FIELDS = ("table", "row", "task", "setting", "metric", "value", "note")
TABLES = ("2", "3", "4", "5", "6", "7", "8")
"""The paper tables the report reproduces (8b is diffzoo's own, not in the paper)."""
TASKS = ("binary", "semantic", "image")


@dataclass(frozen=True)
class PaperValue:
    table: str
    row: str
    task: str
    setting: str
    metric: str
    value: float
    note: str = ""

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.table, self.row, self.task, self.setting, self.metric)


def parse_values(text: str, source: str = "paper values") -> dict[tuple[str, str, str, str, str], PaperValue]:
    """Parse the CSV text; a malformed line is a :class:`ConfigError` naming
    its line number, the field and what was expected."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    if tuple(reader.fieldnames or ()) != FIELDS:
        raise ConfigError(f"{source}: the header must be {','.join(FIELDS)}, got {','.join(reader.fieldnames or [])}")
    out: dict[tuple[str, str, str, str, str], PaperValue] = {}
    for n, raw in enumerate(reader, 2):
        where = f"{source}, data line {n}"
        row = {k: (raw.get(k) or "").strip() for k in FIELDS}
        if row["table"] not in TABLES:
            raise ConfigError(f"{where}: table {row['table']!r} is not one of the paper's tables {', '.join(TABLES)}")
        if row["task"] not in TASKS:
            raise ConfigError(f"{where}: task {row['task']!r} must be one of {', '.join(TASKS)}")
        if not row["row"] or not row["metric"]:
            raise ConfigError(f"{where}: row and metric must not be empty")
        try:
            value = float(row["value"])
        except ValueError:
            raise ConfigError(f"{where}: value {row['value']!r} is not a number") from None
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ConfigError(f"{where}: value {value} must be a fraction in [0, 1] (write 50% as 0.5)")
        item = PaperValue(row["table"], row["row"], row["task"], row["setting"], row["metric"], value, row["note"])
        if item.key in out:
            raise ConfigError(f"{where}: a second value for table {item.table}, {item.row}, {item.task}, "
                              f"setting {item.setting!r}, {item.metric}")
        out[item.key] = item
    return out


def load_values(path: Path | None = None) -> dict[tuple[str, str, str, str, str], PaperValue]:
    """The paper's numbers, keyed by (table, row, task, setting, metric)."""
    path = Path(path) if path is not None else VALUES_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the paper's numbers from {path}: {exc}") from exc
    return parse_values(text, str(path))
