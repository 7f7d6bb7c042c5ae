"""SID-Set copies in SIDA's layouts: images as SIDA names them, its Drive folders, the hub's rows."""

from __future__ import annotations

import io

import datasets
import numpy as np
from PIL import Image

from helpers.images import mixed_image

SIZE = 32
FEATURES = datasets.Features({"img_id": datasets.Value("string"), "image": datasets.Image(), "mask": datasets.Image(),
                              "width": datasets.Value("int64"), "height": datasets.Value("int64"),
                              "label": datasets.Value("int64")})
LABEL = {"real": 0, "full_synthetic": 1, "tampered": 2}


def _encode(arr: np.ndarray, fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, fmt)
    return buf.getvalue()


def samples(n: int, seed: int = 0) -> list[dict]:
    """SID-Set images as SIDA names them: real ``<hex>.jpg``, ``full_synthetic_<n>.png``, and
    ``tampered_<n>.png`` (a noise square) with ``tampered_<n>_mask.png`` (0/255)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        kind = ("real", "full_synthetic", "tampered")[i % 3]
        image, mask = mixed_image(i, {"full_synthetic": "full", "tampered": "local"}.get(kind, kind), rng, SIZE)
        mask = None if mask is None else _encode(mask, "PNG")
        stem = f"{seed:02d}{i:02d}9f2c2560a7" if kind == "real" else f"{kind}_{seed:02d}{i:04d}"
        ext = ".jpg" if kind == "real" else ".png"
        out.append({"kind": kind, "stem": stem, "ext": ext, "image": _encode(image, "JPEG" if ext == ".jpg" else "PNG"),
                    "mask": mask})
    return out


def write_folder(split_dir, items) -> None:
    """SIDA's Drive layout: real/ full_synthetic/ tampered/ masks/<name>_mask.png."""
    for kind in ("real", "full_synthetic", "tampered", "masks"):
        (split_dir / kind).mkdir(parents=True, exist_ok=True)
    for it in items:
        (split_dir / it["kind"] / f"{it['stem']}{it['ext']}").write_bytes(it["image"])
        if it["mask"] is not None:
            (split_dir / "masks" / f"{it['stem']}_mask.png").write_bytes(it["mask"])


def hub_rows(items):
    """The hub's rows (img_id, image, mask, width, height, label), the same bytes as the files."""
    rows = [{"img_id": it["stem"], "image": {"bytes": it["image"], "path": it["stem"] + it["ext"]},
             "mask": None if it["mask"] is None else {"bytes": it["mask"], "path": f"{it['stem']}_mask.png"},
             "width": SIZE, "height": SIZE, "label": LABEL[it["kind"]]} for it in items]
    return datasets.Dataset.from_list(rows, features=FEATURES)
