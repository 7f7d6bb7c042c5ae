"""Distortions: exact codec settings, label handling, determinism, parameter checks."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.data import distortions as D

H, W = 48, 64


@pytest.fixture
def sample() -> tuple[np.ndarray, np.ndarray]:
    """A smooth image with texture (so codecs and filters have work to do) and a label with
    three classes, an ignore band and an asymmetric layout (to catch flips and offsets)."""
    yy, xx = np.mgrid[0:H, 0:W]
    rng = np.random.default_rng(3)
    image = np.stack([xx * 4, yy * 5, (xx + yy) * 2], -1) + rng.integers(0, 40, (H, W, 3))
    label = np.zeros((H, W), np.uint8)
    label[5:20, 8:30] = 1
    label[30:44, 40:60] = 2
    label[:, :2] = 255
    return np.clip(image, 0, 255).astype(np.uint8), label


def pillow_roundtrip(image: np.ndarray, fmt: str, **options) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, fmt, **options)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


ALL = [
    ("jpeg", {"quality": 75}),
    ("webp", {"quality": 75}),
    ("resize", {"size": 32}),
    ("resize", {"size": 32, "back": False}),
    ("rescale", {"scale": 0.5, "input_size": 64}),
    ("rescale", {"scale": 2.0, "input_size": 32}),
    ("blur", {"sigma": 1.5}),
    ("noise", {"sigma": 8.0, "seed": 1}),
    ("crop", {"fraction": 0.5}),
    ("reencode", {"format": "png"}),
    ("reencode", {"format": "jpeg", "quality": 90}),
    ("reencode", {"format": "webp", "quality": 90}),
]


@pytest.mark.parametrize(("name", "params"), ALL, ids=lambda v: str(v))
def test_deterministic_uint8_and_label_fits(sample, name, params):
    image, label = sample
    before = image.copy(), label.copy()
    fn = getattr(D, name)
    a_img, a_lab = fn(image, label, **params)
    b_img, b_lab = fn(image.copy(), label.copy(), **params)
    assert a_img.dtype == np.uint8 and a_img.ndim == 3 and a_img.shape[2] == 3
    assert a_img.flags.writeable and a_lab.flags.writeable  # torch.from_numpy warns on read-only arrays
    assert a_lab.dtype == np.uint8 and a_lab.ndim == 2
    assert a_img.tobytes() == b_img.tobytes() and a_lab.tobytes() == b_lab.tobytes()
    assert np.array_equal(image, before[0]) and np.array_equal(label, before[1])  # inputs untouched
    if not (name == "rescale" or (name == "resize" and params.get("back", True))):
        assert a_lab.shape == a_img.shape[:2]


@pytest.mark.parametrize("quality", [60, 80, 95])
def test_jpeg_is_exactly_pillow_at_that_quality(sample, quality):
    image, label = sample
    out, out_label = D.jpeg(image, label, quality=quality)
    # Pillow's defaults (4:2:0, no optimize) at the same quality give the same pixels
    assert np.array_equal(out, pillow_roundtrip(image, "JPEG", quality=quality))
    assert out_label is label
    assert not np.array_equal(out, image)


def test_jpeg_qualities_differ_and_lower_is_worse(sample):
    image, label = sample
    q60, q80 = D.jpeg(image, label, quality=60)[0], D.jpeg(image, label, quality=80)[0]
    assert not np.array_equal(q60, q80)
    err = lambda x: np.abs(x.astype(int) - image).mean()  # noqa: E731
    assert err(q60) > err(q80)


def test_webp_matches_pillow_lossy_and_quality_matters(sample):
    image, label = sample
    out = D.webp(image, label, quality=70)[0]
    assert np.array_equal(out, pillow_roundtrip(image, "WEBP", quality=70, method=4))
    assert not np.array_equal(out, image)
    assert not np.array_equal(out, D.webp(image, label, quality=30)[0])


def test_reencode_png_is_lossless_and_lossy_formats_equal_their_distortions(sample):
    image, label = sample
    png, png_label = D.reencode(image, label, format="PNG")
    assert np.array_equal(png, image) and png_label is label
    assert np.array_equal(D.reencode(image, label, format="jpeg", quality=75)[0],
                          D.jpeg(image, label, quality=75)[0])
    assert np.array_equal(D.reencode(image, label, format="webp", quality=75)[0],
                          D.webp(image, label, quality=75)[0])


def test_resize_longer_side_and_label_modes(sample):
    image, label = sample  # 48 x 64: the width is the longer side
    small, same_label = D.resize(image, label, size=32)
    assert small.shape == (24, 32, 3) and same_label is label
    tall = np.ascontiguousarray(image.transpose(1, 0, 2))
    assert D.resize(tall, label.T, size=100)[0].shape == (100, 75, 3)  # upscale, height longer
    small2, small_label = D.resize(image, label, size=32, back=False)
    assert np.array_equal(small2, small)
    assert small_label.shape == (24, 32)
    assert set(np.unique(small_label)) <= set(np.unique(label))  # nearest: no invented classes
    assert small_label[0, 0] == 255 and small_label[6, 8] == 1 and small_label[18, 25] == 2
    # matches Pillow bicubic directly
    ref = np.asarray(Image.fromarray(image).resize((32, 24), Image.Resampling.BICUBIC))
    assert np.array_equal(small, ref)
    unchanged, lab = D.resize(image, label, size=64)
    assert unchanged is image and lab is label


def test_crop_keeps_image_and_label_aligned(sample):
    image, label = sample
    out, out_label = D.crop(image, label, fraction=0.5)
    assert out.shape == (24, 32, 3) and out_label.shape == (24, 32)
    assert np.array_equal(out, image[12:36, 16:48]) and np.array_equal(out_label, label[12:36, 16:48])
    full, full_label = D.crop(image, label, fraction=1.0)
    assert np.array_equal(full, image) and np.array_equal(full_label, label)
    odd = D.crop(image[:47, :63], label[:47, :63], fraction=0.75)  # 35 x 47, offsets (6, 8)
    assert np.array_equal(odd[0], image[6:41, 8:55]) and np.array_equal(odd[1], label[6:41, 8:55])


def test_blur_matches_opencv_and_smooths(sample):
    import cv2

    image, label = sample
    out, out_label = D.blur(image, label, sigma=2.0)
    ref = cv2.GaussianBlur(image, (13, 13), 2.0, borderType=cv2.BORDER_REFLECT_101)
    assert np.array_equal(out, ref) and out_label is label
    hf = lambda x: np.abs(np.diff(x.astype(int), axis=1)).mean()  # noqa: E731
    assert hf(out) < hf(D.blur(image, label, sigma=0.5)[0]) < hf(image)
    assert D.blur(image, label, sigma=0)[0] is image


def test_noise_is_seeded_per_image_and_clipped(sample):
    image, label = sample
    a = D.noise(image, label, sigma=10.0)[0]
    assert np.array_equal(a, D.noise(image.copy(), label, sigma=10.0)[0])
    assert not np.array_equal(a, D.noise(image, label, sigma=10.0, seed=1)[0])
    delta = a.astype(int) - image.astype(int)
    inner = (image > 40) & (image < 215)  # away from the clip limits
    assert 8.0 < delta[inner].std() < 12.0 and abs(delta[inner].mean()) < 1.0
    other = image.copy()
    other[0, 0, 0] ^= 1  # one bit of another image: another noise draw
    other_delta = D.noise(other, label, sigma=10.0)[0].astype(int) - other.astype(int)
    assert not np.array_equal(delta[1:], other_delta[1:])
    white = np.full_like(image, 255)
    assert D.noise(white, label, sigma=30.0)[0].max() == 255  # clipped, no wrap-around
    assert (D.noise(white, label, sigma=30.0)[0] < 255).any()


@pytest.mark.parametrize(
    ("name", "params", "words"),
    [
        ("jpeg", {"quality": 0}, ["jpeg", "quality", "1..100"]),
        ("jpeg", {"quality": 101}, ["jpeg", "quality", "1..100"]),
        ("jpeg", {"quality": 80.5}, ["jpeg", "quality"]),
        ("webp", {"quality": 0}, ["webp", "quality", "1..100"]),
        ("resize", {"size": 0}, ["resize", "size", ">= 1"]),
        ("resize", {"size": -3}, ["resize", "size"]),
        ("resize", {"size": 32, "back": "no"}, ["resize", "back"]),
        ("rescale", {"scale": 0, "input_size": 64}, ["rescale", "scale", "> 0"]),
        ("rescale", {"scale": float("inf"), "input_size": 64}, ["rescale", "scale", "> 0"]),
        ("rescale", {"scale": 0.5, "input_size": 0}, ["rescale", "input_size", ">= 1"]),
        ("rescale", {"scale": 0.5}, ["rescale", "input_size", ">= 1", "None"]),
        ("blur", {"sigma": -1.0}, ["blur", "sigma", "0..100"]),
        ("blur", {"sigma": float("nan")}, ["blur", "sigma"]),
        ("blur", {"sigma": 1e9}, ["distortion 'blur': sigma must be a number in 0..100, got 1000000000.0"]),
        ("blur", {"sigma": 100.5}, ["blur", "sigma", "0..100"]),
        ("noise", {"sigma": -0.1}, ["noise", "sigma", ">= 0"]),
        ("noise", {"sigma": 1.0, "seed": -1}, ["noise", "seed"]),
        ("crop", {"fraction": 0.0}, ["crop", "fraction", "(0, 1]"]),
        ("crop", {"fraction": 1.5}, ["crop", "fraction", "(0, 1]"]),
        ("reencode", {"format": "gif"}, ["reencode", "format", "png, jpeg, webp"]),
        ("reencode", {"format": "jpeg"}, ["reencode", "quality"]),
        ("reencode", {"format": "jpeg", "quality": 101}, ["reencode", "quality", "1..100"]),
        ("reencode", {"format": "png", "quality": 90}, ["reencode", "png", "quality"]),
    ],
    ids=lambda v: str(v),
)
def test_invalid_params_raise_config_error(sample, name, params, words):
    with pytest.raises(ConfigError) as exc:
        getattr(D, name)(*sample, **params)
    for word in words:
        assert word in str(exc.value)


def test_a_resize_past_the_pixel_limit_is_refused_before_it_is_made(sample, monkeypatch):
    """A size no image diffzoo decodes could have is refused, never allocated (size=10**6 asks for terabytes)."""
    monkeypatch.setenv("DIFFZOO_MAX_PIXELS", "10000")
    with pytest.raises(ConfigError) as info:
        D.resize(*sample, size=200)
    assert str(info.value) == ("distortion 'resize': size 200 makes a 48 x 64 px image 150 x 200 px, "
                               "over the 10,000-pixel limit on images ($DIFFZOO_MAX_PIXELS)")
    with pytest.raises(ConfigError) as info:
        D.rescale(*sample, scale=4, input_size=48)
    assert str(info.value) == ("distortion 'rescale': scale 4 of input_size 48 makes a 48 x 64 px image 192 x 256 px, "
                               "over the 10,000-pixel limit on images ($DIFFZOO_MAX_PIXELS)")
    assert D.resize(*sample, size=100)[0].shape == (75, 100, 3)  # 7,500 pixels: within the limit


@pytest.mark.parametrize(("name", "params", "side", "limit"), [
    ("webp", {"quality": 80}, 16384, "WEBP, which takes at most 16383"),
    ("reencode", {"format": "webp", "quality": 80}, 16384, "WEBP, which takes at most 16383"),
    ("jpeg", {"quality": 80}, 65501, "JPEG, which takes at most 65500"),
])
def test_an_image_a_codec_cannot_encode_is_its_sample_skipped_as_too_large(name, params, side, limit):
    """A strip within the pixel limit that the codec cannot take skips its sample, as an odd image does,
    never the run (it was a ValueError / OSError out of Pillow, read as the distortion's bug)."""
    from diffzoo.harness.core.errors import CorruptSampleError
    from diffzoo.harness.core.types import Sample, SampleMeta
    from diffzoo.harness.run.loading import eval_inputs

    strip = Sample(np.zeros((2, side, 3), np.uint8), np.zeros((2, side), np.uint8), SampleMeta("strip"))

    class Strips:
        name, label_space = "strips", None

        def load(self, sid):
            return strip

    [item] = list(eval_inputs(Strips(), ["strip"], getattr(D, name), params))
    assert isinstance(item.error, CorruptSampleError) and item.error.kind == "too-large"
    assert str(item.error) == f"sample strip: a {side}x2 image cannot be encoded as {limit} px a side"
    assert getattr(D, name)(strip.image[:, :16383], strip.label[:, :16383], **params)[0].shape == (2, 16383, 3)
    with pytest.raises(DataError) as info:  # called from Python, with no sample to name
        getattr(D, name)(strip.image, strip.label, **params)
    assert str(info.value) == f"a {side}x2 image cannot be encoded as {limit} px a side"


def test_identity_returns_inputs(sample):
    image, label = sample
    out = D.identity(image, label)
    assert out[0] is image and out[1] is label


@pytest.mark.parametrize(("name", "params", "given"), [
    ("resize", {"size": 10**400}, f"size {10**400}"),
    ("rescale", {"scale": 1e308, "input_size": 10}, "scale 1e+308 of input_size 10"),
    ("rescale", {"scale": 1.0, "input_size": 10**400}, f"scale 1 of input_size {10**400}"),
])
def test_a_size_past_what_a_float_holds_is_refused_as_over_the_pixel_limit(sample, name, params, given, monkeypatch):
    """A size whose arithmetic overflows a float is past any pixel limit: a ConfigError, never an OverflowError."""
    monkeypatch.setenv("DIFFZOO_MAX_PIXELS", "10000")
    with pytest.raises(ConfigError) as info:
        getattr(D, name)(*sample, **params)
    assert str(info.value) == (f"distortion {name!r}: {given} makes a 48 x 64 px image, over the "
                               "10,000-pixel limit on images ($DIFFZOO_MAX_PIXELS)")


def test_none_takes_no_parameters_so_a_case_giving_it_some_is_refused_when_planned():
    """`distortion: none` with `params: {quality: 50}` (a case meant as jpeg) ran clean images unsaid."""
    from diffzoo.harness.run.loading import check_params

    with pytest.raises(ConfigError) as info:
        check_params(D.identity, "none", {"quality": 50}, "jpeg50")
    assert str(info.value) == ("case jpeg50: distortion 'none' cannot take the parameters {'quality': 50}: "
                               "got an unexpected keyword argument 'quality'")
    check_params(D.identity, "none", {}, "clean")
