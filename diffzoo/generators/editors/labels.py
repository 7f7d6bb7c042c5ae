"""Edit labels from pixel differences, for instruction editors and paired datasets.

Instruction editors take no mask, so the changed region is derived from the
(original, edited) pair by PIXAR's rule (its ``preprocess_raw/2_construct_dataset``; docs/datasets.md):

1. **Resize** a generated image of another size to the original's.  One
   whose aspect ratio differs by more than :data:`MAX_ASPECT_CHANGE` (more
   than editors' rounding of their sides) from the original's, and from the
   ``run_size`` an editor resized the original to, is labelled only if step
   2 fits it (a homography used, or the resized image already aligned);
   otherwise a plain resize would stretch it and the pair is ``rejected-aspect``.
2. **Align.** ORB keypoints, Hamming brute-force matching with Lowe's ratio
   test, a RANSAC homography, refined by ECC (``cv2.findTransformECC``; kept
   only if it raises the correlation: ORB keypoints found on coarse pyramid
   levels are several px off, ECC brings the fit under a pixel).  The estimate
   is used only with enough inliers, when plausible (bounded local scale,
   stretch/shear and perspective, no mirroring) and when the warped image
   covers enough of the original; otherwise the pair is compared unaligned and
   the reason is recorded.  A fit moving none of its inlier keypoints by
   ``identity_tolerance`` px is not applied either: resampling an aligned
   image would only blur it.
3. **Compare** in the original's frame: ``mean over RGB of |orig - gen| > tau``,
   images as floats in [0, 1].  Pixels the warped image does not fully cover
   are ``IGNORE_INDEX`` (255).
4. **Clean up** (a choice, default on): a morphological opening then closing
   with a ``cleanup`` px square drops isolated specks and fills pinholes.
5. **Bound the area**: a changed area below ``min_area``, or none at all
   (whatever ``min_area``), is a no-op edit (``rejected-noop``), one above
   ``max_area`` a global repaint (``rejected-global``).

Deterministic (OpenCV's RNG is seeded before RANSAC); every parameter is
recorded in :attr:`LabelResult.metadata`.  OpenCV is imported on first use.
"""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from diffzoo.generators.editors.label_rule import DEFAULT_CLEANUP, DEFAULT_MAX_AREA, DEFAULT_MIN_AREA, DEFAULT_TAU
from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.types import BINARY, IGNORE_INDEX, LabelSpace, check_image

log = logging.getLogger(__name__)

STATUSES = ("ok", "rejected-noop", "rejected-global", "rejected-aspect")
MAX_ASPECT_CHANGE = 0.05
"""Relative aspect-ratio difference a pair alignment does not fit may have and still be resized and compared:
editors round each side of an output of about a megapixel to a multiple of up to 32 px, at most 16 px of a
side at least 362 px long (8:1), under 5%."""
ALIGNED = "already aligned"
FRAMES = ("gen", "orig")


@dataclass(frozen=True)
class AlignParams:
    """Settings of :func:`align`, recorded with every label."""

    n_features: int = 5000
    ratio: float = 0.75  # Lowe's ratio test on the two nearest Hamming neighbours
    ransac_threshold: float = 3.0  # px
    ransac_iters: int = 2000
    confidence: float = 0.995
    min_inliers: int = 15
    min_inlier_ratio: float = 0.25  # of the ratio-test matches
    refine: bool = True  # ECC refinement of the RANSAC fit
    ecc_iters: int = 100
    ecc_eps: float = 1e-6
    ecc_max_side: int = 512  # ECC runs on images downscaled to at most this side
    max_scale: float = 2.0  # local scale (Jacobian singular values) within [1/x, x]
    max_anisotropy: float = 1.5  # ratio of those singular values: stretch and shear
    min_coverage: float = 0.5  # of the original, by the warped image
    identity_tolerance: float = 0.5  # px: a fit moving no inlier keypoint this far is not applied
    seed: int = 0


@dataclass(frozen=True)
class Alignment:
    """Outcome of :func:`align`.

    ``homography`` maps generated-image pixel coordinates (pixel centres at
    integers) to the original's; it is the estimate even when not ``used``
    (None when there was none).  ``reason`` says why it was or was not used;
    ``corner_shift``: largest corner displacement beyond the plain resize, px.
    """

    homography: np.ndarray | None
    used: bool
    reason: str
    inliers: int = 0
    matches: int = 0
    refined: bool = False
    corner_shift: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        h = self.homography
        d["homography"] = None if h is None else [[round(float(v), 8) for v in row] for row in h]
        d["corner_shift"] = None if self.corner_shift is None else round(self.corner_shift, 4)
        return d


@dataclass
class LabelResult:
    """A pixel-difference label in the original's frame.

    ``mask``: H x W uint8, 1 changed, 0 unchanged, 255 not compared;
    ``rectified``: the generated image in the original's frame;
    ``changed_fraction`` = changed / compared (``valid``) pixels.
    """

    mask: np.ndarray
    status: str
    changed_fraction: float
    changed_pixels: int
    valid_pixels: int
    alignment: Alignment
    rectified: np.ndarray
    metadata: dict[str, Any] = field(default_factory=dict)

    def gen_frame_mask(self, gen_shape: tuple[int, ...]) -> np.ndarray:
        """The mask mapped into the generated image's frame (nearest neighbour).

        Generated pixels that fall outside the original are 255 (ignore).
        """
        import cv2

        gen_hw, orig_hw = tuple(gen_shape[:2]), self.mask.shape
        m = self.mask
        if self.alignment.used:
            r = _residual(self.alignment.homography, gen_hw, orig_hw)
            m = cv2.warpPerspective(m, r, orig_hw[::-1], flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP,
                                    borderMode=cv2.BORDER_CONSTANT, borderValue=IGNORE_INDEX)  # fmt: skip
        if gen_hw != orig_hw:
            m = cv2.resize(m, gen_hw[::-1], interpolation=cv2.INTER_NEAREST_EXACT)
        return m


# -- geometry ------------------------------------------------------------------
def _scale_matrix(src_hw: tuple[int, int], dst_hw: tuple[int, int]) -> np.ndarray:
    """A plain resize as a homography (cv2.resize's pixel-centre convention)."""
    sy, sx = dst_hw[0] / src_hw[0], dst_hw[1] / src_hw[1]
    return np.array([[sx, 0, 0.5 * sx - 0.5], [0, sy, 0.5 * sy - 0.5], [0, 0, 1.0]])


def _residual(h: np.ndarray, gen_hw: tuple[int, int], orig_hw: tuple[int, int]) -> np.ndarray:
    """``h`` after the plain resize: maps the resized generated image onto the original."""
    return h @ np.linalg.inv(_scale_matrix(gen_hw, orig_hw))


def _corners(hw: tuple[int, int]) -> np.ndarray:
    h, w = hw
    return np.array([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], dtype=np.float64)


def _project(m: np.ndarray, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.c_[pts, np.ones(len(pts))] @ m.T
    return p[:, :2] / p[:, 2:], p[:, 2]


def _implausible(r: np.ndarray, hw: tuple[int, int], p: AlignParams) -> str | None:
    """Why the residual homography ``r`` is not a believable re-framing, or None."""
    if not np.all(np.isfinite(r)) or abs(r[2, 2]) < 1e-12:
        return "degenerate matrix"
    r = r / r[2, 2]
    pts = np.r_[_corners(hw), [[(hw[1] - 1) / 2, (hw[0] - 1) / 2]]]
    uv, w = _project(r, pts)
    if np.any(w <= 1e-6):  # w is affine in (x, y): positive at the corners = everywhere inside
        return "part of the image maps to infinity"
    for (u, v), wi, (x, y) in zip(uv, w, pts):  # Jacobian of the projective map at (x, y)
        jac = np.array([[r[0, 0] - u * r[2, 0], r[0, 1] - u * r[2, 1]],
                        [r[1, 0] - v * r[2, 0], r[1, 1] - v * r[2, 1]]]) / wi  # fmt: skip
        if np.linalg.det(jac) <= 0:
            return "it mirrors or folds the image"
        s = np.linalg.svd(jac, compute_uv=False)
        if s[1] < 1 / p.max_scale or s[0] > p.max_scale:
            where = f"at ({x:.0f}, {y:.0f}), allowed 1/{p.max_scale}..{p.max_scale}"
            return f"local scale {s[1]:.2f}..{s[0]:.2f} {where}"
        if s[0] / s[1] > p.max_anisotropy:
            return f"stretch/shear {s[0] / s[1]:.2f} at ({x:.0f}, {y:.0f}), allowed {p.max_anisotropy}"
    return None


def _warp(image: np.ndarray, r: np.ndarray, hw: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """``image`` warped by ``r`` (bilinear) and the pixels it fully covers.

    Bilinear warping of ones gives exactly 1 only where no sample came from
    outside the image, so border pixels blended with the fill are excluded.
    """
    import cv2

    kw = {"flags": cv2.INTER_LINEAR, "borderMode": cv2.BORDER_CONSTANT, "borderValue": 0}
    cover = cv2.warpPerspective(np.ones(hw, np.float32), r, hw[::-1], **kw)
    return cv2.warpPerspective(image, r, hw[::-1], **kw), cover > 0.999


def _resize(image: np.ndarray, hw: tuple[int, int]) -> np.ndarray:
    import cv2

    if image.shape[:2] == tuple(hw):
        return image
    shrink = image.shape[0] >= hw[0] and image.shape[1] >= hw[1]
    return cv2.resize(image, hw[::-1], interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)


# -- alignment -----------------------------------------------------------------
def _ransac(go: np.ndarray, gg: np.ndarray, p: AlignParams) -> tuple[np.ndarray | None, np.ndarray, int, str]:
    """ORB + ratio test + RANSAC: (homography gg -> go or None, its inlier keypoints in gg, matches, failure or '')."""
    import cv2

    none = np.empty((0, 2))
    if min(go.shape) < 2:  # ORB's image pyramid fails on a side of 1 px (cv2.error), where it finds none anyway
        return None, none, 0, f"too few ORB keypoints: the original is {go.shape[1]} x {go.shape[0]} px"
    orb = cv2.ORB_create(nfeatures=p.n_features)
    kp_o, des_o = orb.detectAndCompute(go, None)
    kp_g, des_g = orb.detectAndCompute(gg, None)
    if des_o is None or des_g is None or len(kp_o) < 4 or len(kp_g) < 4:
        return None, none, 0, f"too few ORB keypoints (original {len(kp_o)}, generated {len(kp_g)})"
    knn = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(des_g, des_o, k=2)
    good = [m[0] for m in knn if len(m) == 2 and m[0].distance < p.ratio * m[1].distance]
    if len(good) < p.min_inliers:
        return None, none, len(good), f"{len(good)} matches pass the ratio test, need {p.min_inliers}"
    src = np.float32([kp_g[m.queryIdx].pt for m in good])
    dst = np.float32([kp_o[m.trainIdx].pt for m in good])
    cv2.setRNGSeed(p.seed)
    h, inliers = cv2.findHomography(src, dst, cv2.RANSAC, p.ransac_threshold,
                                    maxIters=p.ransac_iters, confidence=p.confidence)  # fmt: skip
    if h is None:
        return None, none, len(good), "RANSAC found no homography"
    kept = src[inliers.ravel() > 0].astype(np.float64)
    need = max(p.min_inliers, int(np.ceil(p.min_inlier_ratio * len(good))))
    failure = f"{len(kept)} RANSAC inliers of {len(good)} matches, need {need}" if len(kept) < need else ""
    return h / h[2, 2], kept, len(good), failure


def _ecc_score(go: np.ndarray, gg: np.ndarray, r: np.ndarray) -> float:
    import cv2

    warped, valid = _warp(gg, r, go.shape)
    return float(cv2.computeECC(go, warped, valid.astype(np.uint8)))


def _refine(go: np.ndarray, gg: np.ndarray, r: np.ndarray, p: AlignParams) -> np.ndarray | None:
    """ECC refinement of the homography ``r`` (gg -> go), or None if it fails or does not help."""
    import cv2

    hw = go.shape
    small = tuple(max(1, round(n * min(1.0, p.ecc_max_side / max(hw)))) for n in hw)
    d = _scale_matrix(hw, small)
    go_s, gg_s = (_resize(x, small).astype(np.float32) for x in (go, gg))
    r_s = d @ r @ np.linalg.inv(d)
    crit = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, p.ecc_iters, p.ecc_eps)
    try:
        before = _ecc_score(go_s, gg_s, r_s)
        # ECC's warp maps template (original) coordinates to input (generated) ones
        _, warp = cv2.findTransformECC(go_s, gg_s, np.linalg.inv(r_s).astype(np.float32),
                                       cv2.MOTION_HOMOGRAPHY, crit, None, 5)  # fmt: skip
        r2_s = np.linalg.inv(warp.astype(np.float64))
        after = _ecc_score(go_s, gg_s, r2_s)
    except (cv2.error, np.linalg.LinAlgError) as exc:
        log.debug("ECC refinement failed: %s", exc)
        return None
    if not (np.all(np.isfinite(r2_s)) and after > before):
        return None
    r2 = np.linalg.inv(d) @ r2_s @ d
    return r2 / r2[2, 2]


def align(orig: np.ndarray, gen: np.ndarray, params: AlignParams | None = None) -> Alignment:
    """Estimate the homography taking ``gen`` onto ``orig``, or say why there is none to use."""
    import cv2

    p = params or AlignParams()
    orig, gen = np.asarray(orig), np.asarray(gen)
    check_image(orig, "the original image")
    check_image(gen, "the generated image")
    hw = orig.shape[:2]
    s = _scale_matrix(gen.shape[:2], hw)
    go = cv2.cvtColor(orig, cv2.COLOR_RGB2GRAY)
    gg = cv2.cvtColor(_resize(gen, hw), cv2.COLOR_RGB2GRAY)
    r, kept, n_match, failure = _ransac(go, gg, p)
    n_in = len(kept)
    info = {"inliers": n_in, "matches": n_match}
    if r is None or failure:
        return Alignment(None if r is None else r @ s, False, failure, **info)
    r2 = _refine(go, gg, r, p) if p.refine else None
    r = r if r2 is None else r2
    info.update(homography=r @ s, refined=r2 is not None)
    problem = _implausible(r, hw, p)
    if problem:
        return Alignment(used=False, reason=f"implausible homography: {problem}", **info)
    corners = _corners(hw)
    info["corner_shift"] = float(np.abs(_project(r, corners)[0] - corners).max())
    # measured where the fit has evidence: at far corners a fit resting on clustered keypoints extrapolates its noise
    shift = float(np.abs(_project(r, kept)[0] - kept).max())
    coverage = float(_warp(go, r, hw)[1].mean())
    if coverage < p.min_coverage:
        reason = f"the warped image covers {coverage:.0%} of the original, need {p.min_coverage:.0%}"
        return Alignment(used=False, reason=reason, **info)
    if shift < p.identity_tolerance:
        return Alignment(used=False, reason=f"{ALIGNED} (inlier keypoints move {shift:.2f} px at most)", **info)
    how = ", ECC-refined" if r2 is not None else ""
    return Alignment(used=True, reason=f"homography from {n_in} of {n_match} matches{how}", **info)


def rectify(
    gen: np.ndarray, alignment: Alignment, orig_hw: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """``gen`` in the original's frame (resized, then warped if ``alignment.used``), and its valid pixels."""
    out = _resize(gen, orig_hw)
    if not alignment.used:
        return out, np.ones(orig_hw, dtype=bool)
    return _warp(out, _residual(alignment.homography, gen.shape[:2], orig_hw), orig_hw)


# -- the label -----------------------------------------------------------------
def check_label_settings(tau: float, min_area: float, max_area: float, cleanup: int) -> None:
    """ConfigError for settings no label can follow: ``tau`` outside [0, 1), an area bound that
    is negative or not a finite number, ``min_area`` above ``max_area`` (both fractions, or both
    pixel counts), ``max_area`` 0, a fraction ``min_area`` that no change to an image larger
    than a pixel-count ``max_area`` can meet within it, a ``cleanup`` that is negative or no
    whole number.  Checked before any image is read."""
    said = [] if 0 <= tau < 1 else [f"tau must be in [0, 1), got {tau}"]
    said += [f"{what} must be a finite number >= 0, got {value}" for what, value in
             (("min_area", min_area), ("max_area", max_area)) if not (math.isfinite(value) and value >= 0)]
    if not said and (min_area <= 1) == (max_area <= 1) and min_area > max_area:
        said.append(f"min_area ({min_area}) is above max_area ({max_area}): every pair would be rejected")
    elif not said and max_area == 0:
        said.append("max_area 0 rejects every pair: one with no changed pixel is a no-op")
    elif not said and min_area <= 1 < max_area and math.ceil(min_area * (math.floor(max_area) + 1)) > max_area:
        # of the images over max_area px, the smallest needs the fewest changed pixels
        said.append(f"min_area ({min_area}) is a fraction of the compared pixels ({min_area:.0%}) and max_area "
                    f"({max_area}) a pixel count: no change to an image over {max_area:g} px is within both; give "
                    "both as fractions (up to 1) or both as pixel counts (above 1); min_area 0 keeps any change")
    whole = isinstance(cleanup, numbers.Integral) and not isinstance(cleanup, bool)  # OpenCV's kernel side
    if not (whole and cleanup >= 0):
        said.append(f"cleanup must be a whole number of pixels >= 0 (0: off), got {cleanup!r}")
    if said:
        raise ConfigError("; ".join(said))


def edited_class(editor: str | None) -> tuple[LabelSpace, str | None]:
    """The label space of pairs ``editor`` made, and its name as that reads it (spaces stripped,
    NFC: :meth:`LabelSpace.from_editors`); None: the class ``edited``, no editor named.  A name
    the label space refuses is a ConfigError, as the user's setting it is."""
    if editor is None:
        return BINARY, None
    try:
        space = LabelSpace.from_editors([editor])
    except DataError as exc:
        raise ConfigError(f"{exc}; give the editor's name, or none for the class 'edited'") from None
    return space, space.editors[0]


def shown_share(fraction: float, bound: float) -> str:
    """``fraction`` as a percentage to 0.1%, rounded away from ``bound``: down below it, up above it,
    so a share that missed a bound never reads as at or past it."""
    tenths = round(fraction * 1000, 6)  # float noise: 0.7 * 1000 is 700.0000000000001
    return f"{(math.floor(tenths) if fraction < bound else math.ceil(tenths)) / 10:.1f}%"


def _bound(value: float, valid: int) -> float:
    """An area bound in pixels: up to 1 a fraction of ``valid``, above 1 a count."""
    return value * valid if value <= 1 else value


def difference_label(
    orig: np.ndarray,
    gen: np.ndarray,
    tau: float = DEFAULT_TAU,
    *,
    min_area: float = DEFAULT_MIN_AREA,
    max_area: float = DEFAULT_MAX_AREA,
    cleanup: int = DEFAULT_CLEANUP,
    align_images: bool = True,
    params: AlignParams | None = None,
    run_size: tuple[int, int] | None = None,
) -> LabelResult:
    """The changed region of ``gen`` relative to ``orig`` (H x W x 3 uint8 RGB; sizes may differ).

    See the module docstring for the steps; ``min_area``/``max_area`` are
    fractions of the compared pixels, or pixel counts when above 1;
    ``run_size``: (h, w) an editor resized ``orig`` to (rounding its sides) before editing.
    """
    import cv2

    check_label_settings(tau, min_area, max_area, cleanup)
    orig, gen = np.asarray(orig), np.asarray(gen)
    check_image(orig, "the original image")
    check_image(gen, "the generated image")
    p = params or AlignParams()
    alignment = align(orig, gen, p) if align_images else Alignment(None, False, "alignment turned off")
    rect, valid = rectify(gen, alignment, orig.shape[:2])
    diff = np.abs(orig.astype(np.int16) - rect.astype(np.int16)).sum(axis=2, dtype=np.int32)
    changed = (diff / (3 * 255.0) > tau) & valid  # mean over RGB of |orig - gen|, both in [0, 1]
    if cleanup > 1:
        kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (cleanup, cleanup))
        opened = cv2.morphologyEx(changed.astype(np.uint8), cv2.MORPH_OPEN, kernel)
        changed = cv2.morphologyEx(opened, cv2.MORPH_CLOSE, kernel).astype(bool) & valid
    n_valid, n_changed = int(valid.sum()), int(changed.sum())
    gh, gw = gen.shape[:2]
    shapes = [orig.shape[:2], *([run_size] if run_size else [])]
    stretch = min(max(gw * h / (gh * w), gh * w / (gw * h)) - 1 for h, w in shapes)  # 0: one shape, two scales
    if not (alignment.used or alignment.reason.startswith(ALIGNED)) and stretch > MAX_ASPECT_CHANGE:
        status = "rejected-aspect"
    elif n_changed == 0 or n_changed < _bound(min_area, n_valid):  # nothing changed is never an edit
        status = "rejected-noop"
    elif n_changed > _bound(max_area, n_valid):
        status = "rejected-global"
    else:
        status = "ok"
    mask = changed.astype(np.uint8)
    mask[~valid] = IGNORE_INDEX
    metadata = {
        **label_settings(tau, min_area, max_area, cleanup, p if align_images else None),
        "orig_size": list(orig.shape[1::-1]),
        "gen_size": list(gen.shape[1::-1]),
    }
    fraction = n_changed / n_valid if n_valid else 0.0
    return LabelResult(mask, status, fraction, n_changed, n_valid, alignment, rect, metadata)


def label_options(
    tau: float, min_area: float, max_area: float, cleanup: int, align: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The settings, checked (:func:`check_label_settings`): (:func:`difference_label`'s keyword
    arguments, the settings recorded with its labels, :func:`label_settings`)."""
    check_label_settings(tau, min_area, max_area, cleanup)
    options = {"tau": tau, "min_area": min_area, "max_area": max_area, "cleanup": cleanup, "align_images": align}
    return options, label_settings(tau, min_area, max_area, cleanup, AlignParams() if align else None)


def label_settings(
    tau: float, min_area: float, max_area: float, cleanup: int, params: AlignParams | None
) -> dict[str, Any]:
    """Everything that decides a label, as recorded with it (``params`` None: no alignment)."""
    import cv2

    return {
        "rule": "mean_rgb(|orig - gen|) / 255 > tau",
        "tau": tau,
        "min_area": min_area,
        "max_area": max_area,
        "area_units": "fraction of compared pixels; values above 1 are pixel counts",
        "cleanup": {"open_then_close_square_px": cleanup} if cleanup > 1 else None,
        "align": asdict(params) if params is not None else None,
        "opencv": cv2.__version__,
    }
