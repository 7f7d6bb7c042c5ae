"""One number, one text: for every cell, the run summary, the paper report, the overview and the
HTML site print the same number, because all four render the one table model
(leaderboard/table.py) from the one record index (leaderboard/index.py).  The records are made
from the built-in suites' own case definitions, so every layout reads them as it reads a run's."""

from __future__ import annotations

import random
import re
from html.parser import HTMLParser
from statistics import fmean

import pytest

from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.suites import ALL_SUITES
from diffzoo.leaderboard.layouts.overview import OVERVIEW_NOTE, PAPER_SETTINGS, build_overview
from diffzoo.leaderboard.layouts.paper import build_report, build_summary
from diffzoo.leaderboard.paper.report import paper_markdown
from diffzoo.leaderboard.render.escape import md_cell
from diffzoo.leaderboard.render.markdown import overview_markdown, summary_markdown
from diffzoo.leaderboard.render.site import write_site
from diffzoo.leaderboard.table import Table, format_value, value_text
from diffzoo.leaderboard.versions import Selection

from helpers.records import make_record

LABELS = {"label_map": {"names": ["background", "sd2", "sdxl"], "sha256": "3f" * 32, "source": "labels.json",
                        "verified": True}, "split": {"id": "diffzoo-hash-v1-seed0-val20", "source": "diffzoo"}}
SLICE_VALUES = {"base": ("real", "ai"), "turns": ("1", "2"), "multiturn": ("single", "multi"),
                "editor": ("sd2", "sdxl"), "edit_type": ("object_addition",)}
DETECTORS = {"segformer.b2": None, "deeplabv3plus.r50": {"standard", "distortions", "unseen-generators"},
             "cnnspot.r50": {"classification", "standard"}}
MARKS = "⁰¹²³⁴⁵⁶⁷⁸⁹"


def board() -> list[ResultRecord]:
    """Every built-in case for segformer.b2, some for the others, two cross-dataset places; metrics
    (with CIs) drawn at random, so that no two cells agree by chance."""
    rng = random.Random(7)
    recs = []
    for det, suites in DETECTORS.items():
        classifier = det.startswith("cnnspot")
        for suite in ALL_SUITES:
            if suite.name == "opensdi" or (suites is not None and suite.name not in suites):
                continue
            for case in suite.cases:
                if classifier and case.task != "image":
                    continue
                metrics = {m: round(rng.uniform(0.05, 0.95), 4) for m in case.metrics}
                if case.task == "semantic":
                    metrics |= {"IoU.sd2": round(rng.uniform(0.1, 0.9), 4), "IoU.sdxl": round(rng.uniform(0.1, 0.9), 4)}
                if case.slice_by:
                    metrics |= {f"{m}@{case.slice_by}={v}": round(rng.uniform(0.05, 0.95), 4)
                                for m in list(metrics) for v in SLICE_VALUES[case.slice_by]}
                if "format_shortcut" in metrics:
                    metrics |= {"format_shortcut": 0.0, "delta_img_Acc": -0.02}
                ci = {m: [v - 0.021, v + 0.013] for m, v in metrics.items() if m in ("mIoU", "img_AP", "bF1")}
                places = [("casia", "test"), ("cocoglide", "test")] if suite.name == "cross-dataset" else [("", "")]
                for place, split in places:
                    extra = {"config": {"train_dataset": {"name": "mini", "fingerprint": "fp0001", **LABELS}}} \
                        if place else {}
                    r = make_record(
                        det, suite=suite.name, suite_version=suite.version, case=case.name, task=case.task,
                        metrics=metrics, ci95=ci, dataset=place or "mini",
                        fingerprint=f"fp-{place}" if place else "fp0001",
                        case_fields={**case.to_dict(), **({"split": split} if place else {})},
                        dataset_fields={} if place else LABELS, **extra)
                    data = {k: v for k, v in r.data.items() if k not in ("schema_version", "record_id")}
                    data["detector"]["card"] = {"tasks": ["classification"] if classifier else ["binary", "semantic"]}
                    recs.append(ResultRecord.create(**data))
    return recs


# -- reading what the outputs print ---------------------------------------------------------------
def split_cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def md_tables(md: str, level: str) -> list[tuple[str, list[dict[str, str]]]]:
    """The pipe tables of ``md`` in order, each under the last heading of ``level`` (``##``/``###``)."""
    out: list[tuple[str, list[dict[str, str]]]] = []
    title, head = "", None
    for line in md.splitlines():
        if line.startswith(level + " "):
            title, head = line[len(level) + 1:], None
        elif line.startswith("|"):
            cells = split_cells(line)
            if head is None:
                head = cells
                out.append((title, []))
            elif not set(line) <= set("|:- "):
                out[-1][1].append(dict(zip(head, cells)))
        else:
            head = None
    return out


def number(text: str) -> str:
    """The value a cell shows (ours, where it shows ours | paper | Δ), without CI or marks."""
    return text.split(" \\| ")[0].split(" ± ")[0].split(" (")[0].split(" [")[0].rstrip(MARKS)


class Site(HTMLParser):
    """The overview tables of index.html: per table, row -> column key -> (data-value, shown value)."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict[str, dict[str, list[str]]]] = []
        self.row = self.col = None
        self.value = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("class") == "overview-table":
            self.tables.append({})
        elif tag == "tr" and "data-detector" in a and self.tables and "data-rank" not in a:
            self.row = self.tables[-1].setdefault(a["data-detector"], {})
        elif tag == "td" and self.row is not None and "data-metric" in a:
            self.col = self.row.setdefault(a["data-metric"], [a["data-value"], ""])
        elif tag == "span" and a.get("class") == "value" and self.col is not None:
            self.value = True

    def handle_endtag(self, tag):
        if tag == "table":
            self.row = None
        elif tag == "td":
            self.col = None
        elif tag == "span":
            self.value = False

    def handle_data(self, data):
        if self.value and self.col is not None:
            self.col[1] += data


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    recs = board()
    summary, report, overview = build_summary(recs), build_report(recs), build_overview(recs)
    out = tmp_path_factory.mktemp("site")
    write_site(Selection("t", recs), out)
    site = Site()
    site.feed((out / "index.html").read_text(encoding="utf-8"))
    return {"summary": summary, "report": report, "overview": overview, "site": site.tables,
            "summary.md": summary_markdown(summary, title="t"), "paper.md": paper_markdown(Selection("t", recs)),
            "overview.md": overview_markdown([], overview, OVERVIEW_NOTE)}


def md_rows(t: Table, rows: list[dict[str, str]]) -> dict[tuple[str, str], dict[str, str]]:
    """A printed table's rows by (row group, row label) as the model names them (escaped, unmarked)."""
    return {(r.get(t.group_header, "").rstrip(MARKS), r[t.row_header].rstrip(MARKS)): r for r in rows}


def ident(row) -> tuple[str, str, str]:
    """A row's detector, its group's setting part (a slice key) and its label: the paper's view
    names the detector in a slice table's group column where the summary leaves it out."""
    return row.detector, row.group.rpartition(": ")[2], row.label


def test_the_summary_and_the_paper_report_print_every_value_of_ours_alike(outputs):
    summary, report = outputs["summary"], outputs["report"]
    printed_summary = [rows for _, rows in md_tables(outputs["summary.md"], "###")]
    layout = outputs["paper.md"].split("## Other benchmarks' published numbers")[0]
    printed_paper = [rows for _, rows in md_tables(layout, "###")]
    tables = [(s, p) for a, b in zip(summary.sections, report, strict=True)
              for s, p in zip(a.shown, b.shown, strict=True)]
    assert len(tables) == len(printed_summary) == len(printed_paper) == 11
    compared = 0
    for (s, p), s_md, p_md in zip(tables, printed_summary, printed_paper):
        assert (s.id, [c.key for c in s.columns]) == (p.id, [c.key for c in p.columns])
        theirs = {ident(r): r for r in p.rows}
        s_printed, p_printed = md_rows(s, s_md), md_rows(p, p_md)
        for row in s.rows:
            other = theirs[ident(row)]
            key, other_key = (md_cell(row.group), md_cell(row.label)), (md_cell(other.group), md_cell(other.label))
            for col in s.columns:
                mine = row.cells[col.key]
                assert mine.value == other.cells[col.key].value and mine.ci == other.cells[col.key].ci, (s.id, key)
                if mine.value is not None:
                    text = value_text(col, mine)  # in %, or yes/no for a flag
                    assert number(s_printed[key][col.header]) == number(p_printed[other_key][col.header]) == text, (
                        s.id, key, col.key)
                    compared += 1
    assert compared > 450  # every value of every table of the layout


STANDARD = {"standard.binary.mIoU": ("2a", "mIoU"), "standard.binary.bF1": ("2a", "bF1"),
            "standard.semantic.mIoU": ("2b", "mIoU"), "standard.image.img_Acc": ("2c", "img_Acc"),
            "standard.image.img_AP": ("2c", "img_AP")}


def test_the_overview_prints_the_summarys_numbers_and_the_site_the_overviews(outputs):
    [section], [overview] = outputs["summary"].sections, outputs["overview"]
    assert overview.group.key == section.group.key
    tables = {t.id: t for t in section.tables}
    cell = {(t.id, r.group, r.label, k): c for t in section.tables for r in t.rows for k, c in r.cells.items()}
    printed = {(t.id, (r.group, r.label)): row for t, (_, rows) in zip(section.shown, md_tables(outputs["summary.md"],
                                                                                            "###"))
               for (r, row) in [(r, md_rows(t, rows)[(md_cell(r.group), md_cell(r.label))]) for r in t.rows]}
    [(_, overview_md)] = md_tables(outputs["overview.md"], "##")
    [site] = outputs["site"]
    compared = 0
    for row in overview.rows:
        shown = next(r for r in overview_md if r["detector"] == md_cell(row.label))
        for col in overview.columns:
            value = row.cells[col.key].value
            place = col.key.startswith("cross-dataset.") and col.group != "cross-dataset"  # not the mean
            if col.key in STANDARD or place:
                # a benchmark column cross-dataset.TASK.METRIC.PLACE is the cross-dataset table's PLACE:METRIC
                metric = col.key[len(f"cross-dataset.{col.task}."):-len(col.group) - 1]
                tid, key = STANDARD.get(col.key) or ("X", f"{col.group}:{metric}")
                theirs = cell.get((tid, "", row.label, key))
                assert (value is None) == (theirs is None or theirs.value is None), (row.label, col.key)
                if value is not None:
                    assert value == theirs.value and row.cells[col.key].ci == theirs.ci
                    assert number(printed[(tid, ("", row.label))][tables[tid].columns[[
                        c.key for c in tables[tid].columns].index(key)].header]) == format_value(col.info, value)
            elif col.key == "robustness.binary.mIoU.mean" and value is not None:
                settings = [cell[("3", row.label, label, "binary:mIoU")].value for label in (
                    next(r.label for r in tables["3"].rows if r.label.startswith(s)) for s in PAPER_SETTINGS)]
                assert value == pytest.approx(fmean(settings))
            elif col.key == "unseen.binary.mIoU.mean" and value is not None:
                held = [c.value for (t, g, _, k), c in cell.items() if (t, g, k) == ("4", row.label, "held-out:mIoU")]
                assert len(held) == 3 and value == pytest.approx(fmean(held))
            if value is None:
                continue
            text = format_value(col.info, value)
            assert number(shown[f"{col.group}: {col.header}"]) == text, (row.label, col.key)
            data_value, site_text = site[row.label][col.key]
            assert float(data_value) == value and site_text == text, (row.label, col.key)
            compared += 1
    # segformer.b2: 5 standard, mean and worst, held-out, and per benchmark (two places) mIoU, F1, image Acc and
    # its two generators' F1, then the mean; deeplabv3plus.r50: the same without cross-dataset records;
    # cnnspot.r50: the image columns
    assert compared == 8 + 2 * 5 + 1 + 8 + 2
