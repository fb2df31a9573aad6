// The server's write rate and p99 latency, read from /metrics (Prometheus
// text) every 2 s and drawn as a small SVG chart of the last minutes.

import { getText } from "./api.js";
import { h } from "./ui.js";

const WRITE_OPS = new Set(["submit", "import", "remove", "remove_member", "remove_range", "set_data"]);
const POLL_MS = 2000;
const KEEP_POINTS = 150; // five minutes at one sample per 2 s

/** Parses Prometheus text into samples `{name, labels, value}`; comments and blank lines are skipped. */
export function parsePrometheus(text) {
  const out = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      let l;
      while ((l = re.exec(m[3]))) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    }
    const v = m[4] === "+Inf" ? Infinity : m[4] === "-Inf" ? -Infinity : Number(m[4]);
    out.push({ name: m[1], labels, value: v });
  }
  return out;
}

/** The summed write counter and the summed cumulative write-latency buckets by `le`. */
export function writeTotals(samples) {
  let ops = 0;
  let seen = false;
  const buckets = new Map();
  for (const s of samples) {
    if (!WRITE_OPS.has(s.labels.op)) continue;
    if (s.name === "podium_operations_total") {
      ops += s.value;
      seen = true;
    } else if (s.name === "podium_operation_seconds_bucket") {
      const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
      buckets.set(le, (buckets.get(le) || 0) + s.value);
      seen = true;
    }
  }
  return seen ? { ops, buckets } : null;
}

/** histogram_quantile over cumulative buckets (Map le → count): linear inside the bucket. */
export function quantile(q, buckets) {
  const les = [...buckets.keys()].sort((a, b) => a - b);
  if (!les.length) return null;
  const total = buckets.get(les[les.length - 1]);
  if (!(total > 0)) return null;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const le of les) {
    const c = buckets.get(le);
    if (c >= rank) {
      // The open-ended bucket has no upper bound: report its lower one, as Prometheus does.
      if (le === Infinity) return prevLe;
      if (c === prevCount) return le;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / (c - prevCount);
    }
    prevLe = le;
    prevCount = c;
  }
  return les[les.length - 1];
}

function deltaBuckets(now, before) {
  const d = new Map();
  for (const [le, c] of now) d.set(le, Math.max(0, c - (before.get(le) || 0)));
  return d;
}

/**
 * Starts polling; returns the chart's element. The element is a fixed-size
 * box from the start so its arrival and every redraw leave the page still.
 */
export function metricsPanel(signal) {
  const points = [];
  const rateEl = h("span", { class: "stat-value", "data-stat": "rate" }, "–");
  const p99El = h("span", { class: "stat-value", "data-stat": "p99" }, "–");
  const noteEl = h("p", { class: "chart-note" }, "Reading /metrics…");
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 300 120");
  svg.setAttribute("class", "chart");
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "Writes per second and p99 write latency over the last minutes");
  const panel = h("section", { class: "metrics", "aria-labelledby": "metrics-title" },
    h("h3", { id: "metrics-title" }, "Server writes"),
    h("div", { class: "stats" },
      h("div", {}, h("span", { class: "stat-label swatch-rate" }, "writes/s"), rateEl),
      h("div", {}, h("span", { class: "stat-label swatch-p99" }, "p99 latency"), p99El)),
    svg, noteEl);

  let prev = null;
  async function poll() {
    try {
      const totals = writeTotals(parsePrometheus(await getText("/metrics")));
      const t = performance.now();
      if (!totals) {
        noteEl.textContent = "This server reports no operation metrics.";
      } else {
        if (prev) {
          const secs = (t - prev.t) / 1000;
          const rate = Math.max(0, totals.ops - prev.ops) / secs;
          const p99 = quantile(0.99, deltaBuckets(totals.buckets, prev.buckets));
          points.push({ rate, p99 });
          if (points.length > KEEP_POINTS) points.shift();
          rateEl.textContent = rate.toFixed(1);
          p99El.textContent = p99 === null ? "–" : fmtSeconds(p99);
          const peakRate = Math.max(...points.map((p) => p.rate));
          const peakP99 = Math.max(0, ...points.map((p) => p.p99 || 0));
          noteEl.textContent = `Last ${Math.round((points.length * POLL_MS) / 1000)} s · peaks ${peakRate.toFixed(1)}/s, ${fmtSeconds(peakP99)}`;
          draw(svg, points);
        }
        prev = { t, ops: totals.ops, buckets: totals.buckets };
      }
    } catch (e) {
      if (signal.aborted) return;
      noteEl.textContent = "Metrics: " + e.message;
    }
  }
  poll();
  const timer = setInterval(poll, POLL_MS);
  signal.addEventListener("abort", () => clearInterval(timer), { once: true });
  draw(svg, points);
  return panel;
}

function fmtSeconds(s) {
  if (s < 0.001) return (s * 1e6).toFixed(0) + " µs";
  if (s < 1) return (s * 1000).toFixed(1) + " ms";
  return s.toFixed(2) + " s";
}

function draw(svg, points) {
  const W = 300;
  const H = 120;
  // The time axis spans at least 40 s and grows to five minutes as samples come.
  const n = Math.min(KEEP_POINTS, Math.max(20, points.length));
  const x = (i) => W - ((points.length - 1 - i) * W) / (n - 1);
  const line = (vals, cls) => {
    const max = Math.max(1e-9, ...vals.filter((v) => v !== null));
    const d = vals.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${(H - 4 - ((H - 8) * v) / max).toFixed(1)}`))
      .filter(Boolean).join(" ");
    const el = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    el.setAttribute("points", d);
    el.setAttribute("class", cls);
    return el;
  };
  const axis = document.createElementNS("http://www.w3.org/2000/svg", "line");
  axis.setAttribute("x1", "0");
  axis.setAttribute("x2", String(W));
  axis.setAttribute("y1", String(H - 4));
  axis.setAttribute("y2", String(H - 4));
  axis.setAttribute("class", "axis");
  // Each series is scaled to its own maximum: the chart shows shape, the numbers above show values.
  svg.replaceChildren(axis, line(points.map((p) => p.rate), "rate"), line(points.map((p) => p.p99), "p99"));
}
