"""So-Fake (saberzl/So-Fake-Set, saberzl/So-Fake-OOD) from copies the tests make in the hub's
layout, in both label orders (v1: 0 full_synthetic / 1 real / 2 tampered; v2: 0 real /
1 tampered / 2 full_synthetic)."""

from __future__ import annotations

import io
import json
import unicodedata

import datasets
import numpy as np
import pytest
from PIL import Image

from diffzoo import open_dataset
from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data import DiffSeg30kDataset
from diffzoo.harness.data.adapters.opensdi import OpenSdiDataset
from diffzoo.harness.data.adapters.sidset import SidSetDataset
from diffzoo.harness.data.adapters.sofake import SoFakeDataset

from helpers.cli import cli
from helpers.data import assert_read_alike, recognised_as
from helpers.images import mixed_image

SIZE = 32
KIND_NAMES = {"v1": ["full_synthetic", "real", "tampered"], "v2": ["real", "tampered", "full_synthetic"]}
GENERATORS = ("openai", "Ideogram3.0")
FAST = ["--iterations", "2", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


@pytest.fixture(autouse=True)
def _private_hf_cache(tmp_path, monkeypatch):
    """Keep `datasets`' conversion cache out of the user's home."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def _png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "PNG")
    return buf.getvalue()


def samples(n: int, seed: int = 0) -> list[dict]:
    """So-Fake images as the OOD set names them: ``reddit_<n>.jpg`` real, ``<n>_<gen>_tampered.png``
    with a 0/255 mask, ``image_<n>_<gen>.png`` fully synthetic (no mask)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        kind = ("real", "tampered", "full_synthetic")[i % 3]
        image, mask = mixed_image(i, {"tampered": "local", "full_synthetic": "full"}.get(kind, kind), rng, SIZE)
        gen = None if kind == "real" else GENERATORS[i // 3 % 2]
        name = (f"reddit_{seed}{i:04d}.jpg" if kind == "real" else f"{seed}{i:04d}_{gen}_tampered.png"
                if kind == "tampered" else f"image_{seed}{i:04d}_{gen}.png")
        out.append({"kind": kind, "filename": name, "generator": gen, "image": _png(image),
                    "mask": None if mask is None else _png(mask)})
    return out


def features(order: str, class_label: bool = True) -> datasets.Features:
    label = datasets.ClassLabel(names=KIND_NAMES[order]) if class_label else datasets.Value("int64")
    if order == "v1":  # the v1 card: image, label, mask, filename
        return datasets.Features({"image": datasets.Image(), "label": label, "mask": datasets.Image(),
                                  "filename": datasets.Value("string")})
    return datasets.Features({"image": datasets.Image(), "mask": datasets.Image(), "label": label,
                              "generator": datasets.Value("string"), "source": datasets.Value("string"),
                              "filename": datasets.Value("string"), "split": datasets.Value("string")})


def hub_rows(items, order: str, split: str = "test", class_label: bool = True) -> datasets.Dataset:
    """The hub's rows in ``order``, the images' bytes in ``image`` / ``mask`` cells as stored."""
    rows = []
    for it in items:
        row = {"image": {"bytes": it["image"], "path": it["filename"]},
               "mask": None if it["mask"] is None else {"bytes": it["mask"], "path": None},
               "label": KIND_NAMES[order].index(it["kind"]), "filename": it["filename"]}
        if order == "v2":
            row.update(generator=it["generator"], source="reddit", split=split)
        rows.append(row)
    return datasets.Dataset.from_list(rows, features=features(order, class_label))


def hub_copy(root, order: str, parts: dict, class_label: bool = True):
    """``<root>/data/<split>-00000-of-00001.parquet``, as `hf download` leaves it."""
    (root / "data").mkdir(parents=True)
    for split, items in parts.items():
        hub_rows(items, order, split, class_label).to_parquet(str(root / "data" / f"{split}-00000-of-00001.parquet"))
    return root


@pytest.fixture
def items():
    return samples(9, seed=1)


def verdicts(ds) -> dict[str, tuple[str, bool, int]]:
    """filename -> (kind, any edited pixel, edited pixel count): what a run scores."""
    out = {}
    for sid in (i for split in ds.splits() for i in ds.ids(split)):
        s = ds.load(sid)
        edited = s.label > 0
        out[sid] = (s.meta.turns[0].edit_type if s.meta.turns else "real", bool(edited.any()), int(edited.sum()))
    return out


def test_v1_and_v2_orders_give_the_same_verdicts(items, tmp_path):
    copies = {f"{order}-{'names' if named else 'ints'}": hub_copy(tmp_path / f"{order}-{named}", order,
                                                                   {"test": items}, named)
              for order in ("v1", "v2") for named in (True, False)}
    opened = {k: SoFakeDataset(p) for k, p in copies.items()}
    seen = {k: verdicts(d) for k, d in opened.items()}
    expected = {it["filename"]: it["kind"] for it in items}
    for key, got in seen.items():
        assert {sid: v[0] for sid, v in got.items()} == expected, key
        assert all(v[1] == (expected[sid] != "real") for sid, v in got.items()), key
    assert len({json.dumps(v, sort_keys=True) for v in seen.values()}) == 1
    tampered = next(it["filename"] for it in items if it["kind"] == "tampered")
    assert seen["v1-ints"][tampered][2] == (SIZE // 3) ** 2
    read = {k: d.describe()["revision"]["read"]["data:test"] for k, d in opened.items()}
    assert read["v1-names"].startswith("v1 (") and read["v2-ints"].startswith("v2 (")
    assert "placed by ClassLabel names + masks" in read["v2-names"] and "placed by masks" in read["v1-ints"]
    assert "README commit ebd1518" in opened["v1-ints"].describe()["revision"]["pinned"]
    # the ints of a v1 copy read in v2's order would swap real and fake: the masks say v1
    assert opened["v1-ints"].orders["data:test"][0] == "v1" and opened["v2-ints"].orders["data:test"][0] == "v2"


def test_per_generator_label_space_and_metadata(items, tmp_path):
    ds = SoFakeDataset(hub_copy(tmp_path / "ood", "v2", {"test": items}))
    assert ds.label_space.editors == ("Ideogram3.0", "openai")
    assert ds.describe()["generators"] == {"Ideogram3.0": 2, "openai": 4}
    assert ds.describe()["samples"] == {"real": 3, "full_synthetic": 3, "tampered": 3}
    full = next(it for it in items if it["kind"] == "full_synthetic")
    sample = ds.load(full["filename"])
    assert (sample.label == ds.label_space.index(full["generator"])).all()
    assert [(t.editor, t.edit_type) for t in sample.meta.turns] == [(full["generator"], "full_synthetic")]
    assert SoFakeDataset(hub_copy(tmp_path / "v1", "v1", {"test": items})).label_space == BINARY  # v1 names none
    assert SoFakeDataset(tmp_path / "ood", kinds="tampered").describe()["samples"] == {"tampered": 3}


def test_the_notice_names_the_images_localization_is_scored_on(items, tmp_path):
    ds = SoFakeDataset(hub_copy(tmp_path / "ood", "v2", {"test": items}))
    assert ds.notice == ("So-Fake: fully generated images are edited everywhere (label rule mixed-v1); localization "
                         "is scored on tampered images: read the edit_type=tampered slice, or open it with "
                         "--dataset-option kinds=tampered")
    assert SoFakeDataset(tmp_path / "ood", kinds="real,tampered").notice is None


def test_a_folder_link_back_up_in_the_hub_copy_is_not_followed(items, tmp_path):
    """``again -> .`` made data/ be read twice, as a second table: "filename ... appears twice in split test"."""
    root = hub_copy(tmp_path / "ood", "v2", {"test": items})
    plain = SoFakeDataset(root)
    (root / "again").symlink_to(".", target_is_directory=True)
    linked = SoFakeDataset(root)
    assert {s: linked.ids(s) for s in linked.splits()} == {s: plain.ids(s) for s in plain.splits()}
    assert linked.fingerprint() == plain.fingerprint()


def test_splits_and_forms(tmp_path):
    parts = {"train": samples(6, seed=2), "validation": samples(3, seed=3)}
    hub = hub_copy(tmp_path / "So-Fake-Set", "v2", parts)
    datasets.DatasetDict({s: hub_rows(v, "v2", s) for s, v in parts.items()}).save_to_disk(str(tmp_path / "saved"))
    forms = [hub, hub / "data" / "train-00000-of-00001.parquet", tmp_path / "saved"]
    assert all(SoFakeDataset.sniff(p) for p in forms)
    opened = [SoFakeDataset(p) for p in forms]
    assert opened[0].splits() == ["train", "val"] and opened[1].splits() == ["train"]
    assert opened[0].fingerprint() == opened[2].fingerprint()


def test_an_empty_split_folder_is_refused_never_passed_over(items, tmp_path):
    """test/ left empty beside train/ by an extraction cut short: the copy opened as train alone, unsaid."""
    root = tmp_path / "So-Fake"
    (root / "train").mkdir(parents=True)
    hub_rows(items, "v2", "train").to_parquet(str(root / "train" / "data-00000-of-00001.parquet"))
    (root / "test").mkdir()
    with pytest.raises(DataError) as err:
        SoFakeDataset(root)
    assert str(err.value) == (f"{root / 'test'}: holds no So-Fake data (parquet, arrow or a save_to_disk folder); "
                              "the dataset would have no test split (a download or extraction cut short?): get it "
                              "again, or move it away")


def test_val_beside_validation_is_refused_naming_both(tmp_path):
    """data/val-*.parquet beside data/validation-*.parquet: their rows were merged into val unsaid."""
    hub = hub_copy(tmp_path / "So-Fake-Set", "v2", {"train": samples(3, seed=2), "val": samples(3, seed=3),
                                                    "validation": samples(3, seed=4)})
    with pytest.raises(DataError) as err:
        SoFakeDataset(hub)
    assert str(err.value) == f"{hub}: splits 'val' and 'validation' both read as split val; rename or leave out one of them"


def test_copies_the_data_cannot_place_are_refused(items, tmp_path):
    def write(rows, order, name, class_label=False):
        path = tmp_path / name
        datasets.Dataset.from_list(rows, features=features(order, class_label)).to_parquet(str(path))
        return path

    untampered = [it for it in items if it["kind"] != "tampered"]
    bare = write(hub_rows(untampered, "v2", class_label=False).to_list(), "v2", "bare.parquet")
    with pytest.raises(DataError, match=r"bare.parquet .*cannot place the label order: no ClassLabel names on "
                                        r"label and no masks \(labels 0, 2\); pass --dataset-option label_order"):
        SoFakeDataset(bare)
    assert {k for k, *_ in verdicts(SoFakeDataset(bare, label_order="v2")).values()} == {"real", "full_synthetic"}
    two = hub_rows(items, "v1", class_label=False).to_list()
    two[0]["mask"] = dict(two[1]["mask"])  # a v1 real row (label 1) given the tampered row's mask
    with pytest.raises(DataError, match=r"two.parquet .*masks under more than one label value \(label 1: 1, "
                                        r"label 2: 3\)"):
        SoFakeDataset(write(two, "v1", "two.parquet"))
    zero = hub_rows(items, "v2", class_label=False).to_list()
    for row in zero:
        row["label"] = {0: 1, 1: 0, 2: 2}[row["label"]]  # tampered rows under 0: neither order
    with pytest.raises(DataError, match=r"masks under label 0 \(label 0: 3\); the tampered value is 2 in v1"):
        SoFakeDataset(write(zero, "v2", "zero.parquet"))
    with pytest.raises(DataError, match=r"mislabelled.parquet .*contradicted \(ClassLabel names say v2; masks say v1"):
        SoFakeDataset(_v2_names_on_v1_values(items, tmp_path))
    with pytest.raises(DataError, match=r"contradicted \(masks say v2; label_order option say v1"):
        SoFakeDataset(hub_copy(tmp_path / "v2", "v2", {"test": items}, class_label=False), label_order="v1")
    rows = hub_rows(items, "v2", class_label=False).to_list()
    rows[0]["label"] = 5
    with pytest.raises(DataError, match=r"label values 5; So-Fake's labels are 0, 1, 2 \(v1: 0 full_synthetic"):
        SoFakeDataset(write(rows, "v2", "five.parquet"))
    with pytest.raises(ConfigError) as err:  # one wording for every adapter's choice option (base.not_a_choice)
        SoFakeDataset(bare, label_order="v3")
    assert str(err.value) == "So-Fake label_order='v3' is not one of v1, v2"
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no So-Fake data found"):
        SoFakeDataset(tmp_path / "empty")


def _v2_names_on_v1_values(items, tmp_path):
    """A copy whose ClassLabel names say v2 while its values are v1's (masks under 2)."""
    rows = hub_rows(items, "v1", class_label=False).to_list()
    feats = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=KIND_NAMES["v2"]),
                               "mask": datasets.Image(), "filename": datasets.Value("string")})
    path = tmp_path / "mislabelled.parquet"
    datasets.Dataset.from_list(rows, features=feats).to_parquet(str(path))
    return path


def test_refusal_is_one_line_on_the_command_line(items, tmp_path, capsys):
    root = tmp_path / "ambiguous"
    (root / "data").mkdir(parents=True)
    rows = hub_rows([it for it in items if it["kind"] != "tampered"], "v2", class_label=False)
    rows.to_parquet(str(root / "data" / "test-00000-of-00001.parquet"))
    capsys.readouterr()
    code, _, err = cli(capsys, "data", "stats", root, "--no-plots", "--json")
    errors = [line for line in err.splitlines() if line.startswith("error")]
    assert code != 0 and len(errors) == 1 and "Traceback" not in err, err
    assert "test-00000-of-00001.parquet" in errors[0] and "cannot place the label order" in errors[0]


def test_sniffing_picks_so_fake_and_leaves_the_others_theirs(items, tmp_path):
    from helpers.hub import hub_copy as opensdi_copy
    from helpers.hub import split_rows
    from helpers.sidset import hub_rows as sid_rows
    from helpers.sidset import samples as sid_samples

    v1 = hub_copy(tmp_path / "v1", "v1", {"test": items})
    v2 = hub_copy(tmp_path / "v2", "v2", {"test": items})
    opensdi_copy(tmp_path / "opensdi", "OpenSDI_test", {"sd2": split_rows("sd2", 3)})
    (tmp_path / "sid" / "data").mkdir(parents=True)
    sid_rows(sid_samples(3)).to_parquet(str(tmp_path / "sid" / "data" / "train-00000-of-00001.parquet"))
    layouts = {"v1": v1, "v2": v2, "v2-file": v2 / "data" / "test-00000-of-00001.parquet",
               "opensdi": tmp_path / "opensdi", "sidset": tmp_path / "sid"}
    assert {k: recognised_as(p) for k, p in layouts.items()} == {
        "v1": "sofake", "v2": "sofake", "v2-file": "sofake", "opensdi": "opensdi", "sidset": "sidset"}
    assert not DiffSeg30kDataset.sniff(v2) and not SidSetDataset.sniff(v2) and not OpenSdiDataset.sniff(v2)
    assert not SoFakeDataset.sniff(tmp_path / "opensdi") and not SoFakeDataset.sniff(tmp_path / "sid")
    assert isinstance(open_dataset(str(v1)), SoFakeDataset)


def test_data_stats_and_run_standard(tmp_path, capsys):
    root = hub_copy(tmp_path / "So-Fake-Set", "v2", {"train": samples(6, seed=4), "validation": samples(6, seed=5)})
    code, text, err = cli(capsys, "data", "stats", root, "--no-plots", "--json")
    assert code == 0, err
    stats = json.loads(text)
    assert stats["images"] == 12 and stats["authentic"] == 4
    assert stats["edit_types"] == {"full_synthetic": 4, "none": 4, "tampered": 4}
    code, _, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", root,
                       "--out", tmp_path / "out", *FAST)
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "records").glob("*.json")]
    assert records and {r["dataset"]["label_map"]["source"] for r in records} == {"So-Fake label rule mixed-v1"}


def test_an_accented_file_name_gives_one_set_of_ids_and_one_fingerprint_in_either_unicode_form(items, tmp_path):
    """The ids kept the hub's filename as stored: decomposed (written on macOS) and composed differed."""
    opened = []
    for form in ("NFC", "NFD"):
        renamed = [dict(it, filename=it["filename"].replace("reddit", unicodedata.normalize(form, "caféreddit")))
                   for it in items]
        opened.append(SoFakeDataset(hub_copy(tmp_path / form, "v2", {"test": renamed})))
    assert_read_alike(*opened, "reddit")
