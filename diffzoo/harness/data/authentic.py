"""Extra authentic (unedited) images added to a training split.

The DiffSeg30k paper added 5k authentic COCO images to training so that a
detector also sees images with nothing edited.  An :class:`AuthenticFolder`
is such a folder: every image gets an all-zero mask, ``base="real"``, no
turns, and an id ``authentic/<relative path>`` (:func:`.walk.canonical_name`).
The in-tree adapters take it as ``extra_authentic=``; :class:`WithAuthentic`
adds it to any other dataset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.fsutil import require_file
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.core.types import Sample, SampleMeta
from diffzoo.harness.data.fingerprint import combine, fingerprint_files
from diffzoo.harness.data.imageio import IMAGE_EXTENSIONS, is_image_file, read_labelled
from diffzoo.harness.data.splits import canonical_split
from diffzoo.harness.data.walk import files_in, ids_of, walk_files

AUTHENTIC_PREFIX = "authentic/"


def list_image_files(root: Path) -> list[Path]:
    """Entries named like images under ``root`` (recursively, hidden entries skipped), sorted;
    links as :mod:`.walk` says (a link loop named like an image is listed, and its sample
    skipped as not-a-file when loaded)."""
    return sorted(root / name for name in walk_files(root) if is_image_file(name))


def image_files_in(folder: Path) -> list[Path]:
    """Entries named like images directly in ``folder`` (not below it; hidden ones and folders
    skipped), sorted; a link that leads nowhere is listed (see :func:`list_image_files`)."""
    return files_in(folder, IMAGE_EXTENSIONS)


class AuthenticFolder:
    """A folder of authentic images, each one a sample with an all-zero mask."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.root = Path(path)
        require_file(self.root, "extra authentic folder", folder=True)
        self._files = ids_of(self.root, list_image_files(self.root), AUTHENTIC_PREFIX)
        if not self._files:
            raise DataError(
                f"extra authentic folder {self.root} holds no images "
                f"({', '.join(IMAGE_EXTENSIONS)})"
            )

    def ids(self) -> list[str]:
        return sorted(self._files)

    def owns(self, sample_id: str) -> bool:
        return sample_id in self._files

    def load(self, sample_id: str) -> Sample:
        try:
            path = self._files[sample_id]
        except KeyError:
            raise DataError(
                f"extra authentic folder {self.root} has no sample {sample_id!r}"
            ) from None
        image, label = read_labelled(path, None, sample_id)
        return Sample(image, label, SampleMeta(sample_id, base="real", source="extra_authentic"))

    def fingerprint(self) -> str:
        return fingerprint_files(self.root, self._files.values())

    def merge_into(
        self, splits: dict[str, list[str]], split: str, dataset_name: str
    ) -> dict[str, list[str]]:
        """A copy of ``splits`` with this folder's ids added to ``split``."""
        key = canonical_split(split)
        if key not in splits:
            raise DataError(
                f"cannot add extra authentic images to split {split!r} of {dataset_name}: "
                f"it has only {', '.join(sorted(splits)) or 'no splits'}"
            )
        clash = set(splits[key]) & set(self._files)
        if clash:
            raise DataError(
                f"extra authentic ids clash with {dataset_name} ids: {sorted(clash)[:3]}"
            )
        return {**splits, key: sorted(splits[key] + self.ids())}


class WithAuthentic(Dataset):
    """A view of ``base`` with an authentic folder added to one split (train)."""

    def __init__(
        self, base: Dataset, extra: AuthenticFolder | str | os.PathLike, split: str = "train"
    ) -> None:
        self.base = base
        self.extra = extra if isinstance(extra, AuthenticFolder) else AuthenticFolder(extra)
        self.split = canonical_split(split)
        self.name = base.name
        self.label_space = base.label_space
        base_ids = {s: base.ids(s) for s in base.splits()}
        self._train = self.extra.merge_into(base_ids, self.split, base.name)[self.split]

    def splits(self) -> list[str]:
        return self.base.splits()

    def ids(self, split: str) -> list[str]:
        if canonical_split(split) == self.split:
            return list(self._train)
        return self.base.ids(split)

    def load(self, sample_id: str) -> Sample:
        if self.extra.owns(sample_id):
            return self.extra.load(sample_id)
        return self.base.load(sample_id)

    def fingerprint(self) -> str:
        return combine(
            "with_authentic", self.base.fingerprint(), self.extra.fingerprint(), self.split
        )

    def describe(self) -> dict[str, Any]:
        d = dict(self.base.describe())
        d["extra_authentic"] = len(self.extra.ids())
        if isinstance(d.get("splits"), dict):
            d["splits"] = {**d["splits"], self.split: len(self._train)}
        return d
