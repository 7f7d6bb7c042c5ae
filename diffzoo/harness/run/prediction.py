"""Predicting single images with a trained detector.

A checkpoint's card.json says which detector, task and label space it holds;
without one the newest matching checkpoint that a run cached is used when
there is exactly one.  Per image the result is a label map (palette PNG whose
values are class indices), an overlay a person can read (the image tinted per
class with a legend), and one JSON line.  The image-level verdicts are those
of the leaderboard's image rows (``metrics/verdict.py``): the edited-area
verdict of a detector with pixels, the own-score verdict of one with its own
image score, both for a detector that gives both, each named as its row.  The
thresholds are the card's fixed ones or those a calibrated run recorded for
the very weights (:func:`prediction_thresholds`).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

from diffzoo.harness.core.device import resolve_device
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError, ModelError, not_found
from diffzoo.harness.core.fsutil import MISSING, atomic_write_bytes, file_kind, sha256_file, writing
from diffzoo.harness.core.outputs import has_pixels, pixel_predictions
from diffzoo.harness.core.parallel import ordered_map, sendable
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.progress import NullProgress, Progress
from diffzoo.harness.core.protocols import Detector, moved_detector
from diffzoo.harness.core.types import BINARY, IGNORE_INDEX, LabelSpace, check_image, check_task
from diffzoo.harness.data.fingerprint import file_orientation
from diffzoo.harness.data.imageio import IMAGE_EXTENSIONS, is_image_file, read_image
from diffzoo.harness.data.labelmaps import load_label_space
from diffzoo.harness.metrics import editor_ranking
from diffzoo.harness.metrics.verdict import DETECTOR, EDITED_AREA, ImageVerdict, image_verdict, row_name
from diffzoo.harness.models.checkpoints import cached_checkpoints, checkpoint_meta, pickle_suffix
from diffzoo.harness.models.releases import releases_holding
from diffzoo.harness.records.policy import Thresholds
from diffzoo.harness.run.evaluate import predict_checked
from diffzoo.harness.run.factories import create_detector
from diffzoo.harness.run.loading import as_batch, chw_uint8, detector_input
from diffzoo.harness.run.model_source import built_pretrained
from diffzoo.harness.run.request import check_threshold_policy
from diffzoo.harness.run.scoring import check_own_score
from diffzoo.harness.run.thresholds import recorded_thresholds

log = logging.getLogger(__name__)

OVERLAY_MIN_SIDE = 256
"""Smaller images are enlarged (integer factor, nearest) so that the legend is legible."""
OVERLAY_ALPHA = 0.45
PREDICTIONS_FILE = "predictions.jsonl"
IMAGE_OUTPUTS = (".labels.png", ".overlay.png")
"""What each image's output name ends in: its label map, its overlay."""


# -- loading ---------------------------------------------------------------------------
@dataclass
class LoadedModel:
    """A detector with its weights loaded, and where they came from."""

    detector: Detector
    name: str
    checkpoint: Path
    sha256: str
    source: str  # "given" or "cache"
    input_short_side: int | None = None  # the paper recipe's evaluation input rule; None: as given
    thresholds: Thresholds | None = None  # None: the card's fixed ones


def _describe(candidates: list[tuple[Path, dict[str, Any]]]) -> str:
    return "; ".join(f"{path} ({meta.get('task') or 'task unknown'})" for path, meta in candidates[:6])


def _choose(
    candidates: list[tuple[Path, dict[str, Any]]], task: str | None, where: str
) -> tuple[Path, dict[str, Any]]:
    """The one candidate of ``task`` (any task if None); else an error naming the choices."""
    matching = [c for c in candidates if task is None or c[1].get("task") in (task, None)]
    if not matching:
        raise ModelError(f"no {task} model among {where}: {_describe(candidates)}")
    # held-out-editor models are for the robustness cases, not for general prediction
    full = [c for c in matching if not c[1].get("train_subset", {}).get("exclude_editors")]
    matching = full or matching
    if len(matching) > 1:
        cached = where.startswith("the cached")
        tasks = [c[1].get("task") for c in matching]
        if task is None and None not in tasks and len(set(tasks)) == len(tasks):  # --task picks one only then
            hint = "pass --task binary|semantic" + (", or the one to use as --checkpoint PATH" if cached else "")
        else:
            hint = "pass the one to use as --checkpoint PATH" if cached else "give only the one to use"
        raise ConfigError(f"{len(matching)} checkpoints fit among {where}, so the choice is ambiguous: "
                          f"{_describe(matching)}; {hint}")
    return matching[0]


def _refuse_release_file(detector: str | None, path: Path) -> None:
    """A ConfigError for a pickled file that a card's release names (of ``detector``, else of any
    detector): predict reads diffzoo checkpoints, which ``diffzoo run`` converts a release into."""
    if pickle_suffix(path) is None:
        return
    named = releases_holding([path.name], detector)
    if named:
        card, release = named[0]
        also = f" (it is also the file of {', '.join(f'{d} released:{r}' for d, r in named[1:])})" if named[1:] else ""
        raise ConfigError(f"--checkpoint {path} is a file {card}'s authors released{also}; predict reads diffzoo "
                          f"checkpoints: `diffzoo run --detector {card} --weights released:{release} --checkpoint "
                          f"{path}` converts it once into the checkpoint cache, where predict --detector {card} "
                          "finds it")


def find_checkpoint(
    detector: str | None, checkpoints: Sequence[Path | str], task: str | None
) -> tuple[Path, dict[str, Any], str]:
    """(checkpoint, its card or {}, "given" | "cache") for the request."""
    if checkpoints:
        unique = _each_once(map(Path, checkpoints))
        for path in unique:
            _refuse_release_file(detector, path)
        given = [(path, checkpoint_meta(path)[1]) for path in unique]
        path, meta = _choose(given, task, "the given checkpoints")
        return path, meta, "given"
    if detector is None:
        raise ConfigError("pass --detector NAME or --checkpoint PATH")
    name = get_registry().get("detector", detector).name
    cached = [(p, checkpoint_meta(p)[1]) for p in cached_checkpoints(name)]
    if not cached:
        raise ConfigError(
            f"no checkpoint of {name} in the cache; train one (`diffzoo run --detector {name}`) "
            "or pass --checkpoint PATH"
        )
    path, meta = _choose(cached, task, f"the cached checkpoints of {name}")
    log.info("using cached checkpoint %s", path)
    return path, meta, "cache"


def load_model(
    detector: str | None = None,
    checkpoints: Sequence[Path | str] = (),
    task: str | None = None,
    device: str = "auto",
    labels: str | LabelSpace | None = None,
) -> LoadedModel:
    """Build the detector a checkpoint was saved from and load its weights.

    The checkpoint's card names the detector, task and label space; ``detector``,
    ``task`` and ``labels`` are needed only for a bare ``.safetensors`` file
    without card.json (and must agree with the card otherwise).
    """
    if task is not None:
        check_task(task)
    target = resolve_device(device)  # a bad --device is reported first, before any lookup
    path, meta, source = find_checkpoint(detector, checkpoints, task)
    card = meta.get("card")
    name = detector or (card.get("name") if isinstance(card, dict) else None)
    if not isinstance(name, str) or not name:  # a hand-edited card.json: its own field named, never "unknown 5"
        lacks = "has no card.json" if not meta else f"has a card.json whose card.name is {name!r}, not"
        raise ConfigError(f"checkpoint {path} {lacks} naming its detector; pass --detector NAME")
    task = meta.get("task") or task or ("semantic" if labels is not None else "binary")
    label_space = BINARY
    if labels is not None and task != "semantic":
        raise ConfigError(f"--labels names the classes of a semantic model; checkpoint {path} holds a {task} one")
    if task == "semantic":
        names = meta.get("label_space", {}).get("names")
        if names is not None:
            label_space = LabelSpace(tuple(names))
            if labels is not None and load_label_space(labels) != label_space:  # never a second, silent answer
                raise ConfigError(f"--labels {labels}: checkpoint {path}'s card.json names its classes "
                                  f"{', '.join(names)}; drop --labels")
        elif labels is not None:
            label_space = load_label_space(labels)
        else:
            raise ConfigError(f"checkpoint {path} has no card.json with its classes; pass --labels")
    pretrained = built_pretrained(get_registry().get("detector", name), meta.get("pretrained") is True, loading=True)
    det = moved_detector(create_detector(name, task, label_space, pretrained=pretrained), target)
    loaded = det.load(path) or {}
    sha = loaded.get("sha256") or sha256_file(checkpoint_meta(path)[0])
    return LoadedModel(det, det.card.name, path, sha, source, checkpoint_short_side(meta, task))


def checkpoint_short_side(meta: dict[str, Any], task: str) -> int | None:
    """The evaluation input rule a checkpoint was trained for: its crop size
    when it was trained with ``--recipe paper`` (a pixel model), else None."""
    config = meta.get("train_config") or {}
    if config.get("recipe") != "paper" or task == "classification":
        return None
    return int(config["crop_size"])


def prediction_thresholds(model: LoadedModel, policy: str, records: Path | str) -> Thresholds:
    """The thresholds ``model`` predicts with: ``fixed`` (the card's, docs/metrics.md) or
    ``calibrated`` (those a ``diffzoo run --thresholds calibrated`` recorded for these very
    weights in the record store ``records``; an error saying how to get them if none did)."""
    check_threshold_policy(policy)
    det = model.detector
    if policy == "fixed":
        return Thresholds.fixed(det)
    return recorded_thresholds(records, model.sha256, model.name, det.task, model.checkpoint)


# -- one image -------------------------------------------------------------------------
@dataclass
class ImagePrediction:
    """What a detector says about one image."""

    verdicts: dict[str, ImageVerdict]  # leaderboard row name -> its verdict; the area row first
    edited_fraction: float | None = None  # None for classification-only detectors
    own_score: float | None = None  # the detector's own image score, if it gives one
    label: np.ndarray | None = None  # H x W class indices (binary: 0/1)
    label_space: LabelSpace = BINARY
    editors: list[dict[str, Any]] = field(default_factory=list)  # semantic: ranking


def judge(name: str, edited_fraction: float | None, own_score: float | None, thresholds: Thresholds
          ) -> dict[str, ImageVerdict]:
    """The image's verdict in each leaderboard row of detector ``name``: by the edited area
    when it gives pixels (``edited_fraction``), by its own score when it gives one."""
    scores = {EDITED_AREA: edited_fraction, DETECTOR: own_score}  # the area row first, as the leaderboard
    # a verdict by calibrated thresholds is the calibrated row's, never the fixed row's of the same name
    return {row_name(name, source, edited_fraction is not None, thresholds.source != "fixed"):
            image_verdict(score, source, thresholds) for source, score in scores.items() if score is not None}


def predict_image(det: Detector, image: np.ndarray, sample_id: str = "image",
                  input_short_side: int | None = None, thresholds: Thresholds | None = None) -> ImagePrediction:
    """Run ``det`` on one H x W x 3 uint8 RGB image of any size (``sample_id``
    names it in a DetectorError).  ``input_short_side``: the image is first
    resized so its shorter side is that (a ``--recipe paper`` model); the
    prediction is at the image's own size either way.  ``thresholds``: the
    pixel and image thresholds (default: the card's fixed ones)."""
    check_image(image, f"image {sample_id}")
    thresholds = thresholds or Thresholds.fixed(det)
    out = predict_checked(det, as_batch(chw_uint8(detector_input(image, input_short_side))), [sample_id])
    own = None if out.image_score is None else float(out.image_score.reshape(-1)[0])
    name = det.card.name
    if not has_pixels(out):  # classification-only detector
        return ImagePrediction(judge(name, None, own, thresholds), own_score=own)
    check_own_score(det.card, own, det.card.gives_image_score, sample_id)  # each verdict a row the run plans
    binary, _, semantic = pixel_predictions(det, out, thresholds.pixel, image.shape[:2])[0]
    fraction = float(binary.mean())
    label, space, editors = binary, BINARY, []
    if semantic is not None:
        label, space = semantic, det.label_space
        counts = np.bincount(semantic.ravel(), minlength=space.num_classes)
        order = editor_ranking(space.num_classes, counts, None)  # the Top-k ranking: pixels desc, index asc
        editors = [{"editor": space.names[i], "pixels": int(counts[i]),
                    "fraction": float(counts[i] / semantic.size)} for i in order]
    return ImagePrediction(judge(name, fraction, own, thresholds), fraction, own, label, space, editors)


# -- pictures --------------------------------------------------------------------------
def class_colours(n: int) -> np.ndarray:
    """n x 3 uint8 colours for class indices 0..n-1 (0 = background, black), each class its own.

    matplotlib's qualitative tab10 (red first, so a binary map shows edits in
    red), then tab20's light shades for more than ten editors, then hues a golden
    angle apart at two saturations and two brightnesses for more than twenty.
    """
    from matplotlib import colormaps
    from matplotlib.colors import hsv_to_rgb

    # tab10 and tab20 are ListedColormaps: their colours are a list of RGB tuples
    tab10 = cast(Any, colormaps["tab10"]).colors
    light = cast(Any, colormaps["tab20"]).colors[1::2]
    order = np.array([tab10[i] for i in (3, 0, 2, 1, 4, 5, 6, 8, 9, 7)] + list(light))
    k = np.arange(max(0, n - 1 - len(order)))
    more = hsv_to_rgb(np.stack([k * 0.618034 % 1, 0.95 - 0.4 * (k % 2), 0.95 - 0.3 * (k // 2 % 2)], axis=1))
    colours = np.zeros((n, 3), np.uint8)
    colours[1:] = np.round(np.concatenate([order, more])[: max(0, n - 1)] * 255)
    return colours


def label_png(label: np.ndarray, space: LabelSpace) -> bytes:
    """An indexed (mode P) PNG: pixel value = class index; the palette only colours it."""
    from PIL import Image

    palette = np.zeros((256, 3), np.uint8)
    palette[: space.num_classes] = class_colours(space.num_classes)
    palette[IGNORE_INDEX] = 255
    h, w = label.shape
    img = Image.frombytes("P", (w, h), np.ascontiguousarray(label, dtype=np.uint8).tobytes())
    img.putpalette(palette.ravel().tolist())
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def overlay_image(image: np.ndarray, pred: ImagePrediction, title: str = "") -> Any:
    """The image tinted per predicted class, with a legend of the classes present.

    Images whose shorter side is under OVERLAY_MIN_SIDE are enlarged by an
    integer factor (nearest neighbour, pixels stay aligned) so the text is legible.
    """
    from PIL import Image, ImageDraw, ImageFont

    assert pred.label is not None
    import cv2

    space, label = pred.label_space, pred.label
    colours = class_colours(space.num_classes)
    image = np.ascontiguousarray(image)
    tinted = image.copy()
    for k in range(1, space.num_classes):  # uint8 all along: a float copy of a large image is gigabytes
        # each 0..255 value tinted with class k, in float32: round((1 - alpha) * value + alpha * colour)
        table = np.round((1 - OVERLAY_ALPHA) * np.arange(256, dtype=np.float32)[:, None]
                         + OVERLAY_ALPHA * colours[k].astype(np.float32)).astype(np.uint8)
        if (mask := label == k).any():
            np.copyto(tinted, cv2.LUT(image, table[:, None, :]), where=mask[..., None])
    h, w = label.shape
    scale = min(8, max(1, math.ceil(OVERLAY_MIN_SIDE / max(1, min(h, w)))))
    img = Image.fromarray(tinted).resize((w * scale, h * scale), Image.Resampling.NEAREST)

    rows: list[tuple[str, tuple[int, ...] | None]] = []
    if title:
        rows.append((title, None))
    for verdict in pred.verdicts.values():
        what = (f"{pred.edited_fraction:.1%} of the image edited" if verdict.source == EDITED_AREA
                else f"own image score {verdict.score:.2f}")
        rows.append((f"{verdict.label.upper()}: {what}", None))
    if pred.editors:
        rows += [(f"{e['editor']}  {e['fraction']:.1%}", tuple(colours[space.index(e["editor"])]))
                 for e in pred.editors]
    elif pred.edited_fraction:
        rows.append(("edited", tuple(colours[1])))
    font_px = max(11, min(img.size) // 24)
    font = ImageFont.load_default(size=font_px)
    draw = ImageDraw.Draw(img, "RGBA")
    pad, line, swatch = font_px // 2, font_px + font_px // 3, font_px
    per_column = max(1, (img.height - 2 * pad) // line)  # rows a thin image cannot hold go on in a column beside
    left = 0.0  # textbbox measures in float
    for first in range(0, len(rows), per_column):
        column = rows[first:first + per_column]
        width = max(draw.textbbox((0, 0), text, font=font)[2] + (swatch + pad if c else 0) for text, c in column)
        draw.rectangle((left, 0, left + width + 2 * pad, len(column) * line + 2 * pad), fill=(0, 0, 0, 170))
        for k, (text, c) in enumerate(column):
            x, y = left + pad, pad + k * line
            if c is not None:
                draw.rectangle((x, y + 1, x + swatch - 2, y + swatch - 1), fill=(*c, 255), outline=(255, 255, 255))
                x += swatch + pad
            draw.text((x, y), text, fill=(255, 255, 255, 255), font=font)
        left += width + 2 * pad
    return img


# -- many files ------------------------------------------------------------------------
def collect_images(paths: Sequence[Path | str], out: Path | str | None = None) -> list[Path]:
    """Files as given, folders expanded to their images (sorted), each file once however often it is
    named (``a.png a.png``, a folder and a file in it); a missing path is an error.  ``out``, the
    folder the label maps and overlays go to, may not be a folder read nor the folder of an image given:
    they would be read as images the next time."""
    out_real = None if out is None else os.path.realpath(out)
    found: list[Path] = []
    for p in map(Path, paths):
        kind = file_kind(p)
        # a folder given, or the folder of an image given: what is written there is read as images next time
        if os.path.realpath(p if kind == "a folder" else p.parent) == out_real and kind in ("a folder", None):
            raise ConfigError(f"--out {out} is a folder of the images to predict: the label maps and overlays "
                              "written there would be read as images the next time; choose another --out")
        if kind == "a folder":
            found += _folder_images(p)
        elif kind is None:
            found.append(p)
        else:  # a path that holds no image is the user's to fix; a FIFO or a device is never opened (it may block)
            what = (f"does not exist{f' ({kind})' if kind != MISSING[0] else ''}" if kind in MISSING
                    else f"is {kind}" if kind.startswith("not readable") else f"is {kind}, not an image file")
            raise not_found(DataError(f"image {p} {what}"))
    if not found:
        raise DataError("no images given")
    return _each_once(found)


def _each_once(paths: Iterable[Path]) -> list[Path]:
    """``paths`` in order, each file once however it is spelt (``./a.png``, a link): its first spelling."""
    first: dict[str, Path] = {}
    for path in paths:
        first.setdefault(os.path.realpath(path), path)
    return list(first.values())


def _folder_images(folder: Path) -> list[Path]:
    """The image files of ``folder`` (sorted); what else it holds is said, never dropped unseen:
    files not named as images, and entries named as images that are no image file (a broken link,
    a FIFO, a folder), each with what it is.  Hidden files such as .DS_Store are no one's images."""
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise not_found(DataError(f"folder {folder} cannot be listed ({exc.strerror})")) from None
    kinds = {f: file_kind(f) for f in entries}
    images = [f for f in entries if kinds[f] is None and is_image_file(f.name)]
    if not images:
        raise not_found(DataError(f"folder {folder} holds no images ({', '.join(IMAGE_EXTENSIONS)})"))
    if passed := [f.name for f in entries if kinds[f] is None and not is_image_file(f.name)
                  and not f.name.startswith(".")]:
        log.warning("%s: %d file(s) not named as an image diffzoo reads (%s) passed over (%s%s)", folder,
                    len(passed), ", ".join(IMAGE_EXTENSIONS), ", ".join(passed[:3]), ", ..." if len(passed) > 3 else "")
    if unusable := [f"{f.name}: {kinds[f]}" for f in entries if kinds[f] is not None and is_image_file(f.name)]:
        log.warning("%s: %d name(s) of images that are no image file passed over (%s%s)", folder, len(unusable),
                    "; ".join(unusable[:3]), "; ..." if len(unusable) > 3 else "")
    return images


STEM_BYTES = 200
"""The longest output stem in bytes: with ``-<n>``, ``.overlay.png`` and the temp file's ``.NAME.XXXXXXXX.tmp``
around it, a name stays within the 255 bytes a file system allows."""


def _stem(path: Path) -> str:
    """``path``'s stem, each backslash made ``_`` (the output folder takes one for a folder separator,
    as Windows does), cut to :data:`STEM_BYTES` (never inside a character)."""
    stem = path.stem.replace("\\", "_")
    data = os.fsencode(stem)
    return stem if len(data) <= STEM_BYTES else data[:STEM_BYTES].decode("utf-8", "ignore")


def _unique_stems(paths: list[Path]) -> list[str]:
    """Each image's output name: its stem (cut to :data:`STEM_BYTES`), or ``<stem>-<n>`` for a stem
    taken already.  A name is never one another image has as its own (``a``, ``a``, ``a-2`` -> ``a``,
    ``a-3``, ``a-2``), nor one taken but for case (``A.png`` beside ``a.png``: one file on macOS or Windows)."""
    natural = {_stem(p).lower() for p in paths}
    taken: set[str] = set()
    stems = []
    for p in paths:
        base = _stem(p)
        stem, n = base, 1
        while stem.lower() in taken or (n > 1 and stem.lower() in natural):
            n += 1
            stem = f"{base}-{n}"
        taken.add(stem.lower())
        stems.append(stem)
    return stems


def output_names(paths: Sequence[Path], task: str) -> list[str]:
    """The files predicting ``paths`` (as :func:`collect_images` gives them) writes in its output
    folder: the lines file, then each image's label map and overlay (none for classification)."""
    pngs = [] if task == "classification" else [stem + kind for stem in _unique_stems(list(paths))
                                                for kind in IMAGE_OUTPUTS]
    return [PREDICTIONS_FILE, *pngs]


def _read(path: Path) -> np.ndarray | BaseException:
    """The image at ``path``, or the error reading it raised (run in a loader worker)."""
    try:
        return read_image(path, path.name, name=str(path))
    except Exception as exc:
        return sendable(exc)


def predict_files(
    model: LoadedModel, images: Sequence[Path | str], out: Path | str, progress: Progress | None = None,
    workers: int = 0, place: Callable[[str], Path] | None = None,
) -> list[dict[str, Any]]:
    """Predict every image; write label maps, overlays and ``predictions.jsonl`` into ``out``.

    Returns the JSON rows.  An unreadable image gets a row with ``error`` and
    the others go on.  Classification-only detectors write no PNGs.
    ``workers``: processes that read and decode the images (core/parallel.py).
    ``place``: the path a file name may be written at in ``out`` (the CLI's claimed output
    folder, which refuses a file diffzoo did not make); default ``out / name``.
    """
    paths = collect_images(images, out)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    place = place or (lambda name: out / name)
    rows: list[dict[str, Any]] = []
    progress = progress or NullProgress()
    # every file placed before any image: a file that may not be written stops it
    lines, *files = [place(name) for name in output_names(paths, model.detector.task)]
    pngs: list[tuple[Path, Path] | None] = list(zip(files[::2], files[1::2])) or [None] * len(paths)
    # every write of the lines file, its close included, is inside writing(): a full disk names it
    orientations = {p: file_orientation(p) for p in paths}
    if rotated := [p.name for p in paths if orientations[p]]:
        log.warning("%d image(s) carry an EXIF orientation tag (e.g. %s): they are predicted on their stored "
                    "pixels, as evaluation scores them; a viewer that applies the tag shows them rotated, and their "
                    "label maps and overlays are not (docs/datasets.md, EXIF orientation)", len(rotated), rotated[0])
    with writing(lines):
        jsonl = open(lines, "w", encoding="utf-8")  # noqa: SIM115 - closed below, inside writing()
    with _closed_writing(jsonl, lines), progress.task(f"predicting with {model.name}", total=len(paths)) as task:
        for path, png, image in zip(paths, pngs, ordered_map(_read, paths, workers)):
            row: dict[str, Any] = {"image": str(path), "detector": model.name,
                                   "checkpoint": str(model.checkpoint), "checkpoint_sha256": model.sha256,
                                   "task": model.detector.task}
            if orientations[path]:
                row["exif_orientation"] = orientations[path]
            if isinstance(image, CorruptSampleError):
                log.warning("skipping %s", image)
                row["error"] = image.reason
            elif isinstance(image, BaseException):
                raise image
            else:
                row.update(_predict_one(model, image, png, path.name))
            with writing(lines):
                jsonl.write(json.dumps(row) + "\n")
                jsonl.flush()
            rows.append(row)
            task.advance()
    return rows


@contextlib.contextmanager
def _closed_writing(fh: IO[str], path: Path) -> Iterator[None]:
    """Close ``fh`` (the file ``path``) when the block ends; a full disk on closing names ``path``."""
    try:
        yield
    finally:
        with writing(path):
            fh.close()


def _predict_one(model: LoadedModel, image: np.ndarray, pngs: tuple[Path, Path] | None, name: str
                 ) -> dict[str, Any]:
    """One image's row; its label map and overlay written at ``pngs`` (None: a detector that gives
    no pixels, whose ``pred.label`` is None)."""
    thresholds = model.thresholds or Thresholds.fixed(model.detector)
    pred = predict_image(model.detector, image, name, model.input_short_side, thresholds)
    row: dict[str, Any] = {
        "size": [int(image.shape[1]), int(image.shape[0])],
        "edited_fraction": pred.edited_fraction,
        "own_image_score": pred.own_score,
        "verdicts": [{"row": row_, **v.to_dict()} for row_, v in pred.verdicts.items()],
        "thresholds": {"source": thresholds.source, **thresholds.as_dict()},
    }
    if model.detector.task == "semantic":
        row["editors"] = pred.editors
    if pred.label is None or pngs is None:
        row["label_map"] = row["overlay"] = None
        return row
    labels_path, overlay_path = pngs
    atomic_write_bytes(labels_path, label_png(pred.label, pred.label_space))
    buf = io.BytesIO()
    overlay_image(image, pred, title=model.name).save(buf, format="PNG")
    atomic_write_bytes(overlay_path, buf.getvalue())
    row["label_map"], row["overlay"] = str(labels_path), str(overlay_path)
    return row
