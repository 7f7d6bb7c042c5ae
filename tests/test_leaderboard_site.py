"""The static leaderboard site, checked as HTML and in a real headless Chromium.

The browser tests need Debian's /usr/bin/chromium and /usr/bin/chromedriver
(driven by selenium, never selenium-manager).  Without them they skip, unless
DIFFZOO_REQUIRE_BROWSER=1 (CI), where they fail.  Screenshots are saved in
the test's tmp folder and copied to $DIFFZOO_ARTIFACTS when it is set.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from diffzoo.harness.metrics.catalog import metric_info
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.render.escape import latex
from diffzoo.leaderboard.render.site import OVERVIEW_JS, detector_slugs, write_site
from diffzoo.leaderboard.store import RecordStore
from diffzoo.leaderboard.table import Cell, column, format_ci, format_value, slugify
from diffzoo.leaderboard.versions import freeze, load_version

from helpers.cli import cli, one_line

EVIL = "evil<script>window.__pwned=1</script>"
QUOTE = 'say "hi" &amp; $x^$'  # quote, ampersand (and an entity), a mathtext trap for plot titles
EVIL_CARD = '<img src=x onerror="window.__pwned=2">'
LABELS = ["background", "sd2", "sdxl", "flux"]
DATASET = "DiffSeg30k mini & co"
FP = "f00dfeedbeef0123456789"
BINARY = ("aAcc", "mIoU", "bF1", "F1", "pixel_AUC", "gIoU", "FPR_authentic")
BROWSER, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


def record(detector, case, task, metrics, *, suite="standard", version="1", distortion="none", params=None,
           ci=None, baselines=None, confusion=None, sha=None, date="2026-03-01T10:20:30+00:00",
           git="0123456789abcdef0123456789abcdef01234567", card=None, case_fields=None, config=None, policy=None,
           release=None, dataset=(DATASET, FP)):
    """A record of ``case``; ``case_fields`` changes its case fields (None: a field left out);
    ``policy`` its threshold policy, ``release`` the released weights it scored, ``dataset`` its
    (name, fingerprint)."""
    return ResultRecord.create(
        detector={"name": detector, "card": card or {"name": detector, "description": f"{detector} test card",
                                                     "tasks": ["binary", "semantic"], "licence": "MIT"},
                  "task": "semantic" if task == "semantic" else "binary", "pretrained": False,
                  "checkpoint_sha256": sha or slugify(detector).encode().hex().ljust(64, "0")[:64],
                  "checkpoint_source": "released" if release else "trained", "plugin": "diffzoo.plugins.test",
                  **({"release": release} if release else {})},
        suite={"name": suite, "version": version, "definition_hash": f"def{suite}{version}".ljust(16, "0")},
        case={k: v for k, v in {"name": case, "task": task, "split": "val", "distortion": distortion,
                                 "distortion_params": params or {}, "train": {"task": "binary", "split": "train",
                                                                              "exclude_editors": []},
                                 **(case_fields or {})}.items() if v is not None},
        dataset={"name": dataset[0], "fingerprint": dataset[1]},
        label_space=LABELS if task == "semantic" else ["background", "edited"],
        metrics=metrics, ci95=ci or {}, metrics_version="1", threshold_policy=policy or {"pixel": "fixed 0.5"},
        baselines=baselines or {}, confusion=confusion, counts={"evaluated": 40, "skipped_total": 0},
        seed=0, config=config or {}, environment={"git": git, "date": date, "device": "cpu", "packages": {"diffzoo": "0.1"}},
    )


def binary(m):
    """Plausible binary metrics from one mIoU."""
    return {"aAcc": 0.8 + m / 5, "mIoU": m, "bF1": m * 0.8, "F1": min(1.0, m * 1.2), "pixel_AUC": 0.5 + m / 2,
            "gIoU": m * 0.9, "FPR_authentic": 0.4 - m / 3, "num_images": 40}


def semantic(m, seed):
    rng = np.random.default_rng(seed)
    conf = rng.integers(0, 50, (4, 4)) + np.diag([400, 120, 90, 60])
    ious = {f"IoU.{n}": float(v) for n, v in zip(LABELS, (0.9, m + 0.1, m, m - 0.1))}
    metrics = {"aAcc": 0.85, "mAcc": m + 0.05, "mIoU": m, "bF1": m * 0.7, "top1": m + 0.2, "top3": 0.95, **ious}
    return metrics, conf.tolist()


def image(ap):
    return {"img_Acc": ap - 0.05, "img_real_Acc": ap - 0.1, "img_edited_Acc": ap, "img_AP": ap, "img_AUC": ap + 0.02}


BASELINES = {"all-background": {"mIoU": 0.0, "aAcc": 0.78, "bF1": None, "F1": 0.0},
             "all-edited": {"mIoU": 0.22, "aAcc": 0.22, "bF1": 0.1, "F1": 0.36}}


def make_records():
    recs = []
    for i, (name, m, ap) in enumerate((("segformer.b0", 0.62, 0.9), ("fcn8s", 0.48, 0.76), (EVIL, 0.55, 0.8),
                                      (QUOTE, 0.31, 0.6))):
        ci = {"mIoU": [m - 0.03, m + 0.02], "F1": [0.2, 0.4]} if name in ("segformer.b0", QUOTE) else {}
        card = {"name": name, "description": EVIL_CARD, "tasks": ["binary"]} if name == EVIL else None
        recs.append(record(name, "binary", "binary", binary(m), ci=ci, baselines=BASELINES, card=card))
        sem, conf = semantic(m - 0.15, i)
        recs.append(record(name, "semantic", "semantic", sem, confusion=conf, card=card))
        recs.append(record(name, "image", "image", image(ap), card=card))
    for q, m in ((90, 0.58), (70, 0.5), (50, 0.37)):
        recs.append(record("segformer.b0", f"jpeg-q{q}", "binary", binary(m), suite="robustness",
                           distortion="jpeg", params={"quality": q}))
    for s, m in ((1.0, 0.52), (2.0, 0.33)):
        recs.append(record("segformer.b0", f"blur-s{s:g}", "binary", binary(m), suite="robustness",
                           distortion="gaussian_blur", params={"sigma": s}))
    recs.append(record("fcn8s", "jpeg-q90", "binary", binary(0.4), suite="robustness", distortion="jpeg",
                       params={"quality": 90}))  # one strength: no curve
    recs.append(record("segformer.b0", "binary", "binary", binary(0.6), version="2"))  # a new table
    return recs


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    store = RecordStore(root / "store")
    records = make_records()
    for r in records:
        store.add(r)
    freeze(store, "v1", note="test version")
    out = root / "out"
    assert "index.html" in write_site(load_version(store, "v1"), out)
    index = out / "index.html"
    return {"out": out, "index": index, "records": records}


def find(records, detector, case, suite="standard", version="1"):
    (r,) = [r for r in records if r.data["detector"]["name"] == detector and r.data["case"]["name"] == case
            and r.data["suite"]["name"] == suite and r.data["suite"]["version"] == version]
    return r


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(path: Path) -> Tags:
    p = Tags()
    p.feed(path.read_text())
    p.close()
    return p


def test_record_strings_are_escaped_and_links_are_slugs(site):
    out = site["out"]
    pages = [site["index"], *sorted((out / "detectors").glob("*.html"))]
    assert len(pages) == 5
    link = re.compile(r"^(#t-[\w.-]+|(\.\./)?(index\.html(#t-[\w.-]+)?|detectors/[\w.-]+\.html|plots/[\w.-]+\.png))$")
    for page in pages:
        p = parse(page)
        # the one script is the overview's constant code; a record's "<script>" is text
        assert re.findall(r"<script>(.*?)</script>", page.read_text(), re.S) in ([], [OVERVIEW_JS]), page
        for tag, attrs in p.tags:
            assert not [a for a in attrs if a.startswith("on")], (page, tag, attrs)
            for a in ("href", "src"):
                if a in attrs:
                    assert link.match(attrs[a]), (page, attrs[a])
    index = parse(site["index"])
    text = "".join(index.text)
    assert EVIL in text and QUOTE in text and DATASET in text  # shown as text, after unescaping
    rows = {attrs["data-detector"] for tag, attrs in index.tags if tag == "tr" and "data-rank" in attrs}
    assert rows == {"segformer.b0", "fcn8s", EVIL, QUOTE}
    evil_page = parse(out / "detectors" / f"{slugify(EVIL)}.html")
    assert EVIL_CARD in "".join(evil_page.text)
    assert not [a for t, a in evil_page.tags if t == "img" and a.get("src") == "x"]



def test_every_link_and_image_of_the_site_is_a_file_in_it_and_every_fragment_an_id_there(site):
    """A crawl of every page: each href and src names a file inside the site folder, each ``#x``
    an element with that id on the page it points to."""
    from urllib.parse import unquote, urlsplit

    out = site["out"].resolve()
    pages = {p.resolve(): parse(p).tags for p in out.rglob("*.html")}
    ids = {p: {a["id"] for _, a in tags if "id" in a} for p, tags in pages.items()}
    links = [(p, a[k]) for p, tags in pages.items() for _, a in tags for k in ("href", "src") if k in a]
    assert len(pages) == 5 and len(links) > 50
    for page, link in links:
        parts = urlsplit(link)
        target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        assert not parts.scheme and out in target.parents and target.is_file(), (page.name, link)
        assert not parts.fragment or parts.fragment in ids[target], (page.name, link)


def test_publishing_a_version_twice_writes_the_same_bytes_in_every_format(tmp_path, capsys):
    """Two publishes of one frozen version give byte-identical files in every format, figures
    included (the folder's marker records when the folder was claimed, and nothing else differs)."""
    store = RecordStore(tmp_path / "store")
    for r in make_records():
        store.add(r)
    freeze(store, "v1")

    def publish(out):
        code, text, _ = cli(capsys, "leaderboard", "publish", "v1", "--store", store.root, "--format",
                            "md,csv,latex,json,html", "--out", out)
        assert code == 0, text
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
                if p.is_file() and p.name != ".diffzoo-out.json"}

    first = publish(tmp_path / "a")
    assert len(first) > 20 and first == publish(tmp_path / "b")

def test_a_case_line_leaves_out_what_its_records_do_not_say(tmp_path):
    """A case without ``split`` or ``train`` said "split None" (or "split ;") and "trained on ?"."""
    from diffzoo.leaderboard.versions import Selection

    for fields, said in (({"split": None, "train": None}, "task binary; distortion none; dataset fingerprint"),
                         ({"train": {"split": "train", "exclude_editors": ["sd2"]}},
                          "task binary; split val; distortion none; trained on train without sd2; dataset")):
        write_site(Selection("x", [record("a", "binary", "binary", binary(0.5), case_fields=fields)]), tmp_path)
        text = re.sub(r"\s+", " ", "".join(parse(tmp_path / "detectors" / "a.html").text))
        assert said in text, text


def test_the_weights_of_a_row_name_no_training_data_its_record_does_not_say(tmp_path):
    """A record without ``config.train_subset`` (one a run did not make) showed "trained on DATASET/train"."""
    from diffzoo.leaderboard.versions import Selection

    subset = {"task": "binary", "split": "train", "exclude_editors": ["sd2"]}
    for config, said in (({}, "a: training data not recorded"),
                         ({"train_subset": subset}, f"a: trained on {DATASET}/train without sd2"),
                         ({"train_subset": subset, "train_dataset": {"name": "other"}}, "a: trained on other/train")):
        write_site(Selection("x", [record("a", "binary", "binary", binary(0.5), config=config)]), tmp_path)
        page = parse(tmp_path / "detectors" / "a.html")
        assert said in "".join(page.text), config


def test_file_names_are_slugs_and_distinct(site):
    files = [p for p in site["out"].rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert re.fullmatch(r"[A-Za-z0-9._-]+", p.name) and "<" not in p.name, p
    pages = {p.name for p in (site["out"] / "detectors").glob("*.html")}
    assert pages == {f"{slugify(n)}.html" for n in ("segformer.b0", "fcn8s", EVIL, QUOTE)}
    slugs = detector_slugs(["a b", "a-b", "A-B", "c"])
    assert len({s.lower() for s in slugs.values()}) == 4 and slugs["c"] == "c"



def test_a_name_made_to_read_as_another_names_hashed_slug_gets_a_page_of_its_own(tmp_path, monkeypatch):
    """``.`` and ``..`` both slug to ``x`` and get hashed slugs; a detector named as one of those
    (``x-cdb4ee2a``) kept it as its own slug, so both wrote ``detectors/x-cdb4ee2a.html``: the
    page of the one written last, linked from both rows.  Names whose hashes share their first
    8 hex digits (found by trying names) get the whole hash."""
    import hashlib

    from diffzoo.leaderboard import table as table_module
    from diffzoo.leaderboard.versions import Selection

    names = [".", "..", f"x-{hashlib.sha256(b'.').hexdigest()[:8]}"]
    slugs = detector_slugs(names)
    assert len({s.lower() for s in slugs.values()}) == 3 and slugs[".."] == detector_slugs([".", ".."])[".."], slugs
    write_site(Selection("x", [record(n, "binary", "binary", binary(0.3)) for n in names]), tmp_path)
    index = (tmp_path / "index.html").read_text()
    links = dict(re.findall(r'<a href="detectors/([\w.-]+\.html)"><bdi>(.*?)</bdi></a>', index))
    heads = {page: re.search(r'<h1 class="detector-name"><bdi>(.*?)</bdi></h1>', (tmp_path / "detectors" / page)
                             .read_text())[1] for page in links}
    assert heads == links and sorted(links.values()) == names, (heads, links)  # each row's page is its own
    real = hashlib.sha256

    class Prefixed:  # every name's hash made to start with the same 8 hex digits
        def __init__(self, data):
            self.digest = "0" * 8 + real(data).hexdigest()[8:]

        def hexdigest(self):
            return self.digest

    monkeypatch.setattr(table_module.hashlib, "sha256", Prefixed)
    assert len({s.lower() for s in detector_slugs(["a b", "a-b", "a_b", "c"]).values()}) == 4


def test_a_table_with_a_row_not_held_out_says_what_that_means_on_the_site_and_in_latex(tmp_path):
    """Markdown and the console say under such a table what "(not held out)" means; the site's
    case tables and the LaTeX tables left it out."""
    from diffzoo.leaderboard.render.text import publish
    from diffzoo.leaderboard.table import NOT_HELD_OUT_NOTE
    from diffzoo.leaderboard.versions import Selection

    overlap = {"train_overlap": {"held_out": False, "shared_images": 40, "images": 40,
                                 "training": {"name": DATASET, "fingerprint": FP, "split": "train"}}}
    selection = Selection("x", [record("a", "binary", "binary", binary(0.5)),
                                record("b", "binary", "binary", binary(0.6), config=overlap)])
    site = publish(selection, "html", tmp_path / "site")
    for page in (site, tmp_path / "site" / "detectors" / "b.html"):
        assert "b (not held out)" in "".join(parse(page).text)
        assert NOT_HELD_OUT_NOTE in "".join(parse(page).text), page.name
    tex = publish(selection, "latex", tmp_path / "tex").read_text()
    assert "b (not held out)" in tex and latex(NOT_HELD_OUT_NOTE) + r"\par" in tex


def test_a_page_whose_case_table_shows_a_dash_says_what_each_dash_means(tmp_path):
    """A detector predicting no edited pixel has no precision (``-``) and a baseline no pixel AUC
    (``—``): the run summary's legend tells the two apart, the site's said nothing of either."""
    from diffzoo.leaderboard.versions import Selection

    baselines = {"all-background": {"mIoU": 0.0}}
    write_site(Selection("x", [record("a", "binary", "binary", {**binary(0.0), "precision": None},
                                      baselines=baselines)]), tmp_path)
    assert '<span class="value">\u2014</span>' in (tmp_path / "index.html").read_text()  # the baseline's AUC
    for page in (tmp_path / "index.html", tmp_path / "detectors" / "a.html"):
        assert '<span class="value">-</span>' in page.read_text(), page.name
        assert "\u2014 = not in the record, - = undefined on these images" in "".join(parse(page).text), page.name


def test_a_detector_page_is_a_file_name_on_every_system(tmp_path):
    """Names slugged to ``CON`` or ``nul.x`` (device names of Windows, where no file of that name
    can be made) or to ``-..-etc`` (read as an option by every command given the page) are
    hashed as colliding slugs are, so each page is named as a frozen version may be."""
    from diffzoo.leaderboard.versions import NAME_RE, Selection

    names = ["CON", "../../etc", "nul.x", "_x", "segformer.b0"]
    write_site(Selection("x", [record(n, "binary", "binary", binary(0.3)) for n in names]), tmp_path)
    pages = sorted(p.stem for p in (tmp_path / "detectors").glob("*.html"))
    assert len(pages) == 5 and all(NAME_RE.match(p[:64]) for p in pages), pages
    assert detector_slugs(names)["segformer.b0"] == "segformer.b0"  # a name that is one keeps its slug

def test_detector_page_plots(site):
    plots = {p.name for p in (site["out"] / "plots").glob("*.png")}
    seg = parse(site["out"] / "detectors" / "segformer.b0.html")
    kinds = [a["data-kind"] for t, a in seg.tags if t == "figure"]
    assert sorted(kinds) == ["confusion", "editor-iou", "robustness", "robustness"]
    srcs = [a["src"] for t, a in seg.tags if t == "img"]
    assert {s.removeprefix("../plots/") for s in srcs} <= plots
    fcn = parse(site["out"] / "detectors" / "fcn8s.html")
    assert [a["data-kind"] for t, a in fcn.tags if t == "figure"] == ["confusion", "editor-iou"]  # 1 jpeg point


def test_publishing_over_an_older_site_leaves_exactly_the_new_versions_pages(tmp_path, capsys):
    store = RecordStore(tmp_path / "store")
    for i, name in enumerate(("alpha", "beta", "gamma")):
        sem, conf = semantic(0.5 - 0.1 * i, i)
        store.add(record(name, "semantic", "semantic", sem, confusion=conf))
    freeze(store, "v1")
    freeze(store, "v2", detectors=["alpha", "gamma"])
    out = tmp_path / "site"

    def publish(version):
        code, text, _ = cli(capsys, "leaderboard", "publish", version, "--store", store.root, "--format", "html",
                            "--out", out)
        assert code == 0, text
        return {p.relative_to(out).as_posix() for p in out.glob("*/*")}

    old = publish("v1")
    beta = {f for f in old if "beta" in f}
    assert "detectors/beta.html" in beta and any(f.startswith("plots/") for f in beta)
    (out / "detectors" / "notes.html").write_text("mine")  # a user's files in the site's folders
    (out / "plots" / "mine.png").write_bytes(b"mine")
    assert publish("v2") == (old - beta) | {"detectors/notes.html", "plots/mine.png"}
    assert "beta" not in (out / "index.html").read_text()
    # a manifest edited to name other files, in the site's folders or outside, removes none of them
    (tmp_path / "keep.png").write_bytes(b"x")
    (out / ".diffzoo-site.json").write_text(json.dumps({"files": [
        "../keep.png", "plots/../../keep.png", "detectors/notes.txt", "index.html", "detectors/", ".diffzoo-out.json"]}))
    assert publish("v2") == (old - beta) | {"detectors/notes.html", "plots/mine.png"}
    assert (tmp_path / "keep.png").exists() and (out / ".diffzoo-out.json").exists()
    (out / ".diffzoo-site.json").write_text("{not json")
    code, text, err = cli(capsys, "leaderboard", "publish", "v1", "--store", store.root, "--format", "html",
                          "--out", out)
    assert code == 2 and one_line(err) == (
        f"error: {out / '.diffzoo-site.json'} is not a readable publish manifest (is not JSON (Expecting property "
        "name enclosed in double quotes at line 1)); it names the files publish wrote there: remove it (they then "
        "stay) or choose another --out")
    assert not (out / "detectors" / "beta.html").exists()  # refused before any write



def test_a_publish_removes_the_files_of_the_publish_before_it_does_not_write_again_and_no_other(tmp_path, capsys,
                                                                                                caplog):
    """A folder published as a site, then as Markdown, kept the site's pages beside the Markdown, read
    as current; the files a publish wrote are listed, and the next publish there removes those it
    does not write again (every format it writes kept), never a file it did not write."""
    store = RecordStore(tmp_path / "store")
    store.add(record("alpha", "semantic", "semantic", semantic(0.5, 0)[0]))
    out = tmp_path / "site"

    def publish(formats, *command):
        caplog.clear()
        code, text, _ = cli(capsys, *(command or ("leaderboard", "publish", "--format", formats)), "--store",
                            store.root, "--out", out)
        assert code == 0, text
        publish.said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        return sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p.name[0] != ".")

    assert "index.html" in publish("html,md")
    # a format left out is said: `report paper` into publish's default folder took the site unsaid
    assert "leaderboard.md" not in publish("paper", "report", "paper")
    assert publish.said == [f"removed 5 file(s) of a format the publish before wrote in {out} and this one does not "
                            "(detectors/alpha.html, index.html, leaderboard.md and 2 more): give every format in one "
                            "--format to keep them"]
    publish("html")
    assert publish.said[0].startswith("removed 1 file(s) of a format") and "(paper.md)" in publish.said[0]
    publish("html")
    assert publish.said == []  # the same formats again: nothing of another format removed
    (out / "mine.md").write_text("mine")  # a user's file in the folder: never a publish's
    assert publish("md,csv") == ["leaderboard.csv", "leaderboard.md", "mine.md", "overview.csv", "overview.md"]
    assert publish("latex") == ["leaderboard.tex", "mine.md", "overview.tex"]
    assert json.loads((out / ".diffzoo-site.json").read_text())["files"] == ["leaderboard.tex", "overview.tex"]
    publish("html")  # its folder made a link to another folder: nothing there is removed through it
    (tmp_path / "elsewhere").mkdir()
    shutil.move(out / "detectors" / "alpha.html", tmp_path / "elsewhere" / "alpha.html")
    (out / "detectors").rmdir()
    (out / "detectors").symlink_to(tmp_path / "elsewhere")
    publish("md")
    assert (tmp_path / "elsewhere" / "alpha.html").exists()


def test_a_publish_over_a_site_whose_manifest_lists_only_its_folders_leaves_no_index_linking_to_them(tmp_path, capsys):
    """A site published by an older diffzoo listed only ``detectors/`` and ``plots/`` in its manifest: publishing
    Markdown there removed those pages and kept its ``index.html``, linking to pages no longer there. A folder
    carrying the manifest is the publish's: the main and overview file of every format in it are its own."""
    store = RecordStore(tmp_path / "store")
    store.add(record("alpha", "semantic", "semantic", semantic(0.5, 0)[0]))
    out = tmp_path / "site"
    for fmt in ("html", "md"):
        code, text, _ = cli(capsys, "leaderboard", "publish", "--store", store.root, "--format", fmt, "--out", out)
        assert code == 0, text
        if fmt == "html":  # the manifest an older diffzoo wrote
            listed = json.loads((out / ".diffzoo-site.json").read_text())["files"]
            (out / ".diffzoo-site.json").write_text(json.dumps({"diffzoo_site": 1, "files": [
                f for f in listed if f.startswith(("detectors/", "plots/"))]}))
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p.name[0] != ".") == [
        "leaderboard.md", "overview.md"]

# ---- real browser -------------------------------------------------------------------------------------------


def _unavailable(reason: str):
    if os.environ.get("DIFFZOO_REQUIRE_BROWSER") == "1":
        pytest.fail(f"DIFFZOO_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    missing = [str(p) for p in (BROWSER, DRIVER) if not p.exists()]
    if missing:
        _unavailable(f"the real-browser test needs {' and '.join(missing)} (apt install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        _unavailable(f"selenium is not installed ({exc})")
    options = webdriver.ChromeOptions()
    options.binary_location = str(BROWSER)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--window-size=1400,900",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(arg)
    drv = webdriver.Chrome(options=options, service=Service(executable_path=str(DRIVER)))
    yield drv
    drv.quit()


def screenshot(drv, path: Path) -> Path:
    height = drv.execute_script("return document.documentElement.scrollHeight")
    drv.set_window_size(1400, min(max(int(height) + 150, 600), 8000))
    assert drv.save_screenshot(str(path))
    assert path.stat().st_size > 1000
    if os.environ.get("DIFFZOO_ARTIFACTS"):
        target = Path(os.environ["DIFFZOO_ARTIFACTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target / path.name)
    return path


def test_index_in_chromium(site, driver, tmp_path):
    from selenium.webdriver.common.by import By

    driver.set_window_size(1400, 900)
    driver.get(site["index"].as_uri())
    assert driver.execute_script("return window.__pwned") is None  # the <script> in a name never ran
    assert [s.get_attribute("innerHTML") for s in driver.find_elements(By.TAG_NAME, "script")] == [OVERVIEW_JS]
    assert "v1" in driver.title
    # the page opens with the ranking: the overview is its first table, in view on load, its detector
    # column frozen while a wider table scrolls sideways
    first = driver.find_element(By.TAG_NAME, "table")
    assert first.get_attribute("class") == "overview-table"
    top, bottom, left, right, height, width = driver.execute_script(
        "var t = arguments[0].getBoundingClientRect(), s = arguments[0].parentElement.getBoundingClientRect();"
        "return [t.top, t.bottom, s.left, s.right, window.innerHeight, window.innerWidth];", first)
    assert 0 <= top < bottom <= height and 0 <= left < right <= width, (top, bottom, left, right, height, width)
    assert all(c.value_of_css_property("position") == "sticky"
               for c in first.find_elements(By.CSS_SELECTOR, "td.detector, th.detector"))
    assert driver.execute_script("return window.scrollY") == 0
    assert driver.find_element(By.CSS_SELECTOR, "#version-summary").text.count(DATASET) == 1
    # the per-case tables come last, folded
    folded = driver.find_element(By.CSS_SELECTOR, "#cases details")
    assert folded.get_attribute("open") is None
    folded.find_element(By.TAG_NAME, "summary").click()
    table = driver.find_element(By.CSS_SELECTOR, 'table.leaderboard[data-suite="standard"][data-suite-version="1"]'
                                                 '[data-case="binary"]')
    assert driver.find_elements(By.CSS_SELECTOR, 'table.leaderboard[data-suite-version="2"][data-case="binary"]')
    heads = table.find_elements(By.CSS_SELECTOR, "thead th.metric")
    assert [h.get_attribute("data-metric") for h in heads] == list(BINARY)
    arrows = {h.get_attribute("data-metric"): h.find_element(By.CSS_SELECTOR, ".arrow").text for h in heads}
    assert arrows["mIoU"] == "↑" and arrows["FPR_authentic"] == "↓"

    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr.entry")
    names = [r.find_element(By.CSS_SELECTOR, "td.detector").text for r in rows]
    recs = {n: find(site["records"], n, "binary") for n in names}
    assert names == sorted(recs, key=lambda n: -recs[n].metrics["mIoU"])  # ranked by the primary metric
    assert [r.find_element(By.CSS_SELECTOR, "td.rank").text for r in rows] == ["1", "2", "3", "4"]
    assert names[1] == EVIL and "<script>" in names[1]  # rendered as text
    for row, name in zip(rows, names):
        rec = recs[name]
        for m in BINARY:
            cell = row.find_element(By.CSS_SELECTOR, f'td.metric[data-metric="{m}"]')
            assert cell.find_element(By.CSS_SELECTOR, ".value").text == format_value(metric_info(m), rec.metrics[m])
        sha = rec.data["detector"]["checkpoint_sha256"]
        code = row.find_element(By.CSS_SELECTOR, "td.checkpoint code")
        assert code.text == sha[:12] and code.get_attribute("title") == sha
        assert row.find_element(By.CSS_SELECTOR, "td.git code").text == rec.data["environment"]["git"][:10]
        assert row.find_element(By.CSS_SELECTOR, "td.date").text == "2026-03-01 10:20"
    quote_cell = rows[names.index(QUOTE)].find_element(By.CSS_SELECTOR, 'td[data-metric="mIoU"]')
    info, ci = metric_info("mIoU"), tuple(recs[QUOTE].data["ci95"]["mIoU"])
    want = f"{format_value(info, recs[QUOTE].metrics['mIoU'])} ± {format_ci(column('mIoU', 'mIoU'), Cell(0.31, ci))}"
    assert quote_cell.text == want
    best = table.find_elements(By.CSS_SELECTOR, "td.best")
    assert {(c.get_attribute("data-metric"), c.find_element(By.XPATH, "..").get_attribute("data-detector"))
            for c in best} == {(m, "segformer.b0") for m in BINARY}  # FPR_authentic: lowest is best

    lone = driver.find_element(By.CSS_SELECTOR, 'table.leaderboard[data-suite="robustness"][data-case="blur-s1"]')
    assert len(lone.find_elements(By.CSS_SELECTOR, "tr.entry")) == 1
    assert not lone.find_elements(By.CSS_SELECTOR, ".best")  # a lone row is not marked best

    baselines = table.find_elements(By.CSS_SELECTOR, "tbody tr.baseline")
    assert [b.find_element(By.CSS_SELECTOR, "td.detector").text for b in baselines] == [
        "all-background (baseline)", "all-edited (baseline)"]
    assert baselines[0].find_element(By.CSS_SELECTOR, "td.detector").value_of_css_property("font-style") == "italic"
    assert not baselines[0].find_elements(By.CSS_SELECTOR, "a")

    screenshot(driver, tmp_path / "leaderboard-index.png")

    rows[names.index(EVIL)].find_element(By.CSS_SELECTOR, "td.detector a").click()
    assert driver.current_url.endswith(f"/detectors/{slugify(EVIL)}.html")
    assert driver.find_element(By.CSS_SELECTOR, "h1.detector-name").text == EVIL
    assert EVIL_CARD in driver.find_element(By.CSS_SELECTOR, "#card").text
    assert driver.execute_script("return window.__pwned") is None
    assert [s.get_attribute("innerHTML") for s in driver.find_elements(By.TAG_NAME, "script")] in ([], [OVERVIEW_JS])


def test_detector_page_in_chromium(site, driver, tmp_path):
    from selenium.webdriver.common.by import By

    driver.get((site["out"] / "detectors" / "segformer.b0.html").as_uri())
    assert driver.find_element(By.CSS_SELECTOR, "h1.detector-name").text == "segformer.b0"
    # the page opens with its overview row and its plots; the per-case tables are folded
    own = driver.find_elements(By.CSS_SELECTOR, "#overview-rows table.overview-table tbody tr")
    assert [r.get_attribute("data-detector") for r in own] == ["segformer.b0"] * 2  # standard v2, then v1
    sections = [el.get_attribute("id") for el in driver.find_elements(By.CSS_SELECTOR, "body > section")]
    assert sections[:2] == ["overview-rows", "plots"] and sections[-1] == "results"
    details = driver.find_element(By.CSS_SELECTOR, "#results details")
    assert details.get_attribute("open") is None
    # a card label over two lines ("weights of each row") pushed the Results heading to the right of it
    card, results = (driver.find_element(By.CSS_SELECTOR, f"#{s} h2").rect for s in ("card", "results"))
    labels = [dt.rect for dt in driver.find_elements(By.CSS_SELECTOR, "dl.card dt")]
    assert results["x"] == card["x"] and results["y"] >= max(r["y"] + r["height"] for r in labels)
    details.find_element(By.TAG_NAME, "summary").click()
    tables = driver.find_elements(By.CSS_SELECTOR, "#results table.leaderboard")
    assert len(tables) == 4 + 5  # standard v1 x3, standard v2, robustness x5
    semantic = driver.find_element(By.CSS_SELECTOR, '#results table[data-case="semantic"]')
    (row,) = semantic.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert row.find_element(By.CSS_SELECTOR, "td.rank").text == "1 of 4"
    rec = find(site["records"], "segformer.b0", "semantic")
    assert row.find_element(By.CSS_SELECTOR, 'td[data-metric="mIoU"] .value').text == format_value(
        metric_info("mIoU"), rec.metrics["mIoU"])
    figures = driver.find_elements(By.CSS_SELECTOR, "#plots figure.plot")
    assert sorted(f.get_attribute("data-kind") for f in figures) == [
        "confusion", "editor-iou", "robustness", "robustness"]
    for img in driver.find_elements(By.CSS_SELECTOR, "#plots figure.plot img"):
        assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) > 0
    screenshot(driver, tmp_path / "leaderboard-detector.png")

    driver.get((site["out"] / "detectors" / f"{slugify(QUOTE)}.html").as_uri())
    assert driver.find_element(By.CSS_SELECTOR, "h1.detector-name").text == QUOTE
    for img in driver.find_elements(By.CSS_SELECTOR, "#plots figure.plot img"):
        assert driver.execute_script("return arguments[0].naturalWidth", img) > 0


def test_overview_sorts_filters_and_toggles_in_chromium(site, driver, tmp_path):
    """The front page's overview: one row per detector, numbers as the records', a click on a
    column header orders the rows by it (missing last), the filter hides rows, a task toggle
    hides its columns; from file://, with no network."""
    from selenium.webdriver.common.by import By

    driver.get(site["index"].as_uri())
    overviews = driver.find_elements(By.CSS_SELECTOR, "section.overview table.overview-table")
    assert overviews and all(t.get_attribute("data-overview-version") == "2" for t in overviews)

    def names():
        return [r.get_attribute("data-detector") for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")
                if r.is_displayed()]

    def column(key_text):
        heads = table.find_elements(By.CSS_SELECTOR, "th.sortable")
        return next(h for h in heads if key_text in h.text)

    mious = {n: find(site["records"], n, "binary", version="2" if n == "segformer.b0" else "1").metrics["mIoU"]
             for n in ("segformer.b0", "fcn8s", EVIL, QUOTE)}
    aps = {n: find(site["records"], n, "image").metrics["img_AP"] for n in mious}
    # one table per suite version: standard v2 has segformer.b0 alone, v1 all four
    v1 = next(s for s in driver.find_elements(By.CSS_SELECTOR, "section.overview") if "standard v1" in s.text)
    table = v1.find_element(By.CSS_SELECTOR, "table.overview-table")
    assert names() == sorted(mious, key=lambda n: -find(site["records"], n, "binary").metrics["mIoU"])
    column("image AP").click()
    assert names() == sorted(aps, key=lambda n: -aps[n])  # best first
    column("image AP").click()
    assert names() == sorted(aps, key=lambda n: aps[n])  # and back
    first = table.find_element(By.CSS_SELECTOR, "tbody tr td.metric")
    assert first.text.split()[0] == format_value(metric_info("mIoU"), find(site["records"], names()[0],
                                                                           "binary").metrics["mIoU"])
    box = v1.find_element(By.CSS_SELECTOR, "input.overview-filter")
    box.send_keys("fcn")
    assert names() == ["fcn8s"]
    box.clear()  # clear() sends no input event: send one
    driver.execute_script("arguments[0].dispatchEvent(new Event('input'))", box)
    assert len(names()) == 4
    toggle = v1.find_element(By.CSS_SELECTOR, 'input.task-toggle[value="image"]')
    toggle.click()
    assert not any(h.is_displayed() for h in table.find_elements(By.CSS_SELECTOR, 'th[data-task="image"]'))
    assert all(h.is_displayed() for h in table.find_elements(By.CSS_SELECTOR, 'th[data-task="binary"]'))
    assert driver.execute_script("return window.__pwned") is None
    screenshot(driver, tmp_path / "leaderboard-overview.png")



def test_a_name_of_10000_characters_keeps_every_page_as_wide_as_the_window_in_chromium(driver, tmp_path):
    """Table cells do not wrap and the detector column stays put while a table scrolls sideways: an
    unbroken name of 10,000 characters made that column 78,000 px wide, so no value of any row
    could be scrolled into view, and the name's heading and link ran 140,000 px past the window;
    a metric a record names so made its column 78,000 px wide, the provenance beyond it."""
    from selenium.webdriver.common.by import By

    from diffzoo.leaderboard.versions import Selection

    long = "L" * 10_000  # a detector's name, and a metric a record of the other detector carries
    write_site(Selection("x", [record(long, "binary", "binary", binary(0.5)),
                               record("b", "binary", "binary", {**binary(0.4), f"m{long}": 0.1})]), tmp_path)
    for page in (tmp_path / "index.html", tmp_path / "detectors" / f"{slugify(long)}.html"):
        driver.get(page.as_uri())
        width = driver.execute_script("return window.innerWidth")
        assert driver.execute_script("return document.documentElement.scrollWidth") <= width, page.name
        cell = driver.find_element(By.CSS_SELECTOR, f'table.overview-table tr[data-detector="{long}"] td.metric')
        assert driver.execute_script("return arguments[0].getBoundingClientRect().right", cell) <= width
        assert long in driver.find_element(By.CSS_SELECTOR, "table.overview-table td.detector").text.replace("\n", "")
        driver.execute_script("document.querySelectorAll('details').forEach(function (d) { d.open = true; })")
        case = driver.find_element(By.CSS_SELECTOR, "table.leaderboard")  # its metric column headed m + 10,000 Ls
        assert driver.execute_script("return arguments[0].getBoundingClientRect().width", case) < 3 * width


def test_a_figure_on_a_phone_is_as_wide_as_the_page_in_chromium(site, driver):
    """On a phone (390 px) a figure took 48% of the page, two side by side on a wide window: a
    confusion matrix 170 px wide, its caption one word a line."""
    from selenium.webdriver.common.by import By

    driver.set_window_size(390, 844)
    try:
        driver.get((site["out"] / "detectors" / f"{slugify('segformer.b0')}.html").as_uri())
        page = driver.execute_script("return document.body.clientWidth")
        widths = [driver.execute_script("return arguments[0].getBoundingClientRect().width", f)
                  for f in driver.find_elements(By.CSS_SELECTOR, "figure.plot")]
        assert widths and all(w >= 0.9 * page - 32 for w in widths), (page, widths)
    finally:
        driver.set_window_size(1400, 900)


def test_a_right_to_left_name_never_reorders_the_names_around_it_in_chromium(driver, tmp_path):
    """Hebrew names in the list of detectors: the bidi algorithm ran "א, ב (x" as one right-to-left
    stretch, so the second name was drawn before the first (and its bracket mirrored)."""
    from diffzoo.leaderboard.versions import Selection

    names = ["1", "\u05d0", "\u05d1 (x", "\u05d2"]
    write_site(Selection("x", [record(n, "binary", "binary", binary(0.3 + i / 10)) for i, n in enumerate(names)]),
               tmp_path)
    driver.get((tmp_path / "index.html").as_uri())
    shown = driver.execute_script(
        "return Array.prototype.map.call(document.querySelectorAll('#version-summary p a'), function (a) {"
        " return [a.textContent, a.getBoundingClientRect().left]; });")
    assert [name for name, _ in shown] == names
    assert [left for _, left in shown] == sorted(left for _, left in shown), shown  # drawn in the list's order

# ---- comparison plots on the front page ---------------------------------------------------------------------


def comparison_figures(site) -> dict[str, list[str]]:
    """The index's comparison figures: data-kind -> their image paths (relative to out/)."""
    p = parse(site["index"])
    out, kind, inside = {}, None, False
    for tag, attrs in p.tags:
        if tag == "section":
            inside = attrs.get("id") == "comparisons"
        elif inside and tag == "figure":
            kind = attrs["data-kind"]
        elif inside and tag == "img":
            out.setdefault(kind, []).append(attrs["src"])
    return out


def test_comparison_plots_are_pngs(site):
    from PIL import Image

    figures = comparison_figures(site)
    # jpeg: segformer.b0 at three strengths and fcn8s at one; gaussian_blur: segformer.b0 alone, no comparison
    assert sorted(figures) == ["binary-vs-semantic", "editor-iou-all", "robustness-all"]
    assert figures["robustness-all"] == ["plots/comparison-robustness-binary-jpeg-DiffSeg30k-mini-co.png"]
    assert len(figures["editor-iou-all"]) == 1  # standard v1 semantic: four detectors
    assert len(figures["binary-vs-semantic"]) == 1  # standard v2's table has one detector: no scatter
    for src in (s for srcs in figures.values() for s in srcs):
        assert re.fullmatch(r"plots/[\w.-]+\.png", src), src
        with Image.open(site["out"] / src) as img:
            img.verify()
        with Image.open(site["out"] / src) as img:
            assert img.format == "PNG" and img.width > 0 and img.height > 0
    text = site["index"].read_text()
    assert text.index('id="comparisons"') > text.index('class="overview"')
    assert "<script>window" not in text.split('id="comparisons"')[1].split("</section>")[0]


def test_comparison_styles_are_stable_and_distinct(monkeypatch, tmp_path):
    from diffzoo.leaderboard.render import comparison_plots as cp

    names = ["segformer.b0", "fcn8s", EVIL, QUOTE]
    assert cp.detector_styles(names) == cp.detector_styles(reversed(names + names))
    many = [f"detector-{i:02d}" for i in range(20)]
    styles = cp.detector_styles(many)
    assert len({(s.color, s.marker) for s in styles.values()}) == 20
    assert len({s.color for s in styles.values()}) == 20
    forty = cp.detector_styles([f"d{i}" for i in range(40)])
    assert len({(s.color, s.marker) for s in forty.values()}) == 40

    # every chart draws a detector in the style it was given: record what each draw call used
    drawn: dict[str, set[str]] = {}
    for fn in ("comparison_curves_png", "grouped_bars_png", "scatter_png"):
        real = getattr(cp, fn)

        def spy(data, styles, path, *args, _real=real, _fn=fn, **kwargs):
            for name in data:
                drawn.setdefault(name.split(" \u2014 ")[0], set()).add(styles[name].color)
            drawn.setdefault(f"chart:{_fn}", set()).add(str(path))
            return _real(data, styles, path, *args, **kwargs)

        monkeypatch.setattr(cp, fn, spy)
    records = make_records()
    from diffzoo.leaderboard.layouts.overview import build_overview

    kinds = {f.kind for _, figures, _ in cp.comparison_figures(records, build_overview(records), tmp_path, set())
             for f in figures}
    assert "robustness-all" in kinds and "binary-vs-semantic" in kinds
    assert all(drawn.get(f"chart:{fn}") for fn in ("comparison_curves_png", "grouped_bars_png", "scatter_png"))
    colours = cp.detector_styles(r.body.detector.name for r in records)
    for name in names:
        assert drawn[name] == {colours[name].color}, name  # one colour across all charts
    assert EVIL in drawn and "segformer.b0" in drawn


def test_comparison_colours_follow_the_legends_natural_order(monkeypatch, tmp_path):
    """Colours were dealt in text order (mini10 before mini2) while the legend lists names in natural
    order, so the palette's first colours went to the legend's later entries."""
    from diffzoo.leaderboard.render import comparison_plots as cp

    names = ["mini10", "mini2", "mini1", "mini2 (calibrated)"]
    styles = cp.detector_styles(names)
    assert [styles[n].color for n in ["mini1", "mini2", "mini2 (calibrated)", "mini10"]] == list(cp.PALETTE[:4])
    drawn = []
    monkeypatch.setattr(cp, "grouped_bars_png", lambda series, *a, **k: drawn.append(list(series)))
    records = [record(n, "semantic", "semantic", semantic(0.5, i)[0]) for i, n in enumerate(["mini10", "mini2"])]
    cp.editor_iou_all(records, cp.detector_styles(["mini10", "mini2"]), tmp_path, set())
    assert drawn == [["mini2", "mini10"]]  # the per-editor legend in the same order
    monkeypatch.setattr(cp, "scatter_png", lambda points, *a, **k: drawn.append(list(points)))
    records = [r for i, n in enumerate(["mini10", "mini2"]) for r in (
        record(n, "binary", "binary", binary(0.6 - i / 10)), record(n, "semantic", "semantic", semantic(0.3, i)[0]))]
    from diffzoo.leaderboard.layouts.overview import build_overview

    cp.binary_vs_semantic(build_overview(records), cp.detector_styles(["mini10", "mini2"]), tmp_path, set())
    assert drawn[-1] == ["mini2", "mini10"]  # the scatter's legend too, never its ranking (mini10 first)
    cross = {"suite": "cross-dataset", "dataset": ("place", "fpp"),
             "case_fields": {"split": "test", "options": {"eval_dataset": "other"}},
             "config": {"train_dataset": {"name": DATASET, "fingerprint": FP}}}
    monkeypatch.setattr(cp, "grouped_bars_png", lambda series, *a, **k: drawn.append(list(series)))
    records = [record(n, "binary", "binary", binary(0.6 - i / 10), **kw)
               for i, n in enumerate(["mini10", "mini2"]) for kw in ({}, cross)]
    cp.benchmark_bars(build_overview(records), cp.detector_styles(["mini10", "mini2"]), tmp_path, set())
    assert drawn[-1] == ["mini2", "mini10"]  # and the benchmark bars'


def test_a_bar_with_no_value_is_marked_never_drawn_as_a_bar_of_zero():
    """A detector with no record on a benchmark and one that scored 0 there must not look alike."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from diffzoo.leaderboard.render.plots import grouped_bars, percent_groups

    groups, percents = percent_groups({"a": {"own": 0.0, "tgif": 0.5}, "b": {"own": 0.25}})
    assert groups == ["own", "tgif"]
    fig, ax = plt.subplots()
    grouped_bars(ax, groups, percents)
    marks = [(round(t.get_position()[0], 2), t.get_text()) for t in ax.texts]
    plt.close(fig)
    assert marks == [(-0.2, "0"), (1.2, "n/a")]  # a's 0 on "own" and b's missing tgif bar, each said
    assert [round(b.get_height(), 1) for b in ax.patches if np.isfinite(b.get_height())] == [0.0, 50.0, 25.0]


def test_a_confusion_row_without_ground_truth_pixels_is_marked_not_drawn_as_zeros(tmp_path, monkeypatch):
    """An editor of the label map with no pixel in the split has no fractions: its row read 0.00 in
    every column, as if its pixels had been predicted as nothing."""
    from diffzoo.leaderboard.render import plots

    texts, save = [], plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path, **kw: (texts.extend(t.get_text() for t in fig.axes[0].texts),
                                                                save(fig, path, **kw))[1])
    plots.confusion_png([[6, 2], [0, 0]], ["background", "sd2"], tmp_path / "c.png")
    assert texts == ["0.75", "0.25", "\u2014", "\u2014"]

def test_curves_of_equal_values_are_drawn_side_by_side_never_one_over_another():
    """Two detectors scoring alike at every setting drew one line exactly over the other: the chart
    showed one detector."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from diffzoo.leaderboard.render.plots import draw_curves

    points = [(1.0, 0.5), (2.0, 0.4)]
    fig, ax = plt.subplots()
    draw_curves(ax, {"a": points, "b": points, "c": points}, {"a": 0.6, "b": 0.6, "c": 0.6}, ["clean", "90", "70"])
    xs = [list(line.get_xdata()) for line in ax.lines]
    plt.close(fig)
    assert len({tuple(x) for x in xs}) == 3 and [x[1] for x in xs] == sorted(x[1] for x in xs)
    assert all(abs(x[k] - k) < 0.2 for x in xs for k in range(3))  # each point stays at its setting

def test_detectors_at_one_point_of_the_scatter_share_one_label(tmp_path, monkeypatch):
    """Detectors with equal binary and semantic mIoU printed their names over each other at one
    point, as an unreadable smudge."""
    from diffzoo.leaderboard.render import comparison_plots as cp
    from diffzoo.leaderboard.render import plots

    texts, save = [], plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path, **kw: (texts.extend(t.get_text() for t in fig.axes[0].texts),
                                                                save(fig, path, **kw))[1])
    points = {"b": (0.5, 0.5), "a": (0.5, 0.5), "c": (0.4, 0.3), "d10": (0.2, 0.2), "d2": (0.2, 0.2)}
    cp.scatter_png(points, cp.detector_styles(points), tmp_path / "s.png", xlabel="binary", ylabel="semantic", title="t")
    assert sorted(texts) == ["a, b", "c", "d2, d10"]  # in the legend's natural order

def test_the_scatters_axes_show_no_percentage_outside_0_to_100_and_span_the_robustness_plots_least(tmp_path,
                                                                                                    monkeypatch):
    """Two detectors of semantic mIoU 0 drew a y axis from -0.06% to 0.06% (matplotlib's margin
    around one value): an impossible negative IoU, and a range in hundredths of a point."""
    from diffzoo.leaderboard.render import comparison_plots as cp
    from diffzoo.leaderboard.render import plots

    axes, save = [], plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path, **kw: (axes.append(fig.axes[0]), save(fig, path, **kw))[1])
    points = {"fcn8s.tiny": (0.0, 0.0), "segformer.tiny": (0.0215, 0.0)}
    cp.scatter_png(points, cp.detector_styles(points), tmp_path / "s.png", xlabel="binary", ylabel="semantic", title="t")
    for lo, hi, ticks in ((*axes[0].get_xlim(), axes[0].get_xticks()), (*axes[0].get_ylim(), axes[0].get_yticks())):
        assert hi - lo >= plots.Y_SPAN and all(0 <= t <= 100 for t in ticks if lo <= t <= hi), (lo, hi, ticks)


def test_a_curve_breaks_at_a_setting_whose_value_is_undefined():
    """A line joined the settings on either side of one evaluated without a value (mIoU undefined
    or not carried at jpeg 70), as if the value there lay on that straight line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from diffzoo.leaderboard.render.plots import draw_curves

    fig, ax = plt.subplots()
    draw_curves(ax, {"a": [(1.0, 0.5), (2.0, None), (3.0, 0.3)]}, {"a": 0.6}, ["clean", "90", "70", "50"])
    [line] = ax.lines
    xs, ys = list(line.get_xdata()), list(line.get_ydata())
    plt.close(fig)
    assert xs == [0.0, 1.0, 2.0, 3.0] and ys[:2] == [60.0, 50.0] and np.isnan(ys[2]) and ys[3] == 30.0

def test_n_a_marks_stay_inside_the_axes_when_no_bar_has_a_value():
    """Every IoU undefined (no editor's pixels in the split): the axes spanned the ticks alone, so
    the outer groups' "n/a" marks were drawn past both edges of the plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from diffzoo.leaderboard.render.plots import grouped_bars, percent_groups

    groups, percents = percent_groups({"a": {"sd2": None, "sdxl": float("nan")}, "b": {"sd2": None}})
    fig, ax = plt.subplots()
    grouped_bars(ax, groups, percents)
    low, high = ax.get_xlim()
    marks = [t.get_position()[0] for t in ax.texts]
    plt.close(fig)
    assert len(marks) == 4 and all(low < x < high for x in marks), (low, high, marks)


def test_comparison_plots_many_detectors(tmp_path):
    """20 detectors: one chart of each kind, drawn without error, legend outside the axes."""
    from PIL import Image

    from diffzoo.leaderboard.layouts.overview import build_overview
    from diffzoo.leaderboard.render import comparison_plots as cp

    recs = []
    for i in range(20):
        name, m = f"model-{i:02d}", 0.2 + i / 40
        recs.append(record(name, "binary", "binary", binary(m)))
        recs.append(record(name, "semantic", "semantic", semantic(m - 0.1, i)[0]))
        for q in (90, 50):
            recs.append(record(name, f"jpeg-q{q}", "binary", binary(m - (100 - q) / 400), suite="robustness",
                               distortion="jpeg", params={"quality": q}))
    figures = cp.comparison_figures(recs, build_overview(recs), tmp_path, set())
    assert sum(len(f) for _, f, _ in figures) == 3
    for png in tmp_path.glob("*.png"):
        with Image.open(png) as img:
            assert img.width > img.height  # room on the right for the legend



def test_comparison_plots_of_long_names_show_each_name_apart_inside_the_figure(tmp_path, monkeypatch):
    """Two detectors whose names share a 300-character prefix: the legend ran past the figure's
    edge, cut, and matplotlib warned "Tight layout not applied"; each name is now shortened
    around an ellipsis to the end that tells it apart, its whole legend and labels inside."""
    import warnings

    from diffzoo.leaderboard.layouts.overview import build_overview
    from diffzoo.leaderboard.render import comparison_plots as cp
    from diffzoo.leaderboard.render import plots

    names = [f"{'x' * 300}-{end}" for end in ("alpha", "beta")]
    recs = [r for i, name in enumerate(names) for r in (
        record(name, "binary", "binary", binary(0.3 + i / 5)),
        record(name, "semantic", "semantic", semantic(0.2 + i / 5, i)[0]))]
    drawn, save = [], plots._save

    def kept(fig, path, **kw):
        written = save(fig, path, **kw)  # laid out as written
        fig.canvas.draw()
        legend = fig.axes[0].get_legend()
        inside = all(fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1
                     for box in [legend.get_window_extent(), *(t.get_window_extent() for t in fig.axes[0].texts)])
        drawn.append(([t.get_text() for t in legend.get_texts()], inside))
        return written

    monkeypatch.setattr(plots, "_save", kept)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figures = cp.comparison_figures(recs, build_overview(recs), tmp_path, set())
    assert [len(f) for _, f, _ in figures] == [0, 0, 1, 1]
    for texts, inside in drawn:
        assert inside and len(texts) == 2 and len(set(texts)) == 2, texts
        assert sorted(t.replace("\n", "").rsplit("-", 1)[1] for t in texts) == ["alpha", "beta"], texts
        assert all("\u2026" in t and len(t) < 80 for t in texts), texts


def test_a_figure_text_opening_with_a_right_to_left_name_reads_in_its_order(tmp_path, monkeypatch):
    """matplotlib lays a text out right to left when its first letter is Hebrew or Arabic: the title
    "מזהה ב: per-editor IoU on mini & co" was drawn "& co ... IoU per-editor :מזהה ב"."""
    from matplotlib.font_manager import FontProperties, findfont, get_font
    from matplotlib.ft2font import LoadFlags

    from diffzoo.leaderboard.render import comparison_plots as cp
    from diffzoo.leaderboard.render import plots

    font = get_font(findfont(FontProperties()))
    font.set_size(10, 72)

    def drawn(text):  # the characters in the order matplotlib places them, left to right
        return "".join(item.char for item in sorted(font._layout(text, LoadFlags.DEFAULT), key=lambda i: i.x)
                       if item.char.isprintable())

    assert drawn(plots.wrapped("אב: per-editor IoU on mini & co", 80)) == (
        "בא: per-editor IoU on mini & co")  # the name itself right to left, then the title
    names, real = [], plots.short_names
    monkeypatch.setattr(plots, "short_names", lambda n, *a, **k: (names.append(list(n)), real(n, *a, **k))[1])
    cp.grouped_bars_png({"אב x": {"e": 0.5}}, cp.detector_styles(["אב x"]), tmp_path / "b.png", "t")
    assert not [n for call in names for n in call if n.startswith("\u200e")]  # the name, never its drawn form


def test_a_wrapped_plot_title_never_splits_an_escaped_dollar():
    """A title was escaped, then wrapped: a line could end in the backslash of ``\\$``, drawn as a
    stray backslash, its ``$`` left bare on the next line to start mathtext."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from diffzoo.leaderboard.render.plots import _title

    fig, ax = plt.subplots(figsize=(6.4, 4.2))  # titles wrap at 57 characters
    _title(ax, "x" * 56 + "$5 and $6", fig)
    lines = ax.get_title().split("\n")
    plt.close(fig)
    assert lines == ["x" * 56 + "\\$", "5 and \\$6"], lines



def test_a_detectors_figures_keep_their_axes_and_labels_inside_with_names_of_10000_characters(tmp_path,
                                                                                              monkeypatch):
    """A 10,000-character detector, suite, distortion, setting or editor name made a title of 175 lines
    and labels running off the figure ("Tight layout not applied"), and editor names of 30
    characters squeezed the confusion matrix to a tenth of an inch a class: each is now shortened
    around an ellipsis (titles to three lines, axis labels to one, legends and ticks as the
    comparison plots' names), the matrix sized beside its labels."""
    import warnings

    from diffzoo.leaderboard.render import plots

    long, editors = "x" * 10_000, ["background", "<script>window.__pwned=3</script>", "flux2.tiny-klein-inpaint"]
    drawn, save = [], plots._save

    def kept(fig, path, **kw):
        written = save(fig, path, **kw)
        fig.set_dpi(120)  # the dpi _save writes at: measured as the PNG shows it
        fig.canvas.draw()
        ax = fig.axes[0]
        labels = [ax.xaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels(),
                  *(ax.get_legend().get_texts() if ax.get_legend() else [])]
        inside = all(fig.bbox.x0 - 1 <= b.x0 and b.x1 <= fig.bbox.x1 + 1 and fig.bbox.y0 - 1 <= b.y0
                     for b in (t.get_window_extent() for t in labels if t.get_text()))
        box = ax.get_window_extent()
        drawn.append((path.name, ax.get_title().count("\n") + 1, ax.xaxis.label.get_text().count("\n"), inside,
                      min(box.width, box.height) / fig.dpi))
        return written

    monkeypatch.setattr(plots, "_save", kept)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plots.confusion_png(np.eye(4) * 50 + 5, [*editors, "e" + long], tmp_path / "c.png", title=f"{long}: semantic")
        plots.confusion_png(np.eye(3) * 50 + 5, editors, tmp_path / "c3.png", title="segformer.b0: semantic")
        plots.robustness_png({f"s{long} v1": [(1, 0.5), (2, 0.4)]}, tmp_path / "r.png", ylabel="mIoU", clean=0.6,
                             title=f"{long}: mIoU under d{long} on mini", ticks=["clean", f"q{long}", "50"],
                             xlabel=f"d{long} quality")
        plots.editor_iou_png({"standard v1 / semantic": {f"e{long}": 0.5, "sd2": 0.3}}, tmp_path / "e.png",
                             title=long)
    for name, title_lines, xlabel_breaks, inside, _ in drawn:
        assert title_lines <= 3 and xlabel_breaks == 0 and inside, (name, title_lines, xlabel_breaks, inside)
    assert [side / n >= 0.5 for (*_, side), n in zip(drawn[:2], (4, 3))] == [True, True], drawn  # inches a class

def test_a_title_of_wide_characters_is_drawn_inside_its_figure(tmp_path, monkeypatch):
    """Titles and axis labels were wrapped at a count of characters an inch holds: 200 ``W`` or ``漢`` ran
    past the figure's edges, cut off (a text of ``x`` characters fitted); each is now wrapped until it fits."""
    import warnings

    from diffzoo.leaderboard.render import plots, training_plots
    from diffzoo.leaderboard.render.training_plots import curves_from_log, training_png

    drawn, save = [], plots._save

    def kept(fig, path, **kw):
        written = save(fig, path, **kw)
        fig.set_dpi(120)  # the dpi _save writes at: measured as the PNG shows it
        fig.canvas.draw()
        titles = [t for t in (fig._suptitle, *(ax.title for ax in fig.axes)) if t is not None and t.get_text()]
        labels = [t for ax in fig.axes[:1] for t in (ax.xaxis.label, ax.yaxis.label) if t.get_text()]
        drawn.append([(t.get_text()[:3], fig.bbox.x0 - 1 <= (b := t.get_window_extent()).x0 and b.x1
                       <= fig.bbox.x1 + 1 and fig.bbox.y0 - 1 <= b.y0 and b.y1 <= fig.bbox.y1 + 1)
                      for t in (*titles, *labels)])
        return written

    monkeypatch.setattr(plots, "_save", kept)
    monkeypatch.setattr(training_plots, "_save", kept)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the test's font has no 漢: each is drawn as a box of its width
        for i, wide in enumerate(("W" * 200, "\u6f22" * 200)):
            plots.confusion_png(np.eye(2) * 50 + 5, ["a", "b"], tmp_path / f"c{i}.png", title=wide)
            plots.robustness_png({"s v1": [(1, 0.5), (2, 0.4)]}, tmp_path / f"r{i}.png", ylabel=wide, clean=0.6,
                                 title=wide, ticks=["clean", "90", "50"], xlabel=wide)
            training_png(curves_from_log([{"event": "train", "step": s, "loss": 1 / s, "lr": {"all": 1e-4}}
                                          for s in (1, 2)]), tmp_path / f"t{i}.png", title=wide)
    assert [len(texts) for texts in drawn] == [3] * 6  # a title and two axis labels each
    assert all(inside for titles in drawn for _, inside in titles), drawn


def test_a_legend_of_many_long_names_stays_inside_the_figure(tmp_path, monkeypatch):
    """45 names of two lines each: columns of 20 entries ran past the figure's bottom edge."""
    from diffzoo.leaderboard.render import comparison_plots as cp
    from diffzoo.leaderboard.render import plots

    names = [f"detector-{'x' * 300}-{i:02d}" for i in range(45)]
    boxes, save = [], plots._save

    def kept(fig, path, **kw):
        written = save(fig, path, **kw)
        fig.canvas.draw()
        boxes.append((fig.bbox, fig.axes[0].get_legend().get_window_extent()))
        return written

    monkeypatch.setattr(plots, "_save", kept)
    cp.comparison_curves_png({n: [(1.0, 0.5), (2.0, 0.4)] for n in names}, cp.detector_styles(names),
                             tmp_path / "c.png", xlabel="q", ylabel="m", title="t", ticks=["clean", "90", "50"],
                             clean=dict.fromkeys(names, 0.6))
    [(fig, legend)] = boxes
    assert fig.x0 <= legend.x0 and legend.x1 <= fig.x1 and fig.y0 <= legend.y0 and legend.y1 <= fig.y1, (fig, legend)


def test_a_curve_with_no_defined_value_draws_no_figure(tmp_path):
    """Strengths whose primary metric is undefined (NaN) or absent in every record drew an empty
    plot with an empty legend, on the detector's page and among the comparisons."""
    from diffzoo.leaderboard.versions import Selection

    recs = [record("a", f"jpeg-q{q}", "binary", {**binary(0.5), "mIoU": float("nan")} if q == 90
                   else {k: v for k, v in binary(0.5).items() if k != "mIoU"}, suite="robustness",
                   distortion="jpeg", params={"quality": q}) for q in (90, 70)]
    write_site(Selection("x", recs), tmp_path)
    assert not (tmp_path / "plots").exists()
    assert [t for t, a in parse(tmp_path / "detectors" / "a.html").tags if t == "figure"] == []

def test_a_calibrated_or_released_row_is_a_curve_of_its_own_never_joined_to_the_plain_rows(tmp_path, monkeypatch):
    """One detector's fixed-threshold, calibrated and released-weights records of one distortion were
    one line, "robustness v1" on its page and the plain name among the comparisons: the newest
    record's value at each strength after the clean point of whichever came first (a fixed 60
    falling to a calibrated 10)."""
    from diffzoo.leaderboard.render import comparison_plots as cp
    from diffzoo.leaderboard.robustness import distortion_curves

    release = {"name": "r", "source": "https://example.org", "trained_on": "CAT-Net",
               "files": [{"name": "w.pth", "sha256": "cd" * 32}]}
    rows = {"det": ({}, "2026-03-01T00:00:00+00:00", (0.6, 0.5, 0.4)),
            "det (calibrated)": ({"policy": {"mode": "calibrated", "calibrated_on": "mini/calib"}},
                                 "2026-04-01T00:00:00+00:00", (0.2, 0.1, 0.05)),
            "det [released:r]": ({"release": release}, "2026-05-01T00:00:00+00:00", (0.9, 0.85, 0.8))}
    recs = [record("det", f"jpeg-q{q}" if q else "clean", "binary", binary(m), suite="robustness", date=date,
                   distortion="jpeg" if q else "none", params={"quality": q} if q else None, **kw)
            for kw, date, values in rows.values() for q, m in zip((None, 90, 70), values)]
    assert sorted(r.body.row_name for r in recs[::3]) == sorted(rows)
    [curve] = distortion_curves(recs)
    lines = {"det": "robustness v1", "det (calibrated)": "det (calibrated): robustness v1",
             "det [released:r]": "det [released:r]: robustness v1"}
    assert curve.series == {lines[row]: [(1.0, v[2][1]), (2.0, v[2][2])] for row, v in rows.items()}
    assert curve.clean == {lines[row]: v[2][0] for row, v in rows.items()}
    drawn, real = {}, cp.comparison_curves_png
    monkeypatch.setattr(cp, "comparison_curves_png", lambda series, styles, path, **kw: (
        drawn.update({name: (points, kw["clean"][name], styles[name]) for name, points in series.items()}),
        real(series, styles, path, **kw))[1])
    cp.comparison_figures(recs, [], tmp_path, set())
    assert {name: (points, clean) for name, (points, clean, _) in drawn.items()} == {
        row: ([(1.0, v[2][1]), (2.0, v[2][2])], v[2][0]) for row, v in rows.items()}
    assert len({(s.color, s.marker) for _, _, s in drawn.values()}) == 3  # three rows, three looks


def test_comparison_plots_in_chromium(site, driver):
    from selenium.webdriver.common.by import By

    driver.get(site["index"].as_uri())
    figures = driver.find_elements(By.CSS_SELECTOR, "#comparisons figure.plot")
    assert sorted({f.get_attribute("data-kind") for f in figures}) == [
        "binary-vs-semantic", "editor-iou-all", "robustness-all"]
    for img in driver.find_elements(By.CSS_SELECTOR, "#comparisons figure.plot img"):
        assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) > 0
    assert driver.execute_script("return window.__pwned") is None


def test_the_overview_header_stays_in_view_while_its_rows_scroll_in_chromium(driver, tmp_path):
    """40 detectors: the overview was 2,100 px tall and its header row scrolled out of sight with
    its first rows, so a number far down read under no column name."""
    from selenium.webdriver.common.by import By

    from diffzoo.leaderboard.versions import Selection

    write_site(Selection("x", [r for i in range(40) for r in (record(f"d{i}", "binary", "binary", binary(i / 50)),
                                                              record(f"d{i}", "image", "image", image(0.7)))]),
               tmp_path)
    driver.set_window_size(1400, 900)
    driver.get((tmp_path / "index.html").as_uri())
    table = driver.find_element(By.CSS_SELECTOR, "table.overview-table")
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) == 40 and table.size["height"] > 900
    for row in rows[::13] + rows[-1:]:
        driver.execute_script("arguments[0].scrollIntoView({block: 'end'})", row)
        heads, top = driver.execute_script(
            "return [Array.prototype.map.call(arguments[0].querySelectorAll('thead th'), function (h) {"
            " var r = h.getBoundingClientRect(); return [r.top, r.bottom]; }),"
            " arguments[1].getBoundingClientRect().top];", table, row)
        assert all(0 <= t < b <= top for t, b in heads), (row.get_attribute("data-detector"), heads, top)
    assert all(c.value_of_css_property("position") == "sticky"  # the detector column stays frozen
               for c in table.find_elements(By.CSS_SELECTOR, "td.detector, th.detector"))
    screenshot(driver, tmp_path / "overview-40.png")




def _numbered(tmp_path, capsys, formats="md,csv,html"):
    """A store whose datasets, evaluation places and robustness curves are numbered 1, 2 and 10,
    added in the order 10, 2, 1; published (working copy) in ``formats``: the output folder."""
    store = RecordStore(tmp_path / "my-store")
    for n in (10, 2, 1):
        where = (f"dataset-{n}", f"fp{n:04d}")
        for det in ("a", "b"):
            store.add(record(det, "binary", "binary", binary(0.3 + n / 100), dataset=where))
        for q, det in itertools.product((90, 50), ("a", "b")):
            store.add(record(det, f"jpeg-q{q}", "binary", binary(q / 200), suite="robustness", distortion="jpeg",
                             params={"quality": q}, dataset=where))
        store.add(record("a", "binary", "binary", binary(0.2), suite="cross-dataset", dataset=(f"place-{n}", f"fpp{n}"),
                         case_fields={"split": "test", "options": {"eval_dataset": "other"}},
                         config={"train_dataset": {"name": "dataset-1", "fingerprint": "fp0001"}}))
    out = tmp_path / "out"
    code, text, _ = cli(capsys, "leaderboard", "publish", "--store", store.root, "--format", formats, "--out", out)
    assert code == 0, text
    return out


def test_numbered_dataset_names_are_in_natural_order_in_every_output(tmp_path, capsys):
    """Overview tables, per-case tables, benchmark columns and robustness curves of datasets 1, 2
    and 10 were ordered as text: dataset-1, dataset-10, dataset-2."""
    out = _numbered(tmp_path, capsys)
    order = ["dataset-1", "dataset-2", "dataset-10"]
    index = (out / "index.html").read_text()

    def found(text, pattern):
        return list(dict.fromkeys(re.findall(pattern, text)))

    assert found(index, r"<h2><bdi>Overview: (dataset-\d+)") == order
    assert found((out / "overview.md").read_text(), r"## (dataset-\d+)") == order
    with open(out / "overview.csv", newline="") as f:
        assert list(dict.fromkeys(line["group"].split()[0] for line in csv.DictReader(f))) == order
    assert found((out / "leaderboard.md").read_text(), r"standard v1 / binary on (dataset-\d+)") == order
    assert found(index, r"<h3><bdi>standard v1 / binary on (dataset-\d+)") == order
    assert found(index, r"figcaption>mIoU under jpeg on (dataset-\d+)") == order
    assert found((out / "overview.md").read_text(), r"(place-\d+)/test: mIoU") == ["place-1", "place-2", "place-10"]
    for text in ((out / "overview.md").read_text(), re.sub(r"<[^>]+>", "", index)):  # the version's datasets
        assert found(text, r"(dataset-\d+) \((?:fingerprint )?fp\d+\)") == order




def test_a_published_working_copy_names_its_store_by_its_folder_name_only(tmp_path, capsys):
    """The page heading of a site of no version read "working copy of /home/.../store": every output
    published the publisher's local path."""
    out = _numbered(tmp_path, capsys, "md,csv,latex,json,html")
    [heading] = re.findall(r"<h1>(.*?)</h1>", (out / "index.html").read_text())
    assert heading == 'diffzoo leaderboard <span class="version">working copy of my-store</span>'
    freeze(RecordStore(tmp_path / "my-store"), "v1")
    code, text, _ = cli(capsys, "leaderboard", "publish", "v1", "--store", tmp_path / "my-store", "--format",
                        "md,csv,latex,json,html", "--out", tmp_path / "frozen")
    assert code == 0, text
    leaks = [p.name for site in (out, tmp_path / "frozen") for p in site.rglob("*") if p.is_file()
             and any(f"{root}/" in p.read_text(errors="replace") for root in (tmp_path, Path.home()))]
    assert leaks == [], leaks



CALIBRATED = {"policy": {"mode": "calibrated", "calibrated_on": "mini/calib"}}


def _robustness_figure(tmp_path, monkeypatch):
    """The comparison robustness figure of d10, d2 (fixed and calibrated) and d1, stored in that
    order: (its legend's names, its caption)."""
    from diffzoo.leaderboard.render import comparison_plots as cp

    recs = [record(det, f"jpeg-q{q}", "binary", binary(q / 200), suite="robustness", distortion="jpeg",
                   params={"quality": q}, **(CALIBRATED if cal else {}))
            for det, cal in (("d10", False), ("d2", True), ("d1", False), ("d2", False)) for q in (90, 50)]
    legends, real = [], cp.comparison_curves_png
    monkeypatch.setattr(cp, "comparison_curves_png", lambda series, *a, **kw: (legends.append(list(series)),
                                                                               real(series, *a, **kw))[1])
    [(_, [fig], _)] = [c for c in cp.comparison_figures(recs, [], tmp_path, set()) if c[0] == "Robustness"]
    [legend] = legends
    return legend, fig.caption


def test_the_comparison_robustness_legend_is_in_name_order(tmp_path, monkeypatch):
    """40 detectors' legend followed the store's record order: in neither name nor rank order."""
    assert _robustness_figure(tmp_path, monkeypatch)[0] == ["d1", "d2", "d2 (calibrated)", "d10"]


def test_the_comparison_robustness_caption_counts_detectors_not_their_rows(tmp_path, monkeypatch):
    """A detector's calibrated line counted as a second detector: 3 detectors read "4 detector(s)"."""
    assert ": 3 detector(s), 4 lines; quality" in _robustness_figure(tmp_path, monkeypatch)[1]


def test_a_detectors_calibrated_bars_are_drawn_apart_from_its_fixed_ones(tmp_path, monkeypatch):
    """The benchmark bars took each row's style from its bare detector: ``det`` and ``det
    (calibrated)`` were drawn in one colour and hatch, two bars no legend could tell apart."""
    from diffzoo.leaderboard.layouts.overview import build_overview
    from diffzoo.leaderboard.render import comparison_plots as cp

    cross = {"suite": "cross-dataset", "dataset": ("place", "fpp"),
             "case_fields": {"split": "test", "options": {"eval_dataset": "other"}},
             "config": {"train_dataset": {"name": DATASET, "fingerprint": FP}}}
    recs = [r for kw in ({}, CALIBRATED) for r in (record("det", "binary", "binary", binary(0.5), **kw),
                                                   record("det", "binary", "binary", binary(0.4), **kw, **cross))]
    drawn, real = {}, cp.grouped_bars_png
    monkeypatch.setattr(cp, "grouped_bars_png", lambda series, styles, *a, **kw: (
        drawn.update({name: styles[name] for name in series}), real(series, styles, *a, **kw))[1])
    cp.benchmark_bars(build_overview(recs), cp.detector_styles(["det", "det (calibrated)"]), tmp_path, set())
    assert sorted(drawn) == ["det", "det (calibrated)"] and drawn["det"] != drawn["det (calibrated)"], drawn
