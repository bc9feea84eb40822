// yarnflow's web page: plain JavaScript and SVG over the REST API beside it.
// Every URL is relative, so the page works at any prefix (YARN's proxy, Skein's page
// route, or a local run's root). Text from the job (names, failures) only ever goes
// into textContent, never into markup.
"use strict";

const STATES = ["CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING",
                "FINISHED", "CANCELING", "CANCELED", "FAILED"];
const SVG = "http://www.w3.org/2000/svg";
let refreshMs = 2000;
let timer = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

async function get(path) {
  const response = await fetch(path, {cache: "no-store"});
  if (!response.ok) {
    let message = response.status + " " + response.statusText;
    try { message = (await response.json()).errors.join("; "); } catch (e) { /* keep it */ }
    throw new Error(path + ": " + message);
  }
  return response.json();
}

const number = n => (n === null || n === undefined || n < 0) ? "-" : n.toLocaleString("en-US");
function bytes(n) {
  if (n === null || n === undefined) return "?";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}
const percent = f => (f === null || f === undefined) ? "-" : Math.floor(f * 100) + " %";
const seconds = ms => ms < 0 ? "-" : (ms / 1000).toFixed(1) + " s";
const time = ms => ms > 0 ? new Date(ms).toLocaleTimeString() : "-";
const spec = s => s ? `${s.cpu}c-${s.memory_mb}m${s.gpus ? "-" + s.gpus + "g" : ""}` : "-";
const skew = x => x === null || x === undefined ? "-" : x.toFixed(2);

function table(headers, rows, numeric) {
  const head = el("tr", {}, ...headers.map(h => el("th", {}, h)));
  const body = rows.map(row => el("tr", row.attrs || {}, ...row.cells.map((cell, i) =>
    el("td", numeric && numeric.includes(i) ? {class: "num"} : {}, cell))));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...body));
}

function stateCell(state) { return el("span", {class: "state state-" + state}, state); }

// --- the jobs list and the executors ----------------------------------------------------
async function home() {
  const [overview, jobs, tms] = await Promise.all(
    [get("overview"), get("jobs/overview"), get("taskmanagers")]);
  const cards = el("div", {class: "cards"},
    ...[["jobs running", overview["jobs-running"]], ["finished", overview["jobs-finished"]],
        ["failed", overview["jobs-failed"]], ["cancelled", overview["jobs-cancelled"]],
        ["executors", overview.taskmanagers], ["starting", overview["taskmanagers-starting"]],
        ["slots used", overview["slots-total"] - overview["slots-available"]],
        ["slots", overview["slots-total"]], ["pending slot requests", overview["pending-slot-requests"]]]
      .map(([label, value]) => el("div", {class: "card"}, el("b", {}, number(value)), label)));
  const jobRows = jobs.jobs.map(job => ({attrs: {"data-job": job.jid}, cells: [
    el("a", {href: "#/jobs/" + job.jid}, job.name), job.jid, stateCell(job.state),
    time(job["start-time"]), seconds(job.duration), number(job.restarts),
    STATES.filter(s => job.tasks[s]).map(s => `${job.tasks[s]} ${s.toLowerCase()}`).join(", ")]}));
  return [
    el("h2", {}, "Overview"), cards,
    el("h2", {}, "Jobs"),
    jobRows.length ? table(["job", "id", "state", "started", "duration", "restarts", "subtasks"],
                           jobRows, [5]) : el("p", {class: "muted"}, "No jobs yet."),
    el("h2", {}, "Executors and containers"), executorsTable(tms.taskmanagers),
    ...blockedHosts(overview["blocked-hosts"] || [])];
}

function blockedHosts(blocked) {
  return blocked.length ? [el("h2", {}, "Blocked hosts"), table(
    ["host", "since", "until", "cause"],
    blocked.map(b => ({attrs: {"data-blocked": b.host},
                       cells: [b.host, time(b.since), time(b.until), b.cause]})))] : [];
}

function speculations(attempts) {
  return attempts.length ? [el("h2", {}, "Speculative attempts"), table(
    ["subtask", "attempt", "host", "slow attempt", "slow host", "started", "outcome", "why"],
    attempts.map(a => ({attrs: {"data-speculation": `${a.subtask}#${a.attempt}`, "data-outcome": a.outcome},
                        cells: [a.subtask, a.attempt, a.host || "-", a["slow-attempt"],
                                a["slow-host"] || "-", time(a.started), a.outcome,
                                `slow: ${a.reason}` + (a.note ? `; ${a.note}` : "")]})))] : [];
}

// A streaming job's checkpoints (Flink's /jobs/:id/checkpoints): counts, the latest,
// and the history, each with its duration, size and slowest alignment.
function checkpointsView(stats) {
  if (!stats) return [];
  const c = stats.counts, latest = stats.latest.completed;
  const parts = [el("h2", {}, "Checkpoints"),
    el("p", {"data-checkpoint-counts": ""}, `${c.completed} completed · ${c.failed} failed · `
      + `${c.in_progress} in progress` + (c.restored ? " · restored from "
      + `${stats.latest.restored.id} (${stats.latest.restored.external_path})` : "")
      + (latest ? ` · latest ${latest.id}: ${seconds(latest.end_to_end_duration)}, `
         + `${bytes(latest.state_size)} in ${latest.external_path}` : ""))];
  if (stats.history.length) {
    parts.push(table(["id", "type", "status", "triggered", "duration", "size", "alignment",
                      "acknowledged", "why it failed"],
      stats.history.map(h => ({attrs: {"data-checkpoint": h.id, "data-status": h.status},
        cells: [h.id, h.checkpoint_type, h.status, time(h.trigger_timestamp),
                seconds(h.end_to_end_duration), bytes(h.state_size),
                seconds(h.alignment_duration),
                `${h.num_acknowledged_subtasks}/${h.num_subtasks}`, h.failure_message || ""]})),
      [0, 4, 5, 6]));
  }
  return parts;
}

const watermark = ms => (ms === null || ms === undefined) ? "-" : new Date(ms).toISOString();

function executorsTable(executors) {
  if (!executors.length) return el("p", {class: "muted"}, "No executors: none started yet, or all were given back.");
  return table(["executor", "state", "YARN container", "node", "host", "container size",
                "slot profile", "slots used / total", "worker spec"],
    executors.map(e => ({attrs: {"data-executor": e.id}, cells: [
      e.id, e.waiting ? `${e.state}: ${e.waiting}` : e.state, e["container-id"] || "-", e.node || "-", e.host || "-", spec(e.container),
      spec(e["slot-profile"]), `${e["slots-used"]} / ${e.slotsNumber}`, e["worker-spec"]]})),
    [7]);
}

// --- one job: the DAG, the vertices, the subtasks, the failures --------------------------
function layout(nodes) {
  const byId = Object.fromEntries(nodes.map(n => [n.id, n]));
  const level = {};
  const depth = n => {
    if (level[n.id] !== undefined) return level[n.id];
    level[n.id] = 0;   // a guard; a JobGraph has no cycles
    level[n.id] = Math.max(0, ...n.inputs.filter(i => byId[i.id]).map(i => depth(byId[i.id]) + 1));
    return level[n.id];
  };
  nodes.forEach(depth);
  const rows = {};
  const place = {};
  for (const n of nodes) {
    const l = level[n.id];
    rows[l] = (rows[l] || 0) + 1;
    place[n.id] = {x: 20 + l * 300, y: 20 + (rows[l] - 1) * 130};
  }
  return place;
}

function dag(plan, job) {
  const W = 230, H = 96;
  const vertices = Object.fromEntries(job.vertices.map(v => [v.id, v]));
  const place = layout(plan.nodes);
  const width = Math.max(...Object.values(place).map(p => p.x)) + W + 40;
  const height = Math.max(...Object.values(place).map(p => p.y)) + H + 30;
  const root = svg("svg", {class: "dag", width, height, viewBox: `0 0 ${width} ${height}`,
                           role: "img", "aria-label": "the job's dataflow graph"});
  for (const node of plan.nodes) {
    for (const input of node.inputs) {
      const from = place[input.id], to = place[node.id];
      if (!from) continue;
      const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2;
      const blocking = input.exchange === "BLOCKING";
      root.append(svg("path", {class: "edge" + (blocking ? " blocking" : ""),
        d: `M${x1},${y1} C${x1 + 40},${y1} ${x2 - 40},${y2} ${x2},${y2}`}));
      root.append(svg("text", {class: "ship", x: (x1 + x2) / 2 - 30, y: (y1 + y2) / 2 - 6},
        input.ship_strategy + (input.keys && input.keys.length ? `(${input.keys.join(", ")})` : "")
        + (blocking ? " · blocking" : "")));
    }
  }
  for (const node of plan.nodes) {
    const v = vertices[node.id] || {tasks: {}, metrics: {}, status: "CREATED", parallelism: node.parallelism};
    const p = place[node.id];
    const g = svg("g", {class: "vertex status-" + v.status, "data-vertex": node.description,
                        "data-status": v.status, transform: `translate(${p.x},${p.y})`});
    g.append(svg("rect", {class: "box", width: W, height: H, rx: 4}));
    g.append(svg("text", {class: "title", x: 8, y: 17},
      `${node.description} ×${v.parallelism || (node.adaptive ? "auto" : 0)}`));
    g.append(svg("text", {x: 8, y: 33}, `${v.status} · ${spec(node.profile)}`));
    if (v.operators && v.operators.length > 1) {     // a chain: each operator's own figures
      g.append(svg("title", {}, v.operators.map(o => `${o.name}: in ${number(o.metrics["read-records"])}`
        + ` rec · out ${number(o.metrics["write-records"])} rec`
        + ` · ${Math.floor(o.metrics.progress * 100)} %`).join("\n")));
    }
    let x = 8;
    const total = Math.max(1, v.parallelism);
    for (const state of STATES) {
      const n = v.tasks[state] || 0;
      if (!n) continue;
      const w = (W - 16) * n / total;
      const seg = svg("rect", {class: "seg-" + state, x, y: 40, width: w, height: 8});
      seg.append(svg("title", {}, `${n} ${state.toLowerCase()}`));
      g.append(seg);
      x += w;
    }
    const m = v.metrics;
    g.append(svg("text", {x: 8, y: 66}, `in ${number(m["read-records"])} rec · ${bytes(m["read-bytes"])} · ${percent(m.progress)}`));
    g.append(svg("text", {x: 8, y: 82}, `out ${number(m["write-records"])} rec · ${bytes(m["write-bytes"])} · skew ${skew(m["input-skew"])}`));
    root.append(g);
  }
  return root;
}

function spilled(m) {
  // past its memory an operator spills to local disk: bytes and files (issue 57)
  return m["spill-files"] ? `${bytes(m["spilled-bytes"])} (${m["spill-files"]} files)` : "-";
}

async function jobPage(jid) {
  const [job, plan, exceptions, tms, checkpoints] = await Promise.all(
    [get("jobs/" + jid), get("jobs/" + jid + "/plan"), get("jobs/" + jid + "/exceptions"),
     get("taskmanagers"),
     get("jobs/" + jid + "/checkpoints").catch(() => null)]);   // a batch job has none
  const subtasks = await Promise.all(job.vertices.map(v => get(`jobs/${jid}/vertices/${v.id}`)));
  const parts = [
    el("h2", {}, job.name, " ", stateCell(job.state)),
    el("p", {}, `job ${job.jid} · started ${time(job["start-time"])} · ${seconds(job.duration)}`
      + ` · ${job.restarts} restart(s) · ApplicationMaster attempt ${job["application-attempt"]}`),
  ];
  if (job.failure) parts.push(el("p", {class: "error"}, job.failure));
  parts.push(dag(plan.plan, job));
  parts.push(el("h2", {}, "Vertices"), table(
    ["vertex", "state", "parallelism", "slot profile", "progress", "records in", "records out",
     "bytes in", "bytes out", "in max/mean", "spilled", "inputs"],
    job.vertices.map(v => ({attrs: {"data-vertex": v.name}, cells: [
      v.name, stateCell(v.status), v.parallelism, spec(v["subtask-profile"]),
      percent(v.metrics.progress), number(v.metrics["read-records"]), number(v.metrics["write-records"]),
      bytes(v.metrics["read-bytes"]), bytes(v.metrics["write-bytes"]), skew(v.metrics["input-skew"]),
      spilled(v.metrics),
      v.inputs.map(i => `${i.ship_strategy} ← ${i.producer}`).join(", ") || "(source)"]})),
    [2, 4, 5, 6, 7, 8, 9, 10]));
  const spilling = job.vertices.filter(v => v.metrics["spilled-bytes"] > v.metrics["read-bytes"]);
  for (const v of spilling) {
    parts.push(el("p", {class: "warning", "data-spill-warning": v.name},
      `${v.name} spilled ${bytes(v.metrics["spilled-bytes"])}, more than it read: its slots are `
      + "too small for what it holds; raise taskmanager.default-slot.memory or "
      + "taskmanager.memory.managed.fraction"));
  }
  const timed = job.vertices.filter(v => v.metrics.watermark !== null && v.metrics.watermark !== undefined
                                       || v.metrics.lag !== null && v.metrics.lag !== undefined);
  if (timed.length) {
    parts.push(el("h2", {}, "Event time"), table(["vertex", "watermark", "records behind"],
      timed.map(v => ({attrs: {"data-watermark": v.name},
                       cells: [v.name, watermark(v.metrics.watermark), number(v.metrics.lag)]})),
      [2]));
  }
  parts.push(...checkpointsView(checkpoints));
  const decided = job.vertices.filter(v => v.decision);
  if (decided.length) {
    parts.push(el("h2", {}, "Decided at run time"), table(["vertex", "decision"],
      decided.map(v => ({attrs: {"data-decision": v.name}, cells: [v.name, v.decision]}))));
  }
  const sorted = job.vertices.filter(v => (v.ranges || []).length);
  if (sorted.length) {
    parts.push(el("h2", {}, "Sort ranges"), table(["vertex", "range", "first key", "last key",
                                                   "records", "bytes"],
      sorted.flatMap(v => v.ranges.map(r => ({attrs: {"data-range": `${v.name}#${r.subtask}`},
        cells: [v.name, r.subtask + 1, r.first, r.last, number(r["read-records"]),
                bytes(r["read-bytes"])]}))), [1, 4, 5]));
  }
  parts.push(el("h2", {}, "Subtasks"), table(
    ["subtask", "state", "attempt", "executor", "YARN container", "host", "slot profile",
     "input", "records in", "records out", "spilled", "duration"],
    subtasks.flatMap(v => v.subtasks.map(s => ({cells: [
      `${v.name} (${s.subtask + 1}/${v.parallelism})`, stateCell(s.status), s.attempt,
      s["taskmanager-id"] || "-", s["container-id"] || "-", s.host || "-", spec(s["slot-profile"]),
      s.metrics["inputs-total"] ? `${s.metrics["inputs-done"]}/${s.metrics["inputs-total"]}` : "",
      number(s.metrics["read-records"]), number(s.metrics["write-records"]), spilled(s.metrics),
      seconds(s.duration)]}))),
    [2, 7, 8, 9, 10, 11]));
  parts.push(el("h2", {}, "Executors and containers"), executorsTable(tms.taskmanagers));
  parts.push(...blockedHosts(job["blocked-hosts"] || []));
  parts.push(...speculations(job.speculations || []));
  const entries = exceptions.exceptionHistory.entries;
  parts.push(el("h2", {}, "Failures"), entries.length ? table(
    ["time", "subtask", "attempt", "executor", "host", "cause"],
    entries.map(e => ({cells: [time(e.timestamp), e.taskName || "-", e.attempt,
                                e.taskManagerId || "-", e.location || "-", e.exceptionName]}))) :
    el("p", {class: "muted"}, "None."));
  return parts;
}

async function render() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const match = hash.match(/^\/jobs\/([0-9A-Za-z_.-]+)$/);
  const main = document.getElementById("main");
  try {
    const parts = match ? await jobPage(match[1]) : await home();
    main.replaceChildren(...parts);
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (err) {
    main.replaceChildren(el("p", {class: "error"}, String(err.message || err)));
  }
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(async () => { await render(); schedule(); }, refreshMs);
}

async function start() {
  try {
    const config = await get("config");
    refreshMs = config["refresh-interval"] || refreshMs;
    document.getElementById("application").textContent =
      [config["application-id"], config.mode,
       config["application-attempt"] > 1 ? "attempt " + config["application-attempt"] : ""]
        .filter(Boolean).join(" · ");
  } catch (err) { /* the page still tries the rest */ }
  await render();
  schedule();
}

window.addEventListener("hashchange", () => { render(); schedule(); });
start();
