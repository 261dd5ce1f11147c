// agent-eval-harness report script (Apache-2.0, part of the project). It adds the filters,
// the search and the drill-down to a page that reads without it. Outside text is only ever
// put into the page with textContent (createTextNode), never parsed as HTML.
"use strict";
(function () {
  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (attrs[k] !== null && attrs[k] !== undefined && attrs[k] !== false) el.setAttribute(k, attrs[k]);
      });
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  function add(el, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(el, c); }); return; }
    el.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
  function num(v, d) { return v === null || v === undefined ? "—" : Number(v).toFixed(d === undefined ? 3 : d); }
  function pretty(v) { return typeof v === "string" ? v : JSON.stringify(v, null, 2); }
  function tag(text, cls) { return h("span", { "class": "tag " + (cls || "") }, text); }
  function outcomeOf(s) { return s.status !== "scored" ? s.status : (s.passed ? "passed" : "failed"); }
  var OUTCOME_CLASS = { passed: "good", failed: "bad", errored: "err" };

  // Embedded data: plain JSON, or gzipped and base64-encoded when large.
  var cache = {};
  function loadData(id) {
    if (cache[id]) return cache[id];
    var el = document.getElementById(id);
    if (!el) return Promise.resolve(null);
    var text = el.textContent;
    if (el.getAttribute("data-encoding") !== "gzip-base64") {
      cache[id] = Promise.resolve(JSON.parse(text));
    } else {
      var bin = atob(JSON.parse(text));
      var bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      cache[id] = new Response(stream).text().then(JSON.parse);
    }
    return cache[id];
  }

  // ---- one sample, drawn ----
  function messageBox(m, given) {
    var who = m.role === "user" ? (given ? "user" : "simulated user") : (m.role === "assistant" ? "agent" : m.role);
    var box = h("div", { "class": "msgbox " + m.role }, h("div", { "class": "who" }, who));
    if (m.content) box.appendChild(h("pre", null, m.content));
    m.tool_calls.forEach(function (c) {
      var failed = c.is_error || c.error;
      box.appendChild(h("div", { "class": "call" + (failed ? " failed" : ""), "data-tool": c.name },
        h("div", null, h("strong", null, "tool call " + c.name), c.latency_s !== null ? h("span", { "class": "muted small" }, "  " + (c.latency_s * 1000).toFixed(1) + " ms") : null),
        h("pre", { "class": "args" }, c.raw !== null && c.raw !== undefined ? c.raw : pretty(c.arguments)),
        h("div", { "class": "muted small" }, failed ? "error" : (given ? "result (given)" : "result (mocked)")),
        h("pre", { "class": "result" }, c.error ? c.error : pretty(c.result))));
    });
    return box;
  }
  function conversation(s) {
    var out = [];
    if (s.system_prompt) out.push(h("details", null, h("summary", null, "system prompt"), h("pre", null, s.system_prompt)));
    // A scenario's given history: context the agent received, not its work, never scored.
    if (s.history && s.history.length) {
      out.push(h("section", { "class": "given-history" },
        h("div", { "class": "history-label" }, "given history"),
        h("p", { "class": "muted small" }, "Came with the scenario before the live conversation: the agent saw it, but it is not the agent's work and is not scored."),
        s.history.map(function (m) { return messageBox(m, true); })));
    }
    s.messages.forEach(function (m) { out.push(messageBox(m, false)); });
    if (!s.messages.length) out.push(h("p", { "class": "muted" }, "No message was recorded."));
    return out;
  }
  function callLine(c) { return c.name + "(" + JSON.stringify(c.args !== undefined ? c.args : c.arguments) + ")"; }
  function trajectory(s) {
    var stored = !s.trajectory || s.trajectory.reference !== null;
    var ref = s.trajectory && s.trajectory.reference ? s.trajectory.reference : [];
    if (!ref.length && !s.actual_trajectory.length) return null;
    var pairs = s.trajectory ? s.trajectory.pairs : [];
    var refMatch = {}, actMatch = {};
    pairs.forEach(function (p) { refMatch[p.reference] = p.actual; actMatch[p.actual] = p.reference; });
    var left = h("ol", { start: 0 }, ref.map(function (c, i) {
      return h("li", null, h("code", null, callLine(c)), " ", i in refMatch ? tag("matched #" + refMatch[i], "good") : tag("missing", "bad"));
    }));
    var right = h("ol", { start: 0 }, s.actual_trajectory.map(function (c, j) {
      return h("li", null, h("code", null, callLine(c)), " ", j in actMatch ? tag("matches #" + actMatch[j], "good") : (ref.length ? tag("unmatched", "warn") : null));
    }));
    return [h("h3", null, "Trajectory"), h("div", { "class": "cols" },
      h("div", null, h("div", { "class": "muted small" }, "reference"), ref.length ? left : h("p", { "class": "muted" }, stored ? "none" : "not stored with this run (written by an older harness)")),
      h("div", null, h("div", { "class": "muted small" }, "actual"), s.actual_trajectory.length ? right : h("p", { "class": "muted" }, "no tool call")))];
  }
  // A check's verdict, built-in or one's own alike: a value without a verdict was reported
  // only (a null threshold, gating: false); a check that does not gate is information, never
  // a red "fail" (it did not decide the outcome).
  var INFO_TITLE = "information: reported, but does not decide the sample's outcome";
  function checkVerdict(c) {
    if (c.error) return tag("error", "bad");
    if (c.value === null) return tag("unscored");
    if (c.gating === false || c.passed === null) return h("span", { "class": "tag info", title: INFO_TITLE }, "information");
    return c.passed ? tag("pass", "good") : tag("fail", "bad");
  }
  function checkTable(list) {
    var rows = list.map(function (c) {
      var detail = [];
      var tone = c.gating === false || c.passed === null ? "info" : "bad";  // information is never red
      (c.findings || []).forEach(function (f) { detail.push(h("div", null, tag(f.kind, tone), " ", f.message)); });
      if (c.name === "final_state_match" && c.details && c.details.diff && c.details.diff.length) {
        detail.push(h("div", { "class": "muted small" }, "state diff by JSON path:"), h("ul", null, c.details.diff.map(function (d) { return h("li", null, h("code", null, d)); })));
      }
      if (c.unscored_reason) detail.push(h("div", { "class": "muted" }, "unscored: " + c.unscored_reason));
      if (c.error) detail.push(h("div", null, tag("error", "bad"), " ", c.error));
      if (c.details && Object.keys(c.details).length) detail.push(h("details", null, h("summary", { "class": "muted small" }, "details"), h("pre", null, pretty(c.details))));
      return h("tr", { "data-check": c.name }, h("td", null, c.name), h("td", { "class": "num" }, num(c.value)),
        h("td", null, checkVerdict(c)), h("td", null, detail));
    });
    return h("div", { "class": "table-wrap" }, h("table", null, h("thead", null, h("tr", null, h("th", null, "check"), h("th", { "class": "num" }, "value"), h("th", null, "verdict"), h("th", null, "expected against actual"))), h("tbody", null, rows)));
  }
  function checks(s) {
    if (!s.checks.length) return null;
    var deciding = s.checks.filter(function (c) { return c.gating !== false && !(c.passed === null && !c.error); });
    var info = s.checks.filter(function (c) { return deciding.indexOf(c) < 0; });
    return [h("h3", null, "Checks"),
      deciding.length ? checkTable(deciding) : h("p", { "class": "muted" }, "No check decides this sample's outcome."),
      info.length ? [h("h3", { "class": "info-head" }, "Other views (information)"),
        h("p", { "class": "muted small" }, "Reported for reading, not part of the verdict: the scenario gates on the checks above."),
        checkTable(info)] : null];
  }
  var SENTENCE_CLASS = { supported: "good", unsupported: "bad", contradictory: "bad", disputed: "warn" };
  function sentences(list) {
    if (!list.length) return null;
    return h("table", { "class": "sentences" }, h("thead", null, h("tr", null, h("th", null, "answer"), h("th", null, "sentence"), h("th", null, "label"), h("th", null, "reasoning and evidence"))),
      h("tbody", null, list.map(function (v) {
        return h("tr", { "data-label": v.label }, h("td", { "class": "num" }, String(v.answer)),
          h("td", null, v.sentence, v.in_answer === false ? h("div", { "class": "muted small" }, "(not found in that answer)") : null),
          h("td", null, tag(v.label.replace("_", " "), SENTENCE_CLASS[v.label])),
          h("td", null, h("div", null, v.reasoning),
            (v.evidence || []).map(function (e) { return h("blockquote", null, e); }),
            (v.unverified_evidence || []).map(function (e) { return h("blockquote", { title: "not found in the transcript" }, "(not found in the transcript) " + e); })));
      })));
  }
  // A user_turn rubric's verdict per simulated user turn (the simulator's, not the agent's).
  function userTurns(j) {
    var list = j.user_turns || [];
    if (!list.length) return null;
    return h("table", { "class": "user-turns" }, h("thead", null, h("tr", null, h("th", { "class": "num" }, "user turn"), h("th", null, "checked"), h("th", null, "verdict"), h("th", null, "failed criteria or reason"))),
      h("tbody", null, list.map(function (t) {
        return h("tr", { "data-user-turn": String(t.turn), "data-passed": String(t.passed) }, h("td", { "class": "num" }, String(t.turn)),
          h("td", null, t.checked === "opening_message" ? "compared with the opening message" : "by the judge"),
          h("td", null, t.passed ? tag("pass", "good") : tag("fail", "bad"), (t.votes || []).length > 1 ? h("span", { "class": "muted small" }, " " + t.votes.filter(Boolean).length + " of " + t.votes.length + " votes") : null),
          h("td", null, (t.failed_criteria || []).join(", ") || t.reason || ""));
      })));
  }
  function judges(s) {
    if (!s.judgments.length) return null;
    var out = [h("h3", null, "Judges")];
    s.judgments.forEach(function (j) {
      var head = h("div", null, h("strong", null, "rubric " + j.rubric_id), " score " + num(j.score) + " ",
        j.passed === null ? tag(j.status) : (j.passed ? tag("pass", "good") : tag("fail", "bad")),
        j.unscored_reason ? h("span", { "class": "muted" }, " " + j.unscored_reason) : null,
        j.error ? h("span", { "class": "muted" }, " error: " + j.error) : null,
        j.rule ? h("div", { "class": "muted small rule" }, j.rule) : null,
        j.judges_simulator ? h("div", { "class": "muted small simulator-rubric" }, "Judges the simulated user, not the agent: reported, never part of the agent's score or pass.") : null);
      var crit = h("table", null, h("thead", null, h("tr", null, h("th", null, "criterion"), h("th", { "class": "num" }, "value"), h("th", null, "verdict"), h("th", null, "votes"))),
        h("tbody", null, j.criteria.map(function (c) {
          return h("tr", null, h("td", null, c.criterion_id), h("td", { "class": "num" }, num(c.value)),
            h("td", null, c.passed === null ? tag("n/a") : (c.passed ? tag("pass", "good") :
              (j.passed ? h("span", { "class": "tag warn", title: "below the criterion's threshold; the rubric passed on its score" }, "below threshold") : tag("fail", "bad")))),
            h("td", { "class": "small" }, (c.votes || []).map(function (v) { return num(v, 2); }).join(", ")));
        })));
      var samples = j.samples.map(function (js) {
        return h("details", { "class": "judge-sample" }, h("summary", null, "judge " + js.judge + ", sample " + js.sample + (js.error ? " (error)" : "")),
          js.error ? h("p", null, js.error) : null,
          js.verdicts.map(function (v) {
            return h("div", { "class": "verdict" + (v.normalised !== null && v.normalised < 0.5 ? " low" : "") },
              h("div", null, h("strong", null, v.criterion_id), " score " + (v.score === null ? "n/a" : v.score) + (v.turn !== null ? (j.target === "user_turn" ? " (user turn " : " (turn ") + v.turn + ")" : "")),
              h("div", null, v.reasoning),
              (v.evidence || []).map(function (e) { return h("blockquote", null, e); }),
              (v.unverified_evidence || []).map(function (e) { return h("blockquote", { title: "not found in the transcript" }, "(not found in the transcript) " + e); }));
          }),
          sentences(js.sentences || []));
      });
      out.push(h("div", { "class": "rubric", "data-rubric": j.rubric_id }, head, crit, userTurns(j), samples));
    });
    return out;
  }
  // What the simulated user did wrong: about the simulator, never part of the agent's score.
  function simulatorFindings(s) {
    var list = s.simulator_findings || [];
    if (!list.length) return null;
    return h("section", { "class": "simulator-findings banner warn" },
      h("p", { "class": "sim-head" }, h("strong", null, "Simulated user: " + list.length + (list.length > 1 ? " findings" : " finding")),
        h("span", { "class": "muted small" }, " — what the simulator did wrong, not the agent; the score is the agent's and does not change")),
      h("ul", { "class": "small" }, list.map(function (f) {
        return h("li", { "class": "sim-finding", "data-kind": f.kind }, tag(f.kind, "warn"), " user turn " + f.turn + ": ", f.evidence);
      })));
  }
  // Who the sample's failure is attributed to, why, and the evidence.
  function attributionBanner(s) {
    var a = s.attribution;
    if (!a) return null;
    return h("section", { "class": "attribution banner" + (a.party === "agent" ? "" : " warn"), "data-party": a.party },
      h("p", null, h("strong", null, "Attributed to the " + a.party + ": "), a.reason),
      a.evidence && a.evidence.length ? h("ul", { "class": "small" }, a.evidence.map(function (e) { return h("li", null, e); })) : null);
  }
  function rerunNote(s) {
    var r = s.rerun;
    if (!r) return null;
    return h("p", { "class": "rerun banner" }, h("strong", null, "A rerun: "),
      "attempt " + r.attempt + " (sample index " + r.sample_index + ") in place of a sample attributed to the " + (r.replaced ? r.replaced.party : "simulator") + (r.replaced ? " (" + r.replaced.reason + ")" : "") + "; the first record is kept in the run's store (replaced_samples).");
  }
  function sampleView(s) {
    var outcome = outcomeOf(s);
    return h("div", { "class": "sample" },
      h("h3", null, s.scenario_id + " · epoch " + s.epoch + " "),
      h("p", null, tag(outcome, OUTCOME_CLASS[outcome]), " score " + num(s.score) + " · stop: " + s.stop_reason + (s.stop_detail ? " (" + s.stop_detail + ")" : "") + " · " + s.duration_s + " s",
        (s.tags || []).map(function (t) { return [" ", tag(t)]; })),
      s.failed_because && s.failed_because.length ? h("div", { "class": "banner bad because" },
        h("p", { "class": "because-line" }, h("strong", null, "Failed because "),
          s.failed_because.map(function (r) { return r.name; }).join(", ") + (s.failed_because.length > 1 ? " failed." : " failed.")),
        h("ul", { "class": "small" }, s.failed_because.map(function (r) { return h("li", { "class": "reason", "data-name": r.name }, r.text); }))) : null,
      s.error ? h("p", { "class": "banner bad" }, h("strong", null, "Errored (" + s.error.kind + (s.error.role ? ", " + s.error.role : "") + "): "), s.error.message, h("br"), "Not a score: the run's error policy decides how it counts.") : null,
      rerunNote(s),
      attributionBanner(s),
      simulatorFindings(s),
      h("h3", null, "Conversation"), conversation(s), trajectory(s), checks(s), judges(s));
  }
  window.harnessSampleView = sampleView;  // for pages that draw samples side by side
  // for the labelling page: the conversation first, the verdicts once the reviewer has given theirs
  window.harnessSampleParts = { conversation: conversation, trajectory: trajectory, checks: checks, judges: judges };
  window.harnessDom = { h: h, add: add };  // the one way outside text enters a page: textContent

  // ---- sortable tables: a header's button sorts by its column, a second click reverses ----
  // Numbers (and intervals, by their lower end) sort as numbers, a dash or blank last.
  function sortKey(td, numeric) {
    var text = td ? (td.hasAttribute("data-sort") ? td.getAttribute("data-sort") : td.textContent.trim()) : "";
    if (!numeric) return text.toLowerCase();
    var x = parseFloat(text.replace(/^\[/, ""));
    return isNaN(x) ? null : x;
  }
  function makeSortable(table) {
    var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
    heads.forEach(function (th, col) {
      var button = h("button", { type: "button", "class": "sort", title: "sort by " + th.textContent }, th.textContent);
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        heads.forEach(function (o) { o.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var first = body.rows[0];
        var numeric = th.classList.contains("num") || (first && first.cells[col] && first.cells[col].classList.contains("ci"));
        var keyed = Array.prototype.map.call(body.rows, function (r, i) { return [sortKey(r.cells[col], numeric), i, r]; });
        keyed.sort(function (a, b) {
          if (a[0] === b[0]) return a[1] - b[1];
          if (a[0] === null) return 1;
          if (b[0] === null) return -1;
          return (a[0] < b[0] ? -1 : 1) * (ascending ? 1 : -1);
        });
        keyed.forEach(function (k) { body.appendChild(k[2]); });
      });
    });
  }
  document.querySelectorAll("table.sortable").forEach(makeSortable);

  // ---- the run page: drill-down, filters, search, export ----
  var table = document.getElementById("sample-table");
  var drill = document.getElementById("drill");
  function showSample(index) {
    if (!drill) return;
    loadData("samples-data").then(function (samples) {
      var s = samples && samples[index];
      if (!s) return;
      drill.textContent = "";
      var close = h("button", { "class": "close", type: "button" }, "close");
      close.addEventListener("click", function () { drill.hidden = true; drill.parentNode.classList.remove("open"); history.replaceState(null, "", "#samples"); });
      drill.appendChild(close);
      drill.appendChild(sampleView(s));
      drill.hidden = false;
      drill.parentNode.classList.add("open");
      drill.scrollTop = 0;
      document.querySelectorAll("#sample-table tr.current").forEach(function (r) { r.classList.remove("current"); });
      var row = document.getElementById("row-" + index);
      if (row) row.classList.add("current");
      // Side by side, the row stays in view beside the sample; one above the other (a narrow
      // window), the sample is what the reader asked to see.
      var box = drill.getBoundingClientRect();
      if (getComputedStyle(drill).position !== "sticky") {
        drill.scrollIntoView({ block: "start" });
      } else if (row && !row.classList.contains("hidden")) {
        var r = row.getBoundingClientRect();
        if (r.top < 0 || r.bottom > window.innerHeight) row.scrollIntoView({ block: "center" });
      } else if (box.top > window.innerHeight || box.bottom < 0) {
        document.getElementById("samples").scrollIntoView();
      }
    });
  }
  function openSample(index) {
    if (location.hash === "#sample-" + index) showSample(index);
    else location.hash = "#sample-" + index;
  }
  function onHash() {
    var m = /^#sample-(\d+)$/.exec(location.hash);
    if (m) showSample(Number(m[1]));
  }
  if (table) {
    var form = document.getElementById("filters");
    form.hidden = false;
    var f = { scenario: document.getElementById("f-scenario"), outcome: document.getElementById("f-outcome"),
      kind: document.getElementById("f-kind"), tag: document.getElementById("f-tag"), text: document.getElementById("f-text") };
    var texts = null, matches = null;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var apply = function () {
      var shown = 0;
      rows.forEach(function (r) {
        var ok = (!f.scenario.value || r.dataset.scenario === f.scenario.value) &&
          (!f.outcome.value || r.dataset.outcome === f.outcome.value) &&
          (!f.kind.value || r.dataset.kinds.split("|").indexOf(f.kind.value) >= 0) &&
          (!f.tag.value || r.dataset.tags.split("|").indexOf(f.tag.value) >= 0) &&
          (!matches || matches[Number(r.dataset.index)]);
        r.classList.toggle("hidden", !ok);
        shown += ok;
      });
      document.getElementById("f-count").textContent = shown + " of " + rows.length + " samples";
    };
    var search = function () {
      var q = f.text.value.trim().toLowerCase();
      if (!q) { matches = null; apply(); return; }
      loadData("samples-data").then(function (samples) {
        if (!texts) texts = samples.map(function (s) { return JSON.stringify([s.messages, s.error, s.checks, s.judgments]).toLowerCase(); });
        matches = texts.map(function (t) { return t.indexOf(q) >= 0; });
        apply();
      });
    };
    var timer = null;
    f.text.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(search, 150); });
    [f.scenario, f.outcome, f.kind, f.tag].forEach(function (s) { s.addEventListener("change", apply); });
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    // Every scenario link filters the samples to that scenario; sample links open a sample.
    document.querySelectorAll("a.pick-scenario").forEach(function (a) {
      a.addEventListener("click", function () { f.scenario.value = a.dataset.scenario; apply(); });
    });
    // "failed samples (N)": the table with that outcome only, every other filter cleared.
    document.querySelectorAll("a.pick-outcome").forEach(function (a) {
      a.addEventListener("click", function () {
        [f.scenario, f.kind, f.tag].forEach(function (s) { s.value = ""; });
        if (f.text.value) { f.text.value = ""; matches = null; }
        f.outcome.value = a.dataset.outcome;
        apply();
      });
    });
    // A click anywhere on a row opens its sample (links and selected text keep their own way).
    table.tBodies[0].addEventListener("click", function (e) {
      if (e.target.closest("a, button, input, select, summary")) return;
      if (String(window.getSelection ? window.getSelection() : "")) return;
      var tr = e.target.closest("tr");
      if (tr && tr.dataset.index !== undefined) openSample(Number(tr.dataset.index));
    });
    exporter(form, function () {
      return Array.prototype.filter.call(table.tBodies[0].rows, function (r) { return !r.classList.contains("hidden"); })
        .map(function (r) { return Number(r.dataset.index); });
    });
    window.addEventListener("hashchange", onHash);
    apply();
    onHash();
  }

  // ---- export: the samples shown, in the order shown, from the data in the page ----
  var CSV_COLUMNS = ["scenario_id", "epoch", "outcome", "score", "stop_reason", "failed_because", "tags", "error"];
  function csvCell(v) {
    if (v === null || v === undefined) return "";
    var text = String(v);
    // a cell a spreadsheet would run as a formula is written as text
    if (typeof v === "string" && /^[=+\-@\t\r]/.test(text)) text = "'" + text;
    return /[",\r\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }
  function csvRecord(s) {
    return {
      scenario_id: s.scenario_id, epoch: s.epoch, outcome: outcomeOf(s), score: s.score, stop_reason: s.stop_reason,
      failed_because: (s.failed_because || []).map(function (r) { return r.text; }).join("; "),
      tags: (s.tags || []).join(" "), error: s.error ? s.error.kind + ": " + s.error.message : null,
    };
  }
  function download(name, type, text) {
    var url = URL.createObjectURL(new Blob([text], { type: type }));
    var a = h("a", { href: url, download: name, hidden: "hidden" });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  function exporter(form, shown) {
    var name = (form.dataset.name || "samples").replace(/[^A-Za-z0-9._-]+/g, "_") + "-samples";
    document.getElementById("export-csv").addEventListener("click", function () {
      loadData("samples-data").then(function (samples) {
        var lines = [CSV_COLUMNS.join(",")].concat(shown().map(function (i) {
          var r = csvRecord(samples[i]);
          return CSV_COLUMNS.map(function (c) { return csvCell(r[c]); }).join(",");
        }));
        download(name + ".csv", "text/csv", lines.join("\r\n") + "\r\n");
      });
    });
    document.getElementById("export-jsonl").addEventListener("click", function () {
      loadData("samples-data").then(function (samples) {
        download(name + ".jsonl", "application/jsonl", shown().map(function (i) { return JSON.stringify(samples[i]) + "\n"; }).join(""));
      });
    });
  }

  // ---- the compare page: one scenario's epoch in run A beside the same epoch in run B ----
  // (does nothing on other pages: it needs the #side-by-side element)
  var side = document.getElementById("side-by-side");
  if (side) {
    var pickScenario = document.getElementById("side-scenario");
    var pickEpoch = document.getElementById("side-epoch");
    var sampleAt = function (list, epoch) {
      for (var i = 0; i < list.length; i++) if (list[i].epoch === epoch) return list[i];
      return null;
    };
    var drawSide = function (which, s, inRun) {
      var box = document.getElementById("side-" + which);
      box.textContent = "";
      box.appendChild(s ? sampleView(s) : h("p", { "class": "muted" },
        inRun ? "No sample of this epoch in this run." : "This scenario is not in this run."));
    };
    // `link`: put what is shown in the address (user choices; not the page's first view).
    var showPair = function (index, epoch, link) {
      return loadData("compare-data").then(function (data) {
        var sc = data.scenarios[index];
        if (!sc) return;
        if (sc.epochs.indexOf(epoch) < 0) epoch = sc.first_epoch;
        pickScenario.value = String(index);
        pickEpoch.textContent = "";
        sc.epochs.forEach(function (e) { pickEpoch.appendChild(h("option", { value: String(e) }, "epoch " + e)); });
        pickEpoch.value = String(epoch);
        drawSide("a", sampleAt(data.baseline[index], epoch), sc.in_baseline);
        drawSide("b", sampleAt(data.candidate[index], epoch), sc.in_candidate);
        side.hidden = false;
        document.querySelectorAll("#diff-table tr.current").forEach(function (r) { r.classList.remove("current"); });
        var row = document.getElementById("diff-" + index);
        if (row) row.classList.add("current");
        if (link) history.replaceState(null, "", "#side-" + index + "-" + epoch);
      });
    };
    var stepEpoch = function (by) {
      var i = pickEpoch.selectedIndex + by;
      if (i >= 0 && i < pickEpoch.options.length) showPair(Number(pickScenario.value), Number(pickEpoch.options[i].value), true);
    };
    var onSideHash = function () {
      var m = /^#side-(\d+)(?:-(\d+))?$/.exec(location.hash);
      if (!m) return false;
      showPair(Number(m[1]), m[2] === undefined ? null : Number(m[2]), true).then(function () {
        document.getElementById("side").scrollIntoView();
      });
      return true;
    };
    document.getElementById("side-controls").hidden = false;
    pickScenario.addEventListener("change", function () { showPair(Number(pickScenario.value), null, true); });
    pickEpoch.addEventListener("change", function () { showPair(Number(pickScenario.value), Number(pickEpoch.value), true); });
    document.getElementById("side-prev").addEventListener("click", function () { stepEpoch(-1); });
    document.getElementById("side-next").addEventListener("click", function () { stepEpoch(1); });
    document.getElementById("side-controls").addEventListener("submit", function (e) { e.preventDefault(); });
    window.addEventListener("hashchange", onSideHash);
    if (!onSideHash()) showPair(0, null, false);
  }

  // ---- the pairwise page: filters over the pairs, and a pair's two transcripts ----
  // (does nothing on other pages: it needs the #pair-list element)
  var pairList = document.getElementById("pair-list");
  if (pairList) {
    var pf = { scenario: document.getElementById("p-scenario"), winner: document.getElementById("p-winner"),
      consistency: document.getElementById("p-consistency") };
    var pairs = Array.prototype.slice.call(pairList.querySelectorAll("details.pair"));
    var applyPairs = function () {
      var shown = 0;
      pairs.forEach(function (p) {
        var ok = (!pf.scenario.value || p.dataset.scenario === pf.scenario.value) &&
          (!pf.winner.value || p.dataset.winner === pf.winner.value) &&
          (!pf.consistency.value || p.dataset.consistency === pf.consistency.value);
        p.hidden = !ok;
        shown += ok;
      });
      document.getElementById("p-count").textContent = shown + " of " + pairs.length + " pairs";
    };
    document.getElementById("pair-filters").hidden = false;
    [pf.scenario, pf.winner, pf.consistency].forEach(function (s) { s.addEventListener("change", applyPairs); });
    document.getElementById("pair-filters").addEventListener("submit", function (e) { e.preventDefault(); });
    document.querySelectorAll("a.pick-pairs").forEach(function (a) {
      a.addEventListener("click", function () { pf.scenario.value = a.dataset.scenario; applyPairs(); });
    });
    pairList.querySelectorAll("button.show-transcripts").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () {
        var box = button.nextElementSibling;
        if (!box.hidden) { box.hidden = true; button.textContent = "show both transcripts"; return; }
        loadData("pair-transcripts").then(function (data) {
          var i = Number(button.dataset.index);
          box.textContent = "";
          [["a", "A"], ["b", "B"]].forEach(function (side) {
            var s = data[side[0]][i];
            box.appendChild(h("div", null, h("h3", { "class": "side-head" }, "run " + side[1]),
              s ? sampleView(s) : h("p", { "class": "muted" }, "This sample is no longer in the run's store.")));
          });
          box.hidden = false;
          button.textContent = "hide the transcripts";
        });
      });
    });
    var onPairHash = function () {
      var m = /^#pair-(\d+)$/.exec(location.hash);
      var p = m && document.getElementById("pair-" + m[1]);
      if (p) p.open = true;
    };
    window.addEventListener("hashchange", onPairHash);
    applyPairs();
    onPairHash();
  }
})();

// ---- the calibration page: one judge at a time, the threshold picker, expand all ----
// Does nothing on other pages (it looks for elements only the calibration page has).
(function () {
  var judges = document.querySelectorAll("div.judge[data-judge-index]");
  if (!judges.length) return;
  function fmt(v, d) { return v === "" ? "—" : Number(v).toFixed(d === undefined ? 3 : d); }

  // Several judges: show the picked one (all are shown with scripts off).
  var picker = document.getElementById("judge-picker");
  function showJudge(index) {
    if (!picker) return;
    judges.forEach(function (j) { j.classList.toggle("hidden", j.dataset.judgeIndex !== String(index)); });
    picker.querySelectorAll("button").forEach(function (b) { b.setAttribute("aria-pressed", String(b.dataset.judge === String(index))); });
  }
  function judgeOfHash() {
    var m = /^#(?:judge-|j)(\d+)(?:-|$)/.exec(location.hash);
    return m ? m[1] : null;
  }
  // An item linked from the scatter plot: open its reasoning.
  function openItem() {
    var row = /^#j\d+-item-\d+$/.test(location.hash) ? document.getElementById(location.hash.slice(1)) : null;
    var more = row && row.nextElementSibling;
    var details = more && more.querySelector("details");
    if (details) details.open = true;
  }
  function onHash() {
    var index = judgeOfHash();
    if (index !== null) showJudge(index);
    openItem();
  }
  if (picker) {
    picker.hidden = false;
    picker.querySelectorAll("button").forEach(function (b) {
      b.addEventListener("click", function () { showJudge(b.dataset.judge); history.replaceState(null, "", "#judge-" + b.dataset.judge); });
    });
    showJudge(judgeOfHash() || "0");
  }
  window.addEventListener("hashchange", onHash);
  onHash();

  // Threshold picker: a sentence for the picked threshold, its row in the table marked.
  document.querySelectorAll("p.picker[id$='-threshold-picker']").forEach(function (p) {
    var table = document.getElementById(p.id.replace("-threshold-picker", "-curve"));
    if (!table) return;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var input = p.querySelector("input"), out = p.querySelector("output");
    function pick() {
      var r = rows[Number(input.value)];
      rows.forEach(function (x) { x.classList.toggle("current", x === r); });
      var d = r.dataset;
      out.textContent = "score ≥ " + d.threshold + ": the judge passes " + fmt(100 * d.pass, 0) +
        "% of the items; it fails " + (d.coverage === "" ? "— " : fmt(100 * d.coverage, 0) + "%") +
        " of those the people fail (coverage) and " + (d.ffr === "" ? "— " : fmt(100 * d.ffr, 0) + "%") +
        " of those they pass (false failures); κ " + fmt(d.kappa);
    }
    p.hidden = false;
    input.addEventListener("input", pick);
    pick();
  });

  // Expand or collapse every item's reasoning in a disagreement list.
  document.querySelectorAll("section.disagree button.expand-all").forEach(function (b) {
    var section = b.closest("section");
    b.hidden = false;
    b.addEventListener("click", function () {
      var open = b.textContent === "expand all";
      section.querySelectorAll("details").forEach(function (d) { d.open = open; });
      b.textContent = open ? "collapse all" : "expand all";
    });
  });
})();
