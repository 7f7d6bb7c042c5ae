"""ImgEdit adapter: parquet rows in the real layout -> samples with pixel-difference labels."""

import io
import json
import os
import unicodedata

import cv2
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from diffzoo.generators.datasets import imgedit
from diffzoo.generators.datasets.imgedit import ImgEditDataset
from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.fsutil import FileRefused, cache_root

S = 128


def texture(rng, size=S):
    """Smooth random texture plus filled rectangles: enough corners for ORB."""
    img = np.zeros((size, size, 3), np.float32)
    for cells in (4, 16, 40):
        img += cv2.resize(rng.random((cells, cells, 3)).astype(np.float32), (size, size),
                          interpolation=cv2.INTER_CUBIC)  # fmt: skip
    img = (img / 3 * 140 + 50).clip(0, 255).astype(np.uint8)
    for _ in range(25):
        x, y, w, h = (int(v) for v in rng.integers(0, size, 4) // (1, 1, 5, 5) + (0, 0, 3, 3))
        cv2.rectangle(img, (x, y), (x + w, y + h), tuple(int(v) for v in rng.integers(0, 256, 3)), -1)
    return img


def paste(rng, image, box):
    """``image`` with a magenta noisy patch in ``box`` = (x0, y0, x1, y1); and the patch mask."""
    x0, y0, x1, y1 = box
    out = image.copy()
    out[y0:y1, x0:x1] = (np.array([230, 20, 200]) + rng.integers(-15, 15, (y1 - y0, x1 - x0, 3))).clip(0, 255)
    truth = np.zeros(image.shape[:2], bool)
    truth[y0:y1, x0:x1] = True
    return out, truth


def png(image) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return buf.getvalue()


def iou(label, truth):
    pred = label == 1
    return (pred & truth).sum() / (pred | truth).sum()


def make_imgedit(root, embed=None):
    """An ImgEdit-like snapshot: ``Parquet/add_part0.parquet`` (4 single-turn rows: two edits,
    a no-op, a global repaint), ``Parquet/version_backtracking_part0.parquet`` (one 2-turn row);
    images as paths relative to ``root`` (the real layout), or embedded (``embed``: "bytes" or
    "struct").  Returns {id: truth mask in the output's frame} for the accepted pairs."""
    rng = np.random.default_rng(0)
    (root / "Parquet").mkdir(parents=True)
    truths, rows = {}, []

    def cell(image, rel):
        if embed == "bytes":
            return [png(image)]
        if embed == "struct":
            return [{"bytes": png(image), "path": rel}]
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image).save(root / rel)
        return [rel]

    for i in range(4):
        orig = texture(rng)
        if i == 0:
            out, truth = paste(rng, orig, (20, 32, 60, 72))
        elif i == 1:  # the editor also changed the size: the label is in the output's frame
            out, truth = paste(rng, orig, (64, 12, 100, 60))
            out = cv2.resize(out, (160, 160), interpolation=cv2.INTER_LINEAR)
            truth = cv2.resize(truth.astype(np.uint8), (160, 160), interpolation=cv2.INTER_NEAREST).astype(bool)
        elif i == 2:  # no-op
            out, truth = orig.copy(), None
        else:  # global repaint
            out, truth = ((orig.astype(np.int16) + 128) % 256).astype(np.uint8), None
        d = f"results_add_part0/{i:05d}"
        rows.append({"input_images": cell(orig, f"{d}/original.png"), "output_images": cell(out, f"{d}/result.png"),
                     "prompt": f"add a magenta square number {i}"})  # fmt: skip
        if truth is not None:
            truths[f"add_part0/{i:08d}"] = truth
    pq.write_table(pa.Table.from_pylist(rows), root / "Parquet" / "add_part0.parquet")
    base = texture(rng)
    mid, t1 = paste(rng, base, (8, 8, 48, 48))
    last, t2 = paste(rng, mid, (72, 72, 116, 112))
    d = "results_version_backtracking_part0/00007"
    turns = [{"input_images": cell(base, f"{d}/origin_0.png"), "output_images": cell(mid, f"{d}/result_0.png"),
              "prompt": "add a square top left"},
             {"input_images": cell(mid, f"{d}/origin_1.png"), "output_images": cell(last, f"{d}/result_1.png"),
              "prompt": "add a square bottom right"}]  # fmt: skip
    pq.write_table(pa.Table.from_pylist([{"data": turns}]), root / "Parquet" / "version_backtracking_part0.parquet")
    truths["version_backtracking_part0/00000000/1"] = t1
    truths["version_backtracking_part0/00000000/2"] = t2
    return truths


@pytest.fixture
def snapshot(tmp_path):
    root = tmp_path / "ImgEdit"
    return root, make_imgedit(root)


def test_labels_are_derived_and_rejections_counted(snapshot):
    root, truths = snapshot
    ds = ImgEditDataset(root / "Parquet")
    assert ds.splits() == ["test"]
    assert ds.ids("test") == sorted(truths)
    for sid, truth in truths.items():
        s = ds.load(sid)
        assert s.image.shape[:2] == truth.shape and s.label.shape == truth.shape
        assert set(np.unique(s.label)) <= {0, 1, 255}
        assert iou(s.label, truth) >= 0.9, sid
        (turn,) = s.meta.turns
        assert turn.editor == "unknown" and turn.edit_type == "unknown" and turn.region is not None
    assert ds.load("add_part0/00000001").image.shape == (160, 160, 3)  # the output, untouched
    assert ds.load("version_backtracking_part0/00000000/2").meta.turns[0].prompt == "add a square bottom right"
    d = ds.describe()
    assert d["pairs"] == 6 and d["skipped"] == {"rejected-noop": 1, "rejected-global": 1}
    assert d["statuses"]["ok"] == 4 and d["unreadable"] == 0
    assert "rejected-noop" in d["examples"]["rejected-noop"][0]
    assert d["label_rule"]["version"] == imgedit.RULE_VERSION and d["label_rule"]["settings"]["tau"] == 0.05


def test_one_parquet_file_and_editor_label_space(snapshot):
    root, truths = snapshot
    ds = ImgEditDataset(root / "Parquet" / "add_part0.parquet", editor="flux-fill", name="x")
    assert ds.name == "x" and ds.label_space.names == ("background", "flux-fill")
    assert ds.ids("test") == ["add_part0/00000000", "add_part0/00000001"]
    s = ds.load("add_part0/00000000")
    assert s.meta.turns[0].editor == "flux-fill" and iou(s.label, truths["add_part0/00000000"]) >= 0.9


@pytest.mark.parametrize("embed", ["bytes", "struct"])
def test_embedded_images_are_read_back_from_the_parquet(tmp_path, embed):
    truths = make_imgedit(tmp_path / "d", embed=embed)
    ds = ImgEditDataset(tmp_path / "d" / "Parquet", with_inputs=True)
    assert set(truths) <= set(ds.ids("test"))
    for sid, truth in truths.items():
        assert iou(ds.load(sid).label, truth) >= 0.9
    authentic = ds.load("version_backtracking_part0/00000000/input")
    assert authentic.meta.base == "real" and not authentic.label.any() and authentic.meta.turns == ()


def test_second_open_uses_the_cache_and_tau_changes_the_fingerprint(snapshot, monkeypatch):
    root, truths = snapshot
    first = ImgEditDataset(root / "Parquet")
    labels = {sid: first.load(sid).label for sid in truths}
    assert any((cache_root() / "imgedit" / "labels").rglob("*.png"))

    def refuse(*args, **kwargs):
        raise AssertionError("the label builder ran although every label is cached")

    monkeypatch.setattr(imgedit, "difference_label", refuse)
    again = ImgEditDataset(root / "Parquet")
    assert again.ids("test") == first.ids("test") and again.describe()["skipped"] == first.describe()["skipped"]
    for sid, label in labels.items():
        assert np.array_equal(again.load(sid).label, label)
    assert again.fingerprint() == first.fingerprint()
    sid = "add_part0/00000000"
    next((cache_root() / "imgedit" / "labels").glob(f"*/{again._pairs[sid].key}.png")).unlink()
    with pytest.raises(AssertionError, match="builder ran"):  # a lost cache file is derived again
        again.load(sid)
    calls = []  # (monkeypatch.undo() would also undo conftest's isolated cache)
    monkeypatch.setattr(imgedit, "difference_label", lambda *a, **k: calls.append(k) or difference(*a, **k))
    other = ImgEditDataset(root / "Parquet", tau=0.08)
    assert calls and all(k["tau"] == 0.08 for k in calls)
    assert other.fingerprint() != first.fingerprint()
    assert ImgEditDataset(root / "Parquet", min_area=0.02).fingerprint() != first.fingerprint()


def difference(*args, **kwargs):
    from diffzoo.generators.editors.labels import difference_label

    return difference_label(*args, **kwargs)


def test_without_cache_nothing_is_written_and_labels_are_derived_at_load(snapshot, monkeypatch):
    root, truths = snapshot
    ds = ImgEditDataset(root / "Parquet", cache=False)
    assert not (cache_root() / "imgedit").exists()
    calls = []
    monkeypatch.setattr(imgedit, "difference_label", lambda *a, **k: calls.append(1) or difference(*a, **k))
    assert iou(ds.load("add_part0/00000000").label, truths["add_part0/00000000"]) >= 0.9
    assert calls == [1]


def test_inputs_as_authentic_samples(snapshot):
    root, _ = snapshot
    ds = ImgEditDataset(root / "Parquet", with_inputs=True)
    inputs = [i for i in ds.ids("test") if i.endswith("/input")]
    # every row's first input, rejected rows included; never a later turn's input
    assert inputs == [f"add_part0/{i:08d}/input" for i in range(4)] + ["version_backtracking_part0/00000000/input"]
    s = ds.load("add_part0/00000002/input")
    assert s.meta.base == "real" and not s.label.any() and not s.is_edited
    assert ds.describe()["authentic_inputs"] == 5
    assert ImgEditDataset(root / "Parquet").fingerprint() != ds.fingerprint()


def test_benchmark_edit_types_join_by_input_path_and_prompt(snapshot, tmp_path):
    root, _ = snapshot
    bench = {
        "7": {"id": "00000/original.png", "prompt": "add  a magenta square number 0", "edit_type": "add"},
        "8": {"id": "00000/original.png", "prompt": "another instruction on the same image", "edit_type": "style"},
        "9": {"id": "00001/original.png", "prompt": "add a magenta square number 1"},  # UGE: no edit_type
        "10": {"id": "00007/origin_0.png", "turn1": "add a square top left", "turn2": "add a square bottom right"},
    }
    path = tmp_path / "basic_edit.json"
    path.write_text(json.dumps(bench))
    ds = ImgEditDataset(root / "Parquet", benchmark=path)
    types = {sid: ds.load(sid).meta.turns[0].edit_type for sid in ds.ids("test")}
    assert types["add_part0/00000000"] == "add" and types["add_part0/00000001"] == "unknown"
    info = ds.describe()["benchmark"]
    assert info["entries"] == 4 and info["edit_types"]["add"] == 1
    assert info["joined"] == 4 and info["ambiguous"] == 0  # rows 0 and 1, the two turns
    assert ImgEditDataset(root / "Parquet").fingerprint() != ds.fingerprint()


def test_benchmark_results_join_by_output_key_and_fill_the_prompt(tmp_path):
    """Pairs built from ImgEdit-Bench: originals at <id>, a model's edits saved as <key>.png, no prompt."""
    rng = np.random.default_rng(2)
    bench = {"1082": {"id": "animal/000342021.png", "prompt": "Change the shell", "edit_type": "alter"},
             "673": {"id": "style/000278574.png", "prompt": "Ukiyo-e style", "edit_type": "style"},
             "667": {"id": "style/000278574.png", "prompt": "Sepia style", "edit_type": "style"}}  # fmt: skip
    (tmp_path / "basic_edit.json").write_text(json.dumps(bench))
    rows, origs = [], {}
    for key, entry in [("1082", bench["1082"]), ("673", bench["673"]), ("x", bench["667"])]:
        orig = origs.setdefault(entry["id"], texture(rng))
        out, _ = paste(rng, orig, (30, 30, 70, 70))
        for rel, image in ((f"singleturn/{entry['id']}", orig), (f"edited/{key}.png", out)):
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(image).save(tmp_path / rel)
        rows.append({"input_images": [f"singleturn/{entry['id']}"], "output_images": [f"edited/{key}.png"],
                     "prompt": ""})  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "bench.parquet")
    ds = ImgEditDataset(tmp_path / "bench.parquet", benchmark=tmp_path / "basic_edit.json")
    turns = {sid: ds.load(sid).meta.turns[0] for sid in ds.ids("test")}
    assert (turns["bench/00000000"].edit_type, turns["bench/00000000"].prompt) == ("alter", "Change the shell")
    assert (turns["bench/00000001"].edit_type, turns["bench/00000001"].prompt) == ("style", "Ukiyo-e style")
    # no key to join and two entries share the input image: ambiguous, so not joined
    assert (turns["bench/00000002"].edit_type, turns["bench/00000002"].prompt) == ("unknown", "")
    assert ds.describe()["benchmark"] == {"path": str(tmp_path / "basic_edit.json"), "entries": 3, "joined": 2,
                                         "ambiguous": 1, "edit_types": {"alter": 1, "style": 1}}  # fmt: skip


def test_splits_json_beside_the_data_and_split_option(snapshot):
    root, truths = snapshot
    (root / "Parquet" / "splits.json").write_text(json.dumps({
        "train": ["add_part0/00000000", "add_part0/00000002", "version_backtracking_part0/00000000/1"],
        "validation": ["add_part0/00000001", "version_backtracking_part0/00000000/2"]}))  # fmt: skip
    ds = ImgEditDataset(root / "Parquet", with_inputs=True)
    assert ds.splits() == ["train", "val"]
    # the rejected no-op is named but left out; an input goes with its row's first pair
    assert ds.ids("train") == ["add_part0/00000000", "add_part0/00000000/input", "add_part0/00000002/input",
                               "version_backtracking_part0/00000000/1",
                               "version_backtracking_part0/00000000/input"]  # fmt: skip
    assert ImgEditDataset(root / "Parquet", split="train").ids("train") == sorted(truths)


@pytest.mark.parametrize("kind", ["fifo", "huge"])
def test_a_splits_json_that_is_a_fifo_or_huge_is_read_by_the_harness_rule(snapshot, kind):
    """A FIFO is no file: never opened, the data has its one split; a file past the text limit (a sparse
    terabyte) is refused from its size, never read (it was read whole first: an internal MemoryError)."""
    root, truths = snapshot
    path = root / "Parquet" / "splits.json"
    if kind == "fifo":
        os.mkfifo(path)
        assert ImgEditDataset(root / "Parquet", split="test").ids("test") == sorted(truths)
        assert ImgEditDataset(root / "Parquet").split_info["id"] == "native"
        return
    with open(path, "wb") as fh:
        fh.truncate(2**40)
    with pytest.raises(FileRefused, match=f"^{path} holds more than the 268.4 MB diffzoo reads from such a file "
                                          r"\(1.1 TB\)$"):
        ImgEditDataset(root / "Parquet")


def test_malformed_data_is_refused_clearly(tmp_path, snapshot):
    root, _ = snapshot
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([{"input_images": ["a.png"], "prompt": "x"}]), bad)
    with pytest.raises(DataError, match="missing column.*output_images"):
        ImgEditDataset(bad)
    turns = tmp_path / "turns.parquet"
    pq.write_table(pa.Table.from_pylist([{"data": [{"input_images": ["a.png"], "prompt": "x"}]}]), turns)
    with pytest.raises(DataError, match="list of structs with fields"):
        ImgEditDataset(turns)
    with pytest.raises(DataError, match="no image of any pair was found.*image_root"):
        ImgEditDataset(root / "Parquet", image_root=tmp_path / "elsewhere")
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"1": {"prompt": "add a cat", "edit_type": "add"}}))
    with pytest.raises(DataError, match=r"entry '1' has no 'id'"):
        ImgEditDataset(root / "Parquet", benchmark=bench)
    with pytest.raises(DataError, match="no .parquet files"):
        ImgEditDataset(tmp_path / "ImgEdit" / "results_add_part0")


def test_undecodable_unsafe_and_multi_image_rows(tmp_path):
    rng = np.random.default_rng(1)
    orig = texture(rng)
    out, _ = paste(rng, orig, (20, 20, 60, 60))
    data = tmp_path / "data"
    data.mkdir()
    embedded = [
        {"input_images": [png(orig)], "output_images": [png(out)], "prompt": "fine"},
        {"input_images": [png(orig)], "output_images": [b"\x89PNG\r\n\x1a\n truncated"], "prompt": "broken"},
        {"input_images": [png(orig), png(orig)], "output_images": [png(out)], "prompt": "two references"},
        {"input_images": [], "output_images": [png(out)], "prompt": "no input"},
    ]
    pq.write_table(pa.Table.from_pylist(embedded), data / "mixed.parquet")
    Image.fromarray(orig).save(tmp_path / "a.png")
    Image.fromarray(out).save(data / "b.png")
    paths = [
        {"input_images": [str(tmp_path / "a.png")], "output_images": ["b.png"], "prompt": "absolute path"},
        {"input_images": ["../a.png"], "output_images": ["b.png"], "prompt": "escapes the root"},
    ]
    pq.write_table(pa.Table.from_pylist(paths), data / "paths.parquet")
    ds = ImgEditDataset(data, image_root=data)
    assert ds.ids("test") == ["mixed/00000000", "mixed/00000001"]
    with pytest.raises(CorruptSampleError, match="mixed/00000001.*corrupt or truncated"):
        ds.load("mixed/00000001")
    d = ds.describe()
    assert d["unreadable"] == 1 and d["skipped"] == {"missing": 2, "image-count": 2}
    assert sum("not opened" in e for e in d["examples"]["missing"]) == 2
    assert ds.load("mixed/00000000").label.any()


def test_sniff_and_pickling(snapshot, tmp_path):
    import pickle

    root, truths = snapshot
    assert ImgEditDataset.sniff(root / "Parquet") and ImgEditDataset.sniff(root)
    assert ImgEditDataset.sniff(root / "Parquet" / "version_backtracking_part0.parquet")
    other = tmp_path / "diffseg.parquet"
    pq.write_table(pa.Table.from_pylist([{"image": b"x", "mask": b"y"}]), other)
    assert not ImgEditDataset.sniff(other) and not ImgEditDataset.sniff(tmp_path / "nothing")
    ds = pickle.loads(pickle.dumps(ImgEditDataset(root / "Parquet")))
    sid = "add_part0/00000000"
    assert iou(ds.load(sid).label, truths[sid]) >= 0.9


def test_registered_adapter_opens_by_name_with_progress_and_by_path(snapshot):
    from contextlib import contextmanager

    from diffzoo import hookimpl
    from diffzoo.harness.core.plugins import get_plugin_system
    from diffzoo.harness.run.factories import open_dataset

    class Plugin:  # the registration proposed for diffzoo/generators/plugin.py
        @hookimpl
        def register_datasets(self, register):
            register("imgedit", "diffzoo.generators.datasets.imgedit:ImgEditDataset", description="ImgEdit pairs")

    system = get_plugin_system()
    if not system.registry.has("dataset", "imgedit"):
        system.pm.register(Plugin(), name="imgedit-test")
        system._registry = None  # rebuilt with the test plugin
    advances = []

    class Recorder:
        @contextmanager
        def task(self, description, total):
            advances.append(total)
            yield type("T", (), {"advance": lambda self, n=1, **info: advances.append(n)})()

    root, truths = snapshot
    ds = open_dataset("imgedit", progress=Recorder(), path=str(root / "Parquet"), tau=0.05)
    assert advances[0] == 5 and sum(advances[1:]) == 5 and min(advances[1:]) >= 0  # 5 rows, counted once
    assert isinstance(ds, ImgEditDataset) and ds.ids("test") == sorted(truths)
    assert isinstance(open_dataset(str(root / "Parquet")), ImgEditDataset)


def test_a_parquet_naming_images_composed_finds_them_stored_decomposed(tmp_path):
    """The parquet's paths were looked up as written: a copy made on macOS, whose accented folder is
    stored decomposed, lost every pair under it ("not found")."""
    root = tmp_path / "ImgEdit"
    truths = make_imgedit(root)
    nfc, nfd = (unicodedata.normalize(form, "café_part0") for form in ("NFC", "NFD"))
    (root / "results_add_part0").rename(root / nfd)
    file = root / "Parquet" / "add_part0.parquet"
    rows = pq.read_table(file).to_pylist()
    for row in rows:
        for column in ("input_images", "output_images"):
            row[column] = [p.replace("results_add_part0", nfc) for p in row[column]]
    pq.write_table(pa.Table.from_pylist(rows), file)
    ds = ImgEditDataset(root / "Parquet", cache=False)
    assert ds.ids("test") == sorted(truths) and ds.describe()["unreadable"] == 0
    assert iou(ds.load("add_part0/00000000").label, truths["add_part0/00000000"]) >= 0.9


def test_a_label_cached_under_the_earlier_rule_is_not_served(snapshot):
    """An identical pair under ``min_area=0`` was ``ok`` under rule 1 and is ``rejected-noop`` now:
    an outcome cached under rule 1 is derived again, not served."""
    from diffzoo.generators.datasets import imgedit_format as F
    from diffzoo.generators.datasets.imgedit import LabelCache
    from diffzoo.harness.data.fingerprint import combine

    root, _ = snapshot
    sid = "add_part0/00000002"  # the no-op: output identical to input
    first = ImgEditDataset(root / "Parquet", min_area=0)
    pair = first._pairs[sid]
    assert pair.status == "rejected-noop"
    old = combine("imgedit-label", "1", "output-frame", first._settings)
    key = F.sha256(f"{old}|{pair.inp.digest}|{pair.out.digest}".encode())[:40]
    h, w = first.load("add_part0/00000000").label.shape
    LabelCache(cache_root() / "imgedit" / "labels").put(
        key, {"status": "ok", "region": [0, 0, 1, 1]}, np.zeros((h, w), np.uint8))
    again = ImgEditDataset(root / "Parquet", min_area=0)
    assert again._pairs[sid].status == "rejected-noop" and sid not in again.ids("test")
