"""Small copies of datasets in their release layouts (DiffSeg30k, Tp/Gt folders, CASIA v1 and
v2, CocoGlide, DEAL-300K), written by the tests.

A layout's random pixels come from one seeded generator per layout, shared by every caller."""

from __future__ import annotations

import csv
import io
import json
import shutil
import unicodedata
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

from helpers.images import png_bytes
from helpers.images import save_image as save

# -- DiffSeg30k --------------------------------------------------------------------------------


TEXT_SUFFIXES = (".csv", ".json", ".jsonl", ".txt")


def accented_copies(root: Path, out: Path, name: str, lists: str | None = None) -> dict[str, Path]:
    """Two copies of the data at ``root``, ``NFC`` and ``NFD``, in which ``name`` (in file and folder
    names and in the data's own lists) reads ``café<name>``: composed as most systems store it, and
    decomposed as macOS does; the lists write it in the form ``lists`` in both copies, if given."""
    copies = {}
    for form in ("NFC", "NFD"):
        accented = unicodedata.normalize(form, f"café{name}")
        listed = unicodedata.normalize(lists or form, f"café{name}")
        copy = Path(shutil.copytree(root, out / form / root.name))
        for p in sorted(copy.rglob(f"*{name}*"), key=lambda p: -len(p.parts)):  # the deepest first
            p.rename(p.with_name(p.name.replace(name, accented)))
        for p in copy.rglob("*"):
            if p.suffix in TEXT_SUFFIXES and p.is_file():
                p.write_text(p.read_text(encoding="utf-8").replace(name, listed), encoding="utf-8")
        copies[form] = copy
    return copies


def assert_read_alike(nfc, nfd, name: str, hashed_list: bool = False) -> None:
    """The two :func:`accented_copies`, opened: one set of ids (``café<name>`` composed in them),
    one fingerprint (unless the data's own list naming the files, whose bytes differ in the two,
    is hashed: ``hashed_list``), and each sample read alike by its id."""
    ids = {s: nfc.ids(s) for s in nfc.splits()}
    assert {s: nfd.ids(s) for s in nfd.splits()} == ids
    every = sorted({i for split in ids.values() for i in split})
    assert any(unicodedata.normalize("NFC", f"café{name}") in i for i in every)
    assert (nfd.fingerprint() == nfc.fingerprint()) != hashed_list
    for sid in every:
        assert nfd.load(sid).meta == nfc.load(sid).meta


def make_diffseg_folder(
    root: Path, n: int = 12, size: int = 32, editors: tuple[str, ...] = ("sd2", "sdxl"), seed: int = 0
) -> Path:
    """A DiffSeg30k-layout folder: smooth images whose edited squares are noise.

    Every third image is authentic (all-zero mask); the edited region is
    easy to learn, so a few training steps already beat trivial predictors.
    """
    rng = np.random.default_rng(seed)
    folder = root / "train_copy"
    folder.mkdir(parents=True)
    manifest = []
    yy, xx = np.mgrid[0:size, 0:size]
    for i in range(n):
        sid = f"{i:08d}"
        base = np.stack([(xx * 3 + i * 7) % 256, (yy * 3 + i * 11) % 256, np.full_like(xx, 90)], -1)
        image = base.astype(np.uint8)
        label = np.zeros((size, size), np.uint8)
        turns = []
        if i % 3:
            k = 1 + i % len(editors)
            s = size // 3
            y0, x0 = int(rng.integers(0, size - s)), int(rng.integers(0, size - s))
            image[y0 : y0 + s, x0 : x0 + s] = rng.integers(0, 256, (s, s, 3), dtype=np.uint8)
            label[y0 : y0 + s, x0 : x0 + s] = k
            turns.append({"editor": editors[k - 1], "prompt": "a cat", "edit_type": "object_addition",
                          "region": [x0, y0, x0 + s, y0 + s], "seed": i})
        Image.fromarray(image).save(folder / f"{sid}.image.png")
        Image.fromarray(label).save(folder / f"{sid}.mask.png")
        manifest.append({"id": sid, "base": "real" if i % 2 else "ai", "turns": turns, "source": "test"})
    (root / "labels.json").write_text(json.dumps({"names": ["background", *editors], "verified": True}))
    (root / "manifest.jsonl").write_text("".join(json.dumps(m) + "\n" for m in manifest))
    return root


DIFFSEG_PAIRS = 12
"""How many (image, mask) pairs :func:`make_pairs` makes by default."""


def make_pairs(
    n: int = DIFFSEG_PAIRS, size: int = 16, seed: int = 0
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n):
        image = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
        mask = np.zeros((size, size), dtype=np.uint8)
        mask[2:8, 3:9] = i % 9
        out[f"{i + 1:08d}"] = (image, mask)
    return out


def write_folder(root: Path, pairs, sub: str = "train_copy") -> Path:
    d = root / sub if sub else root
    d.mkdir(parents=True, exist_ok=True)
    for sid, (image, mask) in pairs.items():
        (d / f"{sid}.image.png").write_bytes(png_bytes(image))
        (d / f"{sid}.mask.png").write_bytes(png_bytes(mask))
    return root


def write_zip(path: Path, pairs, prefix: str = "train_copy/", extra=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for sid, (image, mask) in pairs.items():
            zf.writestr(f"{prefix}{sid}.image.png", png_bytes(image))
            zf.writestr(f"{prefix}{sid}.mask.png", png_bytes(mask))
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return path


# -- Tp/Gt folders -----------------------------------------------------------------------------

TPGT_RNG = np.random.default_rng(0)


def tpgt_image(h: int = 16, w: int = 16) -> np.ndarray:
    return TPGT_RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)


def tpgt_gt(h: int = 16, w: int = 16, rgb: bool = False) -> np.ndarray:
    m = np.zeros((h, w), dtype=np.uint8)
    m[:4, :4] = 255
    m[4, 4] = 100  # below 127.5: not edited
    return np.repeat(m[:, :, None], 3, axis=2) if rgb else m


def make_tpgt(root: Path) -> Path:
    save(root / "Tp" / "a.png", tpgt_image())
    save(root / "Tp" / "b.jpg", tpgt_image())
    save(root / "Tp" / "c.tif", tpgt_image())
    save(root / "Gt" / "a.png", tpgt_gt())
    save(root / "Gt" / "b_gt.png", tpgt_gt(rgb=True))
    save(root / "Gt" / "c_mask.png", tpgt_gt())
    save(root / "Au" / "real1.jpg", tpgt_image(12, 10))
    return root


# -- CASIA v1 and v2 ---------------------------------------------------------------------------

CASIA_RNG = np.random.default_rng(0)

# real CASIA file stems: v1 copy-move and splice images, v2 splice and copy-move images
V1_CM = "Sp_S_CND_A_pla0016_pla0016_0196"
V1_SP = "Sp_D_CND_A_pla0005_pla0023_0281"
V1_NO_GT = "Sp_D_NRN_A_cha0011_sec0011_0542"  # the real set's Sp image without a mask
V2_SPLICE = "Tp_D_CRN_S_N_cha00063_art00014_11818"
V2_COPY = "Tp_S_NRN_S_N_pla00020_pla00020_10988"


def casia_image(h: int = 40, w: int = 48) -> np.ndarray:
    return CASIA_RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)


def casia_gt(h: int = 40, w: int = 48, rows: slice = slice(0, 10), rgb: bool = True) -> np.ndarray:
    """CASIA masks are white on black; an anti-aliased grey edge below 127.5 is background."""
    m = np.zeros((h, w), np.uint8)
    m[rows, 5:20] = 255
    m[rows.stop, 5:20] = 120
    return np.repeat(m[:, :, None], 3, axis=2) if rgb else m


def make_casia1(parent: Path) -> Path:
    """``CASIA 1.0 dataset/`` (Au/Au, Modified Tp/Tp/{CM,Sp}, Original Tp) with
    ``CASIA 1.0 groundtruth/{CM,Sp}`` beside it, as the two downloads unpack."""
    root = parent / "CASIA 1.0 dataset"
    save(root / "Au" / "Au" / "Au_ani_0001.jpg", casia_image(32, 40))
    save(root / "Modified Tp" / "Tp" / "CM" / f"{V1_CM}.jpg", casia_image())
    save(root / "Modified Tp" / "Tp" / "Sp" / f"{V1_SP}.jpg", casia_image())
    # the misnamed originals, which the adapter must not read
    save(root / "Original Tp" / "Tp" / "Sp" / "Sp_D_CND_A_pla0005_pla0023_9999.jpg", casia_image())
    (root / "Authentic_list.txt").write_text("Au_ani_0001.jpg\n")
    g = parent / "CASIA 1.0 groundtruth"
    save(g / "CM" / f"{V1_CM}_gt.png", casia_gt(rows=slice(0, 10)))
    save(g / "Sp" / f"{V1_SP}_gt.png", casia_gt(rows=slice(20, 30), rgb=False))
    (g / "CopyMove_groundtruth_list.txt").write_text(f"{V1_CM}_gt.png\n")
    return root


def make_casia2(root: Path, gt_name: str = "CASIA 2 Groundtruth") -> Path:
    """``Au/`` (JPEG, BMP, Thumbs.db), ``Tp/`` (JPEG, TIFF, Thumbs.db) and the
    ``<Tp stem>_gt.png`` masks in ``gt_name``."""
    save(root / "Au" / "Au_ani_00001.jpg", casia_image(36, 44))
    save(root / "Au" / "Au_arc_00002.bmp", casia_image(32, 32))
    save(root / "Tp" / f"{V2_SPLICE}.jpg", casia_image())
    save(root / "Tp" / f"{V2_COPY}.tif", casia_image())
    for folder in ("Au", "Tp"):
        (root / folder / "Thumbs.db").write_bytes(b"\xd0\xcf\x11\xe0 not an image")
    save(root / gt_name / f"{V2_SPLICE}_gt.png", casia_gt(rows=slice(0, 10)))
    save(root / gt_name / f"{V2_COPY}_gt.png", casia_gt(rows=slice(20, 30), rgb=False))
    return root


# -- CocoGlide ---------------------------------------------------------------------------------

COCOGLIDE_RNG = np.random.default_rng(0)
# (COCO class, COCO id) as in the real table: class names hold spaces.
COCOGLIDE_ROWS = (("dining table", 114871), ("teddy bear", 563758), ("hot dog", 452084))


def write_table(root: Path, rows: list[list[str]], header: str = "real,fake,mask,prompt") -> Path:
    """table.csv as the release writes it: UTF-8 with a byte-order mark."""
    with open(root / "table.csv", "w", encoding="utf-8-sig", newline="") as f:
        w = csv.writer(f)
        w.writerow(header.split(","))
        w.writerows(rows)
    return root / "table.csv"


def make_cocoglide(root: Path, size: int = 48) -> Path:
    """real/<class>_<id>.png, fake/glide_inpainting_val2017_<id>_up.png,
    mask/<class>_<id>_mask.png (mode L, 0/255); row i's mask is edited in
    a band that identifies the row."""
    rows = []
    for i, (cls, coco_id) in enumerate(COCOGLIDE_ROWS):
        real = f"real/{cls}_{coco_id}.png"
        fake = f"fake/glide_inpainting_val2017_{coco_id}_up.png"
        mask = f"mask/{cls}_{coco_id}_mask.png"
        save(root / real, COCOGLIDE_RNG.integers(0, 256, (size, size, 3), dtype=np.uint8))
        save(root / fake, COCOGLIDE_RNG.integers(0, 256, (size, size, 3), dtype=np.uint8))
        m = np.zeros((size, size), np.uint8)
        m[i * 8 : i * 8 + 8 + i, :] = 255
        save(root / mask, m)
        rows.append([real, fake, mask, cls if i < 2 else "a hot dog, grilled"])
    write_table(root, rows)
    return root


# -- DEAL-300K ---------------------------------------------------------------------------------

DEAL_SIZE = 32
# split -> (COCO id, edits as Qwen-VL checkpoints); names as in the repository's assets/examples/
DEAL_LAYOUT = {
    "train": (("000000000009", (120, 180)), ("000000000459", (120,)), ("000000000632", (180,))),
    "val": (("000000436603", (120, 180)), ("000000436647", (120,))),
    "test": (("000000436795", (180,)), ("000000436797", (120, 180))),
}


def _png(arr: np.ndarray, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return buf.getvalue()


def _photo(seed: int) -> np.ndarray:
    yy, xx = np.mgrid[0:DEAL_SIZE, 0:DEAL_SIZE]
    return np.stack([(xx * 5 + seed) % 256, (yy * 7 + seed) % 256, np.full_like(xx, 80)], -1).astype(np.uint8)


def make_deal_zips(root: Path, mask_value: int = 255) -> Path:
    """train.zip, val.zip, test.zip holding ``<split>/<cocoid>.jpg`` and ``<split>/<cocoid>_qwen<ckpt>.jpg``,
    label.zip holding ``label/<cocoid>_qwen<ckpt>.png`` (mode L, 0 / ``mask_value``); edit k of a photo
    changes rows 4k..4k+8, which its mask marks."""
    root.mkdir(parents=True)
    masks: dict[str, bytes] = {}
    for split, photos in DEAL_LAYOUT.items():
        with zipfile.ZipFile(root / f"{split}.zip", "w") as zf:
            for n, (coco, ckpts) in enumerate(photos):
                photo = _photo(int(coco) % 97 + n)
                zf.writestr(f"{split}/{coco}.jpg", _png(photo, "JPEG"))
                for k, ckpt in enumerate(ckpts):
                    edited, mask = photo.copy(), np.zeros((DEAL_SIZE, DEAL_SIZE), np.uint8)
                    edited[4 * k: 4 * k + 8, 2:20] = 255 - edited[4 * k: 4 * k + 8, 2:20]
                    mask[4 * k: 4 * k + 8, 2:20] = mask_value
                    zf.writestr(f"{split}/{coco}_qwen{ckpt}.jpg", _png(edited, "JPEG"))
                    masks[f"{coco}_qwen{ckpt}.png"] = _png(mask)
    with zipfile.ZipFile(root / "label.zip", "w") as zf:
        for name, data in sorted(masks.items()):
            zf.writestr(f"label/{name}", data)
    return root


def recognised_as(path) -> str | None:
    """The registered adapter that ``--dataset PATH`` would open ``path`` with (the first, in name
    order, whose sniff takes it), or None."""
    from diffzoo.harness.run.factories import recognise, sniffing_adapters

    found = recognise(path, sniffing_adapters())
    return None if found is None else found[0].name
