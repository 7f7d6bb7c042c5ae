"""The embedded ``mini`` dataset: layout, labels vs manifest, determinism, caching."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from diffzoo.generators.datasets import mini as demo
from diffzoo.generators.datasets.mini import EDITORS
from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import LabelSpace, SampleMeta

N, SIZE, SEED = 6, 64, 3


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    calls = []
    root = demo.build_mini(
        tmp_path_factory.mktemp("mini") / "mini", n_images=N, size=SIZE, seed=SEED,
        progress=lambda done, total: calls.append((done, total)),
    )  # fmt: skip
    assert calls == [(i, N) for i in range(1, N + 1)]
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _manifest(root: Path) -> list[SampleMeta]:
    lines = (root / "manifest.jsonl").read_text().splitlines()
    return [SampleMeta.from_dict(json.loads(line)) for line in lines]


def test_layout(built):
    names = json.loads((built / "labels.json").read_text())
    assert names == {"names": ["background", *EDITORS], "verified": True}
    assert "random-weight" in (built / "README.md").read_text()
    ids = [f"{i:08d}" for i in range(N)]
    expected = {f"train_copy/{i}.{kind}.png" for i in ids for kind in ("image", "mask")}
    assert set(_files(built)) == expected | {"labels.json", "manifest.jsonl", "README.md"}
    for sid in ids:
        with Image.open(built / "train_copy" / f"{sid}.image.png") as im:
            assert im.mode == "RGB" and im.size == (SIZE, SIZE)
        with Image.open(built / "train_copy" / f"{sid}.mask.png") as m:
            assert m.mode == "L" and m.size == (SIZE, SIZE)
    assert not list(built.parent.glob(".mini.tmp-*")), "temporary build folder left behind"


def test_labels_match_manifest_and_later_turns_win(built):
    space = LabelSpace.from_editors(demo.EDITORS)
    metas = _manifest(built)
    plans = demo.plan_mini(N, SIZE, SEED)
    assert [m.id for m in metas] == [p.id for p in plans]
    for meta, plan in zip(metas, plans):
        assert meta.source == "diffzoo-mini" and meta.base in ("real", "ai")
        assert 0 <= len(meta.turns) <= 3 and meta.turns == plan.turns
        label = np.asarray(Image.open(built / "train_copy" / f"{meta.id}.mask.png"))
        assert set(np.unique(label)) <= set(range(space.num_classes))
        expected = np.zeros((SIZE, SIZE), np.uint8)
        for turn, mask in zip(plan.turns, plan.masks):
            expected[mask] = space.index(turn.editor)
            x0, y0, x1, y1 = turn.region
            assert mask[y0:y1, x0:x1].sum() == mask.sum()
        assert np.array_equal(label, expected)
        if not meta.turns:  # authentic image
            assert not label.any()
            continue
        last = meta.turns[-1]
        assert (label[plan.masks[-1]] == space.index(last.editor)).all()
        present = {space.names[v] for v in np.unique(label) if v}
        assert present <= {t.editor for t in meta.turns}
        image = np.asarray(Image.open(built / "train_copy" / f"{meta.id}.image.png"))
        assert image.std() > 5


def test_plan_balances_editors_bases_and_turns():
    plans = demo.plan_mini(120, SIZE, 0)
    counts = {0: 0, 1: 0, 2: 0, 3: 0}
    editors: dict[str, int] = {}
    for p in plans:
        counts[len(p.turns)] += 1
        for t in p.turns:
            editors[t.editor] = editors.get(t.editor, 0) + 1
    assert counts == {0: 20, 1: 10, 2: 40, 3: 50}
    assert max(editors.values()) - min(editors.values()) <= 1
    assert sum(p.base == "ai" for p in plans) == round(120 * demo.AI_FRACTION)
    assert {t.edit_type for p in plans for t in p.turns} == {
        "attribute_change", "object_addition", "object_removal"
    }  # fmt: skip


def test_build_is_byte_identical(built, tmp_path):
    again = demo.build_mini(tmp_path / "again", n_images=N, size=SIZE, seed=SEED)
    assert _files(again) == _files(built)
    other = demo.plan_mini(N, SIZE, SEED + 1)
    assert [p.turns for p in other] != [p.turns for p in demo.plan_mini(N, SIZE, SEED)]


def test_existing_root_needs_overwrite(built):
    with pytest.raises(DataError, match="overwrite"):
        demo.build_mini(built, n_images=N, size=SIZE, seed=SEED)


def test_ensure_mini_builds_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    root = demo.mini_root(n_images=2, size=32, seed=0)
    assert root.parent == tmp_path / "cache" / "datasets"
    assert root.name.startswith(f"mini-v{demo.MINI_VERSION}")
    assert demo.mini_root().name == f"mini-v{demo.MINI_VERSION}"
    built = demo.ensure_mini(n_images=2, size=32, seed=0)
    assert built == root and (root / "labels.json").is_file()
    stamp = (root / "manifest.jsonl").stat().st_mtime_ns
    assert demo.ensure_mini(n_images=2, size=32, seed=0) == root
    assert (root / "manifest.jsonl").stat().st_mtime_ns == stamp  # not rebuilt


def test_open_mini_reads_it_as_diffseg30k(tmp_path):
    ds = demo.open_mini(tmp_path / "m", n_images=4, size=32, seed=1)
    assert ds.name == "mini"
    assert list(ds.label_space.names) == ["background", *EDITORS]
    ids = [i for split in ds.splits() for i in ds.ids(split)]
    assert sorted(ids) == [f"{i:08d}" for i in range(4)]
    samples = [ds.load(i) for i in ids]
    assert all(s.image.shape == (32, 32, 3) and s.meta.base in ("real", "ai") for s in samples)
    assert any(s.meta.turns for s in samples)
    assert ds.notice and ds.training_overrides["pretrained"] is False


README = Path(__file__).resolve().parents[1] / "README.md"
GOLDEN = Path(__file__).parent / "golden" / "suite-all-mini.json"


def readme_mini_fingerprints() -> list[str]:
    """Every fingerprint the README shows for the demo's `mini`."""
    import re

    text = README.read_text()
    found = re.findall(r"dataset mini \(fingerprint ([0-9a-f]{16})\)", text)
    found += re.findall(r"on mini\*\* .*?dataset fingerprint ([0-9a-f]{16})", text)
    return found


def test_the_readme_shows_the_fingerprint_of_the_shipped_mini(tmp_path, monkeypatch):
    """README command 1's printed fingerprint is the shipped copy's, which `--dataset mini`
    reads on every machine without building anything (and which the same-numbers golden
    run of `--suite all` was made on)."""
    from diffzoo.harness.run.factories import open_dataset

    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))  # nothing cached
    monkeypatch.setattr(demo, "build_mini", _no_build)
    ds = open_dataset("mini")
    assert Path(ds.path) == demo.SHIPPED_ROOT
    assert len(ds.ids("train")) + len(ds.ids("calib")) + len(ds.ids("val")) == demo.DEFAULT_N_IMAGES
    shown = readme_mini_fingerprints()
    assert len(shown) >= 2  # the demo output and the published table
    assert set(shown) == {ds.fingerprint()}
    assert json.loads(GOLDEN.read_text())["fingerprints"] == [ds.fingerprint()]


def _no_build(*args, **kwargs):
    raise AssertionError("the shipped mini must not be rebuilt")


def test_the_shipped_mini_is_what_a_default_build_plans():
    """Properties a build made anywhere shares with the shipped copy: ids, manifest, the
    exact label maps (integer region masks, no float computation), image modes and sizes,
    and every editor's share.  The edited pixels themselves are this machine's float
    results, so they are not compared with a build made here."""
    root = demo.SHIPPED_ROOT
    plans = demo.plan_mini(demo.DEFAULT_N_IMAGES, demo.DEFAULT_SIZE, demo.DEFAULT_SEED)
    assert json.loads((root / "labels.json").read_text()) == {"names": ["background", *EDITORS], "verified": True}
    metas = _manifest(root)
    assert [m.id for m in metas] == [p.id for p in plans]
    assert [m.turns for m in metas] == [p.turns for p in plans] and [m.base for m in metas] == [p.base for p in plans]
    space = LabelSpace.from_editors(EDITORS)
    edits = dict.fromkeys(EDITORS, 0)
    for plan in plans:
        expected = np.zeros((demo.DEFAULT_SIZE,) * 2, np.uint8)
        for turn, mask in zip(plan.turns, plan.masks):
            expected[mask] = space.index(turn.editor)
            edits[turn.editor] += 1
        with Image.open(root / "train_copy" / f"{plan.id}.mask.png") as m:
            assert m.mode == "L" and np.array_equal(np.asarray(m), expected), plan.id
        with Image.open(root / "train_copy" / f"{plan.id}.image.png") as im:
            assert im.mode == "RGB" and im.size == (demo.DEFAULT_SIZE,) * 2
    assert max(edits.values()) - min(edits.values()) <= 1
    assert set(_files(root)) == {f"train_copy/{p.id}.{k}.png" for p in plans for k in ("image", "mask")} | {
        "labels.json", "manifest.jsonl", "README.md"}


def test_the_lora_suite_reads_the_shipped_re_edits(monkeypatch):
    """Every validation image of the shipped mini with SDXL pixels has its SDXL-LoRA re-edit
    shipped: the LoRA suite runs no generator on `mini` (whose float results are the CPU's)."""
    from diffzoo.generators.datasets import reedit
    from diffzoo.harness.run.factories import open_dataset

    monkeypatch.setattr(reedit, "_generator", _no_build)
    ds = open_dataset("mini")
    shipped = {p.name for p in (demo.SHIPPED_REEDITS / "sdxl.tiny-lora").iterdir()}
    edited = 0
    for sid in ds.ids("val"):
        sample = ds.load(sid)
        out, label = reedit.reedit(sample.image, sample.label, meta=sample.meta, label_space=ds.label_space,
                                   editor="sdxl", generator="sdxl.tiny-lora")
        mask = sample.label == ds.label_space.index("sdxl")
        assert label is sample.label and np.array_equal(out[~mask], sample.image[~mask])
        edited += bool(mask.any())
    assert edited == len(shipped) > 0
    assert not list((Path(os.environ["DIFFZOO_CACHE"]) / reedit.CACHE_DIR).rglob("*.png"))  # nothing computed


def test_an_install_without_the_shipped_copy_says_how_to_mend_it(tmp_path, monkeypatch):
    from diffzoo.harness.run.factories import open_dataset

    monkeypatch.setattr(demo, "SHIPPED_ROOT", tmp_path / "missing")
    with pytest.raises(DataError, match="reinstall diffzoo.*data build mini"):
        open_dataset("mini")


def test_the_readme_check_reads_every_place_it_names(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.README", tmp_path / "README.md")
    (tmp_path / "README.md").write_text("dataset mini (fingerprint 0123456789abcdef); classes\n"
                                        "**standard v2 / binary on mini** — task binary · dataset fingerprint "
                                        "fedcba9876543210 · suite\n")
    assert readme_mini_fingerprints() == ["0123456789abcdef", "fedcba9876543210"]


def test_two_processes_ensure_the_same_build(tmp_path):
    """Concurrent first use: one builds under the lock, the other waits and reuses it."""
    import os
    import subprocess
    import sys

    code = (
        "import sys; from diffzoo.generators.datasets.mini import ensure_mini;"
        "print(ensure_mini(root=sys.argv[1], n_images=2, size=32, seed=0))"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    root = tmp_path / "shared"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]  # fmt: skip
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert {o[0].strip().splitlines()[-1] for o in outs} == {str(root)}
    assert len(_manifest(root)) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared"]  # the lock is the cache's, not the user's

    from diffzoo.harness.core.fsutil import cache_root

    assert list((cache_root() / "locks").glob("mini-*.lock"))  # the one both processes took
