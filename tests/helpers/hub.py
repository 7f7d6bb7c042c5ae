"""Files in the Hugging Face hub's layouts: datasets (parquet shards under ``data/``), as
OpenSDI's copies are downloaded, and a model repo in the hub cache, as ``from_pretrained``
leaves it."""

from __future__ import annotations

from pathlib import Path

import datasets
import numpy as np
from PIL import Image

from helpers.images import mixed_image

OPENSDI_SIZE = 32
OPENSDI_FEATURES = datasets.Features({"key": datasets.Value("string"), "image": datasets.Image(),
                                      "mask": datasets.Image(),
                                      "label": datasets.ClassLabel(names=["real", "fake"])})


def split_rows(generator: str, n: int, seed: int = 0, rows: list[dict] | None = None):
    """Rows as OpenSDI's: every third image real (no mask), then a partial fake (a noise square,
    its 0/255 RGB mask), then a full fake (noise everywhere, no mask); ``rows`` appended as given."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        kind = ("real", "partial", "full")[i % 3]
        image, mask = mixed_image(i, {"partial": "local"}.get(kind, kind), rng, OPENSDI_SIZE)
        mask = None if mask is None else Image.fromarray(np.repeat(mask[:, :, None], 3, axis=2))  # RGB, as OpenSDI's
        subset, truth = ("full" if kind == "full" else "partial"), ("real" if kind == "real" else "fake")
        out.append({"key": f"{subset}/{generator}/{truth}/{seed:03d}{i:06d}.jpg", "image": Image.fromarray(image),
                    "mask": mask, "label": 0 if kind == "real" else 1})
    out += rows or []
    return datasets.Dataset.from_list(out, features=OPENSDI_FEATURES)


def hub_copy(root, copy: str, splits: dict) -> None:
    """``<root>/<copy>/data/<split>-00000-of-00001.parquet``, as `hf download` leaves it."""
    (root / copy / "data").mkdir(parents=True)
    for name, ds in splits.items():
        ds.to_parquet(str(root / copy / "data" / f"{name}-00000-of-00001.parquet"))


TINY_SEGFORMER_REPO = "diffzoo-test/tiny-segformer"
TINY_SEGFORMER_REV = "0123456789abcdef0123456789abcdef01234567"


def hub_segformer(hub: Path, seed: int) -> Path:
    """``segformer.tiny``'s network as the repo :data:`TINY_SEGFORMER_REPO` in the HF cache
    layout under ``hub``, its weights drawn with ``seed``; the path of its weights file."""
    import torch
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    from diffzoo.harness.core.plugins import get_registry

    torch.manual_seed(seed)
    arch = get_registry().get("detector", "segformer.tiny").card.arch
    model = SegformerForSemanticSegmentation(SegformerConfig(**arch, num_labels=1))
    repo = hub / f"models--{TINY_SEGFORMER_REPO.replace('/', '--')}"
    model.save_pretrained(repo / "snapshots" / TINY_SEGFORMER_REV)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(TINY_SEGFORMER_REV)
    return repo / "snapshots" / TINY_SEGFORMER_REV / "model.safetensors"
