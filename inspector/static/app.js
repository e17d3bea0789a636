// bargein inspect: one script for every page; data comes from embedded JSON (works from file://).
"use strict";

function readJSON(id) {
  const el = document.getElementById(id);
  return el ? JSON.parse(el.textContent) : null;
}

// Draw a waveform envelope ({min,max} per channel) into a canvas; channel 1 on top.
function drawWave(canvas, env, dur, shade) {
  const ctx = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height;
  ctx.clearRect(0, 0, W, H);
  if (!env || !env.length) return;
  const lanes = env.length;
  const laneH = H / lanes;
  (shade || []).forEach(function (r) {
    const x0 = (r.start / dur) * W, x1 = (r.end / dur) * W;
    ctx.fillStyle = r.color || "rgba(230, 120, 0, 0.30)";
    const top = r.lane === undefined ? 0 : (lanes - 1 - r.lane) * laneH;
    const h = r.lane === undefined ? H : laneH;
    ctx.fillRect(x0, top, Math.max(1, x1 - x0), h);
  });
  for (let c = 0; c < lanes; c++) {
    const lane = lanes - 1 - c;              // channel 1 (assistant) drawn in the upper lane
    const mid = lane * laneH + laneH / 2;
    const e = env[c], n = e.min.length;
    ctx.strokeStyle = c === 1 ? "#3572b0" : "#2f9e62";
    ctx.beginPath();
    for (let i = 0; i < n; i++) {
      const x = (i / n) * W;
      ctx.moveTo(x, mid - e.max[i] * laneH / 2);
      ctx.lineTo(x, mid - e.min[i] * laneH / 2);
    }
    ctx.stroke();
  }
}

function seek(audio, t, play) {
  if (!audio || !isFinite(t)) return;
  audio.currentTime = t;
  if (play) {
    const p = audio.play();
    if (p && p.catch) p.catch(function () { /* autoplay may be refused; seeking still happened */ });
  }
}

function conversationPage() {
  const data = readJSON("page-data");
  const audio = document.getElementById("player");
  const dur = data.duration_s || 1;
  const wave = document.getElementById("wave");
  if (wave) {
    const shade = [];
    data.segments.forEach(function (s) {
      if (s.cut_s !== null && s.stop_s !== null && s.stop_s > s.cut_s) {
        shade.push({ start: s.cut_s, end: s.stop_s, lane: s.channel, color: "rgba(220, 30, 30, 0.25)" });
      }
    });
    drawWave(wave, data.envelope, dur, shade);
  }
  const tl = document.getElementById("timeline");
  if (tl) {
    data.segments.forEach(function (s) {
      const d = document.createElement("div");
      d.className = "seg ch" + s.channel + (s.kind === "backchannel" ? " backchannel" : "");
      d.style.left = (100 * s.start_s / dur) + "%";
      d.style.width = Math.max(0.15, 100 * (s.end_s - s.start_s) / dur) + "%";
      d.title = "message " + s.message_index + ": " + s.text;
      d.textContent = s.message_index;
      d.dataset.t = s.start_s;
      d.addEventListener("click", function () { seek(audio, s.start_s, true); });
      tl.appendChild(d);
    });
    data.cuts.forEach(function (c) {
      const m = document.createElement("div");
      m.className = "cut-marker";
      m.style.left = (100 * c.cut_s / dur) + "%";
      m.dataset.t = c.cut_s;
      m.dataset.message = c.message_index;
      m.title = (c.type || "cut") + " at " + c.cut_s.toFixed(3) + " s (message " + c.message_index + ")";
      m.addEventListener("click", function (ev) { ev.stopPropagation(); seek(audio, c.cut_s, false); });
      tl.appendChild(m);
    });
  }
  document.querySelectorAll(".msg").forEach(function (li) {
    li.addEventListener("click", function (ev) {
      if (ev.target.closest(".item") || ev.target.closest("a")) return;
      const t = parseFloat(li.dataset.t);
      if (isFinite(t)) seek(audio, t, true);
    });
  });
  document.querySelectorAll("a.cut-link").forEach(function (a) {
    a.addEventListener("click", function (ev) { ev.preventDefault(); seek(audio, parseFloat(a.dataset.t), false); });
  });
  const head = document.getElementById("playhead");
  const clock = document.getElementById("clock");
  function tick() {
    if (audio && head) {
      head.style.left = (100 * audio.currentTime / dur) + "%";
      if (clock) clock.textContent = audio.currentTime.toFixed(3) + " s";
      let cur = null;
      data.segments.forEach(function (s) {
        if (s.kind === "message" && audio.currentTime >= s.start_s && audio.currentTime < s.end_s) cur = s.message_index;
      });
      document.querySelectorAll(".msg.playing").forEach(function (el) { el.classList.remove("playing"); });
      if (cur !== null) {
        const el = document.getElementById("m" + cur);
        if (el) el.classList.add("playing");
      }
    }
  }
  if (audio) {
    audio.addEventListener("timeupdate", tick);
    audio.addEventListener("seeked", tick);
  }
}

function miniWaves() {
  document.querySelectorAll("canvas.mini").forEach(function (cv) {
    const d = JSON.parse(cv.dataset.wave);
    const shade = [];
    (d.regions || []).forEach(function (r) { shade.push({ start: r.start_s, end: r.end_s }); });
    (d.edits || []).forEach(function (e) {
      shade.push({ start: e.at_s, end: e.at_s + Math.max(e.duration_s, 0.02), lane: e.channel });
    });
    drawWave(cv, d.env, d.dur || 1, shade);
  });
}

function indexPage() {
  const entries = readJSON("entries") || [];
  const PAGE = 50;
  let page = 0;
  const sel = {
    domain: document.getElementById("f-domain"), type: document.getElementById("f-type"),
    depth: document.getElementById("f-depth"), outcome: document.getElementById("f-outcome"),
  };
  function options(select, values) {
    Array.from(new Set(values)).sort().forEach(function (v) {
      const o = document.createElement("option");
      o.value = v; o.textContent = v; select.appendChild(o);
    });
  }
  options(sel.domain, entries.map(function (e) { return e.domain; }));
  options(sel.type, [].concat.apply([], entries.map(function (e) { return e.types; })));
  options(sel.depth, [].concat.apply([], entries.map(function (e) { return e.depths; })));
  options(sel.outcome, entries.map(function (e) { return e.outcome; }));
  function matches(e) {
    return (!sel.domain.value || e.domain === sel.domain.value) &&
      (!sel.type.value || e.types.indexOf(sel.type.value) >= 0) &&
      (!sel.depth.value || e.depths.indexOf(sel.depth.value) >= 0) &&
      (!sel.outcome.value || e.outcome === sel.outcome.value);
  }
  function cell(tr, content, href) {
    const td = document.createElement("td");
    if (href) { const a = document.createElement("a"); a.href = href; a.textContent = content; td.appendChild(a); }
    else td.textContent = content;
    tr.appendChild(td);
    return td;
  }
  function render() {
    const shown = entries.filter(matches);
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    const body = document.getElementById("rows");
    body.textContent = "";
    shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function (e) {
      const tr = document.createElement("tr");
      tr.className = "entry";
      tr.dataset.id = e.id;
      cell(tr, e.id, e.href); cell(tr, e.domain); cell(tr, e.goal); cell(tr, e.types.join(", "));
      cell(tr, e.depths.join(", ")); cell(tr, e.outcome); cell(tr, e.n_messages);
      cell(tr, e.duration_s + " s");
      const td = cell(tr, "");
      if (e.repair) { const a = document.createElement("a"); a.href = e.repair; a.textContent = "repair"; td.appendChild(a); td.appendChild(document.createTextNode(" ")); }
      if (e.timing) { const a = document.createElement("a"); a.href = e.timing; a.textContent = "timing"; td.appendChild(a); }
      body.appendChild(tr);
    });
    document.getElementById("count").textContent = shown.length + " of " + entries.length + " conversations";
    document.getElementById("pageno").textContent = "page " + (page + 1) + " of " + pages;
  }
  Object.keys(sel).forEach(function (k) { sel[k].addEventListener("change", function () { page = 0; render(); }); });
  document.getElementById("prev").addEventListener("click", function () { page = Math.max(0, page - 1); render(); });
  document.getElementById("next").addEventListener("click", function () { page += 1; render(); });
  render();
}

document.addEventListener("DOMContentLoaded", function () {
  const kind = document.body.dataset.page;
  if (kind === "index") indexPage();
  if (kind === "conversation") conversationPage();
  miniWaves();
});
