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
  function reveal() {
    var target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === 'DETAILS') { el.open = true; }
    }
    if (target) { target.scrollIntoView(); }
  }
  window.addEventListener('hashchange', reveal);
  reveal();
})();
