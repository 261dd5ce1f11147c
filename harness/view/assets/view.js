// harness view: the runs index's search, the trends' search, and a running run's progress.
// Outside text is only ever set with textContent, never parsed as markup.
(function () {
  "use strict";

  function filterRows(input, rows, count, noun) {
    function apply() {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      rows.forEach(function (row) {
        var text = row.getAttribute("data-search") || "";
        var keep = words.every(function (w) { return text.indexOf(w) !== -1; });
        row.classList.toggle("hidden", !keep);
        if (keep) { shown += 1; }
      });
      if (count) { count.textContent = shown + " of " + rows.length + " " + noun; }
    }
    input.addEventListener("input", apply);
    if (input.form) {
      input.form.addEventListener("submit", function (e) { e.preventDefault(); });
    }
    apply();
  }

  var runSearch = document.getElementById("run-search");
  if (runSearch) {
    filterRows(runSearch, Array.prototype.slice.call(
      document.querySelectorAll("#run-table tbody tr")),
      document.getElementById("run-count"), "runs");
  }
  var trendSearch = document.getElementById("trend-search");
  if (trendSearch) {
    filterRows(trendSearch, Array.prototype.slice.call(
      document.querySelectorAll("#trend-table tbody tr")),
      document.getElementById("trend-count"), "scenarios");
  }

  // The index, while a run it lists is running: each running run's status and samples
  // follow its store; a run that ends or appears asks for a reload (its figures).
  // as harness/view/runs_pages.py's TONES
  var TONES = {"finished": "good", "stopped by budget": "warn", "stopped": "warn",
               "interrupted": "bad", "unknown": "warn", "unreadable": "bad"};
  var runs = document.getElementById("runs");
  if (runs && runs.getAttribute("data-polling") === "true") {
    var rows = {};
    Array.prototype.forEach.call(document.querySelectorAll("#run-table tbody tr"),
      function (row) { rows[row.getAttribute("data-run")] = row; });
    var everyIndex = Number(runs.getAttribute("data-every-ms") || "4000");
    var pollIndex = function () {
      fetch("/api/runs", {credentials: "same-origin", headers: {"Accept": "application/json"}})
        .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
        .then(function (data) {
          var changed = false, running = false;
          data.runs.forEach(function (run) {
            var row = rows[run.id];
            if (!row) { changed = true; return; }
            var was = row.getAttribute("data-status");
            if (was !== run.status) {
              changed = changed || was === "running";
              row.setAttribute("data-status", run.status);
              var tag = row.querySelector('[data-cell="status"]');
              if (tag) {
                tag.textContent = run.status;
                tag.className = "tag " + (TONES[run.status] || "");
              }
            }
            var samples = row.querySelector('[data-cell="samples"]');
            if (samples) {
              samples.textContent = String(run.samples) +
                (run.samples_planned ? " / " + run.samples_planned : "");
            }
            running = running || run.status === "running";
          });
          if (changed) { document.getElementById("runs-changed").hidden = false; }
          if (running) {
            window.setTimeout(pollIndex, everyIndex);
          } else {
            document.getElementById("runs-polling").hidden = true;
          }
        })
        .catch(function () { window.setTimeout(pollIndex, everyIndex * 5); });
    };
    window.setTimeout(pollIndex, everyIndex);
  }

  var live = document.getElementById("live");
  if (!live) { return; }
  var url = live.getAttribute("data-progress-url");
  var since = Number(live.getAttribute("data-since") || "0");
  var every = Number(live.getAttribute("data-every-ms") || "2000");
  var list = document.getElementById("live-samples");

  function show(progress) {
    document.getElementById("live-done").textContent = String(progress.samples);
    document.getElementById("live-planned").textContent =
      progress.samples_planned === null ? "?" : String(progress.samples_planned);
    var bar = document.getElementById("live-bar");
    if (bar && progress.samples_planned) {
      bar.value = progress.samples;
      bar.max = progress.samples_planned;
    }
    document.getElementById("live-status").textContent = progress.status;
    (progress.new_samples || []).forEach(function (s) {
      var li = document.createElement("li");
      var tag = document.createElement("span");
      tag.className = "tag " + (s.outcome === "passed" ? "good" :
        s.outcome === "failed" ? "bad" : "err");
      tag.textContent = s.outcome;
      var name = document.createElement("span");
      name.className = "mono";
      name.textContent = " " + s.scenario_id + "#" + s.epoch + " ";
      var score = document.createElement("span");
      score.className = "muted";
      score.textContent = s.score === null ? "" : "score " + s.score.toFixed(3);
      li.appendChild(tag);
      li.appendChild(name);
      li.appendChild(score);
      list.insertBefore(li, list.firstChild);
      since = Math.max(since, s.finished_at);
    });
    if (progress.status !== "running") {
      document.getElementById("live-ended").hidden = false;
      return false;
    }
    return true;
  }

  function poll() {
    fetch(url + "?since=" + encodeURIComponent(String(since)),
          {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (progress) {
        if (show(progress)) { window.setTimeout(poll, every); }
      })
      .catch(function () {
        document.getElementById("live-status").textContent = "server not answering";
        window.setTimeout(poll, every * 5);
      });
  }
  if (live.getAttribute("data-running") === "true") { window.setTimeout(poll, every); }
}());
