/* llmecon page: read the controls, call the JSON API, draw what it answers.
   Thin like the CLI: every number comes from the server; this file only picks fields,
   converts units for display (s -> ms, B -> GB, FLOP/s -> TFLOP/s) and formats them. */
"use strict";

const $ = (id) => document.getElementById(id);
const BOUND = { compute: "#c0392b", memory: "#2471a3", comm: "#e67e22", overhead: "#7d3c98" };
const PALETTE = ["#2471a3", "#c0392b", "#27ae60", "#8e44ad", "#e67e22", "#16a085"];
const CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
const TIMEOUT_MS = 60000;

// ---- formatting (display only) ---------------------------------------------------------------
const ok = (x) => x !== null && x !== undefined && Number.isFinite(Number(x));
const int = (x) => (ok(x) ? Math.round(x).toLocaleString("en-US") : "—");
function sig(x, d = 3) {
  if (!ok(x)) return "—";
  if (Math.abs(x) >= 10 ** d) return int(x);
  return Number(Number(x).toPrecision(d)).toLocaleString("en-US", { maximumSignificantDigits: d });
}
function si(x, unit, d = 3) {
  if (!ok(x)) return "—";
  const p = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]].find(([f]) => Math.abs(x) >= f);
  return p ? `${sig(x / p[0], d)} ${p[1]}${unit}` : `${sig(x, d)} ${unit}`;
}
const ms = (s) => (ok(s) ? `${sig(s * 1e3)} ms` : "—");
const dur = (s) => (!ok(s) ? "—" : s < 1 ? ms(s) : s < 120 ? `${sig(s)} s` : `${sig(s / 60)} min`);
const bytes = (b) => si(b, "B");
const params = (n) => si(n, "").replace(/ ([kMGT])$/, (_, p) => ({ k: "k", M: "M", G: "B", T: "T" })[p]);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

// ---- reading the controls --------------------------------------------------------------------
function field(form, name) {
  const el = form.elements[name];
  if (!el) return undefined;
  if (el.multiple) return Array.from(el.selectedOptions, (o) => o.value);
  const s = el.value.trim();
  if (s === "") return undefined;
  if (el.tagName === "SELECT") return el.dataset.num === undefined ? s : Number(s); // data-num: a number choice
  if (el.getAttribute("inputmode") === null) return s;
  const x = Number(s.replace(/[,_\s]/g, ""));
  // not a number: send the text as typed, so the server's 422 names the field and the reason
  return Number.isFinite(x) ? x * Number(el.dataset.scale || 1) : s;
}
function body(form, names) {
  const out = {};
  for (const n of names) {
    const v = field(form, n);
    if (v !== undefined) out[n] = v;
  }
  return out;
}
const DEP = ["model", "system", "tp", "ep", "pp", "weight_dtype", "kv_dtype"];
const dep = () => body($("deployment"), [...DEP, "mode"]);
/** Speculative decoding: k, and the acceptance as a list of numbers ("0.9, 0.8"); text that is not
    one goes as typed, so the server's 422 names the field. /api/context does not model it (not sent). */
function spec() {
  const out = body($("deployment"), ["spec_tokens"]);
  const acc = field($("deployment"), "acceptance");
  if (acc !== undefined) {
    const parts = String(acc).split(/[,;\s]+/).filter(Boolean).map(Number);
    out.acceptance = parts.length && parts.every(Number.isFinite) ? parts : acc;
  }
  return out;
}
const CACHE = ["cache_hit", "cached_prefix"];
/** TCO inputs (docs/tco.md): the fields show the selected system's sourced catalogue defaults (``/api/tco`` with
    ``defaults: true``; class "sourced", the source in the title) until the user types; a blank one is left out,
    so the server's 422 names what is missing. */
const TCO_KEYS = ["chip_capex_usd", "system_capex_usd", "amortisation_years", "cost_of_capital", "pue", "usd_per_kwh",
  "hosting_usd_per_rack_month", "chips_per_rack", "hosting_usd_per_chip_month", "power_utilization", "watts_per_chip"];
const tcoOn = () => $("use_tco").checked;
const tcoInputs = () => body($("tco-form"), TCO_KEYS);
const tcoFilled = () => Object.keys(tcoInputs()).length > 0;
const tcoDefaults = {}; // system -> /api/tco's answer with defaults: true, or null (the catalogue has none)
const tcoEdited = new Set(); // TCO inputs the user typed since the system's defaults were shown
let tcoSystem = null; // the system whose defaults the form shows
/** The price of every priced request: the TCO object when "Price by TCO" is on and an input was typed; on with
    none typed, nothing (the server prices each system by its own sourced defaults, price_source tco_defaults);
    off, the $ / chip-h box (empty: the same defaults). */
const pricing = () => (tcoOn() && tcoEdited.size ? { tco: tcoInputs() } : tcoOn() ? {}
  : body($("deployment"), ["price_per_chip_hour"]));
const priced = () => tcoOn() || field($("deployment"), "price_per_chip_hour") !== undefined;
const bodies = {
  analyze: () => Object.assign(dep(), spec(), body($("deployment"), ["context", "batch"]), pricing()),
  context: () => Object.assign(dep(), body($("deployment"), ["batch"]), pricing()),
  cost: () => Object.assign(dep(), spec(), body($("deployment"), ["context", "batch", ...CACHE]), pricing()),
  plan: () => Object.assign(body($("deployment"), ["model", "weight_dtype", "kv_dtype", "mode", "context", ...CACHE]),
    pricing(), spec(), body($("plan-form"), ["systems", "tpot_s", "ttft_s"])),
  frontier: () => Object.assign(body($("deployment"), ["model", "weight_dtype", "kv_dtype", "mode", "context"]),
    pricing(), spec(), body($("plan-form"), ["systems", "tpot_s", "ttft_s", "interactivity"]), { frontier: true }),
  simulate: () => Object.assign(body($("deployment"), [...DEP, "mode"]), pricing(), spec(),
    body($("sim-form"), ["rate", "requests", "prompt_tokens", "output_tokens", "policy"])),
  tco: () => Object.assign(body($("deployment"), ["system"]), tcoEdited.size ? tcoInputs() : { defaults: true }),
  prices: () => {
    const [provider, model] = ($("sheet").value || "|").split("|");
    return { provider, model };
  },
  train: () => trainBody(),
};
const FORMS = { analyze: "deployment", context: "deployment", cost: "deployment", plan: "plan-form",
  frontier: "plan-form", simulate: "sim-form", prices: "prices-form", tco: "tco-form",
  train: "train-form" };

// ---- errors and loading state ----------------------------------------------------------------
const problems = {}; // source -> [{field, msg}]
function setProblems(source, list) {
  problems[source] = list;
  document.querySelectorAll(".invalid").forEach((el) => { el.classList.remove("invalid"); el.removeAttribute("aria-invalid"); });
  document.querySelectorAll(".field-msg").forEach((el) => { el.textContent = ""; });
  const lines = [];
  const lineOf = (p) => {
    const named = p.field && (p.msg.startsWith(`${p.field} `) || p.msg.startsWith(`${p.field}:`));
    return p.field && !named ? `${p.field}: ${p.msg}` : p.msg;
  };
  for (const [src, ps] of Object.entries(problems)) {
    for (const p of ps) {
      const line = lineOf(p);
      if (!lines.includes(line)) lines.push(line);
      const form = $(p.tco ? "tco-form" : FORMS[src] || "deployment");
      const el = p.field && ((form && form.elements[p.field]) || $("deployment").elements[p.field]);
      if (el && el.classList) { el.classList.add("invalid"); el.setAttribute("aria-invalid", "true"); }
      // a TCO input's message also shows next to it (the panel is long; the box above may be out of view)
      const note = p.tco && document.querySelector(`.field-msg[data-for="${p.field}"]`);
      if (note && !note.textContent) note.textContent = p.msg;
    }
  }
  // a panel far down the page also shows its own problems in it (the box above may be out of view)
  document.querySelectorAll("[data-problems]").forEach((el) => {
    el.textContent = (problems[el.dataset.problems] || []).map(lineOf).join("\n");
  });
  const box = $("error");
  box.innerHTML = lines.map((l) => `<div>${esc(l)}</div>`).join("");
  box.hidden = lines.length === 0;
}
function problemsOf(status, data, source) {
  if (data && Array.isArray(data.detail)) {
    return data.detail.map((d) => {
      const loc = Array.isArray(d.loc) ? d.loc.map(String) : [];
      // a TCO input: ["body", "tco", key] on the priced endpoints, ["body", key] on /api/tco
      if (loc[0] === "body" && loc[1] === "tco" && loc.length > 2) {
        return { field: loc[2], tco: true, msg: String(d.msg).replace(/^tco\./, "") };
      }
      const f = loc[0] === "body" && loc.length > 1 ? loc[1] : null;
      return { field: f, tco: source === "tco" && TCO_KEYS.includes(f), msg: String(d.msg) };
    });
  }
  const why = data && typeof data.detail === "string" ? data.detail : "no answer";
  return [{ field: null, msg: `server error ${status}: ${why}` }];
}

let busy = 0;
const inFlight = {}; // source -> AbortController
function setBusy(delta) {
  busy += delta;
  document.body.dataset.busy = String(busy);
  $("status").textContent = busy > 0 ? "loading…" : "";
}
function setLoading(source, on) {
  document.querySelectorAll(`.card[data-src="${source}"]`).forEach((c) => c.classList.toggle("loading", on));
  const btn = { plan: "plan-button", frontier: "frontier-button", simulate: "sim-button", prices: "prices-button",
    train: "train-button" }[source];
  if (btn) $(btn).disabled = on;
}

/** Dim what still shows the last good answer while the inputs are in error. */
function setStale(source, on) {
  document.querySelectorAll(`[data-src="${source}"]`).forEach((c) => c.classList.toggle("stale", on));
}

/** POST (or GET) one endpoint; returns the JSON answer, or null after showing why not. */
async function call(source, path, payload) {
  if (inFlight[source]) inFlight[source].abort();
  const ac = (inFlight[source] = new AbortController());
  const timer = setTimeout(() => ac.abort(), TIMEOUT_MS);
  setBusy(+1);
  setLoading(source, true);
  try {
    const init = payload === undefined ? {} : {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(payload) };
    const r = await fetch(path, { ...init, signal: ac.signal });
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    if (inFlight[source] !== ac) return null; // a newer request replaced this one
    if (!r.ok) { setProblems(source, problemsOf(r.status, data, source)); setStale(source, true); return null; }
    setProblems(source, []);
    setStale(source, false);
    return data;
  } catch (e) {
    if (inFlight[source] === ac) {
      const msg = e.name === "AbortError" ? `no answer within ${TIMEOUT_MS / 1000} s` : e.message;
      setProblems(source, [{ field: null, msg: `${path}: ${msg}` }]);
      setStale(source, true);
    }
    return null;
  } finally {
    clearTimeout(timer);
    if (inFlight[source] === ac) { delete inFlight[source]; setLoading(source, false); }
    setBusy(-1);
  }
}

// ---- plots -----------------------------------------------------------------------------------
const baseLayout = (extra) => Object.assign({
  margin: { l: 62, r: 20, t: 24, b: 42 }, font: { size: 11, family: "system-ui, sans-serif" },
  legend: { orientation: "h", y: 1.02, yanchor: "bottom", x: 0 }, hovermode: "closest", paper_bgcolor: "white", plot_bgcolor: "white",
}, extra);
const logAxis = (title, extra) => Object.assign({ type: "log", title: { text: title }, gridcolor: "#eee",
  zeroline: false, exponentformat: "SI" }, extra);
const D = { dtick: 1 }; // ticks at powers of ten only, for axes spanning several decades
const vline = (x, xref, color = "#555", dash = "dot") => ({ type: "line", xref, yref: `${xref.replace("x", "y")} domain`,
  x0: x, x1: x, y0: 0, y1: 1, line: { color, width: 1.5, dash } });
// annotations on a log axis take log10 of the value (shapes take the value itself)
const label = (x, xref, text, y = 1) => ({ x: Math.log10(x), xref, y, yref: `${xref.replace("x", "y")} domain`, text, showarrow: false,
  xanchor: "left", yanchor: "top", font: { size: 10, color: "#444" }, bgcolor: "rgba(255,255,255,0.8)" });
function draw(id, traces, layout) { Plotly.react($(id), traces, baseLayout(layout), CONFIG); }

/** One marker trace per bound (coloured), over a thin grey line through all rows. */
function byBound(rows, x, y, name, axes = {}) {
  const line = { x: rows.map(x), y: rows.map(y), mode: "lines", line: { color: "#bbb", width: 1 },
    hoverinfo: "skip", showlegend: false, ...axes };
  const bounds = [...new Set(rows.map((r) => r.bound).filter(Boolean))];
  return [line, ...bounds.map((b) => {
    const sel = rows.filter((r) => r.bound === b);
    return { x: sel.map(x), y: sel.map(y), mode: "markers", name: `${name}${b}-bound`, legendgroup: b,
      marker: { color: BOUND[b] || "#333", size: 6 }, text: sel.map((r) => `batch ${int(r.batch)}`), ...axes };
  })];
}

function drawBatch(a) {
  const usd = a.curve.some((r) => ok(r.usd_per_mtok));
  const cost = usd ? (r) => r.usd_per_mtok : (r) => r.chip_s_per_token;
  const chosen = a.decode_at_batch.batch;
  const lat = byBound(a.curve, (r) => r.batch, (r) => r.step_s * 1e3, "");
  const cst = byBound(a.curve, (r) => r.batch, cost, "", { xaxis: "x2", yaxis: "y2" }).map((t) => ({ ...t, showlegend: false }));
  const star = { x: [chosen], y: [a.decode_at_batch.step_s * 1e3], mode: "markers", name: `chosen batch ${int(chosen)}`,
    marker: { symbol: "star", size: 14, color: "#111" } };
  draw("plot-batch", [...lat, ...cst, star], {
    grid: { rows: 1, columns: 2, pattern: "independent" },
    xaxis: logAxis("decode batch", D), yaxis: logAxis("step time (ms)"),
    xaxis2: logAxis("decode batch", D), yaxis2: logAxis(usd ? "USD per million output tokens" : "chip-seconds per output token", D),
    shapes: [vline(chosen, "x"), vline(chosen, "x2")],
    annotations: [label(chosen, "x", ` batch ${int(chosen)}`), label(chosen, "x2", ` batch ${int(chosen)}`)],
  });
}

function drawRoofline(a) {
  const rf = a.roofline, pts = rf.points, chosen = a.decode_at_batch.batch;
  const xs = pts.map((p) => p.intensity_flops_per_byte).concat([rf.ridge_flops_per_byte]);
  const lo = Math.min(...xs) / 3, hi = Math.max(...xs) * 3;
  // the roof min(peak, intensity x bandwidth), drawn through its three corners
  const roof = { x: [lo, rf.ridge_flops_per_byte, hi],
    y: [lo * rf.hbm_bandwidth_bytes_per_s / 1e12, rf.peak_flops_per_s / 1e12, rf.peak_flops_per_s / 1e12],
    mode: "lines", name: `roof (${rf.accelerator} ${rf.compute_dtype})`, line: { color: "#111", width: 2 } };
  const near = rf.operating_point || pts.reduce((b, p) => (Math.abs(Math.log(p.batch / chosen)) < Math.abs(Math.log(b.batch / chosen)) ? p : b), pts[0]);
  const star = { x: [near.intensity_flops_per_byte], y: [near.achieved_flops_per_s / 1e12], mode: "markers",
    name: `batch ${int(near.batch)}`, marker: { symbol: "star", size: 15, color: "#111" } };
  draw("plot-roofline", [roof, ...byBound(pts, (p) => p.intensity_flops_per_byte, (p) => p.achieved_flops_per_s / 1e12, ""), star], {
    xaxis: logAxis("arithmetic intensity (FLOP per HBM byte)", D), yaxis: logAxis("achieved TFLOP/s per chip", D),
    shapes: [vline(rf.ridge_flops_per_byte, "x")],
    annotations: [label(rf.ridge_flops_per_byte, "x", ` ridge ${sig(rf.ridge_flops_per_byte)} FLOP/B`, 0.35)],
  });
}

function drawContext(c) {
  const usd = c.curve.some((r) => ok(r.output_usd_per_mtok));
  const out = usd ? "output_usd_per_mtok" : "decode_chip_s_per_token", inp = usd ? "input_usd_per_mtok" : "prefill_chip_s_per_token";
  const x = c.curve.map((r) => r.context);
  const traces = [
    { x, y: c.curve.map((r) => r[out]), mode: "lines+markers", name: "per output token", line: { color: PALETTE[0] } },
    { x, y: c.curve.map((r) => r[inp]), mode: "lines+markers", name: "per input token", line: { color: PALETTE[2] } },
    { x, y: c.curve.map((r) => r.max_sequences), mode: "lines", name: "max sequences in HBM (right axis)", yaxis: "y2",
      line: { color: "#999", dash: "dash" } },
  ];
  const shapes = [], annotations = [];
  if (ok(c.crossover_context)) {
    shapes.push(vline(c.crossover_context, "x", "#c0392b", "dash"));
    annotations.push(label(c.crossover_context, "x", ` L<sub>x</sub> = ${int(c.crossover_context)}`));
  }
  draw("plot-context", traces, {
    xaxis: logAxis("context (tokens)", D), yaxis: logAxis(usd ? "USD per million tokens" : "chip-seconds per token", D),
    yaxis2: logAxis("max sequences", { overlaying: "y", side: "right", showgrid: false, tickmode: "linear", tick0: 0, dtick: 1 }),
    margin: { l: 62, r: 64, t: 24, b: 42 }, shapes, annotations,
  });
}

function drawPlan(p) {
  const systems = [...new Set(p.frontier.map((f) => f.system))];
  const traces = systems.map((s, i) => {
    const rows = p.frontier.filter((f) => f.system === s).sort((a, b) => a.tokens_per_s_per_user - b.tokens_per_s_per_user);
    return { x: rows.map((f) => f.tokens_per_s_per_user), y: rows.map((f) => f.tokens_per_s_per_chip), mode: "lines+markers",
      name: s, line: { color: PALETTE[i % PALETTE.length], shape: "hv" }, marker: { size: 5 },
      text: rows.map((f) => `${f.plan.label}, batch ${int(f.batch)}, ${f.bound}-bound` +
        (ok(f.tokens_per_s_per_mw) ? `, ${int(f.tokens_per_s_per_mw)} tok/s per MW` : "")) };
  });
  const best = p.best && p.best.decode;
  if (best) traces.push({ x: [best.tokens_per_s_per_user], y: [best.tokens_per_s_per_chip], mode: "markers",
    name: "best decode plan", marker: { symbol: "star", size: 15, color: "#111" } });
  const target = 1 / p.targets.tpot_s; // the TPOT target in the plot's unit (tokens/s per user)
  draw("plot-plan", traces, {
    xaxis: logAxis("decode tokens/s per user"), yaxis: logAxis("decode tokens/s per chip", D),
    shapes: [vline(target, "x", "#c0392b", "dash")], annotations: [label(target, "x", ` TPOT ${ms(p.targets.tpot_s)}`, 0.12)],
  });
  $("plan-note").textContent = `${p.model}, ${p.mode}, objective ${p.objective}`;
  const pre = p.best && p.best.prefill;
  const hit = p.cache_hit;
  $("plan-best").innerHTML = [
    best && `<b>decode</b>: ${esc(best.system)} ${esc(best.plan.label)} at batch ${int(best.batch)} — ` +
      `${sig(best.tokens_per_s_per_chip)} tok/s per chip, ${sig(best.tokens_per_s_per_user)} tok/s per user` +
      (ok(best.usd_per_mtok) ? `, $${sig(best.usd_per_mtok)}/Mtok` : "") +
      (ok(best.tokens_per_s_per_mw) ? `, ${int(best.tokens_per_s_per_mw)} tok/s per MW` : ""),
    pre && `<b>prefill</b>: ${esc(pre.system)} ${esc(pre.plan.label)}, ${sig(pre.tokens_per_s_per_chip)} tok/s per chip` +
      (ok(pre.tokens_per_s_per_mw) ? `, ${int(pre.tokens_per_s_per_mw)} tok/s per MW` : ""),
    p.price_source && p.price_source !== "price_per_chip_hour" && p.tco && `priced by ${p.price_source === "tco" ? "TCO"
      : "each system's sourced TCO defaults"}: ${Object.entries(p.tco).map(([s, t]) =>
      `${esc(s)} $${sig(t.usd_per_chip_hour, 4)}/chip-h`).join(", ")}`,
    ok(p.usd_per_mtok_blended) && `blended $${sig(p.usd_per_mtok_blended)}/Mtok`,
    hit && `cache hits: input $${sig(hit.usd_per_mtok_input_blended)}/Mtok at ${sig(hit.cache_hit_rate * 100)} % hits ` +
      `(miss $${sig(hit.usd_per_mtok_input)}, hit $${sig(hit.usd_per_mtok_input_hit)})`,
    p.cache_hit === null && "cache hits: give a $ / chip-h (and a prefill plan must meet the TTFT)",
    p.points_meeting_slo && `${int(p.points_meeting_slo.decode)} of ${int(p.points_evaluated.decode)} decode points meet the targets`,
  ].filter(Boolean).join("<br>") || "no plan meets the targets";
}

function drawFrontier(f) {
  const at = f.at_interactivity;
  const traces = f.systems.map((s, i) => {
    const rows = f.frontier[s].slice().sort((a, b) => a.tokens_per_s_per_user - b.tokens_per_s_per_user);
    return { x: rows.map((p) => p.tokens_per_s_per_user), y: rows.map((p) => p.tokens_per_s_per_chip), mode: "lines+markers",
      name: s, line: { color: PALETTE[i % PALETTE.length], shape: "hv" }, marker: { size: 5 },
      text: rows.map((p) => `${p.plan}, batch ${int(p.batch)}, ${p.bound}-bound` + (p.spec_tokens ? `, k=${p.spec_tokens}` : "") +
        (ok(p.usd_per_mtok) ? `, $${sig(p.usd_per_mtok)}/Mtok` : "") +
        (ok(p.tokens_per_s_per_mw) ? `, ${int(p.tokens_per_s_per_mw)} tok/s per MW` : "")) };
  });
  const shapes = [], annotations = [];
  if (at) {
    const u = at.tokens_per_s_per_user;
    f.systems.forEach((s, i) => {
      const a = at.systems[s];
      if (a && ok(a.tokens_per_s_per_chip)) traces.push({ x: [u], y: [a.tokens_per_s_per_chip], mode: "markers",
        name: `${s} at ${sig(u)} tok/s/user`, showlegend: false, marker: { symbol: "star", size: 13, color: PALETTE[i % PALETTE.length] } });
    });
    shapes.push(vline(u, "x", "#c0392b", "dash"));
    annotations.push(label(u, "x", ` ${sig(u)} tok/s/user`, 0.12));
  }
  draw("plot-frontier", traces, { xaxis: logAxis("decode tokens/s per user"), yaxis: logAxis("decode tokens/s per chip", D),
    shapes, annotations });
  $("frontier-note").textContent = `${f.model}, ${f.mode}, context ${int(f.workload.context)}` +
    (f.speculation_searched.length ? `, k = 0..${f.speculation_searched.length} searched` : "");
  $("frontier-table").innerHTML = !at ? "" : `<caption>at ${sig(at.tokens_per_s_per_user)} tokens/s per user (${esc(at.source)})</caption>` +
    "<thead><tr><th>system</th><th>tok/s/chip</th><th>$/Mtok</th><th>tok/s per MW</th><th>how</th></tr></thead><tbody>" +
    f.systems.map((s) => { const a = at.systems[s] || {};
      const pw = f.power && f.power[s];
      return `<tr><td>${esc(s)}</td><td>${sig(a.tokens_per_s_per_chip)}</td><td>${ok(a.usd_per_mtok) ? `$${sig(a.usd_per_mtok)}` : "—"}</td>` +
        `<td title="${esc(pw ? pw.basis : "")}">${ok(a.tokens_per_s_per_mw) ? int(a.tokens_per_s_per_mw) : "—"}</td>` +
        `<td>${esc(a.method || "—")}</td></tr>`; }).join("") + "</tbody>";
}

/** Where a report's $/chip-hour came from: the TCO parts, or the $ / chip-h box. */
function priceSource(d) {
  if ((d.price_source === "tco" || d.price_source === "tco_defaults") && d.tco) {
    const p = d.tco.parts_usd_per_chip_hour;
    const what = d.price_source === "tco" ? "TCO" : `TCO defaults of ${d.tco.system} (sourced, catalogue)`;
    return `${what}: $${sig(d.tco.usd_per_chip_hour, 4)}/chip-h (capital $${sig(p.capital)} + power $${sig(p.power)} + ` +
      `hosting $${sig(p.hosting)})`;
  }
  if (d.price_source === "rent_index" && d.rent) return `published rent: $${sig(d.rent.usd_per_chip_hour)}/chip-h (${d.rent.cite})`;
  return d.price_source === "price_per_chip_hour" ? `$ / chip-h box: $${sig(d.price_per_chip_hour)}/chip-h` : "none";
}
/** Tokens/s per MW with the power it divides by (TCO facility power, or IT power at TDP). */
function perMw(x, power) {
  if (!ok(x)) return power ? `— (${power.basis})` : "—";
  return `${int(x)} tokens/s per MW` + (power ? ` (${power.basis})` : "");
}

function drawCost(c) {
  const usd = (x) => (ok(x) ? `$${sig(x)} per million tokens` : "—");
  const sp = c.speculation;
  $("cost-note").textContent = `${c.model} on ${c.system}, ${c.plan.label}, $${sig(c.price_per_chip_hour)}/chip-h` +
    `${c.price_source === "tco" ? " from TCO" : c.price_source === "tco_defaults" ? " from the sourced TCO defaults" : ""}` +
    `, ${c.fidelity || c.mode}${c.mode_requested ? ` (mode ${c.mode_requested})` : ""}`;
  const rows = [
    ["price source", priceSource(c)],
    ["decode batch", int(c.batch)],
    ["TPOT", ms(c.tpot_s) + (sp ? ` (k=${sp.spec_tokens}: ${sig(sp.tokens_per_step)} tokens per verify step)` : "")],
    ["input (prefill)", usd(c.input_usd_per_mtok)],
    ["output (decode)", usd(c.output_usd_per_mtok)],
  ];
  const f = c.ideal_floor;
  if (f) rows.push(["ideal floor", `output ${usd(f.output_usd_per_mtok)}, input ${usd(f.input_usd_per_mtok)} (the roofline lower bound)`]);
  const h = c.cache_hit;
  if (h) {
    rows.push(["input, cache hits", `${usd(h.usd_per_mtok_input_blended)} at ${sig(h.cache_hit_rate * 100)} % hits of a ` +
      `${int(h.cached_prefix_tokens)}-token prefix`]);
    rows.push(["input, every prompt a hit", usd(h.usd_per_mtok_input_hit)]);
    rows.push(["cached token cost", `${sig(h.cached_token_cost_ratio)}x an uncached one`]);
  }
  rows.push(["output tokens/s per MW", perMw(c.tokens_per_s_per_mw, c.power)]);
  kvTable("cost-table", rows);
}

function drawTco(t) {
  const p = t.parts_usd_per_chip_hour, q = t.parts_usd_per_system_hour, i = t.inputs;
  const money = (x) => (ok(x) ? `$${sig(x, 4)}` : "—");
  const box = field($("deployment"), "price_per_chip_hour") !== undefined;
  $("tco-note").textContent = `${t.system}, ${int(t.chips_per_system)} chips per system` +
    (tcoOn() ? ", pricing the cards" : box ? ", not pricing (the $ / chip-h box does; tick Price by TCO)"
      : tcoEdited.size ? ", not pricing (tick Price by TCO)" : ", the sourced defaults, pricing the cards");
  $("tco-table").innerHTML = "<thead><tr><th>part</th><th>$ / chip-hour</th><th>$ / system-hour</th></tr></thead><tbody>" +
    [["capital", p.capital, q.capital], ["power", p.power, q.power], ["hosting", p.hosting, q.hosting],
      ["total", t.usd_per_chip_hour, t.usd_per_system_hour]]
      .map(([k, a, b]) => `<tr><th>${k}</th><td>${money(a)}</td><td>${money(b)}</td></tr>`).join("") + "</tbody>" +
    `<caption>capital recovery factor ${sig(t.capital_recovery_factor, 4)} per year; facility power ` +
    `${sig(t.facility_watts_per_chip)} W per chip (${sig(i.watts_per_chip)} W, ${esc(i.watts_source)}, × draw ` +
    `${sig(i.power_utilization)} × PUE ${sig(i.pue)})</caption>`;
}
function clearTco() {
  setProblems("tco", []);
  setStale("tco", false);
  $("tco-note").textContent = "fill the TCO panel";
  $("tco-table").innerHTML = "";
}

function kvTable(id, rows) {
  $(id).tBodies[0].innerHTML = rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join("");
}

function drawSim(s) {
  const groups = [["TTFT", "ttft"], ["TPOT", "tpot"], ["ITL", "itl"], ["queue wait", "queue_wait"], ["end to end", "e2e"]];
  const traces = ["p50", "p90", "p99"].map((q, i) => ({ type: "bar", name: q, x: groups.map((g) => g[0]),
    y: groups.map((g) => s[`${g[1]}_${q}_s`] * 1e3), marker: { color: PALETTE[i] },
    text: groups.map((g) => ms(s[`${g[1]}_${q}_s`])), textposition: "none", hoverinfo: "x+text+name" }));
  draw("plot-sim", traces, { barmode: "group", yaxis: logAxis("ms", D), xaxis: { type: "category" },
    margin: { l: 52, r: 10, t: 24, b: 30 } });
  $("sim-note").textContent = `${s.model} on ${s.system}, ${s.plan.chips} chips, ${s.workload}, ${s.policy}`;
  kvTable("sim-table", [
    ["output throughput", `${sig(s.throughput_tokens_per_s)} tokens/s`],
    ["input throughput", `${sig(s.input_tokens_per_s)} tokens/s`],
    ["completed", `${int(s.completed)} of ${int(s.arrived)} arrived (${sig(s.completed_requests_per_s)} req/s)`],
    ["TTFT p50 / p99", `${ms(s.ttft_p50_s)} / ${ms(s.ttft_p99_s)}`],
    ["TPOT p50 / p99", `${ms(s.tpot_p50_s)} / ${ms(s.tpot_p99_s)}`],
    ...(s.speculation ? [["speculation", `k=${s.speculation.spec_tokens} (${s.speculation.draft}): ` +
      `${sig(s.speculation.tokens_per_step)} tokens per verify iteration`]] : []),
    ["utilization", ok(s.utilization) ? `${sig(s.utilization * 100)} %` : "—"],
    ["cost", ok(s.usd_per_mtok) ? `$${sig(s.usd_per_mtok)} per million output tokens` : (s.usd_per_mtok_reason || "—")],
    ["price source", priceSource(s)],
    ["output tokens/s per MW", perMw(s.tokens_per_s_per_mw, s.power)],
  ]);
}

function drawPrices(r) {
  const kv = r.kv_from_price_step, op = r.operating_point || {};
  $("prices-note").textContent = `${r.provider} ${r.model} (${r.status}, ${r.as_of})`;
  if (kv) {
    draw("plot-prices", [{ type: "heatmap", z: kv.kv_bytes_per_token, x: kv.flops_per_byte.map((f) => f.label.replace(" ", "<br>")),
      y: kv.active_params.map((n) => params(n)), colorscale: "Blues", reversescale: true,
      text: kv.kv_bytes_per_token.map((row) => row.map(bytes)), texttemplate: "%{text}", hoverinfo: "x+y+text",
      colorbar: { title: { text: "KV B/token" }, thickness: 12 } }],
    { xaxis: { type: "category", tickangle: 0, tickfont: { size: 10 } },
      yaxis: { type: "category", title: { text: "active params" } }, margin: { l: 60, r: 10, t: 8, b: 36 } });
  } else {
    draw("plot-prices", [], { xaxis: { visible: false }, yaxis: { visible: false }, annotations: [{ text:
      "this sheet has no long-context price step,<br>so it says nothing about KV bytes per token", showarrow: false,
      xref: "paper", yref: "paper", x: 0.5, y: 0.5, font: { color: "#777" } }] });
  }
  const rows = [];
  if (kv) rows.push(["KV bytes per token", `${bytes(kv.low)} – ${bytes(kv.high)} (price step at ${int(kv.crossover_context)} tokens)`]);
  rows.push(["output / input price", `${sig(op.price_ratio)}x`]);
  if (ok(op.batch_over_balance_at_short_context)) rows.push(["batch / balance batch (short context)", sig(op.batch_over_balance_at_short_context)]);
  if (ok(op.context_over_crossover_at_balance)) rows.push(["context / L_x at balance", sig(op.context_over_crossover_at_balance)]);
  if (ok(op.context_at_balance_tokens)) rows.push(["context at balance", `${int(op.context_at_balance_tokens)} tokens`]);
  for (const p of r.premiums || []) rows.push([`${p.premium} tier`, `${sig(p.price_ratio)}x price for ${sig(p.speedup)}x speed`]);
  kvTable("prices-table", rows);
  const ct = r.cache_tiers;
  const kvt = ok(ct && ct.kv_bytes_per_token) ? `KV ${bytes(ct.kv_bytes_per_token)} per token` : "KV per token unknown";
  $("tiers-table").innerHTML = !ct ? "" : `<caption>cache tiers (${esc(ct.system)}, ${kvt})</caption>` +
    "<thead><tr><th>hold</th><th>tier</th><th>drain</th><th>$/Mtok·h</th><th>Gray's tier</th><th>covers cost</th></tr></thead><tbody>" +
    ct.fits.map((f) => `<tr><td>${dur(f.hold_s)}</td><td>${esc(f.tier)}</td><td>${dur(f.drain_s)}</td>` +
      `<td>${sig(f.hold_price_usd_per_mtok_hour)}</td><td>${yn(f.consistent)}</td><td>${yn(f.covers_cost)}</td></tr>`).join("") +
    "</tbody>";
}
const yn = (b) => (b === true ? "yes" : b === false ? "no" : "—");

// ---- headline ------------------------------------------------------------------------------
function drawHeadline(a) {
  $("headline").tBodies[0].innerHTML = a.headline.map((h) => `<tr><th>${esc(h.label)}</th><td>${esc(h.value)}</td></tr>`).join("");
  $("balance-batch").textContent = int(a.balance_batch);
  // null = never: KV reads stay below matmul + attention compute per sequence (docs/json.md)
  $("key-crossover").textContent = ok(a.crossover_context) ? `${int(a.crossover_context)} tokens` : "never";
  $("key-floor").textContent = ms(a.latency_floor_s);
  $("key-maxbatch").textContent = int(a.max_batch);
  const p = a.plan;
  $("key-plan").textContent = p.label;
  $("key-plan-chips").textContent = `${p.chips} chips`;
}

// ---- the per-system TCO form -----------------------------------------------------------------
/** {input: its citation} from the defaults' source line ("...: key value = cite; key value = cite"). */
function sourcesOf(text) {
  const out = {};
  const line = String(text || "").replace(/^[^:]*:\s*/, "");
  for (const part of line.split(/;\s+(?=[a-z_]+ [-\d.e+]+ = )/)) {
    const m = part.match(/^([a-z_]+) [-\d.e+]+ = ([\s\S]*)$/);
    if (m) out[m[1]] = m[2];
  }
  return out;
}
/** The system's sourced TCO defaults (once per system); null where the catalogue has none. */
async function loadTcoDefaults(system) {
  if (!(system in tcoDefaults)) {
    let d = null;
    try {
      const r = await fetch("/api/tco", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ system, defaults: true }) });
      d = r.ok ? await r.json() : null;
    } catch (e) { d = null; }
    tcoDefaults[system] = d;
  }
  return tcoDefaults[system];
}
/** Show ``system``'s defaults in every TCO field the user has not typed in (``reset``: in every field). */
function showTcoDefaults(system, reset) {
  if (reset) tcoEdited.clear();
  const d = tcoDefaults[system];
  const src = d ? sourcesOf(d.inputs.source) : {};
  if (src.hosting_usd_per_kw_month) src.hosting_usd_per_chip_month = `$/kW-month x the system's watts per chip; ${src.hosting_usd_per_kw_month}`;
  src.system_capex_usd = "0: the capex default per chip is all-in (its share of hosts, switches and rack)";
  for (const k of TCO_KEYS) {
    if (tcoEdited.has(k)) continue;
    const el = $(`tco_${k}`);
    const used = !!d && d.defaults_used.includes(k) && ok(d.inputs[k]);
    el.value = used ? String(d.inputs[k]) : "";
    el.classList.toggle("sourced", used);
    el.title = used ? `catalogue default for ${system}: ${src[k] || d.inputs.source}` : "";
  }
  $("tco-defaults-note").textContent = d ? `(defaults of ${system}, sourced: catalogue from economics.yaml)`
    : `(no sourced defaults for ${system}: give every input, docs/tco.md, or a $ / chip-h)`;
}
/** Hosting is per rack (with chips per rack) or per chip, not both: typing one clears the other's default. */
const HOSTING = { hosting_usd_per_rack_month: ["hosting_usd_per_chip_month"], chips_per_rack: ["hosting_usd_per_chip_month"],
  hosting_usd_per_chip_month: ["hosting_usd_per_rack_month", "chips_per_rack"] };
function tcoTyped(e) {
  const k = e.target && e.target.name;
  if (!TCO_KEYS.includes(k)) return;
  tcoEdited.add(k);
  e.target.classList.remove("sourced");
  e.target.title = "";
  for (const other of HOSTING[k] || []) {
    if (tcoEdited.has(other)) continue;
    const el = $(`tco_${other}`);
    el.value = "";
    el.classList.remove("sourced");
    el.title = "";
  }
}

// ---- wiring ----------------------------------------------------------------------------------
async function refresh() {
  const system = field($("deployment"), "system");
  if (system !== tcoSystem) {
    await loadTcoDefaults(system);
    tcoSystem = system;
    showTcoDefaults(system, true);
  }
  // no price given: the server prices by the system's sourced TCO defaults where the catalogue has them
  const hasPrice = priced() || !!tcoDefaults[system], hasTco = tcoOn() || tcoFilled();
  $("price_per_chip_hour").disabled = tcoOn();
  const [a, c, k, t] = await Promise.all([call("analyze", "/api/analyze", bodies.analyze()),
    call("context", "/api/context", bodies.context()),
    hasPrice ? call("cost", "/api/cost", bodies.cost()) : Promise.resolve(null),
    hasTco ? call("tco", "/api/tco", bodies.tco()) : Promise.resolve(null)]);
  if (a) { drawHeadline(a); drawBatch(a); drawRoofline(a); }
  if (c) drawContext(c);
  if (k) drawCost(k);
  if (t) drawTco(t);
  if (!hasTco) clearTco();
  if (!hasPrice) {
    setProblems("cost", []);
    setStale("cost", false);
    $("cost-note").textContent = `no sourced TCO defaults for ${system}: give a $ / chip-h or price by TCO`;
    kvTable("cost-table", []);
  }
}
async function runFrontier() { const f = await call("frontier", "/api/plan", bodies.frontier()); if (f) drawFrontier(f); }
async function runPlan() { const p = await call("plan", "/api/plan", bodies.plan()); if (p) drawPlan(p); }
async function runSim() { const s = await call("simulate", "/api/simulate", bodies.simulate()); if (s) drawSim(s); }
async function runPrices() { const r = await call("prices", "/api/prices/infer", bodies.prices()); if (r) drawPrices(r); }

let timer = null;
function debounced() { clearTimeout(timer); timer = setTimeout(refresh, 250); }

function fill(select, names, chosen) {
  select.innerHTML = names.map(([v, t]) => `<option value="${esc(v)}">${esc(t)}</option>`).join("");
  for (const o of select.options) o.selected = chosen.includes(o.value);
}

async function start() {
  const cat = await call("catalog", "/api/catalog");
  if (!cat) return;
  $("version").textContent = `v${cat.version}`;
  const pairs = (xs) => xs.map((x) => [x, x]);
  fill($("model"), pairs(cat.models), ["deepseek-v3"]);
  fill($("system"), pairs(cat.systems), ["gb200-nvl72"]);
  fill($("systems"), pairs(cat.systems), ["hgx-h100", "gb200-nvl72"]);
  const count = () => { $("systems-count").textContent = `${$("systems").selectedOptions.length} selected`; };
  $("systems").addEventListener("change", count);
  count();
  fill($("sheet"), cat.price_sheets.map((s) => [`${s.provider}|${s.model}`,
    `${s.provider} · ${s.model}${s.long_context ? " (long-context step)" : ""}${s.cache_prices ? " (cache)" : ""}`]),
  ["google|gemini-2.5-pro"]);
  $("dtypes").innerHTML = (cat.dtypes || ["bf16", "fp8", "fp4", "int4"]).map((d) => `<option value="${esc(d)}">`).join("");

  const dform = $("deployment");
  dform.addEventListener("input", debounced);
  dform.addEventListener("change", debounced);
  dform.addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(timer); refresh(); });
  const tform = $("tco-form");
  tform.addEventListener("input", tcoTyped);
  tform.addEventListener("input", debounced);
  $("tco-reset").addEventListener("click", () => { showTcoDefaults(tcoSystem, true); debounced(); });
  tform.addEventListener("change", debounced);
  tform.addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(timer); refresh(); });
  $("plan-form").addEventListener("submit", (e) => { e.preventDefault(); runPlan(); });
  $("frontier-button").addEventListener("click", runFrontier);
  $("sim-form").addEventListener("submit", (e) => { e.preventDefault(); runSim(); });
  $("prices-form").addEventListener("submit", (e) => { e.preventDefault(); runPrices(); });
  $("sheet").addEventListener("change", runPrices);
  fill($("train_preset"), [["", "none (the fields below)"], ...(cat.training_runs || []).map((r) => [r.name, r.name])],
    ["llama3-405b-16k"]);
  for (const o of $("train_preset").options) {
    const r = (cat.training_runs || []).find((x) => x.name === o.value);
    if (r) o.title = r.description;
  }
  fill($("train_model"), pairs(cat.models), ["llama-3.1-70b"]); // the API's defaults (TrainIn)
  fill($("train_system"), pairs(cat.systems), ["hgx-h100"]);
  trainControls();
  const trform = $("train-form");
  trform.addEventListener("input", trainDebounced);
  trform.addEventListener("change", trainDebounced);
  trform.addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(trainTimer); trainControls(); runTrain(); });
  await Promise.all([refresh(), runPrices(), runSim(), runPlan(), runFrontier(), runTrain()]);
}

document.addEventListener("DOMContentLoaded", start);
