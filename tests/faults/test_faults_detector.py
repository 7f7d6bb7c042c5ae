"""Fault suite: the detector boundary.

Every prediction is held to the protocol before a metric sees it; a
malformed one is a DetectorError naming the detector, the sample, what was
expected and what came back - through the library, the runner and the CLI
(one line, non-zero exit, no record).  `diffzoo plugins check` finds each
violation of a deliberately broken plugin and passes the example plugin; a
detector written only from docs/plugins.md runs; `--no-train` works for a
training-free detector on a fresh cache.
"""

from __future__ import annotations

import multiprocessing
import re
from pathlib import Path

import pytest
import torch

from diffzoo import DetectionOutput, Detector, DetectorCard, LabelSpace, hookimpl, open_dataset
from diffzoo.harness.core.errors import DiffzooError
from diffzoo.harness.core.plugins import get_plugin_system
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data.distortions import identity
from diffzoo.harness.run.evaluate import evaluate

from helpers.cli import cli
from helpers.detectors import Scripted
from helpers.plugin_guide import REPO

pytestmark = pytest.mark.isolated_cache  # fault tests start from an empty cache

def score(ds, det, tasks=("binary",)):
    return evaluate(det, ds, "val", identity, {}, tasks=tasks)


@pytest.fixture
def ds(diffseg_folder):
    return open_dataset(str(diffseg_folder))


def logits(b, c, h, w, value=0.0, dtype=torch.float32):
    return torch.full((b, c, h, w), value, dtype=dtype)


def expect_error(ds, det, pattern, tasks=("binary",)):
    with pytest.raises(DiffzooError) as info:
        score(ds, det, tasks)
    assert type(info.value).__name__ == "DetectorError"
    message = str(info.value)
    first = ds.ids("val")[0]
    assert "faulty.x" in message and first in message, message
    assert re.search(pattern, message), message
    return message


def test_logits_of_another_size_than_the_input(ds):
    det = Scripted(answer=lambda x: DetectionOutput(mask_logits=logits(1, 1, 16, 16)))
    message = expect_error(ds, det, r"16 x 16 \(H x W\) for an input of 32 x 32")
    assert "expected 1 x 1 x 32 x 32" in message and "got shape [1, 1, 16, 16]" in message


def test_a_batch_of_the_wrong_length(ds):
    det = Scripted(answer=lambda x: DetectionOutput(mask_logits=logits(2, 1, *x.shape[-2:])))
    expect_error(ds, det, r"batch of 2 for 1 input image")


def test_binary_logits_with_three_channels(ds):
    det = Scripted(answer=lambda x: DetectionOutput(mask_logits=logits(1, 3, *x.shape[-2:])))
    expect_error(ds, det, r"3 channel\(s\); the task needs 1")


def test_semantic_logits_with_a_class_missing(ds):
    space = ds.label_space
    det = Scripted("semantic", space, lambda x: DetectionOutput(mask_logits=logits(1, space.num_classes - 1,
                                                                                   *x.shape[-2:])))
    expect_error(ds, det, rf"{space.num_classes - 1} channel\(s\); the task needs {space.num_classes}",
                 tasks=("semantic",))


def test_integer_labels_outside_the_label_space(ds):
    space = ds.label_space
    det = Scripted("semantic", space,
                   lambda x: DetectionOutput(labels=torch.full((1, *x.shape[-2:]), 7, dtype=torch.int64)))
    message = expect_error(ds, det, r"labels lie outside the label space", tasks=("semantic",))
    assert "0..2" in message and "[7]" in message


def test_probabilities_outside_zero_one(ds):
    det = Scripted(answer=lambda x: DetectionOutput(mask_probs=logits(1, 1, *x.shape[-2:], 1.5)))
    expect_error(ds, det, r"mask_probs lie outside \[0, 1\]")


def test_class_probabilities_that_do_not_sum_to_one(ds):
    space = ds.label_space
    det = Scripted("semantic", space,
                   lambda x: DetectionOutput(mask_probs=logits(1, space.num_classes, *x.shape[-2:], 0.9)))
    expect_error(ds, det, r"do not sum to 1", tasks=("semantic",))


def test_a_bfloat16_softmax_is_probabilities_that_sum_to_one():
    """bfloat16 rounds each probability to 2**-8 of itself: a softmax's sum drifts by up to ~0.004, past 1e-3."""
    from diffzoo.harness.core.outputs import check_output

    space = LabelSpace.from_editors(["a", "b", "c", "d", "e", "f", "g", "h"])
    det = Scripted("semantic", space)
    probs = torch.softmax(torch.randn(2, space.num_classes, 64, 64, generator=torch.Generator().manual_seed(0)) * 3, 1)
    check_output(det, DetectionOutput(mask_probs=probs.to(torch.bfloat16)), ["a", "b"], (64, 64))
    off = torch.full_like(probs, 1.02 / space.num_classes)  # a real error is still one, in any dtype
    with pytest.raises(DiffzooError, match=r"do not sum to 1; expected a sum of 1 per pixel \(±0.007812\)"):
        check_output(det, DetectionOutput(mask_probs=off.to(torch.bfloat16)), ["a", "b"], (64, 64))


def test_nan_logits(ds):
    det = Scripted(answer=lambda x: DetectionOutput(mask_logits=logits(1, 1, *x.shape[-2:], float("nan"))))
    expect_error(ds, det, r"mask_logits holds NaN")


def test_an_image_score_above_one(ds):
    det = Scripted("classification", BINARY, lambda x: DetectionOutput(image_score=torch.tensor([1.5])))
    expect_error(ds, det, r"image_score is not a probability.*got 1\.5")


def test_an_infinite_image_score(ds):
    det = Scripted("classification", BINARY, lambda x: DetectionOutput(image_score=torch.tensor([float("inf")])))
    expect_error(ds, det, r"image_score is not a probability")


def test_predict_returning_none(ds):
    det = Scripted(answer=lambda x: None)
    expect_error(ds, det, r"predict returned None; expected a DetectionOutput")


def test_a_segmenter_without_pixel_output(ds):
    det = Scripted(answer=lambda x: DetectionOutput(image_score=torch.tensor([0.5])))
    expect_error(ds, det, r"a binary detector returned no pixel output")


def test_integer_logits_are_the_wrong_dtype(ds):
    det = Scripted(answer=lambda x: DetectionOutput(mask_logits=logits(1, 1, *x.shape[-2:], dtype=torch.int64)))
    expect_error(ds, det, r"mask_logits has the wrong dtype; expected floating point, got dtype torch.int64")


def test_an_exception_inside_predict_names_the_detector(ds):
    def boom(x):
        raise IndexError("list index out of range")

    expect_error(ds, Scripted(answer=boom), r"predict raised IndexError: list index out of range")


def test_a_dataset_load_or_distortion_that_raises_names_the_sample_and_dataset(ds, monkeypatch):
    """A plugin adapter's KeyError (or its distortion's bug) was "internal error: KeyError: 'id'"."""
    from diffzoo.harness.core.errors import PluginError

    first = ds.ids("val")[0]
    real = ds.load

    def load(sid):
        if sid == first:
            raise KeyError(sid)
        return real(sid)

    monkeypatch.setattr(ds, "load", load)
    with pytest.raises(PluginError) as info:
        score(ds, Scripted())
    assert str(info.value) == (f"sample {first!r} of dataset {ds.name!r}: reading it, or the distortion 'identity', "
                               f"raised KeyError: {first!r}")


def test_a_dataset_load_that_calls_sys_exit_names_the_sample_and_dataset(ds, monkeypatch):
    from diffzoo.harness.core.errors import PluginError

    first = ds.ids("val")[0]
    real = ds.load

    def load(sid):
        if sid == first:
            raise SystemExit(0)
        return real(sid)

    monkeypatch.setattr(ds, "load", load)
    with pytest.raises(PluginError) as info:
        score(ds, Scripted())
    assert str(info.value) == (f"sample {first!r} of dataset {ds.name!r}: reading it, or the distortion 'identity', "
                               "raised SystemExit: 0")


@pytest.mark.parametrize("workers", [0, 1])
def test_a_dataset_load_that_raises_in_training_names_the_sample_and_dataset(capsys, diffseg_folder, monkeypatch,
                                                                              workers):
    """A training's read error is the dataset's, not the detector's ("its fit raised"), in one line without a
    loader worker's traceback; the workers end with the training (they ignore SIGTERM, so one left alive would
    hold the process at exit)."""
    from diffzoo.harness.data.adapters.diffseg30k import DiffSeg30kDataset

    def load(self, sid):
        raise KeyError(sid)

    monkeypatch.setattr(DiffSeg30kDataset, "load", load)
    code, _, stderr = cli(capsys, "train", "--detector", "segformer.tiny", "--dataset", diffseg_folder, "--device",
                          "cpu", "--iterations", "4", "--batch-size", "2", "--crop-size", "32", "--workers", workers)
    assert code == 1 and "Traceback" not in stderr and "its fit" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"error: sample '(\w+)' of dataset '\w+': reading it for training raised KeyError: '\1'",
                        last), last
    assert not multiprocessing.active_children()


# -- through the CLI: one line, exit non-zero, no record -------------------------------

def _half_size(x):
    return DetectionOutput(mask_logits=logits(x.shape[0], 1, x.shape[2] // 2, x.shape[3] // 2))


def test_cli_reports_a_malformed_prediction_in_one_line_and_writes_no_record(capsys, diffseg_folder, tmp_path,
                                                                             faulty):
    faulty(_half_size)
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", "faulty.x", "--suite", "standard", "--dataset",
                               diffseg_folder, "--out", out, "--bootstrap", "0", "--device", "cpu")
    assert code == 1
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: detector 'faulty.x' on sample "), stderr
    assert "expected 1 x 1 x 32 x 32" in lines[0] and "internal error" not in stderr
    assert not list(out.glob("records/*.json"))


def _exits(x):
    raise SystemExit(0)  # an argparse parse_args() or a script's sys.exit() inside plugin code


def test_a_sys_exit_inside_predict_is_the_detectors_error_not_a_finished_run(capsys, diffseg_folder, tmp_path,
                                                                              faulty):
    """A plugin's sys.exit(0) mid-run is its failure, in one line, exit 1: never a silent exit 0 without records."""
    faulty(_exits)
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", "faulty.x", "--suite", "standard", "--dataset",
                               diffseg_folder, "--out", out, "--bootstrap", "0", "--device", "cpu")
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1, stderr
    assert lines[0].startswith("error: detector 'faulty.x' on sample ") and "predict raised SystemExit: 0" in lines[0]
    assert not list(out.glob("records/*.json"))


def test_a_sys_exit_inside_a_plugins_factory_or_fit_is_a_plugin_error():
    """plugin_code wraps a detector's factory, its fit and a plugin dataset's training reads."""
    from diffzoo.harness.core.errors import PluginError, plugin_code

    with pytest.raises(PluginError) as info, plugin_code("detector 'x' from plugin 'p': its fit"):
        raise SystemExit(2)
    assert str(info.value) == "detector 'x' from plugin 'p': its fit raised SystemExit: 2"


# -- training-free detectors and --no-train -----------------------------------------------

def test_no_train_runs_a_training_free_detector_on_a_fresh_cache(capsys, diffseg_folder, tmp_path, faulty):
    code, stdout, stderr = cli(capsys, "run", "--detector", "faulty.x", "--suite", "standard", "--dataset",
                               diffseg_folder, "--out", tmp_path / "out", "--bootstrap", "0", "--no-train",
                               "--device", "cpu")
    assert code == 0, stderr
    records = list((tmp_path / "out" / "records").glob("*.json"))
    assert len(records) == 3  # binary, semantic, image: nothing trained, nothing refused


# -- diffzoo plugins check ------------------------------------------------------------------

def test_plugins_check_passes_the_example_plugin(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "examples" / "diffzoo-plugin-example" / "src"))
    import diffzoo_plugin_example

    get_plugin_system().pm.register(diffzoo_plugin_example, name="example")
    code, stdout, stderr = cli(capsys, "plugins", "check", "example")
    assert code == 0, stdout + stderr
    assert "0 failed" in stdout and "FAIL" not in stdout
    assert "save/load round trip" in stdout and "deterministic under the same seed" in stdout


class BrokenDetector(Detector):
    """Breaks the protocol four ways: logits of the wrong size, a save without
    `extra`, a load that returns nothing, and a predict that is not
    deterministic."""

    def __init__(self, card, task, label_space, pretrained=False):
        self.card, self.task, self.label_space = card, task, label_space
        self.calls = 0

    def predict(self, images):
        self.calls += 1
        b, _, h, w = images.shape
        return DetectionOutput(mask_logits=torch.full((b, 1, h, w + 1), float(self.calls)))

    def fit(self, train, config, progress=None):
        return {}

    def save(self, path):
        Path(path).mkdir(parents=True, exist_ok=True)
        return Path(path) / "w"

    def load(self, path):
        return None


class BrokenPlugin:
    @hookimpl
    def register_detectors(self, register):
        card = DetectorCard(name="broken.x", description="broken on purpose", tasks=("binary",))
        register(card.name, BrokenDetector, card=card)


def test_plugins_check_reports_every_violation_of_a_broken_plugin(capsys):
    from diffzoo.harness.models.conformance import check_plugin

    get_plugin_system().pm.register(BrokenPlugin(), name="broken")
    failed = {f.check: f.message for f in check_plugin("broken") if not f.ok}
    assert "mask_logits is 37 x 54 (H x W) for an input of 37 x 53" in failed["predict 2 x 3 x 37 x 53"]
    assert "fit never called progress(step, loss)" in failed["fit"]
    assert "save(path, extra=...) failed" in failed["save/load round trip"]
    assert "predicting the same batch twice gave different outputs" in failed["deterministic predict"]
    code, stdout, stderr = cli(capsys, "plugins", "check", "broken")
    assert code == 1 and f"{len(failed)} failed" in stdout


class PercentThreshold:
    """A card whose pixel threshold is written as a percentage: no probability is above 50."""

    @hookimpl
    def register_detectors(self, register):
        card = DetectorCard(name="percent.x", description="threshold 50", tasks=("binary",), default_threshold=50,
                            trainable=False)
        register(card.name, lambda build: Scripted(build.task, build.label_space, card=build.card), card=card)


def test_a_card_whose_threshold_or_input_size_no_model_can_use_is_refused(capsys):
    """A binary detector with default_threshold 50 scored every pixel authentic, unsaid."""
    from diffzoo.harness.models.conformance import check_plugin

    get_plugin_system().pm.register(PercentThreshold(), name="percent")
    failed = [f.message for f in check_plugin("percent") if not f.ok]
    assert failed == ["plugin 'percent' raised in register_detectors: ConfigError: detector card percent.x: "
                      "default_threshold must be a number in [0, 1), got 50; the whole plugin is skipped"], failed
    assert cli(capsys, "plugins", "check", "percent")[0] == 1
    with pytest.raises(DiffzooError) as info:
        DetectorCard(name="x.y", description="", tasks=("binary",), input_size=0)
    assert str(info.value) == "detector card x.y: input_size must be an integer >= 1, got 0"
    with pytest.raises(DiffzooError) as info:
        DetectorCard(name="x.y", description="", tasks="binary,semantic")
    assert str(info.value) == ("detector card x.y: tasks must be a tuple of one or more of binary, semantic, "
                               "classification, got 'binary,semantic'")


def test_plugins_check_names_a_missing_method():
    from diffzoo.harness.models.conformance import check_plugin

    class NoLoad(Detector):
        predict = BrokenDetector.predict
        fit = BrokenDetector.fit
        save = BrokenDetector.save

        def __init__(self, card, task, label_space, pretrained=False):
            self.card, self.task, self.label_space = card, task, label_space

    class Plugin:
        @hookimpl
        def register_detectors(self, register):
            card = DetectorCard(name="noload.x", description="lacks load", tasks=("binary",))
            register(card.name, NoLoad, card=card)

    get_plugin_system().pm.register(Plugin(), name="noload")
    findings = check_plugin("noload.x")
    build = next(f for f in findings if f.check == "build")
    assert not build.ok and "does not implement load" in build.message


class _NaNOnceLoaded(Scripted):
    """Predicts well until it loads its checkpoint; then every logit is NaN."""

    loaded = False

    def predict(self, images):
        out = super().predict(images)
        return DetectionOutput(mask_logits=out.mask_logits * float("nan")) if self.loaded else out

    def load(self, path):
        self.loaded = True
        return super().load(path)


def test_plugins_check_fails_a_round_trip_whose_loaded_model_predicts_nan(capsys, monkeypatch):
    from helpers.detectors import register_test_detector

    card = DetectorCard(name="nanload.x", description="NaN once loaded", tasks=("binary",), trainable=False)
    register_test_detector(monkeypatch, card, lambda build: _NaNOnceLoaded(build.task, build.label_space,
                                                                          card=build.card))
    from diffzoo.harness.models.conformance import check_plugin

    failed = {f.check: f.message for f in check_plugin("nanload.x") if not f.ok}
    assert failed == {"save/load round trip": "the loaded model and the saved one gave different outputs "
                                              "(NaN in one where the other has a number)"}
    code, stdout, _ = cli(capsys, "plugins", "check", "nanload.x")
    assert code == 1 and "1 failed" in stdout, stdout


class _NormalisesInPlace(Scripted):
    """Normalises its input batch in place, as some models do: harmless, each run batch is its own."""

    def predict(self, images):
        images.sub_(0.5).mul_(2)
        return super().predict(images * 0.5 + 0.5)


def test_plugins_check_passes_a_detector_that_normalises_its_input_in_place(capsys, monkeypatch):
    from helpers.detectors import register_test_detector

    card = DetectorCard(name="inplace.x", description="in-place normalisation", tasks=("binary",), trainable=False)
    register_test_detector(monkeypatch, card, lambda build: _NormalisesInPlace(build.task, build.label_space,
                                                                              card=build.card))
    code, stdout, _ = cli(capsys, "plugins", "check", "inplace.x")
    assert code == 0 and "0 failed" in stdout, stdout


class _ExitsInPredict(Scripted):
    """Calls sys.exit() in predict, as a script-turned-plugin may."""

    def predict(self, images):
        raise SystemExit(3)


def test_plugins_check_reports_a_sys_exit_inside_the_detector_as_a_failed_check(capsys, monkeypatch):
    """A plugin's sys.exit() is a finding against it, never the end of the check with its exit status."""
    from helpers.detectors import register_test_detector

    card = DetectorCard(name="exits.x", description="exits in predict", tasks=("binary",), trainable=False)
    register_test_detector(monkeypatch, card, lambda build: _ExitsInPredict(build.task, build.label_space,
                                                                           card=build.card))
    code, stdout, _ = cli(capsys, "plugins", "check", "exits.x")
    assert code == 1 and "FAIL SystemExit: 3" in stdout and "check(s) passed, 5 failed" in stdout, stdout


class _ToReturnsNone(Scripted):
    """Moves itself in to() but returns nothing, as an nn.Module-minded author may write it."""

    def to(self, device):
        self.device = device


def test_a_to_that_does_not_return_the_detector_is_a_failed_build_and_one_line_in_a_run(
        capsys, monkeypatch, diffseg_folder, tmp_path):
    from diffzoo.harness.models.conformance import check_plugin

    from helpers.detectors import register_test_detector

    card = DetectorCard(name="tonone.x", description="to() returns None", tasks=("binary",), trainable=False)
    register_test_detector(monkeypatch, card, lambda build: _ToReturnsNone(build.task, build.label_space,
                                                                          card=build.card))
    said = "_ToReturnsNone.to('cpu') returned NoneType, not the detector: end it with `return self`"
    assert {f.check: f.message for f in check_plugin("tonone.x") if not f.ok} == {"build": said}
    code, stdout, stderr = cli(capsys, "run", "--detector", "tonone.x", "--suite", "standard", "--dataset",
                               diffseg_folder, "--out", tmp_path / "out", "--bootstrap", "0", "--device", "cpu")
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 1 and lines == [f"error: {said}"], stderr


# -- a detector written only from the docs -------------------------------------------------

def test_a_detector_written_from_the_plugin_guide_runs(capsys, diffseg_folder, tmp_path, monkeypatch):
    from helpers.plugin_guide import guide_files

    files = guide_files("The Detector protocol")
    assert set(files) == {"mylab_plain/__init__.py", "mylab_plain/model.py"}, files
    for rel, code in files.items():
        (tmp_path / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / rel).write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    import mylab_plain

    get_plugin_system().pm.register(mylab_plain, name="mylab_plain")
    code, stdout, stderr = cli(capsys, "run", "--detector", "mylab_plain", "--suite", "standard", "--dataset",
                               diffseg_folder, "--out", tmp_path / "out", "--bootstrap", "0", "--iterations", "3",
                               "--batch-size", "2", "--crop-size", "16", "--device", "cpu")
    assert code == 0, stderr
    assert len(list((tmp_path / "out" / "records").glob("*.json"))) == 3
    code, stdout, stderr = cli(capsys, "plugins", "check", "mylab_plain")
    assert code == 0 and "0 failed" in stdout, stdout


# -- built-in detectors on odd sizes -----------------------------------------------------------

def test_segformer_answers_for_one_pixel_and_extreme_aspect_ratios():
    """A 1 x 1 image must not crop SegFormer's stride-4 logits to nothing (an
    internal error).  tests/test_detectors_segmentation.py holds every
    built-in segmenter to the same sizes."""
    from diffzoo import create_detector
    from diffzoo.harness.core.types import LabelSpace

    space = LabelSpace(("background", "a", "b"))
    for task, channels in (("binary", 1), ("semantic", 3)):
        det = create_detector("segformer.tiny", task, space if task == "semantic" else BINARY)
        for size in ((1, 1), (1, 300), (300, 1), (3, 5)):
            logits = det.predict(torch.rand(1, 3, *size)).mask_logits
            assert tuple(logits.shape) == (1, channels, *size), (task, size, tuple(logits.shape))


@pytest.mark.parametrize("fit, said", [
    ("raises", "detector 'fits.x' from plugin 'tests_detector_fits_x': its fit raised RuntimeError: fit exploded"),
    ("none", "detector 'fits.x' from plugin 'tests_detector_fits_x': its fit returned a NoneType, not a training log"),
    ("tensor", "its fit returned Object of type Tensor is not JSON serializable, not a training log"),
])
def test_a_detector_fit_that_raises_or_returns_no_log_is_the_plugins_error(capsys, diffseg_folder, tmp_path,
                                                                          monkeypatch, fit, said):
    """Each was "internal error: ..." naming neither the detector nor its plugin."""
    from helpers.detectors import register_test_detector

    class Fits(Scripted):
        def fit(self, train, config, progress=None):
            if fit == "raises":
                raise RuntimeError("fit exploded")
            return None if fit == "none" else {"final": torch.tensor(1.0)}

    card = DetectorCard(name="fits.x", description="a detector whose fit the test chooses", tasks=("binary",))
    register_test_detector(monkeypatch, card, lambda build: Fits(build.task, build.label_space, card=build.card))
    code, out, err = cli(capsys, "run", "--detector", "fits.x", "--suite", "standard", "--dataset", diffseg_folder,
                         "--out", tmp_path / "out", "--bootstrap", "0", "--device", "cpu", "--iterations", "2")
    assert code == 1 and "internal error" not in err and said in " ".join(err.split()), err
    assert not list((tmp_path / "out").glob("records/*.json"))
