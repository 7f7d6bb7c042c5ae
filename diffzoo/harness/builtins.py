"""The harness's own in-tree plugin: suites, dataset adapters, distortions.

Registered through the same hooks as any third-party plugin.
"""

from __future__ import annotations

from .data.hfsource import DIFFSEG30K_HUB_ID
from .hookspecs import hookimpl
from .suites import STANDARD


@hookimpl
def register_suites(register):
    register(STANDARD.name, STANDARD, description=STANDARD.description)


@hookimpl
def register_datasets(register):
    register(
        "diffseg30k",
        "diffzoo.harness.data.diffseg30k:DiffSeg30kDataset",
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
