"""COCO as a source of real base images, instance regions and captions (pycocotools).

``--bases coco:ANN.json:IMGDIR`` lists the images of a COCO instances file
(``instances_val2017.json``...) that have at least one usable instance; their
regions are the instance masks (``annToMask``: polygons and RLE alike),
crowd annotations left out, near-duplicates (IoU > 0.7 with a larger mask)
dropped.  Captions for AI bases come from a COCO captions file
(``captions_val2017.json``), found beside the instances file when not given.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.generators.generate.regions import Region, dedupe_overlaps, regions_of, resize_mask
from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.fsutil import require_file

log = logging.getLogger(__name__)


def parse_coco_spec(spec: str) -> tuple[Path, Path]:
    """``coco:ANN.json:IMGDIR`` -> (annotation file, image folder)."""
    parts = spec.split(":", 2)
    if len(parts) != 3 or parts[0] != "coco" or not parts[1] or not parts[2]:
        raise ConfigError(f"bases {spec!r}: expected coco:ANNOTATIONS.json:IMAGE_DIR")
    ann, images = Path(parts[1]), Path(parts[2])
    require_file(ann, "COCO annotation file")
    require_file(images, "COCO image folder", folder=True)
    return ann, images


@dataclass(frozen=True)
class CocoImage:
    id: int
    file_name: str
    width: int
    height: int


class CocoIndex:
    """One COCO instances file: images, their instance masks, category names."""

    def __init__(self, annotations: Path, image_dir: Path):
        try:
            from pycocotools.coco import COCO
        except ImportError:
            raise ConfigError("COCO annotations need pycocotools: pip install pycocotools") from None
        self.annotations, self.image_dir = Path(annotations), Path(image_dir)
        with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints progress
            try:
                self.coco = COCO(str(annotations))
            except (ValueError, KeyError, TypeError, AssertionError):  # not JSON, or JSON of another shape
                raise DataError(f'{annotations}: not a COCO instances file: expected a JSON object {{"images": [...], '
                                '"annotations": [...], "categories": [...]} (instances_train2017.json)') from None
        self.categories = {c["id"]: c["name"] for c in self.coco.dataset.get("categories", [])}

    def image(self, image_id: int) -> CocoImage:
        info = self.coco.imgs[image_id]
        return CocoImage(image_id, info["file_name"], int(info["width"]), int(info["height"]))

    def _instances(self, image_id: int) -> list[dict[str, Any]]:
        anns = self.coco.loadAnns(self.coco.getAnnIds(imgIds=[image_id], iscrowd=False))
        return sorted(anns, key=lambda a: a["id"])

    def usable_images(self, min_area: float, max_area: float) -> list[CocoImage]:
        """Images (sorted by id) with an instance whose annotated area fraction is within bounds."""
        out = []
        for image_id in sorted(self.coco.imgs):
            im = self.image(image_id)
            pixels = max(im.width * im.height, 1)
            if any(min_area <= a.get("area", 0) / pixels <= max_area for a in self._instances(image_id)):
                out.append(im)
        return out

    def regions(self, image_id: int, height: int, width: int) -> list[Region]:
        """Instance masks at ``height`` x ``width``, near-duplicates dropped (:func:`dedupe_overlaps`)."""
        with warnings.catch_warnings():  # pycocotools 2.0.11 under numpy 2: a harmless copy= deprecation
            warnings.filterwarnings("ignore", message=".*__array__ implementation.*", category=DeprecationWarning)
            masks = [(self.coco.annToMask(ann).astype(bool), self.categories.get(ann["category_id"]))
                     for ann in self._instances(image_id)]  # fmt: skip
        kept = dedupe_overlaps(regions_of(masks, "coco"))
        return regions_of(((resize_mask(r.mask, height, width), r.label) for r in kept), "coco")

    def digest(self) -> dict[str, Any]:
        """What identifies this annotation set in a run's config."""
        st = self.annotations.stat()
        return {"file": self.annotations.name, "bytes": st.st_size, "images": len(self.coco.imgs),
                "annotations": len(self.coco.anns)}


class CocoRegions:
    """Region source: the COCO instances of a COCO base image."""

    name = "coco"

    def __init__(self, index: CocoIndex):
        self.index = index

    def candidates(self, base: Any, rng: np.random.Generator) -> list[Region]:
        if base.coco_id is None:
            raise ConfigError(f"base {base.source}: COCO regions need COCO bases (--bases coco:ANN.json:IMGDIR)")
        # check_bases found the file of the annotated shape, scaled: the masks drawn at it fit
        return self.index.regions(base.coco_id, *base.image.shape[:2])


def find_captions(annotations: Path) -> Path | None:
    """``captions_X.json`` beside ``instances_X.json``, if it exists."""
    name = annotations.name
    if name.startswith("instances_"):
        candidate = annotations.with_name("captions_" + name[len("instances_"):])
        if candidate.is_file():
            return candidate
    return None


def load_captions(path: Path, option: str = "") -> list[str]:
    """Every caption of a COCO captions file, ordered by (image id, annotation id); one that is
    not there, or not a regular file (a FIFO would block the read for ever), is named so, as
    given to ``option`` (``--captions``) where it was given one."""
    from diffzoo.harness.core.fsutil import FileRefused, read_json

    require_file(path, "captions file", option=option)
    try:
        anns = read_json(path)["annotations"]
        if bad := next((a for a in anns if isinstance(a, dict) and not isinstance(a.get("caption"), str)), None):
            why = f"annotation {bad.get('id')}'s caption {bad.get('caption')!r} is no text"  # never 'None'
            raise DataError(f"{path}: not a COCO captions file: {why}")
        rows = sorted((int(a["image_id"]), int(a["id"]), a["caption"].strip()) for a in anns)
    except (FileRefused, DataError):
        raise
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror})") from None
    except (ValueError, KeyError, TypeError):  # not JSON, or JSON of another shape: say what it should hold
        raise DataError(f'{path}: not a COCO captions file: expected a JSON object {{"annotations": [{{"image_id": 1, '
                        '"id": 1, "caption": "a dog on a sofa"}, ...]}') from None
    captions = [c for _, _, c in rows if c]
    if not captions:
        raise DataError(f"{path}: holds no captions")
    return captions
