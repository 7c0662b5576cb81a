"""What the report adds when `python -m harness serve` serves it live: a line saying how fresh the page is,
and a script that asks the server every POLL_SECONDS for the state's version (`version`, a few bytes) and,
only when it changed, fetches the page again and draws its `data-live` parts in place (the figures, the
graph and its explorer run their scripts again; the explorer keeps what the reader chose). No reload by hand.
"""

from __future__ import annotations

POLL_SECONDS = 2

STATUS_LINE = '<p id="live-status" class="small" role="status">live: waiting for the first check</p>\n'

SCRIPT = (
    """
(function () {
  var line = document.getElementById('live-status'), every = %d * 1000;
  function clock() { return new Date().toISOString().slice(11, 19) + ' UTC'; }
  function run(part) {
    part.querySelectorAll('script').forEach(function (old) {
      if (old.type && old.type !== 'text/javascript') { return; }
      var script = document.createElement('script');
      script.textContent = old.textContent;
      old.replaceWith(script);
    });
  }
  function redraw() {
    return fetch('./', {cache: 'no-store'}).then(function (answer) { return answer.text(); }).then(function (text) {
      var page = new DOMParser().parseFromString(text, 'text/html'), parts = page.querySelectorAll('[data-live]');
      if (!parts.length) { throw new Error('the page came back without its state'); }
      parts.forEach(function (fresh) {
        var part = document.importNode(fresh, true);
        document.getElementById(fresh.id).replaceWith(part);
        run(part);
      });
      document.body.dataset.version = page.body.dataset.version;
      document.body.dataset.redrawn = String(Number(document.body.dataset.redrawn || 0) + 1);
      line.textContent = 'live: redrawn at ' + clock() + ' for a new state';
    });
  }
  function check() {
    fetch('version', {cache: 'no-store'}).then(function (answer) {
      if (!answer.ok) { return answer.text().then(function (text) { throw new Error(text); }); }
      return answer.json();
    }).then(function (body) {
      if (body.version !== document.body.dataset.version) { return redraw(); }
      line.textContent = 'live: up to date, checked at ' + clock();
    }).catch(function (error) {
      line.textContent = 'live: the server did not answer at ' + clock() + ' (' + error.message +
        '); the page shows the state before';
    }).then(function () { setTimeout(check, every); });
  }
  setTimeout(check, every);
})();
"""
    % POLL_SECONDS
)
