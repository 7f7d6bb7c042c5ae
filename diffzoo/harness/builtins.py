"""The harness's own in-tree plugin: suites, dataset adapters, distortions.

Registered through the same hooks as any third-party plugin.
"""

from __future__ import annotations

from .data.hfsource import DIFFSEG30K_HUB_ID
from .hookspecs import hookimpl
from .suites import STANDARD


def open_diffseg30k(path=None, **options):
    """DiffSeg30k from a local zip/folder/parquet ``path``, else from the hub."""
    from .data.diffseg30k import DiffSeg30kDataset

    return DiffSeg30kDataset(path or DIFFSEG30K_HUB_ID, **options)


@hookimpl
def register_suites(register):
    register(STANDARD.name, STANDARD, description=STANDARD.description)


@hookimpl
def register_datasets(register):
    register(
        "diffseg30k",
        "diffzoo.harness.builtins:open_diffseg30k",
        description=f"DiffSeg30k (hub {DIFFSEG30K_HUB_ID}, or a local train.zip / folder / parquet)",
    )
    register(
        "tpgt",
        "diffzoo.harness.data.generic:TpGtDataset",
        description="a folder with Tp/ (images) and Gt/ (masks), optional Au/ (authentic)",
    )
    register(
        "jsonlist",
        "diffzoo.harness.data.generic:JsonListDataset",
        description='a JSON list of [image, mask | "Negative"] pairs',
    )


@hookimpl
def register_distortions(register):
    register("none", "diffzoo.harness.distortions:identity", description="no distortion")


def _sniff_diffseg30k(path) -> bool:
    from .data.diffseg30k import DiffSeg30kDataset

    return DiffSeg30kDataset.sniff(path)


open_diffseg30k.sniff = _sniff_diffseg30k  # type: ignore[attr-defined]
