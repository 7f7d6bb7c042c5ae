"""Pixel-difference labels: alignment, fallback, area bounds, tau, and ``diffzoo data label-pairs``."""

import io
import json
import logging
import re
import unicodedata

import cv2
import numpy as np
import pytest
from PIL import Image

from diffzoo.generators.editors.labels import AlignParams, align, difference_label
from diffzoo.harness.core.errors import DataError
from diffzoo.harness.run.factories import open_dataset

from helpers.cli import cli, one_line_exit_2

S, M = 256, 64  # image side; margin of the canvas the warped view is cut from


def texture(rng, size, shapes=40):
    """Smooth random texture at three scales plus random filled rectangles and discs."""
    img = np.zeros((size, size, 3), np.float32)
    for cells in (6, 24, 64):
        img += cv2.resize(rng.random((cells, cells, 3)).astype(np.float32), (size, size),
                          interpolation=cv2.INTER_CUBIC)  # fmt: skip
    img = (img / 3 * 140 + 50).clip(0, 255).astype(np.uint8)
    for _ in range(shapes):
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        x, y = (int(v) for v in rng.integers(0, size, 2))
        if rng.random() < 0.5:
            w, h = (int(v) for v in rng.integers(5, 30, 2))
            cv2.rectangle(img, (x, y), (x + w, y + h), colour, -1)
        else:
            cv2.circle(img, (x, y), int(rng.integers(3, 15)), colour, -1)
    return img


def project(h, pts):
    p = np.c_[pts, np.ones(len(pts))] @ h.T
    return p[:, :2] / p[:, 2:]


def iou(mask, truth):
    """IoU of label value 1 with ``truth`` over the compared (non-255) pixels."""
    valid = mask != 255
    pred = mask == 1
    return (pred & truth).sum() / ((pred | truth) & valid).sum()


@pytest.fixture(scope="module")
def scene():
    """An edit (a magenta ellipse) seen through a known homography.

    The original is the centre of a larger canvas, so every generated pixel
    samples real content.  ``h`` maps generated pixel coordinates to the
    original's: a 4 degree rotation, 5% zoom, a shift and mild perspective.
    """
    rng = np.random.default_rng(0)
    canvas = texture(rng, S + 2 * M)
    yy, xx = np.mgrid[0 : S + 2 * M, 0 : S + 2 * M]
    ellipse = ((xx - M - 150) / 50.0) ** 2 + ((yy - M - 110) / 35.0) ** 2 <= 1
    edited = canvas.copy()
    noise = rng.integers(-15, 15, (int(ellipse.sum()), 3))
    edited[ellipse] = (np.array([230, 20, 200]) + noise).clip(0, 255).astype(np.uint8)
    a, s = np.deg2rad(4), 1.05
    h = np.array([[s * np.cos(a), -s * np.sin(a), 6], [s * np.sin(a), s * np.cos(a), -8], [2e-5, -3e-5, 1]])
    gen_to_canvas = np.array([[1, 0, M], [0, 1, M], [0, 0, 1.0]]) @ h
    inverse = cv2.WARP_INVERSE_MAP
    gen = cv2.warpPerspective(edited, gen_to_canvas, (S, S), flags=cv2.INTER_LINEAR | inverse)
    truth_gen = cv2.warpPerspective(ellipse.astype(np.uint8), gen_to_canvas, (S, S),
                                    flags=cv2.INTER_NEAREST | inverse).astype(bool)  # fmt: skip
    return {"orig": canvas[M : M + S, M : M + S], "gen": gen, "h": h,
            "truth": ellipse[M : M + S, M : M + S], "truth_gen": truth_gen}  # fmt: skip


@pytest.mark.parametrize("gen_size", [None, (384, 320)], ids=["same-size", "resized"])
def test_recovers_a_known_homography_and_the_edited_region(scene, gen_size):
    orig, gen, h_true = scene["orig"], scene["gen"], scene["h"]
    if gen_size is not None:  # the editor also changed the size (and aspect)
        gen = cv2.resize(gen, gen_size, interpolation=cv2.INTER_LINEAR)
        sx, sy = S / gen_size[0], S / gen_size[1]
        to_gen = np.array([[sx, 0, 0.5 * sx - 0.5], [0, sy, 0.5 * sy - 0.5], [0, 0, 1]])
        h_true = h_true @ to_gen
    res = difference_label(orig, gen)
    assert res.alignment.used and res.status == "ok", res.alignment.reason
    gh, gw = gen.shape[:2]
    corners = np.array([[0, 0], [gw - 1, 0], [gw - 1, gh - 1], [0, gh - 1]], np.float64)
    error = np.linalg.norm(project(res.alignment.homography, corners) - project(h_true, corners), axis=1)
    assert error.max() < 2.0, error
    assert iou(res.mask, scene["truth"]) >= 0.9
    # original pixels the generated image does not show are ignored, not called unchanged
    ys, xs = np.mgrid[0:S, 0:S]
    src = project(np.linalg.inv(h_true), np.c_[xs.ravel(), ys.ravel()]).reshape(S, S, 2)
    outside = (src[..., 0] < -1) | (src[..., 1] < -1) | (src[..., 0] > gw) | (src[..., 1] > gh)
    assert outside.any() and (res.mask[outside] == 255).all()
    # the label mapped back into the generated image's own frame
    truth_gen = scene["truth_gen"]
    if gen_size is not None:
        truth_gen = cv2.resize(truth_gen.astype(np.uint8), gen_size, interpolation=cv2.INTER_NEAREST) > 0
    assert iou(res.gen_frame_mask(gen.shape), truth_gen) >= 0.9
    # deterministic, and recorded
    again = difference_label(orig, gen)
    assert np.array_equal(again.mask, res.mask)
    assert np.array_equal(again.alignment.homography, res.alignment.homography)
    assert res.metadata["tau"] == 0.05 and res.metadata["align"]["seed"] == 0
    assert res.alignment.to_dict()["homography"] is not None


def test_without_alignment_the_same_pair_is_mislabelled(scene):
    res = difference_label(scene["orig"], scene["gen"], align_images=False)
    assert not res.alignment.used and "turned off" in res.alignment.reason
    assert iou(res.mask, scene["truth"]) < 0.5


def test_implausible_homography_falls_back_with_the_reason(scene):
    al = align(scene["orig"], scene["gen"], AlignParams(max_scale=1.02))  # the true zoom is 1.05
    assert not al.used and al.reason.startswith("implausible homography: local scale")
    assert al.homography is not None  # the rejected estimate is kept for the record


def test_flat_images_fall_back_to_unaligned():
    orig = np.full((128, 128, 3), 120, np.uint8)
    gen = orig.copy()
    gen[30:80, 40:90] = (200, 30, 30)
    res = difference_label(orig, gen)
    assert not res.alignment.used and res.alignment.homography is None
    assert "too few ORB keypoints" in res.alignment.reason
    truth = np.zeros((128, 128), np.uint8)
    truth[30:80, 40:90] = 1
    assert res.status == "ok" and np.array_equal(res.mask, truth)


@pytest.mark.parametrize("hw", [(1, 40), (40, 1), (1, 1)])
def test_an_image_one_pixel_wide_is_compared_unaligned(hw):
    """OpenCV's ORB fails on an image with a side of 1 px: one such image stopped a whole
    label-pairs run with an internal error."""
    orig = np.zeros((*hw, 3), np.uint8)
    gen = orig.copy()
    gen[:1, :1] = (200, 30, 30)
    res = difference_label(orig, gen, min_area=0, max_area=1, cleanup=0)
    assert not res.alignment.used and res.alignment.homography is None
    assert res.alignment.reason == f"too few ORB keypoints: the original is {hw[1]} x {hw[0]} px"
    assert res.status == "ok" and res.changed_pixels == 1 and res.valid_pixels == hw[0] * hw[1]


def test_noop_and_global_repaints_are_rejected(scene):
    orig = scene["orig"]
    same = difference_label(orig, orig.copy())
    assert same.status == "rejected-noop" and same.changed_pixels == 0
    assert "already aligned" in same.alignment.reason
    brighter = difference_label(orig, (orig.astype(int) + 60).clip(0, 255).astype(np.uint8))
    assert brighter.status == "rejected-global" and brighter.changed_fraction > 0.9
    other = difference_label(orig, texture(np.random.default_rng(5), S))
    assert other.status == "rejected-global" and not other.alignment.used


def test_a_re_encoded_edit_with_keypoints_in_one_corner_is_not_warped_and_a_true_sub_pixel_shift_is():
    """With its keypoints in one corner, the fit of an unmoved JPEG-re-encoded edit moved the far image corners
    1.1 px (ORB/ECC noise extrapolated), past the 0.5 px tolerance: the pair was warped, blurring it."""
    rng = np.random.default_rng(0)
    orig = texture(rng, 512, shapes=0)
    orig[:170, :170] = texture(rng, 512, shapes=60)[:170, :170]
    edit = orig.copy()
    cv2.circle(edit, (341, 341), 102, (230, 20, 200), -1)
    buf = io.BytesIO()
    Image.fromarray(edit).save(buf, "JPEG", quality=90)
    same = align(orig, np.asarray(Image.open(buf).convert("RGB")))
    assert not same.used and same.corner_shift > 1, same.reason
    assert re.fullmatch(r"already aligned \(inlier keypoints move 0\.\d\d px at most\)", same.reason), same.reason
    shifted = align(orig, cv2.warpAffine(edit, np.float32([[1, 0, 0.6], [0, 1, 0]]), (512, 512),
                                         borderMode=cv2.BORDER_REFLECT))  # fmt: skip
    assert shifted.used, shifted.reason


def test_an_edit_of_another_aspect_ratio_that_alignment_cannot_fit_is_rejected_not_stretched():
    """A 64 x 64 crop of an edited 80 x 64 image was stretched to 80 x 64 and compared: 'ok', 62% changed."""
    y, x = np.mgrid[0:64, 0:80]
    base = np.stack([x * 3, y * 3, (x + y) * 2], -1).astype(np.uint8)  # smooth: no ORB keypoints
    edited = base.copy()
    edited[10:30, 10:30] ^= 255
    crop = difference_label(base, edited[:, :64].copy())
    assert crop.status == "rejected-aspect" and not crop.alignment.used
    assert difference_label(base, edited[:, :64].copy(), align_images=False).status == "rejected-aspect"
    half = difference_label(base, cv2.resize(edited, (40, 32), interpolation=cv2.INTER_AREA))  # the shape halved
    assert half.status == "ok" and half.metadata["gen_size"] == [40, 32]
    rounded = difference_label(base, cv2.resize(edited, (128, 104), interpolation=cv2.INTER_LINEAR))  # 1.6% off
    assert rounded.status == "ok"
    rng = np.random.default_rng(3)  # keypoints: the stretched edit resized back is aligned as it is
    orig = texture(rng, S)
    gen = orig.copy()
    gen[60:120, 80:150] = (255, 0, 255)
    stretched = difference_label(orig, cv2.resize(gen, (S, 200), interpolation=cv2.INTER_AREA))
    assert stretched.status == "ok" and stretched.alignment.reason.startswith("already aligned")


@pytest.mark.parametrize("pair, said", [
    ("gray", "the generated image must be a non-empty H x W x 3 uint8 RGB array, got (96, 96) uint8"),
    ("none", "the original image must be a non-empty H x W x 3 uint8 RGB array, got () object"),
    ("empty", "the generated image must be a non-empty H x W x 3 uint8 RGB array, got (0, 96, 3) uint8"),
])
def test_an_image_no_label_can_be_made_of_is_named_by_the_harness_check(pair, said):
    orig = smooth()
    orig_gen = {"gray": (orig, orig[..., 0]), "none": (None, orig), "empty": (orig, orig[:0])}[pair]
    with pytest.raises(DataError, match=f"^{re.escape(said)}$"):
        difference_label(*orig_gen)
    with pytest.raises(DataError, match=f"^{re.escape(said)}$"):
        align(*orig_gen)


@pytest.mark.parametrize("min_area", [0, 0.0, 0.5])
def test_a_pair_with_no_changed_pixel_is_a_noop_whatever_min_area(min_area):
    """With min_area=0 an identical pair was 'ok', written as an edit labelled all background."""
    orig = smooth()
    res = difference_label(orig, orig.copy(), min_area=min_area, max_area=1)
    assert res.status == "rejected-noop" and res.changed_pixels == 0


def smooth(seed=1, size=96):
    """A shapeless texture kept below 200, so adding 15 never clips."""
    return texture(np.random.default_rng(seed), size, shapes=0).clip(0, 199)


@pytest.mark.parametrize("delta, labelled", [(10, False), (15, True)])  # mean |diff| 0.039 / 0.059
def test_tau_is_respected(delta, labelled):
    orig = smooth()
    gen = orig.copy()
    gen[20:60, 30:70] += np.uint8(delta)
    res = difference_label(orig, gen, tau=0.05, cleanup=0)
    truth = np.zeros(orig.shape[:2], np.uint8)
    truth[20:60, 30:70] = 1
    assert np.array_equal(res.mask, truth if labelled else 0 * truth)
    assert res.status == ("ok" if labelled else "rejected-noop")
    higher = difference_label(orig, gen, tau=0.06, cleanup=0)
    assert higher.changed_pixels == 0  # 15 / 255 = 0.0588 is not above 0.06


def test_cleanup_and_pixel_count_area_bounds():
    orig = smooth()
    gen = orig.copy()
    gen[20:40, 30:50] = 255  # 400 px
    specks = [(5, 5), (80, 10), (70, 85)]
    for y, x in specks:
        gen[y, x] = 255
    raw = difference_label(orig, gen, cleanup=0)
    clean = difference_label(orig, gen)  # default: 3 px open + close
    assert all(raw.mask[y, x] == 1 for y, x in specks)
    assert not any(clean.mask[y, x] for y, x in specks)
    assert clean.mask[20:40, 30:50][1:-1, 1:-1].all()
    assert clean.metadata["cleanup"] == {"open_then_close_square_px": 3} and raw.metadata["cleanup"] is None
    assert difference_label(orig, gen, min_area=500).status == "rejected-noop"  # > 1: pixels
    assert difference_label(orig, gen, min_area=300, max_area=350).status == "rejected-global"
    assert difference_label(orig, gen, min_area=300, max_area=600).status == "ok"




@pytest.mark.parametrize("min_area, max_area, said", [
    (1.0, 2.0, "min_area (1.0) is a fraction of the compared pixels (100%) and max_area (2.0) a pixel count: "
               "no change to an image over 2 px is within both"),
    (0.9, 2.5, "min_area (0.9) is a fraction of the compared pixels (90%) and max_area (2.5) a pixel count: "
               "no change to an image over 2.5 px is within both"),
])
def test_area_bounds_in_mixed_units_that_no_image_over_the_count_can_meet_are_refused(min_area, max_area, said):
    """min_area 1.0 is 100% (a pixel count is above 1): with a pixel-count max_area every pair of an
    image larger than it was rejected, unsaid."""
    from diffzoo.harness.core.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(said)):
        difference_label(smooth(), smooth(), min_area=min_area, max_area=max_area)
    orig = smooth()
    gen = orig.copy()
    gen[20:40, 30:50] = 255  # 400 of 9216 px
    assert difference_label(orig, gen, min_area=0.01, max_area=500, cleanup=0).status == "ok"
    assert difference_label(orig, gen, min_area=0.5, max_area=4609, cleanup=0).status == "rejected-noop"


def save(image, path):
    Image.fromarray(image).save(path)


def test_label_pairs_cli_writes_a_dataset_diffzoo_opens(capsys, tmp_path, scene):
    orig_dir, gen_dir, out = tmp_path / "orig", tmp_path / "gen", tmp_path / "labels"
    orig_dir.mkdir()
    gen_dir.mkdir()
    base = smooth(2)
    edited = base.copy()
    edited[10:50, 20:60] = (250, 0, 0)
    rect = np.zeros(base.shape[:2], np.uint8)
    rect[10:50, 20:60] = 1
    pairs = {
        "a": (base, edited),  # edited, same size
        "b": (base, base),  # no-op
        "w": (scene["orig"], scene["gen"]),  # edited and re-framed
        "z": (base, cv2.resize(edited, (192, 192), interpolation=cv2.INTER_LINEAR)),  # edited, 2x size
    }
    for stem, (o, g) in pairs.items():
        save(o, orig_dir / f"{stem}.png")
        save(g, gen_dir / f"{stem}.png")
    save(base, orig_dir / "c.png")  # no partner
    save(base, gen_dir / "d.png")  # no partner
    code, stdout, err = cli(capsys, "data", "label-pairs", orig_dir, gen_dir, "--out", out, "--editor", "qwen")
    assert code == 0, err
    assert "4 pair(s): ok 3, rejected-noop 1" in stdout
    assert "only in ORIG_DIR: 1: c" in stdout and "only in GEN_DIR: 1: d" in stdout

    rows = {r["id"]: r for r in map(json.loads, (out / "manifest.jsonl").read_text().splitlines())}
    assert {k: r["status"] for k, r in rows.items()} == {"a": "ok", "b": "rejected-noop", "w": "ok", "z": "ok"}
    assert rows["w"]["alignment"]["used"] and len(rows["w"]["alignment"]["homography"]) == 3
    assert not rows["a"]["alignment"]["used"] and rows["b"]["changed_fraction"] == 0
    summary = json.loads((out / "label_pairs.json").read_text())
    assert summary["unmatched"] == {"orig_only": ["c"], "gen_only": ["d"]}
    assert summary["settings"]["tau"] == 0.05

    ds = open_dataset(str(out))
    assert ds.label_space.names == ("background", "qwen")
    assert sorted(i for s in ds.splits() for i in ds.ids(s)) == ["a", "w", "z"]
    a = ds.load("a")
    assert np.array_equal(a.image, edited) and np.array_equal(a.label, rect)
    assert [t.editor for t in a.meta.turns] == ["qwen"]
    w = ds.load("w")  # frame "gen": the generated pixels as they were, the label mapped onto them
    assert np.array_equal(w.image, scene["gen"])
    assert (w.label == 255).any() and iou(w.label, scene["truth_gen"]) >= 0.9
    z = ds.load("z")
    assert z.label.shape == (192, 192) and iou(z.label, np.kron(rect, np.ones((2, 2), np.uint8)) > 0) >= 0.9

    code, _, err = cli(capsys, "data", "label-pairs", orig_dir, gen_dir, "--out", out)
    assert code != 0 and "exists" in err and "Traceback" not in err
    code, _, err = cli(capsys, "data", "label-pairs", orig_dir, gen_dir, "--out", out, "--force",
                       "--frame", "orig")  # fmt: skip
    assert code == 0, err
    w = open_dataset(str(out)).load("w")  # frame "orig": rectified image, label as computed
    assert w.image.shape == scene["orig"].shape and iou(w.label, scene["truth"]) >= 0.9
    assert open_dataset(str(out)).label_space.names == ("background", "edited")


def test_force_replaces_only_a_folder_label_pairs_wrote_never_a_users_or_its_inputs(capsys, tmp_path):
    """--force replaced any folder it was given: --out ~/Documents --force deleted it, and --out ORIG_DIR
    deleted the originals it had just read."""
    for folder in ("o", "g"):
        (tmp_path / folder).mkdir()
        save(np.zeros((16, 16, 3), np.uint8), tmp_path / folder / "x.png")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    (tmp_path / "a-file").write_text("keep")
    pairs = ["data", "label-pairs", tmp_path / "o", tmp_path / "g", "--force", "--out"]
    for out, said in ((mine, f"{mine} holds thesis.tex besides what this command writes"),
                      (tmp_path / "o", f"{tmp_path / 'o'} holds x.png besides what this command writes"),
                      (tmp_path / "a-file", f"{tmp_path / 'a-file'} is a file, not a folder this command made")):
        one_line_exit_2(*cli(capsys, *pairs, out), said, "diffzoo never deletes files it did not make")
    assert (mine / "thesis.tex").read_text() == "years of work" and (tmp_path / "a-file").read_text() == "keep"
    assert (tmp_path / "o" / "x.png").is_file()
    for _ in range(2):  # its own folder: written, then replaced
        code, _, err = cli(capsys, *pairs, tmp_path / "labels")
        assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "labels").iterdir()) == [
        "label_pairs.json", "labels.json", "manifest.jsonl", "pairs"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "g", "labels", "mine", "o"]  # no temp left
    one_line_exit_2(*cli(capsys, "data", "label-pairs", tmp_path / "o", f"{tmp_path}/./o", "--out", tmp_path / "l"),
                    "ORIG_DIR and GEN_DIR are the same folder")
    for gen, said in ((tmp_path / "a-file", "is a file, not a folder"), (tmp_path / "none", "does not exist")):
        assert one_line_exit_2(*cli(capsys, "data", "label-pairs", tmp_path / "o", gen, "--out", tmp_path / "l")) \
            == f"error: generated folder {gen} {said}"


def test_building_mini_never_replaces_a_folder_it_did_not_build(tmp_path):
    from diffzoo.generators.datasets.mini import ensure_mini
    from diffzoo.harness.core.errors import ConfigError

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(ConfigError, match="holds notes.txt besides what this command writes"):
        ensure_mini(root=mine, n_images=2, size=32)
    assert (mine / "notes.txt").read_text() == "keep"


MIXED_UNITS = ("min_area (1.0) is a fraction of the compared pixels (100%) and max_area (184500.0) a pixel count: "
               "no change to an image over 184500 px is within both; give both as fractions (up to 1) or both "
               "as pixel counts (above 1); min_area 0 keeps any change")


@pytest.mark.parametrize("args, said", [
    (["--tau", "1"], "tau must be in [0, 1), got 1.0"),
    (["--tau", "nan"], "tau must be in [0, 1), got nan"),
    (["--min-area", "inf"], "min_area must be a finite number >= 0, got inf"),
    (["--max-area", "nan"], "max_area must be a finite number >= 0, got nan"),
    (["--max-area", "0"], "min_area (0.01) is above max_area (0.0): every pair would be rejected"),
    (["--min-area", "500", "--max-area", "20"], "min_area (500.0) is above max_area (20.0)"),
    (["--min-area", "1", "--max-area", "184500"], MIXED_UNITS),
    (["--min-area", "0", "--max-area", "0"], "max_area 0 rejects every pair: one with no changed pixel is a no-op"),
    (["--min-area", "500", "--max-area", "0"], "max_area 0 rejects every pair: one with no changed pixel is a no-op"),
    (["--cleanup", "-3"], "cleanup must be a whole number of pixels >= 0 (0: off), got -3"),
    (["--frame", "x"], "frame must be one of gen, orig, got 'x'"),
    (["--editor", ""], "editor '' cannot name a class: it is empty; give the editor's name, or none for the class "
                       "'edited'"),
    (["--editor", "  "], "editor '  ' cannot name a class: it is empty"),
    (["--editor", "background"], "editor 'background' cannot name a class: background is label 0, the unedited pixels"),
    (["--editor", " Background"], "editor ' Background' cannot name a class: background is label 0"),
])
def test_label_settings_no_label_can_follow_are_a_usage_error_before_any_image_is_read(capsys, tmp_path, args, said):
    """Each is a setting that would label every pair by a rule rejecting them all (or exit 1, or name
    a class ''): a user's setting, refused in one line, exit 2, with no output folder."""
    for folder in ("o", "g"):
        (tmp_path / folder).mkdir()
        save(np.zeros((16, 16, 3), np.uint8), tmp_path / folder / "x.png")
    code, stdout, err = cli(capsys, "data", "label-pairs", tmp_path / "o", tmp_path / "g", "--out", tmp_path / "l",
                            *args)
    one_line_exit_2(code, stdout, err, said)
    assert not (tmp_path / "l").exists()


def test_the_imgedit_adapter_refuses_the_same_label_settings():
    from diffzoo.generators.datasets.imgedit import ImgEditDataset
    from diffzoo.harness.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"min_area \(0.5\) is above max_area \(0.1\)"):
        ImgEditDataset("unused", min_area=0.5, max_area=0.1)
    with pytest.raises(ConfigError, match="editor 'BACKGROUND' cannot name a class: background is label 0"):
        ImgEditDataset("unused", editor="BACKGROUND")


def test_editor_names_are_read_stripped_and_in_nfc_and_background_or_a_repeat_is_refused(tmp_path):
    """Names were taken as typed: ' qwen ' kept its spaces, 'Background' became a second background
    class, and 'café' typed decomposed gave another label map than 'café' composed."""
    from diffzoo.generators.datasets.pairs import label_pairs
    from diffzoo.harness.core.types import LabelSpace

    nfc, nfd = (unicodedata.normalize(form, "café") for form in ("NFC", "NFD"))
    assert LabelSpace.from_editors([" qwen ", nfd]).names == ("background", "qwen", nfc)
    assert LabelSpace.from_editors([nfd]) == LabelSpace.from_editors([nfc])
    assert LabelSpace.from_editors(["qwen", nfc]).index(nfd) == 2
    for name, why in (("\t", "it is empty"), ("Background", "background is label 0, the unedited pixels"),
                      ("a@b", "it holds '@', which names a metric's slice (IoU.a@b reads as IoU.a sliced by b)")):
        with pytest.raises(DataError, match=re.escape(f"editor {name!r} cannot name a class: {why}")):
            LabelSpace.from_editors(["sd2", name])
    said = "editors 'caf\\xe9' and 'cafe\\u0301' are one class, 'café' (read with spaces stripped, in Unicode NFC)"
    with pytest.raises(DataError, match=re.escape(said)):
        LabelSpace.from_editors([nfc, nfd])
    with pytest.raises(DataError, match=re.escape("editors 'qwen' and ' qwen' are one class, 'qwen'")):
        LabelSpace.from_editors(["qwen", " qwen"])
    base = smooth(2)
    edited = base.copy()
    edited[10:50, 20:60] = (250, 0, 0)
    for folder, image in (("o", base), ("g", edited)):
        (tmp_path / folder).mkdir()
        save(image, tmp_path / folder / "x.png")
    label_pairs(tmp_path / "o", tmp_path / "g", tmp_path / "l", editor=f" {nfd} ")
    assert json.loads((tmp_path / "l" / "labels.json").read_text())["names"] == ["background", nfc]
    row = json.loads((tmp_path / "l" / "manifest.jsonl").read_text())
    assert [t["editor"] for t in row["turns"]] == [nfc]


def test_label_pairs_pairs_an_original_and_an_edit_named_in_two_unicode_forms(tmp_path):
    """Pairs were matched by the file stems as stored: an original saved composed and its edit saved
    decomposed (a macOS copy) were left unmatched, each listed alone under names that read the same."""
    from diffzoo.generators.datasets.pairs import label_pairs

    nfc, nfd = (unicodedata.normalize(form, "café") for form in ("NFC", "NFD"))
    base = smooth(2)
    edited = base.copy()
    edited[10:50, 20:60] = (250, 0, 0)
    for folder, name, image in (("o", nfc, base), ("g", nfd, edited)):
        (tmp_path / folder).mkdir()
        save(image, tmp_path / folder / f"{name}.png")
    report = label_pairs(tmp_path / "o", tmp_path / "g", tmp_path / "l")
    assert report.counts["ok"] == 1 and report.orig_only == report.gen_only == []
    ds = open_dataset(str(tmp_path / "l"))
    assert [i for s in ds.splits() for i in ds.ids(s)] == [nfc]
    assert np.array_equal(ds.load(nfc).image, edited) and ds.load(nfc).label[10:50, 20:60].all()
    (tmp_path / "g" / f"{nfd}.png").rename(tmp_path / "g" / f"{nfd}.jpg")
    save(edited, tmp_path / "g" / f"{nfc}.png")
    with pytest.raises(DataError, match=re.escape(f"two images with the stem '{nfc}': '{nfd}.jpg', '{nfc}.png'")):
        label_pairs(tmp_path / "o", tmp_path / "g", tmp_path / "l2")


def test_label_pairs_says_which_pairs_carry_different_exif_orientation_tags(tmp_path, caplog):
    """A phone photo stored turned, with a tag saying so, and an edit of its upright view: the pair was
    compared as stored, a turned image against an upright one, and rejected as a global repaint unsaid."""
    from diffzoo.generators.datasets.pairs import label_pairs

    base = smooth(2)
    edited = base.copy()
    edited[10:50, 20:60] = (250, 0, 0)
    for folder in ("o", "g"):
        (tmp_path / folder).mkdir()
    exif = Image.Exif()
    exif[0x0112] = 6  # shown turned 90 degrees clockwise
    Image.fromarray(np.ascontiguousarray(np.rot90(base))).save(tmp_path / "o" / "phone.png", exif=exif)
    save(edited, tmp_path / "g" / "phone.png")  # the editor saw the view the tag asks for
    save(base, tmp_path / "o" / "plain.png")
    save(edited, tmp_path / "g" / "plain.png")
    with caplog.at_level(logging.WARNING):
        label_pairs(tmp_path / "o", tmp_path / "g", tmp_path / "l")
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "l" / "manifest.jsonl").read_text().splitlines())}
    assert rows["phone"]["exif_orientation"] == {"orig": 6, "gen": None} and "exif_orientation" not in rows["plain"]
    assert rows["plain"]["status"] == "ok"
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said == ["1 pair(s) whose original and edit carry different EXIF orientation tags (e.g. phone: "
                    "original 6, edit none) are compared as stored, as diffzoo reads every image; an edit made "
                    "on the view a tag asks for is then compared turned (docs/datasets.md, EXIF orientation)"]


@pytest.mark.parametrize("cleanup", [2.5, 3.0, "3"])
def test_a_cleanup_that_is_no_whole_number_is_refused_before_any_image_is_read(cleanup):
    """OpenCV refused it only when the first pair was labelled, with a TypeError (the ImgEdit adapter
    opened, then failed so on every sample)."""
    from diffzoo.generators.datasets.imgedit import ImgEditDataset
    from diffzoo.harness.core.errors import ConfigError

    said = f"cleanup must be a whole number of pixels >= 0 (0: off), got {cleanup!r}"
    with pytest.raises(ConfigError, match=re.escape(said)):
        difference_label(smooth(), smooth(), cleanup=cleanup)
    with pytest.raises(ConfigError, match=re.escape(said)):
        ImgEditDataset("unused", cleanup=cleanup)
    assert difference_label(smooth(), smooth(), cleanup=np.int64(3)).status == "rejected-noop"


def test_every_lookup_of_an_editor_reads_its_name_as_the_label_space_does():
    """A name with spaces or typed decomposed was found by index() but missed by the checks
    that compared it raw (`in`), so a holdout ' qwen' was 'no editor' though index() found it."""
    from types import SimpleNamespace

    from diffzoo.harness.core.types import LabelSpace
    from diffzoo.harness.data.editor_index import editor_values

    nfc, nfd = (unicodedata.normalize(form, "café") for form in ("NFC", "NFD"))
    space = LabelSpace.from_editors(["qwen", nfd])
    assert space.has_editor(" qwen") and space.has_editor(nfd) and space.has_editor(nfc)
    assert not space.has_editor("background") and not space.has_editor("flux")
    dataset = SimpleNamespace(name="two", label_space=space)
    assert editor_values(dataset, iter([" qwen ", nfd])) == {1, 2}
    with pytest.raises(DataError, match=re.escape("dataset two has no editor ' flux'; its editors: qwen, café")):
        editor_values(dataset, [" flux"])
