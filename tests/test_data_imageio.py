"""Image/mask decoding, label maps and the deterministic split."""

from __future__ import annotations

import io
import json
import logging

import numpy as np
import pytest
from PIL import Image, ImageFile

from diffzoo.harness.core import runlog
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.core.types import LabelSpace
from diffzoo.harness.data import (
    DIFFSEG30K_EDITORS,
    DIFFSEG30K_LABELS,
    DIFFSEG30K_LABELS_VERIFIED,
    canonical_split,
    check_mask_values,
    imageio,
    labelmaps,
    load_label_space,
    read_binary_mask,
    read_image,
    read_mask,
    split_ids,
)


def png_bytes(arr: np.ndarray, mode: str | None = None, **kw) -> bytes:
    img = Image.fromarray(arr) if mode is None else Image.fromarray(arr).convert(mode)
    buf = io.BytesIO()
    img.save(buf, format="PNG", **kw)
    return buf.getvalue()


def _encode(img: Image.Image, fmt: str = "PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


RNG = np.random.default_rng(0)
RGB = RNG.integers(0, 256, (16, 16, 3), dtype=np.uint8)


# -- read_image --------------------------------------------------------------


def test_read_image_from_path_bytes_and_pil(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(png_bytes(RGB))
    for src in (path, str(path), path.read_bytes(), Image.open(path)):
        out = read_image(src, "a")
        assert out.dtype == np.uint8 and out.shape == (16, 16, 3) and out.flags.writeable
        assert np.array_equal(out, RGB)


@pytest.mark.parametrize("mode", ["L", "RGBA", "P", "1", "CMYK"])
def test_read_image_converts_modes_to_rgb(mode):
    img = Image.fromarray(RGB).convert(mode)
    buf = io.BytesIO()
    img.save(buf, format="TIFF" if mode == "CMYK" else "PNG")
    out = read_image(buf.getvalue(), "x")
    assert out.shape == (16, 16, 3) and out.dtype == np.uint8


def test_read_image_scales_16_bit():
    arr = np.full((4, 4), 65535, dtype=np.uint16)
    arr[0, 0] = 0
    arr[0, 1] = 1000  # the high byte: 1000 >> 8 = 3, as Pillow does for 16-bit colour
    out = read_image(png_bytes(arr), "x")
    assert out.shape == (4, 4, 3)
    assert out[1, 1].tolist() == [255, 255, 255] and out[0, 0].tolist() == [0, 0, 0]
    assert out[0, 1].tolist() == [3, 3, 3]


@pytest.mark.parametrize("size", [(1, 1), (1, 4000), (4000, 1)])
@pytest.mark.parametrize("mode", ["RGB", "L", "1", "I;16"])
def test_tiny_and_extreme_aspect_images_decode(size, mode):
    img = Image.new(mode, size)
    out = read_image(png_bytes(np.asarray(img)) if mode == "I;16" else _encode(img), "x")
    assert out.shape == (size[1], size[0], 3) and out.dtype == np.uint8
    mask = read_mask(_encode(Image.new("L", size)), "x", size=size)
    assert mask.shape == (size[1], size[0])


@pytest.mark.parametrize("mode, value", [("F", 0.5), ("F", 300.0), ("I", 70000), ("I", -5), ("LAB", None),
                                         ("YCbCr", None), ("PA", None)])
def test_wide_and_rare_modes_convert(mode, value):
    img = Image.new(mode, (3, 2)) if value is None else Image.new(mode, (3, 2), value)
    out = read_image(_encode(img, "TIFF"), "x")
    assert out.shape == (2, 3, 3) and out.dtype == np.uint8
    expected = {0.5: 128, 300.0: 255, 70000: 255, -5: 0}.get(value)
    if expected is not None:
        assert out[0, 0].tolist() == [expected] * 3


def test_pixel_limit_checks_the_header_not_the_decoded_image(monkeypatch):
    from diffzoo.harness.data import imageio

    assert imageio.max_pixels() == 8192 * 8192
    monkeypatch.setenv("DIFFZOO_MAX_PIXELS", "1_000")
    assert imageio.max_pixels() == 1000
    with pytest.raises(CorruptSampleError) as err:
        read_mask(_encode(Image.new("L", (40, 40))), "m")
    assert err.value.kind == "too-large" and "40x40 = 1,600 pixels" in err.value.reason


def test_failure_kinds_of_missing_and_undecodable_files(tmp_path):
    with pytest.raises(CorruptSampleError) as err:
        read_image(tmp_path / "gone.png", "s")
    assert err.value.kind == "missing-file"
    with pytest.raises(CorruptSampleError) as err:
        read_image(b"GIF89a" + bytes(20), "s")
    assert err.value.kind == "corrupt"


def test_a_file_that_may_not_be_read_is_unreadable_not_corrupt(tmp_path, monkeypatch):
    from pathlib import Path

    locked = tmp_path / "locked.png"
    Image.new("RGB", (4, 4)).save(locked)
    real = Path.read_bytes

    def read_bytes(self):
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)  # as a file without read permission (tests run as root)
    with pytest.raises(CorruptSampleError) as err:
        read_image(locked, "s", name="locked.png")
    assert err.value.kind == "unreadable" and err.value.reason == "locked.png: not readable (Permission denied)"


def test_corrupt_image_is_a_corrupt_sample(tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"this is not a png" * 4)
    with pytest.raises(CorruptSampleError) as err:
        read_image(bad, "s1")
    msg = str(err.value)
    assert msg.startswith("sample s1: ") and str(bad) in msg
    assert "corrupt or truncated image" in msg
    assert err.value.sample_id == "s1"


@pytest.mark.parametrize("read", [read_image, read_mask])
def test_an_empty_image_or_mask_file_is_said_to_be_empty(tmp_path, read):
    """A 0-byte file was "corrupt or truncated image (not a recognised image format)"."""
    (tmp_path / "empty.png").touch()
    for src, name in ((tmp_path / "empty.png", None), (b"", "train.zip:a/empty.png")):
        with pytest.raises(CorruptSampleError) as err:
            read(src, "s", name=name)
        assert err.value.kind == "corrupt"
        assert err.value.reason == f"{name or tmp_path / 'empty.png'}: the file is empty (0 bytes), not an image"


@pytest.mark.parametrize("fmt", ["TIFF", "GIF", "WEBP", "PNG"])
@pytest.mark.parametrize("read", [read_image, read_mask])
def test_a_multi_page_or_animated_image_or_mask_is_refused_naming_its_frames(tmp_path, fmt, read):
    """A multi-page TIFF or an animated GIF, WebP or PNG was read as its first frame, silently."""
    frames = [Image.fromarray(np.full((8, 8), v, np.uint8)).convert("P" if fmt == "GIF" else "L") for v in (0, 1, 2)]
    path = tmp_path / f"x.{fmt.lower()}"
    path.write_bytes(_encode(frames[0], fmt, save_all=True, append_images=frames[1:], lossless=True))
    with pytest.raises(CorruptSampleError) as err:
        read(path, "s")
    assert err.value.kind == "multi-frame"
    assert err.value.reason == f"{path}: holds 3 frames (a multi-page or animated image); give a one-frame image"
    one = tmp_path / f"one.{fmt.lower()}"
    one.write_bytes(_encode(frames[1], fmt, save_all=True, lossless=True))
    assert read(one, "s").shape[:2] == (8, 8)  # one frame, saved by a writer of many, is read


def test_a_cameras_mpo_jpeg_is_read_as_its_primary_image_never_refused_as_multi_frame():
    """An MPO JPEG (a phone's or camera's photo carrying a preview or stereo view) is one photo: its first frame."""
    primary = RNG.integers(0, 256, (16, 24, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(primary).save(buf, "MPO", save_all=True, append_images=[Image.new("RGB", (6, 4), (200, 0, 0))],
                                  quality=100, subsampling=0)
    assert Image.open(io.BytesIO(buf.getvalue())).n_frames == 2
    plain = io.BytesIO()
    Image.fromarray(primary).save(plain, "JPEG", quality=100, subsampling=0)
    assert np.array_equal(read_image(buf.getvalue(), "s"), read_image(plain.getvalue(), "s"))


def test_truncated_image_is_a_corrupt_sample(tmp_path):
    data = png_bytes(RNG.integers(0, 256, (64, 64, 3), dtype=np.uint8))
    cut = tmp_path / "cut.png"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(
        CorruptSampleError, match=r"cut\.png: corrupt or truncated image \(.*truncated"
    ):
        read_image(cut, "s2")
    assert ImageFile.LOAD_TRUNCATED_IMAGES is False


def test_missing_file_is_a_corrupt_sample(tmp_path):
    with pytest.raises(CorruptSampleError, match="file not found"):
        read_image(tmp_path / "nope.png", "s3")


# -- read_mask ---------------------------------------------------------------


def test_read_mask_modes():
    idx = (np.arange(256, dtype=np.uint8) % 9).reshape(16, 16)
    mask = read_mask(png_bytes(idx), "m")  # L
    assert np.array_equal(mask, idx) and mask.flags.writeable and mask.dtype == np.uint8
    pal = Image.fromarray(idx, mode="L").convert("P")  # identity palette
    pal.putpalette([v for i in range(256) for v in (i * 7 % 256, 0, 255 - i)])
    buf = io.BytesIO()
    pal.save(buf, format="PNG")
    assert Image.open(io.BytesIO(buf.getvalue())).mode == "P"
    assert np.array_equal(read_mask(buf.getvalue(), "m"), idx)  # palette index = class
    grey_rgb = np.repeat(idx[:, :, None], 3, axis=2)
    assert np.array_equal(read_mask(png_bytes(grey_rgb), "m"), idx)  # equal channels


def test_colour_mask_is_refused():
    colour = np.zeros((16, 16, 3), dtype=np.uint8)
    colour[2:5, 2:5] = (255, 0, 0)
    with pytest.raises(CorruptSampleError, match="masks must be single-channel class-index maps") as err:
        read_mask(png_bytes(colour), "m", name="m.mask.png")
    assert "m.mask.png" in str(err.value) and "9 pixel(s) have unequal channels" in str(err.value)
    assert err.value.kind == "mask-ambiguous"


def test_mask_modes_with_alpha_16_bit_and_other_modes():
    idx = np.array([[0, 1], [2, 3]], np.uint8)
    la = np.stack([idx, np.full_like(idx, 255)], -1)
    assert np.array_equal(read_mask(_encode(Image.fromarray(la, "LA")), "m"), idx)  # opaque alpha
    rgba = np.concatenate([np.repeat(idx[:, :, None], 3, 2), np.full((2, 2, 1), 255, np.uint8)], -1)
    assert np.array_equal(read_mask(_encode(Image.fromarray(rgba, "RGBA")), "m"), idx)
    wide = np.array([[0, 256]], np.uint16)
    with pytest.raises(CorruptSampleError, match=r"I;16 mask has values 0..256") as err:
        read_mask(png_bytes(wide), "m")
    assert err.value.kind == "mask-values"
    with pytest.raises(CorruptSampleError, match="unsupported mask mode F") as err:
        read_mask(_encode(Image.new("F", (2, 2)), "TIFF"), "m")
    assert err.value.kind == "unsupported-mode"


def test_a_region_mask_is_its_non_zero_pixels_at_every_bit_depth_a_label_mask_keeps_its_rules():
    """A 16-bit 0/65535 region mask was refused as "class-index masks hold values 0..254"."""
    binary = np.array([[0, 65535], [65535, 0]], np.uint16)
    for region in (binary, binary.astype(np.uint8) // 255, (binary // 257).astype(np.uint8)):  # 16 bit, 0/1, 0/255
        assert np.array_equal(imageio.read_object_mask(png_bytes(region), "m"), binary > 0)
    with pytest.raises(CorruptSampleError, match=r"I;16 mask has values 0..65535; class-index masks") as err:
        read_mask(png_bytes(binary), "m")
    assert err.value.kind == "mask-values"
    with pytest.raises(CorruptSampleError, match=r"m\.png: mask is JPEG-encoded") as err:
        imageio.read_object_mask(_encode(Image.fromarray((binary // 257).astype(np.uint8)), "JPEG"), "m",
                                 name="m.png")
    assert err.value.kind == "mask-lossy"


def test_lossy_webp_mask_is_refused_lossless_is_read():
    idx = np.array([[0, 1], [2, 3]], np.uint8)
    lossless = _encode(Image.fromarray(idx), "WEBP", lossless=True)
    assert np.array_equal(read_mask(lossless, "m"), idx)
    with pytest.raises(CorruptSampleError, match=r"m.mask.webp: mask is WEBP-encoded \(lossy\);") as err:
        read_mask(_encode(Image.fromarray(idx), "WEBP", lossless=False), "m", name="m.mask.webp")
    assert err.value.kind == "mask-lossy"


def test_binary_masks_accept_jpeg_and_take_a_threshold():
    arr = np.zeros((8, 8), np.uint8)
    arr[:4] = 255
    jpeg = _encode(Image.fromarray(arr), "JPEG", quality=90)
    assert np.array_equal(read_binary_mask(jpeg, "b"), (arr > 0).astype(np.uint8))  # 127.5 absorbs noise
    grey = np.full((2, 2), 100, np.uint8)
    assert read_binary_mask(png_bytes(grey), "b", threshold=0.3).all()  # 100 > 76.5
    assert not read_binary_mask(png_bytes(grey), "b").any()
    pal = Image.fromarray(np.array([[0, 1]], np.uint8), "L").convert("P")
    pal.putpalette([0, 0, 0, 255, 255, 255] + [0] * 762)
    assert read_binary_mask(_encode(pal), "b").tolist() == [[0, 1]]  # palette colours, not indices


def test_mask_size_mismatch():
    small = np.zeros((8, 12), dtype=np.uint8)
    with pytest.raises(CorruptSampleError) as err:
        read_mask(png_bytes(small), "m", name="x.mask.png", size=(16, 16))
    msg = str(err.value)
    assert "x.mask.png" in msg and "12x8" in msg and "16x16" in msg


def test_binary_mask_rule(monkeypatch, caplog):
    arr = np.zeros((4, 4, 3), dtype=np.uint8)
    arr[0, 0] = (255, 255, 0)  # mean 170 > 127.5
    arr[0, 1] = (255, 0, 0)  # mean 85
    arr[0, 2] = (128, 128, 128)  # mean 128 > 127.5
    arr[0, 3] = (127, 127, 127)
    out = read_binary_mask(png_bytes(arr), "b")
    assert out.dtype == np.uint8 and out[0].tolist() == [1, 0, 1, 0] and out[1:].sum() == 0
    zero_one = np.zeros((4, 4), dtype=np.uint8)
    zero_one[1, 1] = 1
    monkeypatch.setattr(runlog, "_SAID", set())
    with caplog.at_level(logging.WARNING):
        assert read_binary_mask(png_bytes(zero_one), "b").sum() == 0
    assert "0/1-encoded" in caplog.text


@pytest.mark.parametrize("edited", [1, 255])
def test_a_16_bit_binary_mask_whose_values_all_fall_below_the_threshold_is_warned(monkeypatch, caplog, edited):
    """A 16-bit mask of 0/1 or 0/255 reads as all background (its high byte is 0) with no warning."""
    mask = np.zeros((4, 5), dtype=np.uint16)
    mask[1:3, 1:3] = edited
    monkeypatch.setattr(runlog, "_SAID", set())
    with caplog.at_level(logging.WARNING):
        assert read_binary_mask(png_bytes(mask), "b", name="b.png").sum() == 0
    assert caplog.messages == [
        f"sample b: b.png has non-zero values up to {edited} but none above 32767.5, so it reads as all background; "
        "is it an 8-bit or 0/1 mask saved as I;16 (read by its high byte, v // 256)? (warned once)"]
    mask[1:3, 1:3] = 65535  # white in 16 bits: edited
    assert read_binary_mask(png_bytes(mask), "b").sum() == 4


# -- label maps --------------------------------------------------------------


def test_diffseg30k_default_labels(monkeypatch, caplog):
    assert DIFFSEG30K_EDITORS == (
        "sd2", "sd3.5", "sdxl", "flux1", "glide", "kolors", "hunyuandit1.1", "kandinsky2.2",
    )  # fmt: skip
    assert DIFFSEG30K_LABELS.names == ("background", *DIFFSEG30K_EDITORS)
    assert DIFFSEG30K_LABELS_VERIFIED is False
    monkeypatch.setattr(runlog, "_SAID", set())
    with caplog.at_level(logging.WARNING):
        labelmaps.default_diffseg30k_labels()
        labelmaps.default_diffseg30k_labels()
    assert caplog.text.count("UNVERIFIED") == 1


def test_load_label_space_forms(tmp_path):
    ls = LabelSpace(("background", "a", "b"))
    assert load_label_space(ls) is ls
    f = tmp_path / "labels.json"
    f.write_text(json.dumps({"names": ["background", "x", "y"], "verified": True}))
    assert load_label_space(f).names == ("background", "x", "y")
    assert load_label_space(str(f)).names == ("background", "x", "y")
    assert load_label_space("sdxl, flux1").names == ("background", "sdxl", "flux1")
    assert load_label_space("background,sdxl").names == ("background", "sdxl")
    for value_0 in ("Background", "bg", "BG"):  # an alias names value 0, as in a label file: never a class
        assert load_label_space(f"{value_0},sd2,sdxl").names == ("background", "sd2", "sdxl")
    f.write_text(json.dumps({"classes": []}))
    with pytest.raises(DataError, match="names"):
        load_label_space(f)
    with pytest.raises(DataError, match="does not exist"):
        load_label_space(tmp_path / "missing.json")


def test_an_inline_label_list_with_a_separator_that_is_not_a_comma_is_refused_but_a_label_file_may_hold_it(tmp_path):
    """``sd2;sdxl`` is a typo for two classes, not one class of that name; a file names its classes one by one."""
    for given, meant in (("sd2;sdxl", "sd2,sdxl"), ("background|sd2 | sdxl", "background,sd2 , sdxl")):
        with pytest.raises(ConfigError) as refused:
            load_label_space(given)
        assert str(refused.value) == (f"--labels: names {given!r}: class names are comma-separated; "
                                      f"did you mean {meant!r}?")
    f = tmp_path / "labels.json"
    f.write_text(json.dumps(["background", "sd2;sdxl", "a|b"]))
    assert load_label_space(f).names == ("background", "sd2;sdxl", "a|b")


def test_a_label_file_giving_a_value_twice_or_a_verified_that_is_not_a_boolean_is_refused(tmp_path):
    """json keeps the last of two equal keys silently (the YAML reader refuses them); "verified": "false"
    is a true value, so it vouched for an order it denies."""
    from diffzoo.harness.core.fsutil import FileRefused

    twice = tmp_path / "twice.json"
    twice.write_text('{"0": "background", "1": "sdxl", "2": "sd2", "1": "sd2", "2": "sdxl"}')
    with pytest.raises(FileRefused, match="twice.json.*gives '1' twice in one object; keep one"):
        load_label_space(twice)
    inline = tmp_path / "inline.yaml"
    inline.write_text("{0: background, 1: sd2, 1: sdxl}\n")
    with pytest.raises(FileRefused, match=r"inline.yaml gives '1' twice \(line 1, columns 17 and 25\); keep one$"):
        load_label_space(inline)
    said = tmp_path / "said.json"
    said.write_text(json.dumps({"names": ["background", "sd2"], "verified": "false"}))
    with pytest.raises(DataError, match=r"verified must be true or false, got 'false'"):
        load_label_space(said)


def test_check_mask_values():
    mask = np.zeros((4, 4), dtype=np.uint8)
    mask[0, 0], mask[0, 1] = 8, 255
    check_mask_values(mask, DIFFSEG30K_LABELS, "s", "s.mask.png")  # 8 and ignore are fine
    mask[1, 1] = 12
    with pytest.raises(CorruptSampleError) as err:
        check_mask_values(mask, DIFFSEG30K_LABELS, "s", "s.mask.png")
    msg = str(err.value)
    assert "s.mask.png: mask value 12 is not in the label map (9 classes: background, sd2" in msg
    assert "pass --labels FILE if your masks use another encoding" in msg


# -- splits ------------------------------------------------------------------


def test_split_is_deterministic_and_about_80_20():
    ids = [f"{i:08d}" for i in range(2000)]
    a = split_ids(ids, 0.2, seed=0)
    assert a == split_ids(list(reversed(ids)), 0.2, seed=0)
    assert a["train"] == sorted(a["train"]) and a["val"] == sorted(a["val"])
    assert set(a["train"]) | set(a["val"]) == set(ids) and not set(a["train"]) & set(a["val"])
    assert 0.17 < len(a["val"]) / len(ids) < 0.23
    assert split_ids(ids, 0.2, seed=1) != a


def test_split_stable_when_ids_are_added():
    ids = [f"img{i}" for i in range(300)]
    before = split_ids(ids)
    after = split_ids(ids + [f"new{i}" for i in range(100)])
    assert set(before["val"]) <= set(after["val"])
    assert set(before["train"]) <= set(after["train"])


def test_split_names_and_bad_fraction():
    assert canonical_split("validation") == "val"
    assert canonical_split("train") == "train" and canonical_split("cross_test") == "cross_test"
    with pytest.raises(ConfigError, match="val_fraction"):  # an adapter option: a usage error
        split_ids(["a"], 1.5)
