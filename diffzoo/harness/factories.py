"""The public factories: build detectors, generators and datasets by name.

They go through the plugin registry, so third-party plugins work the same way
as the in-tree ones.
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any

from .errors import DataError, PluginError, UnknownNameError
from .plugins import get_registry
from .progress import Progress, counter_callback
from .protocols import Dataset, Detector, Generator
from .types import LabelSpace

log = logging.getLogger(__name__)


def create_detector(
    name: str, task: str = "binary", label_space: LabelSpace | None = None, pretrained: bool = False
) -> Detector:
    """Build detector ``name`` (``family`` or ``family.tag``) for ``task``."""
    from .types import BINARY

    entry = get_registry().get("detector", name)
    factory = entry.load()
    try:
        return factory(
            card=entry.card, task=task, label_space=label_space or BINARY, pretrained=pretrained
        )
    except TypeError as exc:
        raise PluginError(
            f"detector {entry.name!r} from plugin {entry.source!r} has a factory that does not "
            f"accept (card, task, label_space, pretrained): {exc}"
        ) from exc


def create_generator(name: str, **options: Any) -> Generator:
    entry = get_registry().get("generator", name)
    return entry.load()(entry.card, **options)


def _looks_like_path(spec: str) -> bool:
    return "/" in spec or "\\" in spec or spec.startswith(".") or Path(spec).suffix != ""


def open_dataset(spec: str, progress: Progress | None = None, **options: Any) -> Dataset:
    """A registered dataset name, or a path whose layout an adapter recognises.

    A factory that takes ``progress`` (builders such as ``mini``) reports
    through ``progress`` while it builds.
    """
    registry = get_registry()
    if registry.has("dataset", spec) and not Path(spec).exists():
        factory = registry.get("dataset", spec).load()
        if progress is not None and "progress" in inspect.signature(factory).parameters:
            with counter_callback(progress, f"building dataset {spec}") as callback:
                return factory(progress=callback, **options)
        return factory(**options)
    path = Path(spec).expanduser()
    if not path.exists():
        if _looks_like_path(spec):
            raise DataError(f"dataset path {spec} does not exist")
        raise UnknownNameError("dataset", spec, [e.name for e in registry.list("dataset")])
    for entry in registry.list("dataset"):
        try:
            adapter = entry.load()
        except PluginError as exc:
            log.warning("%s", exc)
            continue
        sniff = getattr(adapter, "sniff", None)
        if sniff is not None and sniff(path):
            log.info("dataset %s: recognised as %s", path, entry.name)
            return adapter(path=path, **options)
    names = ", ".join(e.name for e in registry.list("dataset"))
    raise DataError(
        f"no dataset adapter recognises the layout of {path} (adapters: {names}); "
        "see docs/datasets.md for the expected layouts"
    )
