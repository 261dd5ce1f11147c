// agent-eval-harness: labelling in `harness view` (Apache-2.0, part of the project). On a
// run's page it links each sample to its labelling page; on the labelling page it draws the
// conversation, the verdict forms, the judge's verdicts (once the reviewer has labelled the
// sample, or asks for them) and the labels so far, and saves the reviewer's labels. Outside
// text (messages, verdicts, reviewers' names and comments) only ever goes in as textContent.
"use strict";
(function () {
  var NAME_KEY = "harness-view-reviewer";
  var h = window.harnessDom.h, add = window.harnessDom.add;  // report.js's, loaded first
  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }
  function fmt(v, d) { return v === null || v === undefined ? "—" : Number(v).toFixed(d === undefined ? 2 : d); }

  // ---- a run's page: every sample opened links to its labelling page ----
  function runPageLinks() {
    var drill = document.getElementById("drill");
    var live = document.getElementById("live");
    if (!drill || !live || location.pathname.indexOf("/runs/") !== 0) return;
    var base = "/label/" + location.pathname.slice("/runs/".length);
    live.appendChild(h("p", { "class": "small" }, h("a", { href: base + "?queue=random", id: "label-random" }, "Label this run's samples"),
      " (the random queue; or open a sample below and label it)"));
    new MutationObserver(function () {
      var row = document.querySelector("#sample-table tr.current");
      var sample = drill.querySelector(".sample");
      if (!row || !sample || sample.querySelector("a.label-link")) return;
      var q = "?scenario=" + encodeURIComponent(row.dataset.scenario) + "&epoch=" + encodeURIComponent(row.cells[1].textContent.trim());
      sample.insertBefore(h("p", null, h("a", { href: base + q, "class": "label-link" }, "Label this sample")), sample.children[1] || null);
    }).observe(drill, { childList: true, subtree: true });
  }

  var page = document.getElementById("label-page");
  if (!page) { runPageLinks(); return; }

  function loadData(id) {
    var el = document.getElementById(id);
    var text = el.textContent;
    if (el.getAttribute("data-encoding") !== "gzip-base64") return Promise.resolve(JSON.parse(text));
    var bin = atob(JSON.parse(text));
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }

  var data, state, name = null, picked = {}, comments = {}, current = 0, saving = false;
  var el = function (id) { return document.getElementById(id); };
  var parts = window.harnessSampleParts;

  function mine() {
    var out = {};
    state.labels.forEach(function (l) { if (l.annotator === name) out[l.target] = l; });
    return out;
  }
  function labelled() { return Object.keys(mine()).length > 0; }
  function revealed() { return labelled() || el("show-judge").checked; }
  function same(a, b) { return a === b || (typeof a === "number" && typeof b === "number" && Math.abs(a - b) < 1e-9); }
  function changes() {
    var have = mine(), out = [];
    data.targets.forEach(function (t) {
      if (!(t.target in picked)) return;
      var before = have[t.target], comment = (comments[t.target] || "").trim();
      if (before && same(before.value, picked[t.target]) && (before.comment || "") === comment) return;
      var label = { target: t.target, value: picked[t.target] };
      if (comment) label.comment = comment;
      out.push(label);
    });
    return out;
  }
  function valueName(t, v) {
    for (var i = 0; i < t.values.length; i++) {
      if (same(t.values[i].value, v)) return (t.kind === "scale" ? String(v) + " " : "") + (t.values[i].label || String(v));
    }
    return typeof v === "number" && !Number.isInteger(v) ? fmt(v, t.kind === "unit" ? 3 : 2) : String(v);
  }

  // ---- the questions ----
  function question(t, i) {
    var box = h("fieldset", { "class": "question", "data-target": t.target, "data-index": i });
    box.appendChild(h("legend", null, t.title));
    if (t.question) box.appendChild(h("p", { "class": "small q" }, t.question));
    var levels = h("div", { "class": "levels", role: "radiogroup" });
    t.values.forEach(function (p, j) {
      var id = "v-" + i + "-" + j;
      var input = h("input", { type: "radio", name: "t-" + i, id: id, value: String(j) });
      input.addEventListener("change", function () { pick(i, j, false); });
      levels.appendChild(h("label", { "for": id, title: p.meaning || null, "class": "level" }, input,
        h("kbd", null, String(j + 1)), " ", t.kind === "scale" ? String(p.value) + (p.label ? " · " + p.label : "") : (p.label || String(p.value))));
    });
    box.appendChild(levels);
    var meanings = t.values.filter(function (p) { return p.meaning; });
    if (meanings.length) {
      box.appendChild(h("details", { "class": "small meanings" }, h("summary", null, "what the levels mean"),
        h("dl", null, meanings.map(function (p) { return [h("dt", null, String(p.value) + (p.label ? " · " + p.label : "")), h("dd", null, p.meaning)]; }))));
    }
    var area = h("textarea", { "class": "comment", rows: "1", maxlength: "20000", placeholder: "comment (optional)", "aria-label": "comment on " + t.title });
    area.addEventListener("input", function () { comments[t.target] = area.value; refresh(); });
    area.addEventListener("focus", function () { current = i; focusQuestion(false); });
    box.appendChild(area);
    box.appendChild(h("div", { "class": "judge-line small", hidden: "" }));
    box.appendChild(h("div", { "class": "others small", hidden: "" }));
    box.addEventListener("click", function () { current = i; focusQuestion(false); });
    return box;
  }
  function pick(i, j, fromKey) {
    var t = data.targets[i];
    picked[t.target] = t.values[j].value;
    var input = el("v-" + i + "-" + j);
    if (input) input.checked = true;
    if (fromKey && i + 1 < data.targets.length) { current = i + 1; focusQuestion(true); }
    refresh();
  }
  function focusQuestion(scroll) {
    document.querySelectorAll("#verdicts fieldset.question").forEach(function (f, i) {
      f.classList.toggle("current", i === current);
      if (i === current && scroll) f.scrollIntoView({ block: "nearest" });
    });
  }
  function drawQuestions() {
    var form = el("verdicts");
    clear(form);
    var have = mine();
    data.targets.forEach(function (t, i) {
      form.appendChild(question(t, i));
      if (have[t.target]) {
        picked[t.target] = have[t.target].value;
        comments[t.target] = have[t.target].comment || "";
      }
    });
    syncInputs();
    focusQuestion(false);
  }
  function syncInputs() {
    data.targets.forEach(function (t, i) {
      t.values.forEach(function (p, j) { var r = el("v-" + i + "-" + j); if (r) r.checked = t.target in picked && same(p.value, picked[t.target]); });
      var area = document.querySelector('#verdicts fieldset[data-index="' + i + '"] textarea');
      if (area && area.value !== (comments[t.target] || "")) area.value = comments[t.target] || "";
    });
  }

  // ---- what shows once the reviewer has labelled (or asked to see) ----
  function judgeLine(t) {
    if (t.judge_value === null || t.judge_value === undefined) return [h("span", { "class": "muted" }, "the judge gave no verdict here")];
    var out = [h("strong", null, "judge: "), valueName(t, t.judge_value)];
    if (t.judge_votes && t.judge_votes.length > 1) out.push(h("span", { "class": "muted" }, " (votes " + t.judge_votes.join(", ") + ")"));
    if (t.judge_reasoning && t.judge_reasoning.length) {
      out.push(h("details", null, h("summary", null, "the judge's reasoning"), t.judge_reasoning.map(function (r) { return h("p", null, r); })));
    }
    return out;
  }
  function othersLine(t) {
    var out = [];
    var now = state.labels.filter(function (l) { return l.target === t.target; });
    now.forEach(function (l) {
      out.push(h("div", { "class": "reviewer-label" }, h("strong", { "class": "who" }, l.annotator), ": " + valueName(t, l.value),
        l.random ? null : h("span", { "class": "muted" }, " (chosen)"),
        l.comment ? h("q", { "class": "comment-text" }, l.comment) : null));
    });
    var versions = state.history.filter(function (l) { return l.target === t.target; });
    if (versions.length > now.length) {
      out.push(h("details", { "class": "history" }, h("summary", null, "history (" + versions.length + " versions; the last of each reviewer counts)"),
        h("ol", null, versions.map(function (l) {
          return h("li", null, l.labelled_at.replace("T", " ").slice(0, 19) + " ", h("strong", null, l.annotator), ": " + valueName(t, l.value), l.comment ? h("q", null, l.comment) : null);
        }))));
    }
    var a = state.agreement[t.target];
    if (a) {
      var text = a.alpha === null ? "undefined" : fmt(a.alpha) + " [" + fmt(a.ci_low) + ", " + fmt(a.ci_high) + "]";
      var why = a.alpha === null && a.undefined ? a.undefined.replace(/^krippendorff_alpha: /, "") + "; " : "";
      out.push(h("div", { "class": "agreement" }, "Reviewers' agreement on this question over the run: Krippendorff's α ",
        h("strong", { "class": "alpha" }, text), h("span", { "class": "muted" }, " (" + why + a.level + (a.alpha === null ? "" : ", 95% interval") + "; " + a.n_samples + " sample" + (a.n_samples === 1 ? "" : "s") + " labelled by two or more of the reviewers " + a.reviewers.join(", ") + ")")));
    }
    return out;
  }
  function drawRevealed() {
    var show = revealed();
    el("blind-why").textContent = labelled() ? "(you have labelled this sample)" : "(hidden until you have labelled this sample)";
    if (labelled()) { el("show-judge").checked = true; el("show-judge").disabled = true; }
    document.querySelectorAll("#verdicts fieldset.question").forEach(function (f, i) {
      var t = data.targets[i];
      var judge = f.querySelector(".judge-line"), others = f.querySelector(".others");
      clear(judge); clear(others);
      judge.hidden = !show; others.hidden = !show;
      if (show) { add(judge, judgeLine(t)); add(others, othersLine(t)); }
    });
    el("judge-panel").hidden = !show;
    var detail = el("judge-detail");
    if (show && !detail.firstChild) {
      var s = data.sample;
      var outcome = s.status !== "scored" ? s.status : (s.passed ? "passed" : "failed");
      add(detail, [h("p", null, h("span", { "class": "tag " + ({ passed: "good", failed: "bad" }[outcome] || "") }, outcome), " score " + fmt(s.score, 3)),
        parts ? [parts.checks(s), parts.judges(s)] : null]);
    }
    el("labels-blind").hidden = show;
    var reviewers = {};
    state.labels.forEach(function (l) { reviewers[l.annotator] = true; });
    var list = el("labels-detail");
    clear(list);
    if (show) add(list, h("p", { "class": "small", id: "reviewer-count" }, Object.keys(reviewers).length + " reviewer(s) labelled this sample: " + Object.keys(reviewers).join(", ")));
  }
  function drawProgress() {
    var p = el("progress");
    if (!name) { p.hidden = true; return; }
    var done = state.progress.done[name] || 0;
    p.textContent = "random queue: you labelled " + done + " of " + state.progress.total;
    p.hidden = false;
  }
  // The run's random labels against what a corrected figure needs (the server words it:
  // harness/view/label_progress.py); redrawn from every state a save returns.
  function drawCorrected() {
    var c = state.corrected, box = el("corrected-progress"), list = el("cp-figures");
    if (!c) { box.hidden = true; return; }
    clear(list);
    el("cp-width").textContent = c.unavailable ? "" : "(every reviewer's random labels; planned for an interval of ±" + c.half_width + " at " + Math.round(c.confidence * 100) + "%)";
    if (c.unavailable) list.appendChild(h("li", null, c.unavailable));
    c.figures.forEach(function (f) {
      var bar = f.goal ? h("progress", { value: String(Math.min(f.labelled, f.goal)), max: String(f.goal), "aria-hidden": "true" }) : null;
      list.appendChild(h("li", { "class": "cp-" + f.stage, "data-figure": f.figure, "data-labelled": String(f.labelled) },
        h("strong", null, f.figure + ": "), bar, bar ? " " : null, f.text));
    });
    if (c.note) list.appendChild(h("li", { "class": "cp-note muted" }, c.note));
    box.hidden = false;
  }
  function refresh() {
    var n = changes().length;
    el("save-labels").disabled = !name || n === 0 || saving;
    var waiting = data.targets.filter(function (t) { return !(t.target in picked) && (comments[t.target] || "").trim(); });
    if (!saving) el("save-status").textContent = (n ? n + " unsaved" : "") + (waiting.length ? (n ? "; " : "") + "a comment waits for its question's level (" + waiting[0].title + ")" : "");
  }
  function redraw() { drawRevealed(); drawProgress(); drawCorrected(); refresh(); }

  // ---- saving ----
  function showError(text) { var e = el("label-error"); e.textContent = text; e.hidden = !text; }
  function save() {
    var labels = changes();
    if (!name || !labels.length || saving) return Promise.resolve(true);
    saving = true; refresh();
    el("save-status").textContent = "saving…";
    return fetch(data.api, {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ scenario_id: data.scenario_id, epoch: data.epoch, annotator: name, random: data.random, labels: labels })
    }).then(function (r) {
      return r.json().then(function (body) { return { ok: r.ok, body: body }; }, function () { return { ok: false, body: { error: "the server answered " + r.status } }; });
    }).then(function (res) {
      saving = false;
      if (!res.ok) { showError(res.body.error || "not saved"); el("save-status").textContent = "not saved"; refresh(); return false; }
      showError("");
      state = res.body.state;
      redraw();
      el("save-status").textContent = "saved " + res.body.stored + " label" + (res.body.stored === 1 ? "" : "s");
      return true;
    }, function () {
      saving = false; showError("the server could not be reached: nothing was saved"); refresh(); return false;
    });
  }
  function go(which) {
    var url = data.queue[which];
    if (!url) return;
    save().then(function (ok) { if (ok) location.href = url; });
  }

  // ---- the reviewer's name ----
  function setName(value) {
    name = value;
    el("reviewer-form").hidden = !!name;
    el("reviewer-line").hidden = !name;
    el("reviewer-shown").textContent = name || "";
    picked = {}; comments = {};
    drawQuestions();
    redraw();
  }
  el("reviewer-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var value = el("reviewer-name").value.trim();
    if (!value) return;
    localStorage.setItem(NAME_KEY, value);
    setName(value);
  });
  el("reviewer-change").addEventListener("click", function () {
    el("reviewer-name").value = name || "";
    name = null;
    el("reviewer-form").hidden = false; el("reviewer-line").hidden = true;
    el("reviewer-name").focus();
    refresh();
  });
  el("show-judge").addEventListener("change", redraw);
  el("save-labels").addEventListener("click", function () { save(); });

  // ---- save as scenario ----
  el("save-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var out = el("save-result");
    out.textContent = "saving…"; out.className = "small";
    fetch(data.save_api, {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ scenario_id: data.scenario_id, epoch: data.epoch, folder: el("save-folder").value, id: el("save-id").value })
    }).then(function (r) { return r.json().then(function (body) { return { ok: r.ok, body: body }; }); }).then(function (res) {
      out.className = "small " + (res.ok ? "saved" : "banner bad");
      clear(out);
      if (res.ok) add(out, ["Saved ", h("code", { id: "saved-path" }, res.body.path), " (in the served folder). Check it with ", h("code", null, "harness validate " + res.body.path), "."]);
      else out.textContent = res.body.error || "not saved";
    }, function () { out.textContent = "the server could not be reached: nothing was saved"; });
  });

  // ---- the keyboard ----
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var typing = e.target && (e.target.tagName === "TEXTAREA" || (e.target.tagName === "INPUT" && e.target.type !== "radio" && e.target.type !== "checkbox"));
    if (typing) { if (e.key === "Escape") e.target.blur(); return; }
    if (!name) return;
    var t = data.targets[current];
    if (/^[1-9]$/.test(e.key) && t) {
      var j = Number(e.key) - 1;
      if (j < t.values.length) { e.preventDefault(); pick(current, j, true); }
    } else if (e.key === "j" || e.key === "k") {
      current = Math.min(Math.max(current + (e.key === "j" ? 1 : -1), 0), data.targets.length - 1);
      focusQuestion(true);
    } else if (e.key === "c" && t) {
      e.preventDefault();
      var area = document.querySelector('#verdicts fieldset[data-index="' + current + '"] textarea');
      if (area) area.focus();
    } else if (e.key === "s") { save(); } else if (e.key === "n") { go("next"); } else if (e.key === "p") { go("prev"); } else if (e.key === "v" && !labelled()) {
      el("show-judge").checked = !el("show-judge").checked; redraw();
    }
  });

  loadData("label-data").then(function (d) {
    data = d; state = d.state;
    var conv = el("conversation");
    if (parts) add(conv, [parts.conversation(d.sample), parts.trajectory(d.sample)]);
    el("reviewer-form").hidden = false;
    var stored = localStorage.getItem(NAME_KEY);
    setName(stored && stored.trim() ? stored : null);
    if (!name) el("reviewer-name").focus();
    page.dataset.ready = "true";
  });
})();
