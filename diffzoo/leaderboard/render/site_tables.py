"""Leaderboard tables as HTML for the static site (:mod:`.site`): the case
line, the header with direction arrows, metric cells with their CIs, rows
with provenance, and distinct anchors.  Every string from a record is
escaped with :func:`~.escape.html`; links are built from slugs only.
"""

from __future__ import annotations

from urllib.parse import quote

from diffzoo.harness.metrics.catalog import MetricInfo
from diffzoo.leaderboard.render.escape import html as e
from diffzoo.leaderboard.tables import Row, Table, conditions_line, format_ci, format_value


def unique_name(name: str, used: set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``... if taken (compared case-insensitively)."""
    out, i = name, 2
    while out.lower() in used:
        out, i = f"{name}-{i}", i + 1
    used.add(out.lower())
    return out


def short(text: str | None, n: int = 12) -> str:
    if not text:
        return '<span class="unknown">\u2014</span>'
    dirty = "-dirty" if str(text).endswith("-dirty") else ""
    return f'<code title="{e(text)}">{e(str(text)[:n])}{dirty}</code>'


def _date(text: str | None) -> str:
    if not text:
        return '<span class="unknown">\u2014</span>'
    return f'<span title="{e(text)}">{e(str(text)[:16].replace("T", " "))}</span>'


def case_info(table: Table) -> str:
    case, key = table.case, table.key
    params = ", ".join(f"{k}={v}" for k, v in sorted((case.get("distortion_params") or {}).items()))
    train = case.get("train") or {}
    excluded = ", ".join(map(str, train.get("exclude_editors") or []))
    parts = [f"task <b>{e(key.task)}</b>", f"split {e(case.get('split'))}",
             f"distortion {e(case.get('distortion', 'none'))}" + (f" ({e(params)})" if params else ""),
             f"trained on {e(train.get('split', '?'))}" + (f" without {e(excluded)}" if excluded else ""),
             f"dataset fingerprint {short(key.fingerprint)}", f"suite definition {short(key.definition_hash)}",
             f"metrics v{e(key.metrics_version)}",
             *([e(conditions_line(table.shared))] if conditions_line(table.shared) else []),
             *([f"<b>mixed: {e(', '.join(table.mixed))}</b> (see the columns)"] if table.mixed else []),
             f"{len(table.records)} record(s)"]
    return '<p class="case-info">' + "; ".join(parts) + "</p>"


def _header(table: Table) -> str:
    cells = ['<th class="rank">#</th>', '<th class="detector">detector</th>']
    for info in table.columns:
        cls = "metric primary" if info.name == table.primary else "metric"
        tip = {True: "higher is better", False: "lower is better", None: "count"}[info.higher_is_better]
        if info.name == table.primary:
            tip += "; rows are ranked by this column"
        arrow = f' <span class="arrow">{info.arrow}</span>' if info.arrow else ""
        cells.append(f'<th class="{cls}" data-metric="{e(info.name)}" title="{e(tip)}">{e(info.label)}{arrow}</th>')
    cells += [f'<th class="condition">{e(name)}</th>' for name in table.mixed]
    cells += ['<th class="prov checkpoint">checkpoint sha256</th>', '<th class="prov git">code (git)</th>',
              '<th class="prov date">date (UTC)</th>', '<th class="prov record">record</th>']
    return "<thead><tr>" + "".join(cells) + "</tr></thead>"


def _metric_cell(table: Table, info: MetricInfo, row: Row) -> str:
    cell = row.cells.get(info.name)
    value = cell.value if cell else None
    text = format_value(info, value)
    ci = format_ci(info, cell) if cell else ""
    attrs = f'class="metric{" best" if table.is_best(row, info.name) else ""}" data-metric="{e(info.name)}"'
    attrs += f' data-value="{e("" if value is None else repr(value))}"'
    if cell and cell.ci is not None:
        lo, hi = cell.ci
        attrs += f' title="{e(f"95% CI [{format_value(info, lo, 2)}, {format_value(info, hi, 2)}]")}"'
    html = f'<span class="value">{e(text)}</span>'
    if ci:
        html += f' <span class="ci">\u00b1 {e(ci)}</span>'
    return f"<td {attrs}>{html}</td>"


def _row(table: Table, row: Row, slugs: dict[str, str], prefix: str, rank_text: str) -> str:
    cells = [f'<td class="rank">{e(rank_text)}</td>']
    if row.baseline:
        cells.append(f'<td class="detector">{e(row.detector)}</td>')
    else:
        href = f"{prefix}detectors/{quote(slugs[row.page])}.html"
        cells.append(f'<td class="detector"><a href="{e(href)}">{e(row.detector)}</a></td>')
    cells += [_metric_cell(table, info, row) for info in table.columns]
    cells += [f'<td class="condition">{e(row.conditions.get(name, "-"))}</td>' for name in table.mixed]
    p = row.provenance
    if row.baseline:
        cells += ['<td class="prov" colspan="4">trivial predictor on the same images</td>']
    else:
        detail = "; ".join(f"{k}: {p.get(k)}" for k in ("plugin", "pretrained", "seed", "checkpoint_source",
                                                          "diffzoo", "device") if p.get(k) is not None)
        cells += [f'<td class="prov checkpoint">{short(p.get("checkpoint_sha256"))}</td>',
                  f'<td class="prov git">{short(p.get("git"), 10)}</td>',
                  f'<td class="prov date">{_date(p.get("date"))}</td>',
                  f'<td class="prov record"><code title="{e(detail)}">{e((row.record_id or "")[:8])}</code></td>']
    cls = "baseline" if row.baseline else "entry"
    attrs = f'class="{cls}" data-detector="{e(row.detector)}"'
    if not row.baseline:
        attrs += f' data-rank="{e(row.rank)}" data-record-id="{e(row.record_id)}"'
    return f"<tr {attrs}>" + "".join(cells) + "</tr>"


def table_html(table: Table, anchor: str, slugs: dict[str, str], prefix: str = "", only: str | None = None) -> str:
    """One leaderboard table; ``only`` keeps one detector's rows (its page)."""
    ranked = sum(1 for r in table.rows if not r.baseline)
    rows = []
    for row in table.rows:
        if only is not None and (row.baseline or row.page != only):
            continue
        rank = "\u2013" if row.baseline else (str(row.rank) if only is None else f"{row.rank} of {ranked}")
        rows.append(_row(table, row, slugs, prefix, rank))
    k = table.key
    attrs = " ".join(f'data-{name}="{e(value)}"' for name, value in (
        ("suite", k.suite), ("suite-version", k.suite_version), ("case", k.case), ("task", k.task),
        ("dataset", k.dataset), ("fingerprint", k.fingerprint), ("metrics-version", k.metrics_version),
        ("primary", table.primary or "")))
    return (f'<div class="scroll"><table class="leaderboard" id="{e(anchor)}" {attrs}>{_header(table)}'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def table_anchors(tables: list[Table]) -> list[str]:
    """Distinct HTML ids: a TableKey's slug leaves out the definition hash
    and the metric version, so two tables may share it."""
    used: set[str] = set()
    return [unique_name(f"t-{t.key.slug}", used) for t in tables]


def summary_table_html(table) -> str:
    """A summary table (leaderboard/summary: e.g. the cross-dataset overview) as HTML: every
    string escaped, cells formatted by their columns (``—`` where no record has the value)."""
    head = "".join(f"<th>{e(h)}</th>" for h in [table.row_header, *(c.header for c in table.columns)])
    rows = "".join("<tr>" + f'<td class="detector">{e(row.label)}</td>'
                   + "".join(f'<td class="num">{e(c.text(row.cells.get(c.key)))}</td>' for c in table.columns)
                   + "</tr>" for row in table.rows)
    notes = "".join(f'<p class="legend">{e(n)}</p>' for n in table.notes)
    return f'<table class="overview"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{notes}'
