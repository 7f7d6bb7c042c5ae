"""`diffzoo predict`: label maps, overlays and JSON lines for single images."""

import json
import logging
import math
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from diffzoo import DetectionOutput, Detector, DetectorCard, LabelSpace, create_detector, hookimpl, open_dataset
from diffzoo.harness.core.errors import DetectorError
from diffzoo.harness.core.fsutil import sha256_file
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.models.checkpoints import cache_dir, load_checkpoint, save_checkpoint
from diffzoo.harness.models.segmenter import TrainData
from diffzoo.harness.run.prediction import (
    OVERLAY_ALPHA,
    OVERLAY_MIN_SIDE,
    PREDICTIONS_FILE,
    ImagePrediction,
    class_colours,
    overlay_image,
    predict_image,
)

from helpers.cli import cli, one_line, one_line_exit_2

TINY_TRAIN = TrainConfig(iterations=2, batch_size=2, crop_size=32, warmup_iters=1, pretrained=False)




def trained(folder, task, tmp_path):
    """segformer.tiny trained for 2 iterations on the fixture, saved as a checkpoint."""
    ds = open_dataset(str(folder))
    torch.manual_seed(0)
    det = create_detector("segformer.tiny", task, ds.label_space if task == "semantic" else BINARY)
    det.fit(TrainData(ds, ds.ids("train")), TINY_TRAIN)
    ckpt = tmp_path / f"ck-{task}"
    det.save(ckpt)
    return det, ckpt


@pytest.fixture
def images(tmp_path):
    rng = np.random.default_rng(1)
    big, small = tmp_path / "img1.png", tmp_path / "img2.jpg"
    Image.fromarray(rng.integers(0, 256, (260, 300, 3), dtype=np.uint8)).save(big)
    Image.fromarray(rng.integers(0, 256, (50, 70, 3), dtype=np.uint8)).save(small, quality=95)
    return [big, small]


@pytest.mark.parametrize("task", ["binary", "semantic"])
def test_predict_writes_label_map_overlay_and_a_json_line_per_image(capsys, diffseg_folder, tmp_path, images,
                                                                     task):
    det, ckpt = trained(diffseg_folder, task, tmp_path)
    out = tmp_path / "pred"
    code, stdout, err = cli(capsys, "predict", "--checkpoint", str(ckpt), "--out", str(out), "--device", "cpu",
                            *map(str, images))
    assert code == 0, err
    assert "img1.png" in stdout and "verdicts" in stdout
    pixels = "argmax over classes; edited = argmax != background" if task == "semantic" else "edited if probability > 0.5"
    assert f"thresholds fixed: pixels {pixels}; area 0.01, score 0.5" in " ".join(stdout.split())
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [r["image"] for r in rows] == [str(p) for p in images]
    names = det.label_space.names if task == "semantic" else BINARY.names
    for path, row in zip(images, rows):
        rgb = np.asarray(Image.open(path).convert("RGB"))
        h, w = rgb.shape[:2]
        assert row["detector"] == "segformer.tiny" and row["task"] == task
        assert row["checkpoint_sha256"] == sha256_file(ckpt / "model.safetensors")
        assert row["size"] == [w, h]

        label_img = Image.open(out / f"{path.stem}.labels.png")
        assert label_img.mode == "P" and label_img.size == (w, h)
        label = np.asarray(label_img)
        assert set(np.unique(label)) <= set(range(len(names)))
        # the label map is the detector's own prediction, computed here independently
        logits = det.predict(torch.from_numpy(rgb.copy()).permute(2, 0, 1)[None].float() / 255).mask_logits[0]
        if task == "semantic":
            expected = logits.argmax(0)
            top2 = logits.topk(2, dim=0).values
            decided = (top2[0] - top2[1]) > 1e-4  # a barely trained model has near-ties
        else:
            expected = torch.sigmoid(logits[0]) > 0.5
            decided = logits[0].abs() > 1e-4
        # exact wherever the decision is not a float near-tie (thread counts change summation order)
        decided = decided.numpy()
        assert decided.mean() > 0.9
        assert np.array_equal(label[decided], expected.numpy().astype(np.uint8)[decided])

        fraction = float((label > 0).mean())
        assert row["edited_fraction"] == pytest.approx(fraction)
        # a segmenter has one image row, the area rule's, named as the detector
        assert row["own_image_score"] is None
        assert row["verdicts"] == [{"row": "segformer.tiny", "verdict": "edited" if fraction > 0.01 else "authentic",
                                    "source": "edited_area", "score": pytest.approx(fraction), "threshold": 0.01}]
        assert row["thresholds"] == {"source": "fixed", "pixel": 0.5, "area": 0.01, "score": 0.5}
        if task == "semantic":
            counts = np.bincount(label.ravel(), minlength=len(names))
            want = sorted((i for i in range(1, len(names)) if counts[i]), key=lambda i: (-counts[i], i))
            assert [e["editor"] for e in row["editors"]] == [names[i] for i in want]
            assert [e["fraction"] for e in row["editors"]] == pytest.approx([counts[i] / label.size for i in want])
        else:
            assert "editors" not in row

        overlay = Image.open(out / f"{path.stem}.overlay.png")
        assert overlay.mode == "RGB"
        k = overlay.size[0] // w
        assert overlay.size == (w * k, h * k) and k == max(1, math.ceil(OVERLAY_MIN_SIDE / min(h, w)))
        # below the legend: untouched where nothing is predicted, tinted where something is
        shown = np.asarray(overlay)[::k, ::k][h // 2 :]
        lab, src = label[h // 2 :], rgb[h // 2 :]
        assert np.array_equal(shown[lab == 0], src[lab == 0])
        if (lab > 0).any():
            assert (shown[lab > 0] != src[lab > 0]).any(axis=1).mean() > 0.9


def test_an_overlay_tints_each_class_in_its_colour_without_a_float_copy_of_the_image():
    """Pixel by pixel the tint is round((1 - alpha) * value + alpha * colour) in float32, the legend
    aside; made in the image's own bytes (a float copy of an 8192 x 8192 image took 3 GB and 20 s)."""
    import tracemalloc

    space = LabelSpace(("background", "sd2", "sdxl"))
    h, w = 600, 800
    image = np.random.default_rng(0).integers(0, 256, (h, w, 3), dtype=np.uint8)
    label = np.zeros((h, w), np.uint8)
    label[h // 2:, : w // 2], label[h // 2:, w // 2:] = 1, 2
    pred = ImagePrediction({}, 0.5, None, label, space)
    overlay_image(image[:2, :2], ImagePrediction({}, 0.5, None, label[:2, :2], space))  # its imports, untraced
    tracemalloc.start()
    try:
        shown = np.asarray(overlay_image(image, pred))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * h * w  # the image, a copy, one class's table lookup and mask: no float32 H x W x 3
    colours = class_colours(3)
    for y, x in ((h - 1, 0), (h // 2, w // 2 - 1), (h // 2, w // 2), (h - 1, w - 1), (h // 2 - 1, w - 1)):
        c = label[y, x]
        want = image[y, x] if c == 0 else np.round(np.float32(1 - OVERLAY_ALPHA) * image[y, x].astype(np.float32)
                                                  + np.float32(OVERLAY_ALPHA) * colours[c].astype(np.float32))
        assert shown[y, x].tolist() == np.asarray(want, np.uint8).tolist(), (y, x)


def test_every_class_of_the_largest_label_map_has_a_colour_of_its_own():
    """Past the 20 qualitative colours two editors were drawn alike; background stays black, edits red first."""
    colours = class_colours(255)  # background and 254 editors: the most a uint8 label map holds
    assert len({tuple(c) for c in colours}) == 255
    assert colours[0].tolist() == [0, 0, 0] and colours[1].tolist() == [214, 39, 40]


def test_the_legend_of_a_thin_image_is_drawn_whole_inside_it(monkeypatch):
    """A 4000 x 16 image (enlarged 8 times) cannot hold 30 legend rows one under another: they go on in columns."""
    from PIL import ImageDraw

    space = LabelSpace.from_editors([f"editor{i}" for i in range(30)])
    h, w = 16, 4000
    label = (np.arange(w)[None, :].repeat(h, 0) * space.num_classes // w).astype(np.uint8)
    editors = [{"editor": name, "fraction": 1 / space.num_classes} for name in space.editors]
    pred = ImagePrediction({}, 0.97, None, label, space, editors)
    drawn = []
    text = ImageDraw.ImageDraw.text

    def recorded(self, xy, words, *args, **kwargs):
        drawn.append((words, self.textbbox(xy, words, font=kwargs["font"])))
        return text(self, xy, words, *args, **kwargs)

    monkeypatch.setattr(ImageDraw.ImageDraw, "text", recorded)
    img = overlay_image(np.zeros((h, w, 3), np.uint8), pred, title="segformer.tiny")
    inside = {words.split()[0] for words, (x0, y0, x1, y1) in drawn
              if x0 >= 0 and y0 >= 0 and x1 <= img.width and y1 <= img.height}
    assert inside == {"segformer.tiny", *space.editors}


@pytest.mark.parametrize("image", [np.zeros((8, 8, 3), np.float32), np.zeros((8, 8), np.uint8),
                                   np.zeros((8, 8, 4), np.uint8), np.zeros((0, 8, 3), np.uint8)])
def test_predict_image_refuses_an_array_that_is_not_an_rgb_uint8_image_in_one_line(image):
    from diffzoo.harness.core.errors import DataError
    from diffzoo.harness.core.types import Sample, SampleMeta

    det = create_detector("segformer.tiny", "binary")
    with pytest.raises(DataError) as refused:
        predict_image(det, image, "x.png")
    said = f"must be a non-empty H x W x 3 uint8 RGB array, got {image.shape} {image.dtype}"
    assert str(refused.value) == f"image x.png {said}"
    with pytest.raises(DataError) as refused:  # a dataset's sample, by the same rule
        Sample(image, np.zeros(image.shape[:2], np.uint8), SampleMeta("x.png"))
    assert str(refused.value) == f"sample x.png: image {said}"


def test_missing_image_is_one_line_error(capsys, tmp_path, images):
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    code, _, err = cli(capsys, "predict", "--checkpoint", str(tmp_path / "ck"), "--out", str(tmp_path / "o"),
                       str(images[0]), str(tmp_path / "nope.png"))
    assert code != 0
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [f"error: image {tmp_path / 'nope.png'} does not exist"]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("task, said", [("nosuch", "--task 'nosuch' is not a task. Tasks: binary, semantic, "
                                                     "classification"),
                                         ("Binary", "--task 'Binary' is not a task. Did you mean 'binary'?")])
def test_predict_refuses_a_task_that_is_none_as_plugins_check_does(capsys, tmp_path, images, task, said):
    result = cli(capsys, "predict", "--detector", "segformer.tiny", "--task", task, "--out", tmp_path / "o", images[0])
    one_line_exit_2(*result, said)


def test_predict_help_names_every_task_its_task_option_takes(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    code, out, _ = cli(capsys, "predict", "--help")
    assert code == 0 and "binary, semantic, classification: which model to use." in out


def test_a_bad_pixel_limit_is_one_line_before_the_output_folder_is_made(capsys, tmp_path, images, monkeypatch):
    """Said before --out is claimed, never at the first image with an empty predictions.jsonl left behind."""
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    monkeypatch.setenv("DIFFZOO_MAX_PIXELS", "abc")
    code, _, err = cli(capsys, "predict", "--checkpoint", str(tmp_path / "ck"), "--out", str(tmp_path / "o"),
                       str(images[0]))
    assert code == 2 and [line for line in err.splitlines() if line.strip()] == [
        "error: DIFFZOO_MAX_PIXELS='abc' is not a positive whole number of pixels; unset it for the default "
        "67,108,864 (8192 x 8192) or give e.g. DIFFZOO_MAX_PIXELS=200000000"], err
    assert not (tmp_path / "o").exists()


def test_a_fifo_or_device_given_as_an_image_is_named_for_what_it_is_and_never_opened(capsys, tmp_path, images):
    """A user error, as a missing image is: exit 2."""
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    os.mkfifo(tmp_path / "pipe.png")  # opening it would block for ever
    for path, kind in ((tmp_path / "pipe.png", "a FIFO (named pipe)"), (Path("/dev/null"), "a character device")):
        code, _, err = cli(capsys, "predict", "--checkpoint", str(tmp_path / "ck"), "--out", str(tmp_path / "o"),
                           str(images[0]), str(path))
        assert code == 2 and err.strip() == f"error: image {path} is {kind}, not an image file", err
    assert not (tmp_path / "o").exists()


def test_a_folder_holding_no_images_is_a_user_error_naming_it(capsys, tmp_path):
    """A path given that holds nothing to predict is fixed on the command line, as a missing one is: exit 2."""
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    (tmp_path / "empty").mkdir()
    result = cli(capsys, "predict", "--checkpoint", tmp_path / "ck", "--out", tmp_path / "o", tmp_path / "empty")
    assert one_line_exit_2(*result) == (f"error: folder {tmp_path / 'empty'} holds no images (.png, .jpg, .jpeg, "
                                        ".tif, .tiff, .bmp, .webp)")
    assert not (tmp_path / "o").exists()


def test_a_folder_predicts_its_images_and_says_which_files_it_passed_over(capsys, caplog, tmp_path, images):
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    folder = tmp_path / "in"
    folder.mkdir()
    for image in images:
        (folder / image.name).write_bytes(image.read_bytes())
    (folder / "anim.gif").write_bytes(b"GIF89a")
    (folder / "notes.txt").write_text("x")
    (folder / ".hidden").write_text("x")
    (folder / "broken.png").symlink_to(tmp_path / "gone.png")  # named as images, but no image file
    os.mkfifo(folder / "pipe.png")  # opening it would block for ever
    (folder / "sub.jpg").mkdir()
    (folder / "subfolder").mkdir()  # a folder not named as an image is no one's image: not said
    code, _, err = cli(capsys, "predict", "--checkpoint", str(tmp_path / "ck"), "--out", str(tmp_path / "o"),
                       str(folder))
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()]
    assert [Path(r["image"]).name for r in rows] == ["img1.png", "img2.jpg"]
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said == [f"{folder}: 2 file(s) not named as an image diffzoo reads (.png, .jpg, .jpeg, .tif, .tiff, "
                    ".bmp, .webp) passed over (anim.gif, notes.txt)",
                    f"{folder}: 3 name(s) of images that are no image file passed over (broken.png: a broken symbolic "
                    "link; pipe.png: a FIFO (named pipe); sub.jpg: a folder)"]


def test_an_output_folder_that_is_a_folder_of_the_images_is_refused(capsys, tmp_path, images):
    """Its label maps and overlays would be predicted as images by the next run (a.labels.labels.png)."""
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    folder = images[0].parent
    before = sorted(os.listdir(folder))
    # the folder given, or the folder of an image given (its outputs would be read by `predict FOLDER`)
    for out, given in ((folder, folder), (folder / ".." / folder.name, folder), (folder, images[0])):
        code, out_text, err = cli(capsys, "predict", "--checkpoint", str(tmp_path / "ck"), "--out", str(out),
                                  "--force", str(given))
        assert code == 2 and err.strip() == (f"error: --out {out} is a folder of the images to predict: the label "
                                             "maps and overlays written there would be read as images the next "
                                             "time; choose another --out"), err
    assert sorted(os.listdir(folder)) == before


def test_each_image_gets_outputs_of_its_own_and_one_file_named_twice_is_predicted_once(capsys, tmp_path, images):
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    for folder, name in (("x", "a.png"), ("y", "a.png"), ("z", "a-2.png"), ("w", "A.png")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_bytes(images[0].read_bytes())
    given = [tmp_path / "x" / "a.png", tmp_path / "y" / "a.png", tmp_path / "z" / "a-2.png", tmp_path / "w" / "A.png",
             tmp_path / "x", tmp_path / "x" / ".." / "x" / "a.png"]  # the last two name x/a.png again
    code, _, err = cli(capsys, "predict", "--checkpoint", tmp_path / "ck", "--out", tmp_path / "o", *given)
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()]
    assert [r["image"] for r in rows] == [str(p) for p in given[:4]]
    # a-2 is z's own name, and A beside a is one file on a case-insensitive filesystem
    assert [Path(r["overlay"]).name for r in rows] == ["a.overlay.png", "a-3.overlay.png", "a-2.overlay.png",
                                                        "A-4.overlay.png"]


def test_an_image_named_with_a_backslash_gets_its_outputs_at_the_top_of_out(capsys, tmp_path, images):
    """`a\\b.png` (a name Linux allows) had its label map written as `b.labels.png` in a folder `a`:
    the output folder takes a backslash for a folder separator."""
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    (tmp_path / "in").mkdir()
    for name in ("a\\b.png", "a_b.png"):
        (tmp_path / "in" / name).write_bytes(images[0].read_bytes())
    code, _, err = cli(capsys, "predict", "--checkpoint", tmp_path / "ck", "--out", tmp_path / "o", tmp_path / "in")
    assert code == 0, err
    assert sorted(os.listdir(tmp_path / "o")) == [".diffzoo-out.json", ".diffzoo-predict.json", "a_b-2.labels.png",
                                                   "a_b-2.overlay.png", "a_b.labels.png", "a_b.overlay.png",
                                                   "predictions.jsonl"]


def test_an_image_name_too_long_for_its_outputs_gets_a_shortened_one_of_its_own(capsys, tmp_path, images):
    """`<248 letters>.png` is a valid name, but `<248 letters>.overlay.png` is not (255 bytes): predict
    stopped with 'the name is too long', suggesting another --out, which cannot help."""
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    (tmp_path / "in").mkdir()
    for name in ("a" * 248, "a" * 240 + "é"):  # one long name, and one that differs only after 200 bytes
        (tmp_path / "in" / f"{name}.png").write_bytes(images[0].read_bytes())
    code, _, err = cli(capsys, "predict", "--checkpoint", tmp_path / "ck", "--out", tmp_path / "o", tmp_path / "in")
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()]
    assert [Path(r["label_map"]).name for r in rows] == [f"{'a' * 200}.labels.png", f"{'a' * 200}-2.labels.png"]
    assert all(Path(r["label_map"]).is_file() and Path(r["overlay"]).is_file() for r in rows)


def test_predict_writes_only_into_a_folder_diffzoo_may_write_and_never_over_a_users_file(capsys, tmp_path, images):
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    run = ["predict", "--checkpoint", tmp_path / "ck", str(images[0])]
    (tmp_path / "a-file").write_text("x")
    one_line_exit_2(*cli(capsys, *run, "--out", tmp_path / "a-file"), "--out", "exists and is not a folder")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "img1.labels.png").write_bytes(b"the user's")
    one_line_exit_2(*cli(capsys, *run, "--out", mine), f"--out {mine} is not empty", "--force")
    one_line_exit_2(*cli(capsys, *run, "--out", mine, "--force"),
                    f"{mine / 'img1.labels.png'} was in {mine} before diffzoo claimed it with --force")
    assert (mine / "img1.labels.png").read_bytes() == b"the user's" and not (mine / "predictions.jsonl").exists()
    assert sorted(os.listdir(mine)) == ["img1.labels.png"]  # refused: the folder is not claimed either
    for _ in range(2):  # its own folder is used again
        code, _, err = cli(capsys, *run, "--out", tmp_path / "o")
        assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        ".diffzoo-out.json", ".diffzoo-predict.json", "img1.labels.png", "img1.overlay.png", "predictions.jsonl"]


def test_an_output_folder_used_again_holds_only_the_outputs_of_the_last_predict(capsys, tmp_path, images):
    """The label maps and overlays of an earlier run stayed beside a predictions.jsonl of the new one."""
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    out = tmp_path / "o"
    run = ["predict", "--checkpoint", tmp_path / "ck", "--out", out]
    code, _, err = cli(capsys, *run, *images)
    assert code == 0, err
    (out / "notes.overlay.png").write_bytes(b"mine")  # a user's file, named like predict's
    manifest = json.loads((out / ".diffzoo-predict.json").read_text())
    manifest["files"] += ["../keep.labels.png", "notes.txt"]  # a manifest edited to name other files
    (out / ".diffzoo-predict.json").write_text(json.dumps(manifest))
    (tmp_path / "keep.labels.png").write_bytes(b"x")
    code, stdout, err = cli(capsys, *run, images[1])
    assert code == 0, err
    assert "removed 2 label map(s) and overlay(s) of the images predicted there before" in stdout
    assert sorted(os.listdir(out)) == [".diffzoo-out.json", ".diffzoo-predict.json", "img2.labels.png",
                                       "img2.overlay.png", "notes.overlay.png", "predictions.jsonl"]
    assert (tmp_path / "keep.labels.png").exists()
    (out / ".diffzoo-predict.json").write_text("{not json")
    code, _, err = cli(capsys, *run, images[0])
    assert code == 2 and one_line(err) == (
        f"error: {out / '.diffzoo-predict.json'} is not a readable predict manifest (is not JSON (Expecting property "
        "name enclosed in double quotes at line 1)); it names the label maps and overlays predict wrote there: "
        "remove it (those then stay) or choose another --out")
    assert sorted(os.listdir(out))[2:4] == ["img2.labels.png", "img2.overlay.png"]  # refused before any write


def test_a_corrupt_image_is_reported_and_the_others_still_predicted(capsys, tmp_path, images):
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    bad = tmp_path / "bad.png"
    bad.write_bytes(images[0].read_bytes()[:200])
    code, stdout, _ = cli(capsys, "predict", "--checkpoint", str(tmp_path / "ck"), "--out", str(tmp_path / "o"),
                          str(bad), str(images[1]))
    assert code == 1 and "could not be read" in stdout
    rows = [json.loads(line) for line in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()]
    assert "corrupt or truncated" in rows[0]["error"] and "verdicts" not in rows[0]
    [verdict] = rows[1]["verdicts"]
    assert verdict["verdict"] in ("edited", "authentic") and (tmp_path / "o" / "img2.overlay.png").exists()


def test_pickled_checkpoint_is_refused_and_never_run(capsys, tmp_path, images):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (tmp_path / "evil.pt").write_bytes(pickle.dumps(Evil()))
    code, _, err = cli(capsys, "predict", "--detector", "segformer.tiny", "--checkpoint", str(tmp_path / "evil.pt"),
                       str(images[0]))
    assert code != 0 and "refusing to load" in err and "pickle" in err
    assert not marker.exists()


@pytest.mark.isolated_cache  # the converted release is then the one cached model of its detector
def test_a_released_file_given_to_predict_names_the_run_that_converts_it_and_that_works(capsys, tmp_path, images):
    from helpers.dinov3iml import RELEASE, released

    path = released(tmp_path / "dl")
    code, out, err = cli(capsys, "predict", "--detector", "dinov3iml.tiny", "--checkpoint", path, images[0], "--out",
                         tmp_path / "p")
    run = f"diffzoo run --detector dinov3iml.tiny --weights released:{RELEASE} --checkpoint {path}"
    assert one_line_exit_2(code, out, err) == (
        f"error: --checkpoint {path} is a file dinov3iml.tiny's authors released; predict reads diffzoo checkpoints: "
        f"`{run}` converts it once into the checkpoint cache, where predict --detector dinov3iml.tiny finds it")
    code, _, err = cli(capsys, *run.split()[1:], "--suite", "standard", "--bootstrap", "0", "--device", "cpu",
                       "--out", tmp_path / "o")
    assert code == 0, err
    code, out, err = cli(capsys, "predict", "--detector", "dinov3iml.tiny", images[0], "--out", tmp_path / "p")
    assert code == 0 and f"released-{RELEASE}-" in one_line(out), err


def _cache(det, key, **extra):
    det.save(cache_dir(det.card.name, key), extra=extra)


@pytest.mark.isolated_cache  # an empty cache, then exactly the models the test puts there
def test_without_checkpoint_the_one_cached_model_is_used_else_the_choice_is_explained(capsys, tmp_path, images):
    code, _, err = cli(capsys, "predict", "-d", "segformer.tiny", str(images[1]))
    assert code != 0 and "no checkpoint of segformer.tiny in the cache" in err and "--checkpoint" in err

    torch.manual_seed(0)
    _cache(create_detector("segformer.tiny", "binary"), "k-binary")
    out = tmp_path / "o"
    code, _, err = cli(capsys, "predict", "-d", "segformer.tiny", "--out", str(out), str(images[1]))
    assert code == 0, err
    [row] = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert row["task"] == "binary" and row["checkpoint"] == str(cache_dir("segformer.tiny", "k-binary"))

    # a held-out-editor model does not make the choice ambiguous; a second task does
    _cache(create_detector("segformer.tiny", "binary"), "k-heldout",
           train_subset={"task": "binary", "split": "train", "exclude_editors": ["sd2"]})
    _cache(create_detector("segformer.tiny", "semantic", LabelSpace.from_editors(["sd2", "sdxl"])), "k-sem")
    code, _, err = cli(capsys, "predict", "-d", "segformer.tiny", "--out", str(out), str(images[1]))
    assert code != 0 and "ambiguous" in err and "--task" in err and "k-sem" in err and "k-binary" in err
    code, _, err = cli(capsys, "predict", "-d", "segformer.tiny", "--task", "semantic", "--out", str(out),
                       str(images[1]))
    assert code == 0, err
    [row] = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert row["task"] == "semantic" and {e["editor"] for e in row["editors"]} <= {"sd2", "sdxl"}


def test_given_checkpoints_are_chosen_by_task(capsys, tmp_path, images):
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "b")
    code, _, err = cli(capsys, "predict", "--checkpoint", str(tmp_path / "b"), "--task", "semantic", str(images[1]))
    assert code != 0 and "no semantic model among the given checkpoints" in err and "(binary)" in err
    # two of one task: --task cannot choose, so the answer never suggests it
    create_detector("segformer.tiny", "binary").save(tmp_path / "b2")
    code, _, err = cli(capsys, "predict", "--checkpoint", tmp_path / "b", "--checkpoint", tmp_path / "b2", images[1])
    assert code == 2 and err.strip() == (f"error: 2 checkpoints fit among the given checkpoints, so the choice is "
                                         f"ambiguous: {tmp_path / 'b'} (binary); {tmp_path / 'b2'} (binary); give "
                                         "only the one to use"), err


def test_options_the_checkpoint_answers_or_the_policy_does_not_read_are_refused_not_ignored(capsys, tmp_path,
                                                                                            images):
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "b")
    create_detector("segformer.tiny", "semantic", LabelSpace.from_editors(["sd2", "sdxl"])).save(tmp_path / "s")
    create_detector("segformer.tiny", "semantic", LabelSpace.from_editors(["sd2", "sdxl"])).save(tmp_path / "bare")
    (tmp_path / "bare" / "card.json").unlink()
    bare = next((tmp_path / "bare").glob("*.safetensors"))
    predict = ["predict", "--out", tmp_path / "o", str(images[1])]
    one_line_exit_2(*cli(capsys, *predict, "--checkpoint", tmp_path / "b", "--records", tmp_path),
                    "--records is read only with --thresholds calibrated (they are fixed here)")
    one_line_exit_2(*cli(capsys, *predict, "--checkpoint", tmp_path / "b", "--labels", "sd2,sdxl"),
                    f"--labels names the classes of a semantic model; checkpoint {tmp_path / 'b'} holds a binary one")
    one_line_exit_2(*cli(capsys, *predict, "--checkpoint", tmp_path / "s", "--labels", "sd2,flux"),
                    "--labels sd2,flux:", "card.json names its classes background, sd2, sdxl; drop --labels")
    assert not (tmp_path / "o").exists()
    code, _, err = cli(capsys, *predict, "--checkpoint", tmp_path / "s", "--labels", "sd2,sdxl")  # the same: taken
    assert code == 0, err
    code, _, err = cli(capsys, *predict, "-d", "segformer.tiny", "--checkpoint", bare, "--labels", "sd2,sdxl")
    assert code == 0, err  # a bare file: --labels says it is semantic and names its classes
    [row] = [json.loads(line) for line in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()]
    assert row["task"] == "semantic"
    # one checkpoint named twice (or through another spelling) is one, not an ambiguous choice
    code, _, err = cli(capsys, *predict, "--checkpoint", tmp_path / "b", "--checkpoint", f"{tmp_path}/./b")
    assert code == 0, err


# -- the verdicts (docs/metrics.md; the rule itself: tests/test_image_verdict.py) ---------------
class _Fixed(Detector):
    """A stand-in detector whose outputs the test sets."""

    def __init__(self, card, task, label_space, pretrained=False, logits=None, score=None):
        self.card, self.task, self.label_space = card, task, label_space
        self.logits, self.score = logits, score

    def predict(self, images):
        return DetectionOutput(mask_logits=self.logits, image_score=self.score)

    def fit(self, train, config, progress=None):
        raise NotImplementedError

    def save(self, path):
        meta = {"format": "diffzoo-checkpoint-1", "card": self.card.to_dict(), "task": self.task,
                "label_space": self.label_space.to_dict()}
        return save_checkpoint(path, {"score": torch.tensor([float(self.score)])}, meta)

    def load(self, path):
        state, meta = load_checkpoint(path)
        self.score = state["score"]
        return meta


CARD = DetectorCard(name="fixed.v1", description="test", tasks=("binary", "classification"))
BOTH = DetectorCard(name="fixed.v1", description="test", tasks=("binary",), gives_image_score=True)


@pytest.mark.parametrize(
    "edited_pixels, score, area_verdict, own_verdict",
    [(100, None, "authentic", None), (101, None, "edited", None), (0, 0.51, "authentic", "edited"),
     (0, 0.5, "authentic", "authentic"), (200, 0.1, "edited", "authentic")],
)
def test_each_image_row_gets_its_own_verdict(edited_pixels, score, area_verdict, own_verdict):
    """The area row judges by > 1% edited area whatever the own score; the own-score row by > 0.5."""
    logits = torch.full((1, 1, 100, 100), -5.0)
    logits.view(-1)[:edited_pixels] = 5.0
    det = _Fixed(BOTH if score is not None else CARD, "binary", BINARY, logits=logits,
                 score=None if score is None else torch.tensor([score]))
    pred = predict_image(det, np.zeros((100, 100, 3), np.uint8))
    assert pred.edited_fraction == edited_pixels / 10_000
    assert pred.own_score == (None if score is None else pytest.approx(score))
    verdicts = {name: v.label for name, v in pred.verdicts.items()}
    want = {"fixed.v1": area_verdict, **({"fixed.v1 (own image score)": own_verdict} if own_verdict else {})}
    assert verdicts == want
    assert list(verdicts) == list(want)  # the area row first


@pytest.mark.parametrize(("card", "score", "said"), [
    (CARD, torch.tensor([0.7]), "predict returned an image_score beside its pixels, but the card does not declare "
                                "gives_image_score=True (docs/plugins.md)"),
    (BOTH, None, "the card declares gives_image_score=True, but predict returned no image_score beside its pixels"),
])
def test_an_own_score_the_card_does_not_declare_is_refused_as_evaluation_refuses_it(card, score, said):
    """Each verdict is that of a leaderboard row: a row the card does not plan is never made up, nor one it
    plans left out (it gave a '(own image score)' verdict no leaderboard has, or dropped the one it has)."""
    det = _Fixed(card, "binary", BINARY, logits=torch.zeros((1, 1, 10, 12)), score=score)
    with pytest.raises(DetectorError) as info:
        predict_image(det, np.zeros((10, 12, 3), np.uint8), "x.png")
    assert str(info.value) == f"detector 'fixed.v1' on sample x.png: {said}"


def test_a_classification_detector_gives_json_lines_and_no_pngs(capsys, tmp_path, images):
    class Plugin:
        @hookimpl
        def register_detectors(self, register):
            register("fixed.v1", lambda build: _Fixed(build.card, build.task, build.label_space), card=CARD,
                     default=True, description="test")

    from diffzoo.harness.core.plugins import get_plugin_system

    get_plugin_system().pm.register(Plugin(), name="fixed-plugin")
    _Fixed(CARD, "classification", BINARY, score=torch.tensor([0.7])).save(tmp_path / "ck")
    out = tmp_path / "o"
    code, stdout, err = cli(capsys, "predict", "--checkpoint", str(tmp_path / "ck"), "--out", str(out),
                            *map(str, images))
    assert code == 0, err
    assert "classification detector gives no label maps or overlays" in " ".join(stdout.split())
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["task"] == "classification" and row["detector"] == "fixed.v1"
        assert row["own_image_score"] == pytest.approx(0.7) and row["edited_fraction"] is None
        # a classifier's one image row judges by its score, and is named as the detector
        assert row["verdicts"] == [{"row": "fixed.v1", "verdict": "edited", "source": "detector",
                                    "score": pytest.approx(0.7), "threshold": 0.5}]
        assert row["label_map"] is None and row["overlay"] is None
    assert not list(out.glob("*.png"))


def test_an_unknown_threshold_policy_is_refused_before_any_model_is_looked_for(capsys, tmp_path, images, monkeypatch):
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "empty-cache"))  # no checkpoint to find
    code, out, err = cli(capsys, "predict", "--detector", "segformer.tiny", str(images[0]), "--thresholds", "best")
    assert code == 2 and err.strip() == "error: --thresholds 'best': choose one of fixed, calibrated", err


def test_records_that_are_a_file_or_another_folder_are_said_to_be_no_record_store(capsys, tmp_path, images):
    """The advice to run `diffzoo run --out RECORDS` fits a new, empty or record-store folder only."""
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.png").write_bytes(images[0].read_bytes())
    for where in (images[1], tmp_path / "data"):
        result = cli(capsys, "predict", "--checkpoint", tmp_path / "ck", "--out", tmp_path / "o", "--thresholds",
                     "calibrated", "--records", where, images[0])
        assert one_line_exit_2(*result) == (f"error: --records {where} is not a record store (no {where}/records): "
                                            "pass --records the --out folder of a `diffzoo run --thresholds "
                                            "calibrated`")
    assert not (tmp_path / "o").exists()


def test_an_image_with_an_exif_orientation_is_predicted_as_stored_and_said(capsys, caplog, tmp_path, images):
    """A phone photo's tag makes viewers rotate it; diffzoo predicts the stored pixels, as evaluation
    scores them, and says so: a warning naming the image, and the tag in its row."""
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "ck")
    rotated = tmp_path / "phone.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # shown turned 90 degrees clockwise
    Image.fromarray(np.zeros((30, 60, 3), np.uint8)).save(rotated, exif=exif)
    code, _, err = cli(capsys, "predict", "--checkpoint", tmp_path / "ck", "--out", tmp_path / "o", rotated,
                       images[0])
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()]
    assert rows[0]["exif_orientation"] == 6 and rows[0]["size"] == [60, 30] and "exif_orientation" not in rows[1]
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said == ["1 image(s) carry an EXIF orientation tag (e.g. phone.jpg): they are predicted on their stored "
                    "pixels, as evaluation scores them; a viewer that applies the tag shows them rotated, and their "
                    "label maps and overlays are not (docs/datasets.md, EXIF orientation)"]
    with Image.open(tmp_path / "o" / "phone.labels.png") as labels:
        assert labels.size == (60, 30)  # the stored pixels' shape, not the rotated view's (30 x 60)


@pytest.mark.parametrize("pretrained", [True, False])
def test_a_checkpoint_leaving_out_its_pretrained_part_is_predicted_with_that_part_built(capsys, tmp_path, images,
                                                                                      monkeypatch, pretrained):
    """UniversalFakeDetect saves its probe alone over a pretrained backbone the card names: predict built the
    backbone random, and its frozen-part check refused the checkpoint."""
    import dataclasses

    from diffzoo.harness.core.plugins import get_registry

    entry = get_registry().get("detector", "universalfakedet.tiny")
    monkeypatch.setattr(entry, "card", dataclasses.replace(entry.card, weights="some/hub-backbone"))
    torch.manual_seed(0)
    det = create_detector("universalfakedet.tiny", "classification", pretrained=pretrained)
    det.save(tmp_path / "ufd")
    code, out, err = cli(capsys, "predict", "--checkpoint", tmp_path / "ufd", "--out", tmp_path / "o", "--device",
                         "cpu", images[0])
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "o" / PREDICTIONS_FILE).read_text().splitlines()]
    assert [Path(row["image"]).name for row in rows] == [images[0].name]


@pytest.mark.parametrize("name", [None, 5, ""])
def test_a_card_json_naming_no_detector_is_said_of_that_file(capsys, tmp_path, images, name):
    """A hand-edited card.json without a usable ``card.name`` is named for what it holds: it was
    "has no card.json", "unknown detector 5" or "no detector given"."""
    torch.manual_seed(0)
    create_detector("segformer.tiny", "binary").save(tmp_path / "b")
    meta = json.loads((tmp_path / "b" / "card.json").read_text())
    meta["card"].pop("name") if name is None else meta["card"].update(name=name)
    (tmp_path / "b" / "card.json").write_text(json.dumps(meta))
    one_line_exit_2(*cli(capsys, "predict", "--out", tmp_path / "o", "--checkpoint", tmp_path / "b", str(images[1])),
                    f"checkpoint {tmp_path / 'b'} has a card.json whose card.name is {name!r}, not naming its "
                    "detector; pass --detector NAME")
