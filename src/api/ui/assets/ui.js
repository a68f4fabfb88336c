// toolscore web UI: keeps the overview live from GET /v1/watch, and
// leaves empty fields out of the search form's URL.
// Rows are built with DOM calls and textContent only (never innerHTML):
// trace data is attacker-controlled text.
(function () {
  "use strict";

  var ROWS = 25;
  var BUCKETS = 10;
  var MINUTE_MS = 60000;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    }
    (children || []).forEach(function (c) {
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  // The same text as the server's score_text: up to four decimals.
  function scoreText(v) {
    if (typeof v !== "number") { return "\u2013"; }
    var s = v.toFixed(4).replace(/0+$/, "");
    return s.charAt(s.length - 1) === "." ? s + "0" : s;
  }

  function scoreFails(s) {
    return s.passed === false || s.status === "error";
  }

  function verdict(s) {
    var v;
    if (s.status === "error") { v = ["bad", "\u26a0 error"]; }
    else if (s.status === "pending") { v = ["wait", "\u2026 pending"]; }
    else if (s.status === "skipped") { v = ["wait", "\u2013 skipped"]; }
    else if (s.passed === true) { v = ["good", "\u2713 passed"]; }
    else if (s.passed === false) { v = ["bad", "\u2717 failed"]; }
    else { v = ["plain", "no threshold"]; }
    return el("span", { "class": "badge " + v[0] }, [v[1]]);
  }

  // A row with the columns of layout::trace_row.
  function row(body) {
    var id = String(body.trace_id || "");
    var root = body.root || {};
    var scores = body.scores || [];
    var failing = scores.some(scoreFails);
    var list = el("ul", { "class": "scores" });
    scores.forEach(function (s) {
      list.appendChild(el("li", null, [
        el("span", { "class": "ev" }, [String(s.evaluator_id)]), ": ",
        el("strong", null, [scoreText(s.score)]), " ", verdict(s)
      ]));
    });
    if (!scores.length) { list.appendChild(el("li", null, ["no scores"])); }
    // layout::human_time to the second: `2026-01-31 13:45:07 UTC`.
    var at = body.evaluated_at
      ? el("time", { datetime: body.evaluated_at, title: body.evaluated_at },
        [String(body.evaluated_at).slice(0, 19).replace("T", " ") + " UTC"])
      : "\u2013";
    var tr = el("tr", { "data-trace-id": id, "data-failing": String(failing), "class": "new" }, [
      el("th", { scope: "row" }, [el("a", { href: "/ui/traces/" + encodeURIComponent(id) }, [el("code", null, [id])])]),
      el("td", null, [at]),
      el("td", null, [root.service ? String(root.service) : "\u2013"]),
      el("td", null, [root.name ? String(root.name) : "\u2013"]),
      el("td", null, [String(body.status || "")]),
      el("td", null, [list])
    ]);
    return { tr: tr, failing: failing };
  }

  function prepend(tableId, tr) {
    var table = document.getElementById(tableId);
    if (!table || !table.tBodies.length) { return; }
    var tbody = table.tBodies[0];
    Array.prototype.slice.call(tbody.rows).forEach(function (r) {
      if (r.classList.contains("empty") || r.getAttribute("data-trace-id") === tr.getAttribute("data-trace-id")) {
        tbody.removeChild(r);
      }
    });
    tbody.insertBefore(tr, tbody.firstChild);
    while (tbody.rows.length > ROWS) { tbody.deleteRow(tbody.rows.length - 1); }
  }

  function removeRow(tableId, id) {
    var table = document.getElementById(tableId);
    if (!table || !table.tBodies.length) { return; }
    Array.prototype.slice.call(table.tBodies[0].rows).forEach(function (r) {
      if (r.getAttribute("data-trace-id") === id) { r.parentNode.removeChild(r); }
    });
  }

  function bump(id, by) {
    var node = document.getElementById(id);
    if (node) { node.textContent = String((parseInt(node.textContent, 10) || 0) + by); }
  }

  // Bar charts: the server writes each chart's counts in data-counts and
  // draws a bar per count (overview.rs's `bars`); these redraw the bars'
  // heights and titles from changed counts, with the same geometry.
  function countsOf(svg) {
    return (svg.getAttribute("data-counts") || "").split(" ").map(function (c) {
      return parseInt(c, 10) || 0;
    });
  }

  function drawBars(svg, values, slotText) {
    svg.setAttribute("data-counts", values.join(" "));
    var height = svg.viewBox.baseVal.height;
    var max = Math.max.apply(null, values.concat([1]));
    var bars = svg.querySelectorAll("rect.bar");
    for (var i = 0; i < bars.length && i < values.length; i++) {
      var h = height * values[i] / max;
      bars[i].setAttribute("y", (height - h).toFixed(3));
      bars[i].setAttribute("height", h.toFixed(3));
      var title = bars[i].querySelector("title");
      if (title) { title.textContent = slotText(i) + ": " + values[i]; }
    }
  }

  function bucketText(i) {
    return (i / BUCKETS).toFixed(1) + "\u2013" + ((i + 1) / BUCKETS).toFixed(1);
  }

  // A score in or out of its evaluator's distribution, bucketed as
  // overview.rs's Stats::of does (a score of 1.0 is in the last bucket).
  function addToDistribution(tr, score, sign) {
    var svg = tr.querySelector("svg.dist");
    if (!svg || typeof score !== "number" || !isFinite(score)) { return; }
    var values = countsOf(svg);
    var b = Math.min(Math.floor(Math.min(Math.max(score, 0), 1) * BUCKETS), BUCKETS - 1);
    values[b] = Math.max(0, (values[b] || 0) + sign);
    drawBars(svg, values, bucketText);
    svg.setAttribute("aria-label", "Scores by bucket: " + values.map(function (c, i) {
      return bucketText(i) + ": " + c;
    }).join(", "));
  }

  // The per-minute chart: one slot per UTC clock minute, the last being
  // `last` (minutes since the epoch). It moves on as minutes pass, by the
  // server's clock (`skew` is how far ahead this browser's runs).
  var chart = null;

  function initChart() {
    var svg = document.getElementById("per-minute");
    if (!svg) { return; }
    var last = parseInt(svg.getAttribute("data-last-minute"), 10);
    var now = parseInt(svg.getAttribute("data-now-ms"), 10);
    if (isNaN(last) || isNaN(now)) { return; }
    chart = { svg: svg, values: countsOf(svg), last: last, skew: Date.now() - now };
  }

  function minuteText(minute) {
    return new Date(minute * MINUTE_MS).toISOString().slice(11, 16) + " UTC";
  }

  function drawMinutes() {
    var values = chart.values;
    var first = chart.last + 1 - values.length;
    drawBars(chart.svg, values, function (i) { return minuteText(first + i); });
    var peak = Math.max.apply(null, values.concat([0]));
    var total = values.reduce(function (a, b) { return a + b; }, 0);
    chart.svg.setAttribute("aria-label", "Bar chart: " + total + " traces in the last " +
      values.length + " minutes, at most " + peak + " in one minute.");
    var node = document.getElementById("peak");
    if (node) { node.textContent = String(peak); }
  }

  // Moves the chart on to a later `minute`, the oldest slots dropping out.
  function advance(minute) {
    if (!chart || !(minute > chart.last)) { return false; }
    var n = chart.values.length;
    chart.values = chart.values.slice(Math.min(minute - chart.last, n));
    while (chart.values.length < n) { chart.values.push(0); }
    chart.last = minute;
    return true;
  }

  // The minute (since the epoch) of an RFC 3339 time, or NaN.
  function minuteOf(rfc3339) {
    // Date.parse is only specified for milliseconds; the API writes up to
    // nanoseconds.
    var t = Date.parse(String(rfc3339 || "").replace(/(\.\d{3})\d+/, "$1"));
    return Math.floor(t / MINUTE_MS);
  }

  // A trace evaluated at `minute` in or out of the chart (slots as
  // overview.rs's minute_slot).
  function addToMinutes(minute, sign) {
    if (!chart || isNaN(minute)) { return; }
    advance(minute);
    var i = chart.values.length - 1 - (chart.last - minute);
    if (i >= 0 && i < chart.values.length) {
      chart.values[i] = Math.max(0, chart.values[i] + sign);
    }
    drawMinutes();
  }

  function tick() {
    if (chart && advance(Math.floor((Date.now() - chart.skew) / MINUTE_MS))) {
      drawMinutes();
      forgetBefore(chart.last - chart.values.length + 1);
    }
  }

  // Forgets the traces first seen here whose minute left the chart, so a
  // tab left open does not keep every trace it ever saw. A revision of one
  // arriving later is counted as a new trace (the chart no longer shows
  // its minute anyway).
  function forgetBefore(first) {
    Object.keys(counted).forEach(function (id) {
      var c = counted[id];
      if (c && !(c.minute >= first)) { delete counted[id]; }
    });
  }

  // Evaluator rows keep their figures in data-* attributes; the cells are
  // written from them.
  function evaluatorRow(id) {
    var table = document.getElementById("evaluators");
    if (!table) { return null; }
    var rows = table.tBodies[0].rows;
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].getAttribute("data-evaluator-id") === id) { return rows[i]; }
    }
    return null;
  }

  function addFigures(s, sign) {
    var tr = evaluatorRow(String(s.evaluator_id));
    if (!tr) { return; }
    function add(name, by) {
      var v = (parseInt(tr.getAttribute("data-" + name), 10) || 0) + by;
      tr.setAttribute("data-" + name, String(v));
      var cell = tr.querySelector('[data-stat="' + name + '"]');
      if (cell) { cell.textContent = String(v); }
    }
    add("count", sign);
    if (s.status === "error") { add("errors", sign); }
    if (s.status === "ok") { addToDistribution(tr, s.score, sign); }
    if (typeof s.passed === "boolean") {
      add("with-threshold", sign);
      if (!s.passed) { add("below", sign); }
      var cell = tr.querySelector('[data-stat="threshold"]');
      var below = parseInt(tr.getAttribute("data-below"), 10) || 0;
      var total = parseInt(tr.getAttribute("data-with-threshold"), 10) || 0;
      if (cell && total > 0) {
        cell.textContent = below + " of " + total + " (" + Math.round(100 * below / total) + " %)";
      }
    }
  }

  // Announcements are gathered and said at most every 5 s, so a busy
  // service does not flood a screen reader.
  var pending = { traces: 0, failing: 0 };

  // Traces counted by this page: the server counted those it rendered;
  // for those first seen here, their scores, so a revision replaces them.
  var counted = {};

  function onScores(body) {
    var id = String(body.trace_id || "");
    if (!/^[0-9a-f]{32}$/.test(id)) { return; }
    var built = row(body);
    prepend("recent-traces", built.tr);
    if (built.failing) {
      prepend("failing-traces", built.tr.cloneNode(true));
    } else {
      removeRow("failing-traces", id);
    }
    var before = counted[id];
    if (before === null) { return; }
    var minute = minuteOf(body.evaluated_at);
    if (before) {
      before.scores.forEach(function (s) { addFigures(s, -1); });
      if (before.failing) { bump("failing-count", -1); }
      addToMinutes(before.minute, -1);
    } else {
      bump("trace-count", 1);
      pending.traces += 1;
    }
    (body.scores || []).forEach(function (s) { addFigures(s, 1); });
    addToMinutes(minute, 1);
    if (built.failing) {
      bump("failing-count", 1);
      if (!before || !before.failing) { pending.failing += 1; }
    }
    counted[id] = { scores: body.scores || [], failing: built.failing, minute: minute };
  }

  function announce() {
    var region = document.getElementById("live-announce");
    if (!region || (!pending.traces && !pending.failing)) { return; }
    region.textContent = pending.traces + " new trace(s), " + pending.failing + " newly failing.";
    pending = { traces: 0, failing: 0 };
  }

  function live() {
    var status = document.getElementById("live-status");
    if (!document.getElementById("recent-traces") || !status) { return; }
    document.querySelectorAll("tr[data-trace-id]").forEach(function (r) {
      counted[r.getAttribute("data-trace-id")] = null;
    });
    initChart();
    window.setInterval(tick, 10000);
    if (!window.EventSource) {
      status.textContent = "not supported by this browser (reload to refresh)";
      return;
    }
    var source = new EventSource("/v1/watch");
    source.onopen = function () { status.textContent = "live"; };
    source.addEventListener("scores", function (e) {
      try { onScores(JSON.parse(e.data)); } catch (err) { /* a malformed event is skipped */ }
    });
    // Both a dropped connection and the server's own `error` event (too
    // slow, shutting down) land here; EventSource reconnects by itself.
    source.addEventListener("error", function () {
      status.textContent = source.readyState === EventSource.CLOSED ? "disconnected (reload to retry)" : "reconnecting\u2026";
    });
    window.setInterval(announce, 5000);
  }

  // A GET form sends every field, empty or not; the empty ones are left
  // out (disabled while the form is sent), so a search's URL is short to
  // share, like search.rs's canonical_url. Without this script the form
  // works the same, with the longer URL.
  function searchForm() {
    var form = document.getElementById("search");
    if (!form) { return; }
    var fields = function () {
      return Array.prototype.filter.call(form.elements, function (f) { return f.name; });
    };
    form.addEventListener("submit", function () {
      fields().forEach(function (f) {
        if (String(f.value).trim() === "") { f.disabled = true; }
      });
    });
    // Back to this page from the history, its fields are usable again.
    window.addEventListener("pageshow", function () {
      fields().forEach(function (f) { f.disabled = false; });
    });
  }

  function start() {
    live();
    searchForm();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
