"""The record store: a folder of ResultRecord JSON files, one per record,
content-addressed and written atomically (temp file + rename)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..harness.records import ResultRecord


class RecordStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.records_dir = self.root / "records"

    def add(self, record: ResultRecord) -> Path:
        record.validate()
        return record.write(self.records_dir)

    def __iter__(self) -> Iterator[ResultRecord]:
        for path in sorted(self.records_dir.glob("*.json")):
            yield ResultRecord.read(path)
