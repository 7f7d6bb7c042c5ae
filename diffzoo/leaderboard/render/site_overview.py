"""The overview table on the site: sortable, filterable, with a task toggle.

:func:`overview_section` draws one :class:`~diffzoo.leaderboard.overview.model.OverviewTable`
(the front page shows every group's; a detector page its own rows).  Every
string from a record is escaped (:func:`~.escape.html`) and the only script
is :data:`OVERVIEW_JS`, a constant: it reads the cells' ``data-value``
numbers and the rows' ``data-detector`` text, never evaluates them, and
needs no network (the pages work from ``file://``).
"""

from __future__ import annotations

from urllib.parse import quote

from diffzoo.leaderboard.overview.model import OverviewCell, OverviewColumn, OverviewTable
from diffzoo.leaderboard.render.escape import html as e
from diffzoo.leaderboard.tables import format_ci, format_value

TASKS = ("binary", "semantic", "image")

OVERVIEW_JS = """
(function () {
  function num(row, i) {
    var v = row.cells[i].getAttribute('data-value');
    return v === null || v === '' ? null : parseFloat(v);
  }
  document.querySelectorAll('section.overview').forEach(function (sec) {
    var table = sec.querySelector('table.overview-table');
    if (!table) { return; }
    var body = table.tBodies[0];
    var heads = table.querySelectorAll('th.sortable');
    heads.forEach(function (th) {
      th.addEventListener('click', function () {
        var i = parseInt(th.getAttribute('data-col'), 10) + 2;
        var best = th.getAttribute('data-higher') !== '0';
        var down = th.getAttribute('aria-sort') === (best ? 'descending' : 'ascending') ? !best : best;
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = num(a, i), y = num(b, i);
          if (x === null || y === null) { return (x === null) - (y === null); }
          return down ? y - x : x - y;
        });
        rows.forEach(function (r) { body.appendChild(r); });
        heads.forEach(function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', down ? 'descending' : 'ascending');
      });
    });
    var filter = sec.querySelector('input.overview-filter');
    if (filter) {
      filter.addEventListener('input', function () {
        var q = filter.value.toLowerCase();
        Array.prototype.forEach.call(body.rows, function (r) {
          r.style.display = r.getAttribute('data-detector').toLowerCase().indexOf(q) >= 0 ? '' : 'none';
        });
      });
    }
    sec.querySelectorAll('input.task-toggle').forEach(function (box) {
      box.addEventListener('change', function () {
        table.querySelectorAll('[data-task="' + box.value + '"]').forEach(function (c) {
          c.style.display = box.checked ? '' : 'none';
        });
      });
    });
  });
})();
"""
"""The page's one script (constant; see the module doc)."""

OVERVIEW_CSS = """
section.overview .controls { margin: .3em 0; color: #555; }
section.overview .controls label { margin-right: 1em; }
th.sortable { cursor: pointer; }
th.sortable[aria-sort=descending]::after { content: " \\25BE"; }
th.sortable[aria-sort=ascending]::after { content: " \\25B4"; }
td .note-ref { color: #a33; font-size: 80%; }
td .detail { color: #777; font-size: 85%; }
ol.notes { color: #555; font-size: 92%; }
"""


def _cell(col: OverviewColumn, cell: OverviewCell, table: OverviewTable) -> str:
    attrs = f'class="metric" data-task="{e(col.task)}"'
    if not cell.applicable:
        return f'<td {attrs} data-value="" title="not applicable">n/a</td>'
    if cell.missing:
        refs = "".join(f'<a class="note-ref" href="#{e(_note_anchor(table, n))}">[{e(n)}]</a>' for n in cell.notes)
        return f'<td {attrs} data-value="">\u2014 {refs}</td>'
    text = format_value(col.info, cell.value)
    half = format_ci(col.info, cell)
    if half:
        text += f' <span class="ci">\u00b1 {half}</span>'
    if cell.detail:
        text += f' <span class="detail">({e(cell.detail)})</span>'
    return f'<td {attrs} data-value="{cell.value!r}">{text}</td>'


def _note_anchor(table: OverviewTable, note_id: str) -> str:
    return f"{table.group.slug}-note-{note_id}"


def overview_section(table: OverviewTable, slugs: dict[str, str], prefix: str = "", only: str | None = None,
                     controls: bool = True) -> str:
    """``table`` as a sortable HTML table (``only``: that detector's rows alone), its notes,
    and (``controls``) the filter and task toggles."""
    rows = [r for r in table.rows if only is None or r.detector == only]
    tasks = [t for t in TASKS if any(c.task == t for c in table.columns)]
    heads = "".join(
        f'<th class="metric sortable" data-col="{i}" data-task="{e(col.task)}" '
        f'data-higher="{0 if col.info.higher_is_better is False else 1}" title="{e(col.definition)}">'
        f'{e(col.benchmark)}: {e(col.label)} <span class="arrow">{e(col.info.arrow)}</span></th>'
        for i, col in enumerate(table.columns))
    body = []
    for row in rows:
        link = (f'<a href="{e(prefix)}detectors/{e(quote(slugs[row.detector]))}.html">{e(row.label)}</a>'
                if row.detector in slugs else e(row.label))
        body.append(f'<tr class="entry" data-detector="{e(row.label)}"><td class="rank">{e(row.rank or "")}</td>'
                    f'<td class="detector">{link}</td>'
                    + "".join(_cell(col, row.cells[col.key], table) for col in table.columns) + "</tr>")
    used = {n for row in rows for cell in row.cells.values() for n in cell.notes}
    notes = "".join(f'<li id="{e(_note_anchor(table, n.id))}" value="{e(n.id)}">{e(n.text)}</li>'
                    for n in table.notes if n.id in used)
    toggles = "".join(f'<label><input type="checkbox" class="task-toggle" value="{t}" checked> {t}</label>'
                      for t in tasks)
    tools = (f'<div class="controls"><label>filter detectors <input type="search" class="overview-filter" '
             f'placeholder="name"></label> columns: {toggles}</div>') if controls else ""
    return (f'<section class="overview" id="{e(table.group.slug)}">'
            f'<h2>Overview: {e(table.group.title)}</h2>'
            f'<p class="case-info">{e(table.group.name)} \u00b7 overview definition v{e(table.version)} '
            f'(docs/leaderboard.md)</p>{tools}'
            f'<div class="scroll"><table class="overview-table" data-overview-version="{e(table.version)}">'
            f'<thead><tr><th class="rank">#</th><th>detector</th>{heads}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>'
            + (f'<ol class="notes">{notes}</ol>' if notes else "") + "</section>")
