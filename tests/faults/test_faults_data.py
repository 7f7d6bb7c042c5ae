"""Fault suite, data side: odd images and masks, broken or hostile archives, one
fingerprint per content, nothing written into a dataset folder.

Each test pins the exact outcome of one fault: the sample skipped and counted by
kind, or one clear error naming the file."""

from __future__ import annotations

import builtins
import errno
import io
import logging
import os
import shutil
import warnings
import zipfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFile

from diffzoo import open_dataset
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.data import DiffSeg30kDataset, read_binary_mask, read_image, read_mask

from helpers.data import make_diffseg_folder
from helpers.images import encode, huge_png, raw_png, save_image

# -- helpers -------------------------------------------------------------------


pytestmark = pytest.mark.isolated_cache  # fault tests start from an empty cache

def pair_folder(root: Path, samples: dict[str, tuple[bytes, bytes]], ext=("png", "png")) -> Path:
    """A DiffSeg30k folder ``root/train_copy`` from encoded (image, mask) bytes."""
    d = root / "train_copy"
    d.mkdir(parents=True, exist_ok=True)
    for sid, (image, mask) in samples.items():
        (d / f"{sid}.image.{ext[0]}").write_bytes(image)
        (d / f"{sid}.mask.{ext[1]}").write_bytes(mask)
    return root


def good_pair(size: int = 8, value: int = 1) -> tuple[bytes, bytes]:
    image = np.random.default_rng(size).integers(0, 256, (size, size, 3), dtype=np.uint8)
    mask = np.zeros((size, size), np.uint8)
    mask[: size // 2] = value
    return encode(Image.fromarray(image)), encode(Image.fromarray(mask))


def zip_folder(folder: Path, target: Path) -> Path:
    """Zip every file below ``folder`` with names relative to ``folder``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                zf.write(f, f.relative_to(folder).as_posix())
    return target


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry below ``root``: name -> (size, mtime_ns)."""
    return {
        p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def load_all(ds) -> None:
    for split in ds.splits():
        for sid in ds.ids(split):
            ds.load(sid)


@contextmanager
def read_only(monkeypatch, root: Path, reads: list[str]):
    """Make every write below ``root`` fail as on a read-only mount (tests run as
    root, so chmod would not stop them); record the files opened for reading."""
    top = root.resolve()
    real_open, real_os_open = io.open, os.open

    def inside(path) -> bool:
        if not isinstance(path, (str, bytes, os.PathLike)):
            return False
        return Path(os.fsdecode(path)).resolve().is_relative_to(top)

    def refuse(path):
        raise PermissionError(errno.EROFS, "Read-only file system", os.fsdecode(path))

    def guarded_open(file, mode="r", *args, **kwargs):
        if inside(file):
            if any(c in mode for c in "wax+"):
                refuse(file)
            reads.append(os.fsdecode(file))
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        if inside(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def guarded(real):
        def call(src, *args, **kwargs):
            if inside(src) or any(inside(a) for a in args):
                refuse(src)
            return real(src, *args, **kwargs)
        return call

    with monkeypatch.context() as m:
        m.setattr(builtins, "open", guarded_open)
        m.setattr(io, "open", guarded_open)
        m.setattr(os, "open", guarded_os_open)
        for name in ("mkdir", "replace", "rename", "unlink", "remove"):
            m.setattr(os, name, guarded(getattr(os, name)))
        yield


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    return datasets


# -- 2. odd images ---------------------------------------------------------------


def _rgba():
    arr = np.array([[[255, 0, 0, 0], [0, 0, 0, 128], [10, 20, 30, 255]]], np.uint8)
    return encode(Image.fromarray(arr, "RGBA")), [[255, 255, 255], [127, 127, 127], [10, 20, 30]]


def _la():
    arr = np.array([[[0, 0], [100, 255]]], np.uint8)
    return encode(Image.fromarray(arr, "LA")), [[255, 255, 255], [100, 100, 100]]


def _palette_transparent():
    img = Image.fromarray(np.array([[0, 1]], np.uint8), "L").convert("P")
    img.putpalette([255, 0, 0, 0, 200, 0] + [0] * 762)
    return encode(img, transparency=0), [[255, 255, 255], [0, 200, 0]]


def _grey_transparent():
    img = Image.fromarray(np.array([[100, 50]], np.uint8), "L")
    return encode(img, transparency=100), [[255, 255, 255], [50, 50, 50]]


@pytest.mark.parametrize("make", [_rgba, _la, _palette_transparent, _grey_transparent],
                         ids=["RGBA", "LA", "palette-tRNS", "grey-tRNS"])
def test_transparent_images_are_composited_on_white_not_alpha_dropped(make):
    data, expected = make()
    assert read_image(data, "s")[0].tolist() == expected


def test_12000x12000_image_is_skipped_as_too_large_before_decoding(monkeypatch):
    def no_decoding(self):
        raise AssertionError("the image was decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PIL's DecompressionBombWarning must not escape
        with pytest.raises(CorruptSampleError) as err:
            read_image(huge_png(), "big", name="big.image.png")
    assert err.value.kind == "too-large"
    msg = str(err.value)
    assert "big.image.png: image is 12000x12000 = 144,000,000 pixels" in msg
    assert "limit of 67,108,864 pixels" in msg and "DIFFZOO_MAX_PIXELS=144000000" in msg


def test_pixel_limit_is_set_by_DIFFZOO_MAX_PIXELS(monkeypatch):
    data = encode(Image.new("RGB", (16, 16)))
    monkeypatch.setenv("DIFFZOO_MAX_PIXELS", "100")
    with pytest.raises(CorruptSampleError, match=r"16x16 = 256 pixels, above the limit of 100 pixels"):
        read_image(data, "s")
    monkeypatch.setenv("DIFFZOO_MAX_PIXELS", "256")
    assert read_image(data, "s").shape == (16, 16, 3)
    monkeypatch.setenv("DIFFZOO_MAX_PIXELS", "lots")
    with pytest.raises(ConfigError, match="DIFFZOO_MAX_PIXELS='lots' is not a positive whole number"):
        read_image(data, "s")


def test_DIFFZOO_MAX_PIXELS_above_pillows_own_limit_decodes_the_image(monkeypatch):
    """Pillow refuses above twice its MAX_IMAGE_PIXELS whatever diffzoo's limit; a larger
    DIFFZOO_MAX_PIXELS lifts it, and its refusal names the variable that does."""
    data = encode(Image.new("RGB", (16, 16)))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 50)  # Pillow's 179 M pixels, scaled down to a 16 x 16 image
    monkeypatch.setenv("DIFFZOO_MAX_PIXELS", "100")  # within twice Pillow's, as diffzoo's default is
    with pytest.raises(CorruptSampleError) as err:
        read_image(data, "s", name="scan.png")
    assert err.value.kind == "too-large"
    assert str(err.value).endswith("; set DIFFZOO_MAX_PIXELS to its size in pixels (or more) to decode it")
    assert "scan.png: image too large to decode (Image size (256 pixels) exceeds limit of 100 pixels" in str(err.value)
    monkeypatch.setenv("DIFFZOO_MAX_PIXELS", "256")
    assert read_image(data, "s").shape == (16, 16, 3)
    assert Image.MAX_IMAGE_PIXELS == 256


def test_folder_of_odd_images_loads_or_skips_every_sample_by_kind(tmp_path):
    """Each odd file either converts or is one CorruptSampleError with a kind;
    nothing else escapes, so a run can finish and count them."""
    mask8, img8 = (encode(Image.new("L", (8, 8))), encode(Image.new("RGB", (8, 8))))
    rgb16 = np.full((8, 8, 3), 40000, ">u2")
    colour = np.zeros((8, 8, 3), np.uint8)
    colour[0, 0] = (1, 0, 2)
    cases = {  # id: (image bytes, mask bytes, expected kind or None = loads)
        "00000001": (encode(Image.new("RGBA", (8, 8))), mask8, None),
        "00000002": (encode(Image.new("RGB", (1, 1))), encode(Image.new("L", (1, 1))), None),
        "00000003": (encode(Image.new("RGB", (1, 4000))), encode(Image.new("L", (1, 4000))), None),
        "00000004": (encode(Image.new("RGB", (4000, 1))), encode(Image.new("L", (4000, 1))), None),
        "00000005": (encode(Image.new("CMYK", (8, 8)), "TIFF"), mask8, None),
        "00000006": (encode(Image.fromarray(np.full((8, 8), 600, np.uint16))), mask8, None),
        "00000007": (_palette_transparent()[0], encode(Image.new("L", (2, 1))), None),
        "00000008": (raw_png(8, 8, 16, 2, [r.tobytes() for r in rgb16]), mask8, None),
        "00000009": (encode(Image.new("1", (8, 8))), mask8, None),
        "00000010": (encode(Image.new("I", (8, 8)), "TIFF"), mask8, None),
        "00000011": (encode(Image.new("F", (8, 8)), "TIFF"), mask8, None),
        "00000012": (img8, encode(Image.fromarray(colour)), "mask-ambiguous"),
        "00000013": (img8, encode(Image.new("F", (8, 8)), "TIFF"), "unsupported-mode"),
        "00000014": (img8, encode(Image.new("L", (8, 8)), "JPEG"), "mask-lossy"),
        "00000015": (img8, encode(Image.new("L", (8, 4))), "mask-size"),
        "00000016": (b"\x89PNG not really", mask8, "corrupt"),
        "00000017": (huge_png(), mask8, "too-large"),
    }
    d = tmp_path / "odd" / "train_copy"
    d.mkdir(parents=True)
    for sid, (image, mask, _) in cases.items():
        (d / f"{sid}.image.png").write_bytes(image)
        (d / f"{sid}.mask.png").write_bytes(mask)
    ds = DiffSeg30kDataset(tmp_path / "odd", label_space="a,b", val_fraction=0.0)
    outcome = {}
    for sid in sorted(cases):
        try:
            s = ds.load(sid)
        except CorruptSampleError as exc:
            assert f"{sid}.image.png" in exc.reason or f"{sid}.mask.png" in exc.reason
            outcome[sid] = exc.kind
        else:
            assert s.image.dtype == np.uint8 and s.image.ndim == 3 and s.image.shape[2] == 3
            assert s.label.shape == s.image.shape[:2]
            outcome[sid] = None
    assert outcome == {sid: kind for sid, (_, _, kind) in cases.items()}
    # the same through two loader workers: every error arrives whole, with its kind
    from diffzoo.harness.run.loading import eval_inputs

    identity = lambda image, label: (image, label)  # noqa: E731
    items = list(eval_inputs(ds, sorted(cases), identity, {}, workers=2))
    assert {i.sid: getattr(i.error, "kind", None) for i in items} == outcome
    assert all(type(i.error) is CorruptSampleError for i in items if i.error is not None)
    assert ds.load("00000008").image[0, 0].tolist() == [156, 156, 156]  # 40000 >> 8
    assert ds.load("00000006").image[0, 0].tolist() == [2, 2, 2]  # 600 >> 8


# -- 2. ambiguous masks -------------------------------------------------------------


def test_rgb_mask_with_unequal_channels_skips_the_sample_not_the_run(tmp_path):
    image, _ = good_pair()
    colour = np.zeros((8, 8, 3), np.uint8)
    colour[1, 1] = (2, 0, 1)
    samples = {"00000001": good_pair(), "00000002": (image, encode(Image.fromarray(colour)))}
    root = pair_folder(tmp_path / "ds", samples)
    ds = DiffSeg30kDataset(root, label_space="a,b", val_fraction=0.0)
    ds.load("00000001")
    with pytest.raises(CorruptSampleError) as err:
        ds.load("00000002")
    assert err.value.kind == "mask-ambiguous"
    assert "00000002.mask.png" in err.value.reason
    assert "1 pixel(s) have unequal channels" in err.value.reason


def test_class_mask_with_transparent_pixels_is_ambiguous():
    arr = np.zeros((4, 4, 4), np.uint8)
    arr[..., 3] = 255
    arr[0, 0, 3] = 0  # grey channels, but one transparent pixel
    with pytest.raises(CorruptSampleError, match="m.mask.png: mask has transparent pixels") as err:
        read_mask(encode(Image.fromarray(arr, "RGBA")), "m", name="m.mask.png")
    assert err.value.kind == "mask-ambiguous"


def test_jpeg_mask_named_png_is_refused_as_lossy(tmp_path):
    image, _ = good_pair()
    jpeg_mask = encode(Image.new("L", (8, 8)), "JPEG")
    root = pair_folder(tmp_path / "ds", {"00000001": (image, jpeg_mask)})
    ds = DiffSeg30kDataset(root, label_space="a,b", val_fraction=0.0)
    with pytest.raises(CorruptSampleError) as err:
        ds.load("00000001")
    assert err.value.kind == "mask-lossy"
    expected = "00000001.mask.png: mask is JPEG-encoded (lossy) although it is named .png"
    assert expected in err.value.reason


def test_unsupported_mask_mode_skips_the_sample_not_the_run():
    data = encode(Image.new("CMYK", (4, 4)), "TIFF")
    with pytest.raises(CorruptSampleError, match="x.mask.tif: unsupported mask mode CMYK") as err:
        read_mask(data, "x", name="x.mask.tif")
    assert err.value.kind == "unsupported-mode"


def test_mask_of_another_size_is_counted_as_mask_size(tmp_path):
    image, _ = good_pair(8)
    root = pair_folder(tmp_path / "ds", {"00000001": (image, encode(Image.new("L", (8, 6))))})
    with pytest.raises(CorruptSampleError, match=r"mask size 8x6 differs from image size 8x8") as err:
        DiffSeg30kDataset(root, label_space="a", val_fraction=0.0).load("00000001")
    assert err.value.kind == "mask-size"


def test_classic_binary_mask_with_alpha_is_not_read_as_edited(tmp_path):
    """Tp/Gt (classic sets): a white mask whose pixels are transparent used to
    read as 'edited' everywhere (alpha dropped)."""
    save_image(tmp_path / "set" / "Tp" / "a.png", np.zeros((4, 4, 3), np.uint8))
    white_clear = np.zeros((4, 4, 4), np.uint8)
    white_clear[..., :3] = 255
    save_image(tmp_path / "set" / "Gt" / "a.png", white_clear)
    ds = open_dataset(str(tmp_path / "set"), split="test")
    with pytest.raises(CorruptSampleError, match=r"Gt/a.png: mask has transparent pixels") as err:
        ds.load("Tp/a.png")
    assert err.value.kind == "mask-ambiguous"
    with pytest.raises(CorruptSampleError):
        read_binary_mask(tmp_path / "set" / "Gt" / "a.png", "a")


# -- 2. archives -------------------------------------------------------------------


def _truncated(path: Path) -> None:
    zip_folder(make_diffseg_folder(path.parent / "src"), path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize("damage, expected", [
    (lambda p: p.write_bytes(b""), "the file is empty (0 bytes)"),
    (_truncated, "a truncated or damaged zip archive"),
    (lambda p: p.write_text("<html>404 Not Found</html>"),
     "not a zip archive at all (it starts with b'<html>40'"),
], ids=["zero-byte", "truncated", "not-a-zip"])
def test_broken_zip_is_an_error_naming_the_file_and_the_problem(tmp_path, damage, expected):
    z = tmp_path / "train.zip"
    damage(z)
    with pytest.raises(DataError) as err:
        open_dataset(str(z))
    msg = str(err.value)
    assert msg.startswith(f"{z} is not a readable zip file: ") and expected in msg


@pytest.mark.parametrize("member", [
    "train_copy/../../00000099",
    "/abs/train_copy/00000099",
    "train_copy\\..\\..\\00000099",
    "C:/train_copy/00000099",
], ids=["dotdot", "absolute", "backslash", "drive-letter"])
def test_zip_member_pointing_outside_refuses_the_archive(tmp_path, member):
    z = zip_folder(make_diffseg_folder(tmp_path / "src") / "train_copy", tmp_path / "z" / "train.zip")
    image, mask = good_pair()
    with zipfile.ZipFile(z, "a") as zf:
        zf.writestr(member + ".image.png", image)
        zf.writestr(member + ".mask.png", mask)
    with pytest.raises(DataError) as err:
        open_dataset(str(z))
    msg = str(err.value)
    assert f"{z}: refusing the archive: 2 member name(s) point outside it" in msg
    assert repr(member + ".image.png") in msg


@pytest.mark.parametrize("content", [b"PAR1 cut short", b""])
def test_unreadable_parquet_is_an_error_naming_the_file(tmp_path, hf_cache, caplog, content):
    """The file went to `datasets`, which logged its own ERROR lines (twice for an empty one) before diffzoo's."""
    bad = tmp_path / "data.parquet"
    bad.write_bytes(content)
    with pytest.raises(DataError) as err:
        open_dataset(str(bad))
    assert str(err.value) == f"{bad}: not a readable .parquet file (empty, truncated or of another format)"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_a_parquet_file_of_no_rows_is_said_to_hold_none(tmp_path, hf_cache, caplog):
    """`datasets` failed on it (DatasetGenerationError) after logging its own ERROR line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cell = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    empty = tmp_path / "set" / "train-00000-of-00001.parquet"
    empty.parent.mkdir()
    pq.write_table(pa.table({"image": pa.array([], cell), "mask": pa.array([], cell)}), empty)
    for given, said in ((empty, f"{empty}: holds no rows"),
                        (empty.parent, f"{empty}: holds no rows; move it out of {empty.parent} or replace it")):
        with pytest.raises(DataError) as err:
            open_dataset(str(given))
        assert str(err.value) == said
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_broken_json_list_is_an_error_naming_the_file(tmp_path):
    bad = tmp_path / "list.json"
    bad.write_text('[["a.png", "Negative"],')
    with pytest.raises(DataError, match=rf"{bad}: not readable JSON"):
        open_dataset(str(bad))


# -- 3. one identity per content ----------------------------------------------------


def test_zip_and_folder_of_the_same_data_have_one_fingerprint(tmp_path):
    root = make_diffseg_folder(tmp_path / "folder")
    z = zip_folder(root / "train_copy", tmp_path / "zipped" / "train.zip")
    for side in ("labels.json", "manifest.jsonl"):
        shutil.copy(root / side, z.parent / side)
    assert open_dataset(str(z)).fingerprint() == open_dataset(str(root)).fingerprint()


def test_folder_fingerprint_does_not_depend_on_which_folder_is_given(tmp_path):
    root = make_diffseg_folder(tmp_path / "ds")
    for side in ("labels.json", "manifest.jsonl"):
        shutil.copy(root / side, root / "train_copy" / side)
    assert open_dataset(str(root / "train_copy")).fingerprint() == open_dataset(str(root)).fingerprint()


def _hf_rows(hf, root: Path):
    files = sorted((root / "train_copy").glob("*.image.png"))
    sids = [f.name.split(".")[0] for f in files]

    def cell(sid: str, role: str) -> dict:
        return {"bytes": (root / "train_copy" / f"{sid}.{role}.png").read_bytes(), "path": None}

    return hf.Dataset.from_dict(
        {"__key__": [f"train_copy/{s}" for s in sids],
         "image": [cell(s, "image") for s in sids], "mask": [cell(s, "mask") for s in sids]},
        features=hf.Features({"__key__": hf.Value("string"), "image": hf.Image(), "mask": hf.Image()}),
    )


@pytest.mark.parametrize("form", ["parquet", "save_to_disk"])
def test_hugging_face_copy_of_the_same_pngs_has_the_folder_fingerprint(tmp_path, hf_cache, form):
    root = make_diffseg_folder(tmp_path / "folder")
    target = tmp_path / form
    target.mkdir()
    rows = _hf_rows(hf_cache, root)
    if form == "parquet":
        rows.to_parquet(str(target / "data.parquet"))
        spec = target / "data.parquet"
    else:
        rows.save_to_disk(str(target))
        spec = target
    for side in ("labels.json", "manifest.jsonl"):
        shutil.copy(root / side, target / side)
    ds = open_dataset(str(spec))
    assert ds.describe()["source_kind"] == "datasets"
    assert ds.fingerprint() == open_dataset(str(root)).fingerprint()


# -- 3. nothing written into the dataset ------------------------------------------------


def _diffseg(tmp_path, hf):
    return make_diffseg_folder(tmp_path / "ds"), None


def _parquet(tmp_path, hf):
    src = make_diffseg_folder(tmp_path / "src")
    (tmp_path / "pq").mkdir()
    _hf_rows(hf, src).to_parquet(str(tmp_path / "pq" / "data.parquet"))
    return tmp_path / "pq", tmp_path / "pq" / "data.parquet"


def _parquet_folder(tmp_path, hf):
    src = make_diffseg_folder(tmp_path / "src")
    (tmp_path / "pqs").mkdir()
    rows = _hf_rows(hf, src)
    rows.select(range(6)).to_parquet(str(tmp_path / "pqs" / "train-00000-of-00001.parquet"))
    rows.select(range(6, 12)).to_parquet(str(tmp_path / "pqs" / "validation-00000-of-00001.parquet"))
    return tmp_path / "pqs", None


def _saved(tmp_path, hf):
    _hf_rows(hf, make_diffseg_folder(tmp_path / "src")).save_to_disk(str(tmp_path / "saved"))
    return tmp_path / "saved", None


def _tpgt(tmp_path, hf):
    root = tmp_path / "tpgt"
    save_image(root / "Tp" / "a.png", np.zeros((6, 6, 3), np.uint8))
    save_image(root / "Gt" / "a.png", np.full((6, 6), 255, np.uint8))
    save_image(root / "Au" / "b.png", np.zeros((6, 6, 3), np.uint8))
    return root, None


@pytest.mark.parametrize("make", [_diffseg, _parquet, _parquet_folder, _saved, _tpgt],
                         ids=["diffseg-folder", "parquet", "parquet-folder", "save_to_disk", "tpgt"])
def test_opening_a_dataset_never_writes_into_its_folder(tmp_path, hf_cache, make):
    root, spec = make(tmp_path, hf_cache)
    before = tree(root)
    ds = open_dataset(str(spec or root))
    ds.fingerprint()
    load_all(ds)
    open_dataset(str(spec or root)).fingerprint()  # second open, from the digest cache
    assert tree(root) == before


def test_read_only_dataset_folder_opens_and_keeps_its_digest_cache(tmp_path, monkeypatch):
    root = make_diffseg_folder(tmp_path / "ds")
    reads: list[str] = []
    with read_only(monkeypatch, root, reads):
        fp = DiffSeg30kDataset(root).fingerprint()
        load_all(DiffSeg30kDataset(root))
        again = DiffSeg30kDataset(root)
        reads.clear()
        assert again.fingerprint() == fp
    assert reads == []  # the second open re-hashed nothing
