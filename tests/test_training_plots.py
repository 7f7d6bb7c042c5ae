"""Training curves: parsing a model's log.jsonl and a record's training dict, the PNG,
and the "Training" block of a detector's page on the static site."""

from __future__ import annotations

import json
import math
import re

import pytest
from PIL import Image

from diffzoo.leaderboard.render.site import detector_slugs, write_site
from diffzoo.leaderboard.render.training_plots import (
    TrainingCurves,
    curves_from_log,
    curves_from_training,
    ema,
    read_log,
    training_png,
)
from diffzoo.leaderboard.versions import Selection

from helpers.records import make_record

EVIL = 'evil<script>x</script> "$a$"'


def train_row(step, loss, **extra):
    return {"event": "train", "step": step, "epoch": 1 + step // 100, "loss": loss, "loss_mean": loss * 1.1,
            "terms": {"main": loss * 0.9, "aux_1": loss * 0.1}, "lr": {"backbone": 6e-5 * (1 - step / 1000),
                                                                      "head": 6e-4 * (1 - step / 1000)},
            "images_per_s": 31.2, "data_wait": 0.07, "peak_mem_mib": None, "wall_s": step * 0.5, **extra}


def log_rows(validation=True):
    rows = [{"event": "start", "iterations": 1000}]
    rows += [train_row(s, 3.0 * math.exp(-s / 150) + 0.02) for s in range(50, 1001, 50)]
    if validation:
        rows += [{"event": "val", "step": s, "split": "val", "seconds": 41.0,
                  "metrics": {"binary_mIoU": 0.3 + s / 4000, "binary_F1": float("nan") if s == 500 else 0.5,
                              "semantic_mIoU": None}} for s in (500, 1000)]
    return rows + [{"event": "end", "wall_s": 500.0}]


def assert_png(path, min_w=400, min_h=300):
    assert path.is_file()
    with Image.open(path) as im:
        assert im.format == "PNG"
        w, h = im.size
    assert min_w <= w <= 3000 and min_h <= h <= 3000, (w, h)
    return w, h


def test_curves_from_log_parses_row_kinds():
    curves = curves_from_log(log_rows())
    assert curves.steps == [float(s) for s in range(50, 1001, 50)]
    assert len(curves.loss) == len(curves.loss_mean) == 20
    assert set(curves.lr) == {"backbone", "head"} and len(curves.lr["head"]) == 20
    assert curves.lr["head"][0] == pytest.approx(6e-4 * 0.95)
    assert [s for s, _ in curves.validation] == [500.0, 1000.0]
    first = curves.validation[0][1]
    assert first["binary_mIoU"] == pytest.approx(0.425)
    assert math.isnan(first["binary_F1"]) and math.isnan(first["semantic_mIoU"])


def test_curves_from_log_ignores_junk_and_keeps_last_row_of_a_step(tmp_path):
    path = tmp_path / "log.jsonl"
    lines = [json.dumps(train_row(10, 2.0)), "", "   ", "{broken json", "[1, 2]", '"text"',
             json.dumps({"event": "mystery", "step": 5, "loss": 9.0}),
             json.dumps({"event": "train", "loss": 1.0}),  # no step
             json.dumps({"event": "train", "step": "x", "loss": 1.0}),
             json.dumps(train_row(20, 1.5)), json.dumps({"event": "train", "step": 10, "loss": "bad", "lr": 0.1}),
             json.dumps({"event": "val", "step": 20, "split": "test", "metrics": {"mIoU": 0.5}}),
             json.dumps({"event": "val", "step": 20, "metrics": "junk"}),
             "[" * 100_000 + "]" * 100_000,  # nested past Python's recursion limit (a RecursionError)
             '{"event": "train", "step": 30, "lo']  # a run killed mid-write
    path.write_text("\n".join(lines), encoding="utf-8")
    rows = read_log(path)
    assert all(isinstance(r, dict) for r in rows) and len(rows) == 8
    curves = curves_from_log(rows)
    assert curves.steps == [10.0, 20.0]
    assert math.isnan(curves.loss[0]) and curves.loss[1] == 1.5  # step 10 re-logged (resumed run), bad loss
    assert curves.lr["lr"][0] == 0.1 and math.isnan(curves.lr["head"][0]) and math.isnan(curves.lr["lr"][1])
    assert curves.validation == [(20.0, {"mIoU (test)": 0.5})]
    assert_png(training_png(curves, tmp_path / "junk.png", title="junk"))


@pytest.mark.parametrize("validation", [True, False])
def test_training_png_from_log(tmp_path, validation):
    curves = curves_from_log(log_rows(validation))
    w, h = assert_png(training_png(curves, tmp_path / "sub" / "t.png", title=f"segformer {EVIL} binary"))
    assert not list((tmp_path / "sub").glob("*.tmp"))
    if validation:  # three panels are taller than two
        _, h2 = assert_png(training_png(curves_from_log(log_rows(False)), tmp_path / "two.png", title="t"))
        assert h > h2


def test_training_png_edge_cases(tmp_path):
    one = curves_from_log([train_row(1, 0.7)])
    assert_png(training_png(one, tmp_path / "one.png", title="one step"), min_h=200)
    nan = TrainingCurves(steps=[1.0, 2.0, 3.0], loss=[float("nan")] * 3, lr={"g": [0.0, 0.0, 0.0]},
                         validation=[(3.0, {"m": float("nan")})])
    assert_png(training_png(nan, tmp_path / "nan.png", title="NaN"), min_h=200)
    assert_png(training_png(TrainingCurves(), tmp_path / "empty.png"), min_h=200)
    assert TrainingCurves().empty and nan.empty is False


def test_ema_skips_nan():
    out = ema([float("nan"), 1.0, float("nan"), 3.0], 0.5)
    assert math.isnan(out[0]) and out[1] == 1.0 and out[2] == 1.0 and 1.0 < out[3] < 3.0


def curve_training(n=200, iterations=16000, validation=True):
    steps = [1 + i * (iterations // n) for i in range(n)]
    return {"iterations": iterations, "first_loss": 2.0, "final_loss": 0.1, "losses": [2.0, 1.0],
            "curve": {"step": steps, "loss": [2.0 * math.exp(-s / 3000) + 0.05 for s in steps],
                      "lr": [6e-5 * (1 - s / iterations) ** 0.9 for s in steps]},
            "validation": [{"step": 8000, "split": "val", "metrics": {"binary_mIoU": 0.5, "binary_F1": None}},
                           {"step": 16000, "split": "val", "metrics": {"binary_mIoU": 0.61}}] if validation else []}


def test_curves_from_training(tmp_path):
    curves = curves_from_training(curve_training())
    assert len(curves.steps) == len(curves.loss) == len(curves.lr["lr"]) == 200
    assert [s for s, _ in curves.validation] == [8000.0, 16000.0] and not curves.approximate_steps
    assert_png(training_png(curves, tmp_path / "rec.png", title="record"))
    # an older record: sampled losses only, every iterations // 100-th step
    legacy = curves_from_training({"iterations": 1000, "losses": [1.0, 0.9, None, 0.5]})
    assert legacy.steps == [1.0, 11.0, 21.0, 31.0] and legacy.approximate_steps and not legacy.lr
    assert_png(training_png(legacy, tmp_path / "legacy.png", title="legacy"))
    assert curves_from_training({"losses": [0.3]}).steps == [1.0]
    for nothing in (None, {}, {"iterations": 10}, {"losses": []}, {"curve": "junk"}, "text",
                    {"curve": {"step": [], "loss": []}, "validation": []}, {"losses": [None, "x"]}):
        assert curves_from_training(nothing) is None, nothing
    ragged = curves_from_training({"curve": {"step": [1, 2, None, 4], "loss": [1.0, 0.5, 0.4], "lr": [0.1]}})
    assert ragged.steps == [1.0, 2.0] and ragged.lr["lr"][0] == 0.1 and math.isnan(ragged.lr["lr"][1])


def trained(detector, case, task, key, training, editors=(), date="2026-11-29T12:00:00+00:00"):
    return make_record(detector, case=case, task=task, date=date, training=training,
                       config={"cache_key": key, "train_subset": {"task": task, "split": "train",
                                                                  "exclude_editors": list(editors)}})


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("training-site")
    key_a, key_b = "a1" * 32, "b2" * 32
    records = [
        trained("segformer.b0", "binary", "binary", key_a, curve_training()),
        trained("segformer.b0", "binary-jpeg", "binary", key_a, curve_training(validation=False),
                date="2026-11-28T12:00:00+00:00"),  # same model, older record: drawn once
        trained("segformer.b0", "held-out", "binary", key_b, curve_training(n=3, iterations=30),
                editors=("flux", EVIL)),
        trained(EVIL, "binary", "binary", "c3" * 32, curve_training()),
        trained("old.det", "binary", "binary", "d4" * 32, {"iterations": 100, "first_loss": 1.0,
                                                           "final_loss": 0.5}),  # no curve, no losses
        make_record("pretrained.det", case="binary"),  # no training at all
    ]
    write_site(Selection("test", records), out)
    return out, detector_slugs(r.body.detector.name for r in records)


def page(site, name):
    out, slugs = site
    return (out / "detectors" / f"{slugs[name]}.html").read_text(encoding="utf-8")


def training_block(html):
    return html.split("<h3>Training</h3>", 1)[1].split("</section>", 1)[0]


def test_site_links_training_pngs(site):
    out, _ = site
    block = training_block(page(site, "segformer.b0"))
    srcs = re.findall(r'<img src="\.\./plots/([^"]+)"', block)
    assert len(srcs) == 2  # one per distinct cache key
    for src in srcs:
        assert "-training-" in src and re.fullmatch(r"[A-Za-z0-9._-]+\.png", src)
        assert_png(out / "plots" / src)
    assert "a1a1a1a1a1a1a1a1" in block and "b2b2b2b2b2b2b2b2" in block
    assert "held-out editors: flux, evil&lt;script&gt;" in block and "no editor held out" in block
    assert 'data-kind="training"' in block and "no training curve" not in block


def test_site_escapes_and_reports_missing_curves(site):
    html = page(site, EVIL)
    assert "<script>x</script>" not in html
    assert re.findall(r'<img src="\.\./plots/[^"]*-training-[^"]*\.png"', training_block(html))
    for name in ("old.det", "pretrained.det"):
        block = training_block(page(site, name))
        assert "<img" not in block and '<p class="legend">no training curve' in block
