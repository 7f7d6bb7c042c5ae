"""Open a dataset path with whichever in-tree adapter recognises its layout.

The runner's registry also offers adapters that plugins register; this
function only knows the ones in this package, in a fixed order (DiffSeg30k
first, since it also claims parquet/arrow with image and mask columns).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DataError
from ..protocols import Dataset
from .diffseg30k import DiffSeg30kDataset
from .generic import JsonListDataset, TpGtDataset
from .hfsource import is_hub_id

ADAPTERS: tuple[type[Dataset], ...] = (DiffSeg30kDataset, TpGtDataset, JsonListDataset)

LAYOUTS = (
    "DiffSeg30k: train.zip, a folder of <id>.image.png + <id>.mask.png (or with train_copy/), "
    "a parquet/arrow/save_to_disk dataset with image and mask columns, or the hub id "
    "Chaos2629/Diffseg30k; "
    "Tp/ + Gt/ (+ Au/) folders; "
    'a JSON list of [image, mask | "Negative"]'
)


def open_dataset_path(path: str | os.PathLike, **options: Any) -> Dataset:
    """Sniff ``path`` and open it with the first adapter that recognises it.

    ``options`` go to the adapter's constructor; one it does not take is a
    :class:`ConfigError` naming the option and the adapter.
    """
    text = os.fspath(path)
    if not Path(text).exists() and not is_hub_id(text):
        raise DataError(f"dataset path {path} does not exist")
    for adapter in ADAPTERS:
        if adapter.sniff(path):  # type: ignore[attr-defined]
            accepted = inspect.signature(adapter.__init__).parameters
            unknown = sorted(k for k in options if k not in accepted)
            if unknown:
                raise ConfigError(
                    f"{adapter.__name__} (for {path}) does not take option(s) {', '.join(unknown)}"
                )
            return adapter(path, **options)  # type: ignore[call-arg]
    raise DataError(f"{path}: no dataset adapter recognises this layout. Recognised: {LAYOUTS}")
