// The "Training run" panel of the page: POST /api/train (docs/training.md, docs/web.md). Loaded after app.js,
// whose helpers (call, kvTable, field, body, ...) it uses at run time; app.js wires its controls.
"use strict";

// ---- training run (POST /api/train; docs/training.md) ----------------------------------------------
/** Layout fields sent when no preset is chosen (their values start at the API's defaults). */
const TRAIN_LAYOUT = ["model", "system", "tp", "pp", "dp", "cp", "seq_len", "global_batch_tokens", "tokens", "schedule",
  "chunks", "zero", "recompute", "precision"];
/** A preset sends its name and the mode (and kernel share): the preset fills every other field, so the
    published figure compares like for like; kernel share scales a profile, so it goes with calibrated only. */
function trainBody() {
  const f = $("train-form");
  const out = body(f, ["preset", "mode"]);
  if (out.mode === "calibrated") Object.assign(out, body(f, ["kernel_share"]));
  if (out.preset === undefined) Object.assign(out, body(f, TRAIN_LAYOUT));
  return out;
}
function trainControls() {
  $("train-layout").hidden = $("train_preset").value !== "";
  $("train_kernel_share").disabled = $("train_mode").value !== "calibrated";
}
const TRAIN_UNIT = { tflops_per_gpu: "TFLOP/s per GPU", gpu_hours: "GPU-hours" };
const pct = (x, d = 1) => (ok(x) ? `${(x * 100).toFixed(d)}%` : "—");
const signed = (x) => (ok(x) ? `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%` : "—");
const TIME_COLOR = { compute: "#2471a3", elementwise: "#7fb3d5", tp_comm: "#e67e22", ep_comm: "#d35400",
  cp_comm: "#f5b041", pp_comm: "#8e44ad", zero3_gather: "#16a085", bubble: "#95a5a6", dp_comm: "#c0392b" };
const MEM_COLOR = { weights: "#2471a3", gradients: "#7fb3d5", optimizer: "#27ae60", activations: "#e67e22",
  reserve: "#95a5a6" };
const legend = (items) => `<div class="legend">${items.map(([c, t]) =>
  `<span><i class="swatch" style="background:${c}"></i>${esc(t)}</span>`).join("")}</div>`;

/** The step's time breakdown as one horizontal stacked bar (inline SVG, widths in % of the step). */
function timeBar(d) {
  const parts = Object.entries(d.time_breakdown_s).filter(([, v]) => ok(v) && v > 0);
  const total = parts.reduce((a, [, v]) => a + v, 0);
  if (!(total > 0)) return "";
  let x = 0;
  const rects = parts.map(([k, v]) => {
    const w = (100 * v) / total, r = `<rect class="part" data-part="${esc(k)}" x="${x}%" width="${w}%" height="22" ` +
      `fill="${TIME_COLOR[k] || "#555"}"><title>${esc(k)}: ${dur(v)} (${pct(v / d.step_s)} of the step)</title></rect>`;
    x += w;
    return r;
  }).join("");
  return `<div class="svg-title">time of one step: ${dur(d.step_s)}</div>` +
    `<svg width="100%" height="22" role="img" aria-label="step time breakdown">${rects}</svg>` +
    legend(parts.map(([k, v]) => [TIME_COLOR[k] || "#555", `${k} ${dur(v)} (${pct(v / d.step_s)})`]));
}

/** A round tick step near span/5 (1, 2 or 5 times a power of ten). */
function tickStep(span) {
  const raw = span / 5, p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((x) => x >= raw);
}
/** Memory per pipeline rank: one stacked bar per rank (weights, gradients, optimizer, activations, reserve)
    against the HBM per GPU (dashed line); inline SVG in a fixed viewBox that scales with the card. */
function rankChart(d) {
  const ranks = d.memory_per_rank_bytes || [], hbm = d.hbm_per_gpu_bytes;
  const W = 480, H = 170, L = 34, R = 6, T = 14, B = 26, pw = W - L - R, ph = H - T - B;
  const top = Math.max(hbm, ...ranks.map((r) => r.total)) * 1.08;
  const y = (b) => T + ph - (ph * b) / top, slot = pw / Math.max(ranks.length, 1), bw = Math.min(Math.max(slot * 0.78, 0.5), 48);
  const keys = Object.keys(MEM_COLOR);
  const step = tickStep(top / 1e9);
  let axis = "";
  for (let g = 0; g * 1e9 <= top; g += step) {
    axis += `<line x1="${L}" x2="${W - R}" y1="${y(g * 1e9)}" y2="${y(g * 1e9)}" stroke="#eee"/>` +
      `<text x="${L - 4}" y="${y(g * 1e9) + 3}" text-anchor="end">${sig(g)}</text>`;
  }
  const every = Math.ceil(ranks.length / 24);
  const bars = ranks.map((r, i) => {
    let b = 0;
    const x = L + i * slot + (slot - bw) / 2;
    const segs = keys.filter((k) => ok(r[k]) && r[k] > 0).map((k) => {
      const h = y(b) - y(b + r[k]);
      b += r[k];
      return `<rect x="${x}" y="${y(b)}" width="${bw}" height="${h}" fill="${MEM_COLOR[k]}"/>`;
    }).join("");
    const tip = `pipeline rank ${r.rank}: ${int(r.layers)} layers, ${bytes(r.total)}` +
      (r.total > hbm ? " (over the HBM)" : "") + "\n" + keys.map((k) => `${k} ${bytes(r[k])}`).join(", ");
    const lab = i % every === 0 ? `<text x="${x + bw / 2}" y="${H - B + 12}" text-anchor="middle">${r.rank}</text>` : "";
    return `<g class="rank-bar" data-rank="${r.rank}" data-total="${r.total}"><title>${esc(tip)}</title>${segs}</g>${lab}`;
  }).join("");
  const hl = `<line class="hbm" x1="${L}" x2="${W - R}" y1="${y(hbm)}" y2="${y(hbm)}" stroke="#c0392b" ` +
    `stroke-dasharray="5 3" stroke-width="1.5"/><text x="${W - R}" y="${y(hbm) - 3}" text-anchor="end" ` +
    `fill="#c0392b">HBM ${bytes(hbm)}</text>`;
  return `<div class="svg-title">memory per GPU on each pipeline rank (GB); the fullest decides the fit</div>` +
    `<svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="memory per pipeline rank">${axis}${bars}${hl}` +
    `<text x="${L + pw / 2}" y="${H - 2}" text-anchor="middle">pipeline rank</text></svg>` +
    legend(keys.map((k) => [MEM_COLOR[k], k]));
}

function drawTrain(d) {
  const p = d.plan, ke = d.kernel_efficiency || {}, pub = d.published;
  const calibrated = Boolean(ke.source);
  $("train-note").textContent = `${d.model} on ${d.system}, ${int(d.gpus)} GPUs, ` +
    (calibrated ? `calibrated (${ke.source})` : `efficiency ${sig(d.efficiency)}`);
  if (pub) {
    const pred = ok(pub.predicted) ? `predicted ${int(pub.predicted)} (${signed(pub.error)})`
      : "predicted: not computed (give tokens)";
    const changed = pub.changed_options.length
      ? ` NOT the published layout: ${pub.changed_options.join(", ")} changed.` : "";
    $("train-published").innerHTML = `<b>${esc(pub.run)}: published ${int(pub.value)} ${TRAIN_UNIT[pub.metric]}, ` +
      `${esc(pred)}</b> <span class="muted">${esc(pub.source)}; ${esc(pub.status)}.${esc(changed)}</span>`;
  } else {
    $("train-published").textContent = "";
  }
  const fitsNote = $("train-fits");
  fitsNote.hidden = d.fits !== false;
  fitsNote.textContent = d.fits !== false ? "" : `fits: NO by this memory model: ${bytes(d.memory_per_gpu_bytes)} ` +
    `on pipeline rank ${d.fullest_pipeline_rank} of ${bytes(d.hbm_per_gpu_bytes)}; the published run did run, so ` +
    "the gap is what the model does not capture (docs/training.md)";
  const layout = [`TP${p.tp}`, `PP${p.pp}`, `DP${p.dp}`, p.ep > 1 ? `EP${p.ep}` : "", p.cp > 1 ? `CP${p.cp}` : "",
    p.schedule + (p.chunks > 1 ? ` ×${p.chunks}` : ""), `ZeRO-${p.zero}`, `recompute ${p.recompute}`, d.precision]
    .filter(Boolean).join(" · ");
  const rows = [
    ["plan", `${layout}; ${int(d.seq_len)}-token sequences, ${int(d.global_batch_tokens)} tokens per step`],
    ["fits", d.fits ? `yes: ${bytes(d.memory_per_gpu_bytes)} of ${bytes(d.hbm_per_gpu_bytes)} on pipeline rank ` +
      `${d.fullest_pipeline_rank}, the fullest` : `no (${bytes(d.memory_per_gpu_bytes)} on pipeline rank ` +
      `${d.fullest_pipeline_rank} of ${bytes(d.hbm_per_gpu_bytes)})`],
    ["step time", `${dur(d.step_s)} (${int(d.microbatches)} micro-batches, bubble ${pct(d.bubble_fraction)})`],
    ["MFU / HFU", `${pct(d.mfu)} / ${pct(d.hfu)}`],
    ["TFLOP/s per GPU", `${int(d.tflops_per_gpu)} model, ${int(d.hardware_tflops_per_gpu)} hardware`],
    ["tokens/s", `${int(d.tokens_per_s)}`],
  ];
  if (ok(d.gpu_hours)) {
    rows.push(["to train", `${int(d.train_tokens)} tokens: ${sig(d.train_days)} days, ${int(d.gpu_hours)} GPU-hours` +
      (ok(d.usd) ? `, $${int(d.usd)}` : "")]);
  }
  rows.push(["sustained share", calibrated
    ? `${sig(ke.sustained_share, 4)} of the profile's GEMM/attention rates (${ke.sustained_source})`
    : `— (${ke.sustained_source || "no profile"})`]);
  if (calibrated) {
    rows.push(["kernels", `layer GEMM ${sig(ke.layer_gemm, 2)}, attention ${sig(ke.attention, 2)}, elementwise ` +
      `${sig(ke.elementwise, 2)} of peak (${ke.source})`]);
  }
  rows.push(["collectives on", Object.entries(d.collective_tiers).filter(([, v]) => v !== "none")
    .map(([k, v]) => `${k} ${v}`).join(", ") || "—"]);
  kvTable("train-table", rows);
  $("train-time").innerHTML = timeBar(d);
  $("train-mem").innerHTML = rankChart(d);
}
async function runTrain() { const d = await call("train", "/api/train", bodies.train()); if (d) drawTrain(d); }
let trainTimer = null;
function trainDebounced() { trainControls(); clearTimeout(trainTimer); trainTimer = setTimeout(runTrain, 250); }
