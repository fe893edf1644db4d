// SPDX-License-Identifier: Apache-2.0
// Keeps docs/sizing.md honest:
//   - its per-unit series counts are recounted from docs/metrics.md (each metric's labels) and
//     the mesh histogram's buckets from probes/mesh/mesh.cc;
//   - its per-node-type table follows from those counts and the page's stated assumptions;
//   - its drop rules are valid (promtool check config; the ServiceMonitor form against the
//     operator's schema, with the same regex) and match no metric that efawatch-rules.yml or a
//     dashboard reads, and the bucket drop keeps +Inf;
//   - the per-device count after the drop rules is what the page says.
//
//   node check_sizing.mjs <source dir>         (promtool on PATH)
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";

const src = process.argv[2] ?? "../../..";
const read = (p) => readFileSync(`${src}/${p}`, "utf8");
const page = read("docs/sizing.md");
const errs = [];

// Metrics of the agent and their labels.
const metrics = [...read("docs/metrics.md").matchAll(/^\| `(efawatch_\w+)` \| (\w+) \| ([^|]*) \|/gm)]
  .map(([, name, type, labels]) => ({ name, type, labels: labels.split(",").map((l) => l.trim()).filter(Boolean) }));

const bounds = /RttBounds\(\) \{\s*static const std::vector<double> bounds = \{([^}]*)\}/
  .exec(read("probes/mesh/mesh.cc"))?.[1].split(",").filter((x) => x.trim()).length;
if (!bounds) errs.push("probes/mesh/mesh.cc: RttBounds not found");

const perDevice = metrics.filter((m) => m.labels.includes("device") && !m.labels.includes("counter"));
const perContainer = metrics.filter((m) => m.labels[0] === "namespace" && m.labels[1] === "pod" &&
  m.labels[2] === "container" && m.name !== "efawatch_nccl_communicator_info");
const perPeer = metrics.filter((m) => m.labels.includes("peer_node"))
  .reduce((n, m) => n + (m.type === "histogram" ? bounds + 1 + 2 : 1), 0);

// The drop rules of the page.
function block(marker) {
  const i = page.indexOf(`<!-- sizing: ${marker}, checked by tests/deploy/checks/check_sizing.mjs -->`);
  const b = i < 0 ? null : /```yaml\n([\s\S]*?)```/.exec(page.slice(i))?.[1];
  if (!b) errs.push(`docs/sizing.md: no "${marker}" block`);
  return b ? parse(b) : null;
}
const drop = block("drop rules")?.metric_relabel_configs ?? [];
const smDrop = block("ServiceMonitor drop rules");
const bucketDrop = block("bucket drop")?.metric_relabel_configs ?? [];
const nameDrop = drop.find((r) => r.action === "drop" && r.source_labels?.join() === "__name__");
if (!nameDrop) errs.push("docs/sizing.md: no drop rule on __name__");
const dropped = (name) => nameDrop && new RegExp(`^(?:${nameDrop.regex})$`).test(name);
const smRule = smDrop?.spec?.endpoints?.[0]?.metricRelabelings?.[0];
if (smRule?.regex !== nameDrop?.regex || smRule?.action !== "drop") {
  errs.push("docs/sizing.md: the ServiceMonitor's drop rule differs from the plain one");
}

// Units the page states, against the recount.
const stated = Object.fromEntries([...page.matchAll(/^\| (per [^|]+?) \| (\d+) \|/gm)].map(([, u, n]) => [u, Number(n)]));
const want = {
  "per EFA device": perDevice.length,
  "per EFA device, with the drop rules": perDevice.filter((m) => !dropped(m.name)).length,
  "per container with NCCL output": perContainer.length,
  "per NCCL communicator": metrics.filter((m) => m.name === "efawatch_nccl_communicator_info").length,
  "per mesh peer (`fabric-probes`)": perPeer,
};
for (const [unit, n] of Object.entries(want)) {
  if (stated[unit] !== n) errs.push(`docs/sizing.md: "${unit}" says ${stated[unit]}, metrics.md gives ${n}`);
}
// The bucket drop: the buckets that stay, +Inf among them. The agent writes `le` as
// prometheus-cpp 1.0 does: ostream with 16 significant digits, i.e. C's %.16g ("5e-05", "0.0001").
function g16(x) {
  const strip = (t) => (t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t);
  const exp = Math.floor(Math.log10(Math.abs(x)));
  if (exp < -4 || exp >= 16) {
    const [m, e] = x.toExponential(15).split("e");
    const n = Math.abs(Number(e));
    return `${strip(m)}e${e.startsWith("-") ? "-" : "+"}${n < 10 ? `0${n}` : n}`;
  }
  return strip(x.toFixed(Math.max(0, 15 - exp)));
}
const le = [...bounds ? read("probes/mesh/mesh.cc").match(/bounds = \{([^}]*)\}/)[1].split(",") : []]
  .map((x) => Number(x.trim())).filter((x) => !Number.isNaN(x));
const bucketRule = bucketDrop.find((r) => r.source_labels?.join() === "__name__,le");
let bucketRe = /$^/;
try {
  bucketRe = new RegExp(`^(?:${bucketRule?.regex})$`);
} catch (e) {
  errs.push(`docs/sizing.md: the bucket drop's regex: ${e.message}`);
}
const kept = [...le.map(g16), "+Inf"].filter((v) =>
  !bucketRe.test(`efawatch_mesh_peer_rtt_seconds_bucket;${v}`));
if (!kept.includes("+Inf")) errs.push("docs/sizing.md: the bucket drop drops +Inf");
if (stated["per mesh peer, with the bucket drop"] !== perPeer - (bounds + 1 - kept.length)) {
  errs.push(`docs/sizing.md: "per mesh peer, with the bucket drop" says ` +
    `${stated["per mesh peer, with the bucket drop"]}, want ${perPeer - (bounds + 1 - kept.length)}`);
}

// The table: rows follow from the per-unit counts and the page's assumptions (one pod of one
// container with 8 communicators, ten other containers with the line counters every followed
// container has, 85 fixed; 8 mesh peers).
const perOther = perContainer.filter((m) => m.name.startsWith("efawatch_logs_"));
const rest = perContainer.length + 8 + 1 + 10 * perOther.length + 85;
const restDropped = rest - perContainer.filter((m) => dropped(m.name)).length -
  10 * perOther.filter((m) => dropped(m.name)).length;
if (stated["per other container"] !== perOther.length) {
  errs.push(`docs/sizing.md: "per other container" says ${stated["per other container"]}, metrics.md gives ${perOther.length}`);
}
const k = (x) => `${Math.round(x * 100 / 1000)} k`;
for (const [, n, node, per100, dropped100, mesh100] of page.matchAll(
  /^\| [^|]+ \| (\d+) \| ([\d,]+) \| (\d+ k) \| (\d+ k) \| (\d+ k) \|$/gm)) {
  const d = Number(n);
  const def = d * want["per EFA device"] + rest;
  const row = [String(def), k(def), k(d * want["per EFA device, with the drop rules"] + restDropped),
    k(def + 8 * perPeer)];
  const got = [node.replace(",", ""), per100, dropped100, mesh100];
  if (row.join("|") !== got.join("|")) errs.push(`docs/sizing.md: the ${d}-device row says ${got.join(", ")}, want ${row.join(", ")}`);
}
if (![...page.matchAll(/^\| [^|]+ \| \d+ \| [\d,]+ \| \d+ k \|/gm)].length) errs.push("docs/sizing.md: no node-type table");

// No drop rule may remove what the rules or the dashboards read.
const used = new Set();
for (const text of [read("deploy/prometheus/efawatch-rules.yml"),
  ...readdirSync(`${src}/dashboards`).filter((f) => f.endsWith(".json")).map((f) => read(`dashboards/${f}`))]) {
  for (const [name] of text.matchAll(/\befawatch_[a-z0-9_]+/g)) used.add(name.replace(/_(bucket|sum|count)$/, ""));
}
for (const name of used) if (dropped(name)) errs.push(`the drop rules drop ${name}, which a rule or dashboard reads`);
for (const m of metrics) {
  if (m.labels.includes("device") && !used.has(m.name) && !dropped(m.name) &&
      !["efawatch_rdma_hw_read_errors", "efawatch_rdma_hw_stat"].includes(m.name)) {
    errs.push(`${m.name}: per device, read by no rule or dashboard, and not in the drop rules`);
  }
}

// Valid configuration: promtool on a scrape job with both relabel lists; the schema for the
// ServiceMonitor form.
const dir = mkdtempSync(join(tmpdir(), "efawatch-sizing-"));
try {
  writeFileSync(join(dir, "prometheus.yml"), stringify({ scrape_configs: [{
    job_name: "efawatch", static_configs: [{ targets: ["127.0.0.1:9477"] }],
    metric_relabel_configs: [...drop, ...bucketDrop] }] }));
  execFileSync("promtool", ["check", "config", join(dir, "prometheus.yml")], { stdio: "pipe" });
} catch (e) {
  errs.push(`promtool check config of the drop rules: ${e.stdout}${e.stderr}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
try {
  const { ServiceMonitor } = await import("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor");
  new ServiceMonitor({ ...smDrop, spec: { selector: {}, ...smDrop?.spec } }).validate();
} catch (e) {
  errs.push(`the ServiceMonitor drop rules are not a valid ServiceMonitor: ${e.message}`);
}

for (const e of errs) console.error(e);
if (errs.length) process.exit(1);
console.log(`docs/sizing.md: ${want["per EFA device"]} series per EFA device ` +
  `(${want["per EFA device, with the drop rules"]} with the drop rules), table and drop rules ok`);
