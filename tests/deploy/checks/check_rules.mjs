// SPDX-License-Identifier: Apache-2.0
// Checks of deploy/prometheus/efawatch-rules.yml that promtool does not make:
//   - every alert has a severity (critical, warning, info), a scope, a summary, a description
//     and a runbook_url that points at its own section of docs/runbook.md, and that section
//     exists;
//   - efawatch-rules.test.yml has, for every alert, a case where it fires and one where it does
//     not (promtool only runs the cases that exist), and every firing case names its `node`
//     (only cluster-scoped alerts have none);
//   - the PrometheusRule of deploy/kubernetes/components/prometheus-operator holds the same
//     groups with every runbook_url absolute under the generator's default base, and the
//     generator given another base links every alert to an existing anchor under it;
//   - the labels deploy/prometheus/alertmanager.yml inhibits on (`equal`) are on every firing
//     case of the alerts its rules name;
//   - every critical finding kind of docs/findings.md and docs/nccl-findings.md has an alert (its
//     expression, or a recorded series it reads, names the kind);
//   - range vectors of an hour or more are read only in groups evaluated every 5 minutes or less
//     often (a day-long window over raw 30 s samples of every mesh pair was ~11 M samples);
//   - every metric the rules read is in docs/metrics.md.
//
//   node check_rules.mjs <source dir>
import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { parse } from "yaml";
import { isDeepStrictEqual } from "node:util";

const src = process.argv[2] ?? "../../..";
const read = (p) => readFileSync(`${src}/${p}`, "utf8");
const rules = parse(read("deploy/prometheus/efawatch-rules.yml"));
const tests = parse(read("deploy/prometheus/efawatch-rules.test.yml"));
const operator = parse(read("deploy/kubernetes/components/prometheus-operator/prometheusrule.yaml"));
const alertmanager = parse(read("deploy/prometheus/alertmanager.yml"));
const generator = `${src}/deploy/prometheus/gen-prometheusrule.sh`;
const runbook = read("docs/runbook.md");
const metricsDoc = read("docs/metrics.md");
const errs = [];

// Metrics the rules read before the agent exports them (a change set that spans both): each
// must leave this list once docs/metrics.md (generated from lib/common/metric_table.cc)
// documents it.
const PENDING_METRICS = new Set([]);
const SCOPES = new Set(["workload", "node", "device", "pair", "agent", "cluster"]);

// GitHub's heading anchors: lower case, spaces to dashes, punctuation dropped.
const anchors = new Set(
  [...runbook.matchAll(/^#{2,3} (.+)$/gm)].map((m) =>
    m[1].toLowerCase().replace(/[^a-z0-9 _-]/g, "").replace(/ /g, "-"),
  ),
);

const all = rules.groups.flatMap((g) => g.rules);
const alerts = all.filter((r) => r.alert);
const records = new Set(all.filter((r) => r.record).map((r) => r.record));
if (alerts.length < 20) errs.push(`only ${alerts.length} alerts`);

for (const a of alerts) {
  const sev = a.labels?.severity;
  if (!["info", "warning", "critical"].includes(sev)) errs.push(`${a.alert}: severity ${sev}`);
  if (!SCOPES.has(a.labels?.scope)) errs.push(`${a.alert}: scope ${a.labels?.scope}`);
  for (const k of ["summary", "description", "runbook_url"]) {
    if (!a.annotations?.[k]) errs.push(`${a.alert}: no ${k}`);
  }
  const want = `docs/runbook.md#${a.alert.toLowerCase()}`;
  if (a.annotations?.runbook_url !== want) {
    errs.push(`${a.alert}: runbook_url ${a.annotations?.runbook_url}, want ${want}`);
  }
  if (!anchors.has(a.alert.toLowerCase())) errs.push(`${a.alert}: no section in docs/runbook.md`);
}

const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
const firing = new Map(alerts.map((a) => [a.alert, []]));
for (const c of cases) {
  if (!firing.has(c.alertname)) errs.push(`test case for unknown alert ${c.alertname}`);
  else for (const e of c.exp_alerts ?? []) firing.get(c.alertname).push(e.exp_labels ?? {});
}
for (const a of alerts) {
  const mine = cases.filter((c) => c.alertname === a.alert);
  if (!mine.some((c) => c.exp_alerts?.length)) errs.push(`${a.alert}: no promtool case where it fires`);
  if (!mine.some((c) => !c.exp_alerts?.length)) {
    errs.push(`${a.alert}: no promtool case where it stays silent`);
  }
  // `node` on every alert, so routes and inhibitions by node find it.
  if (a.labels?.scope !== "cluster") {
    for (const l of firing.get(a.alert)) {
      if (!l.node) errs.push(`${a.alert}: a firing case without node: ${JSON.stringify(l)}`);
    }
  }
}

// The committed PrometheusRule: the rules' groups, links absolute under the default base, which
// is pinned to this version's tag (issue #46): the docs/ of v<project(VERSION)>, never a branch.
const generatorText = readFileSync(generator, "utf8");
const repository = /^DEFAULT_REPOSITORY="([^"]+)"$/m.exec(generatorText)?.[1];
const version = /^project\(efawatch VERSION ([0-9]+\.[0-9]+\.[0-9]+)[ )]/m.exec(read("CMakeLists.txt"))?.[1];
const defaultBase = `${repository}/blob/v${version}/docs`;
if (!repository?.startsWith("https://") || !version) {
  errs.push(`generator default base ${defaultBase} is not https or has no version`);
}
if (!generatorText.includes('DEFAULT_RUNBOOK_BASE="$DEFAULT_REPOSITORY/blob/v$version/docs"')) {
  errs.push("generator: DEFAULT_RUNBOOK_BASE is not the version's tag under DEFAULT_REPOSITORY");
}
const operatorAlerts = (operator.spec?.groups ?? []).flatMap((g) => g.rules).filter((r) => r.alert);
for (const a of operatorAlerts) {
  const url = a.annotations?.runbook_url ?? "";
  if (!url.startsWith(`${defaultBase}/runbook.md#`)) {
    errs.push(`PrometheusRule ${a.alert}: runbook_url ${url} not under ${defaultBase}`);
  }
}
const relative = (groups, base) => JSON.parse(
  JSON.stringify(groups).replaceAll(`${base}/runbook.md#`, "docs/runbook.md#"));
if (!isDeepStrictEqual(relative(operator.spec?.groups, defaultBase), rules.groups)) {
  errs.push("PrometheusRule groups differ from efawatch-rules.yml: run deploy/prometheus/gen-prometheusrule.sh");
}

// Another base: every link absolute, under it, at an existing section.
const base = "https://docs.example.test/mirror/efawatch/docs";
const generated = parse(execFileSync("bash", [generator, "--runbook-base", `${base}/`, "--out", "-"],
  { encoding: "utf8" }));
const links = generated.spec.groups.flatMap((g) => g.rules).filter((r) => r.alert)
  .map((r) => [r.alert, r.annotations.runbook_url]);
if (links.length !== alerts.length) errs.push(`--runbook-base: ${links.length} alerts, want ${alerts.length}`);
for (const [name, url] of links) {
  const m = /^(https:\/\/[^#]+)\/runbook\.md#([a-z0-9_-]+)$/.exec(url);
  if (!m || m[1] !== base) errs.push(`--runbook-base: ${name}: ${url} is not ${base}/runbook.md#...`);
  else if (!anchors.has(m[2])) errs.push(`--runbook-base: ${name}: no section #${m[2]} in docs/runbook.md`);
}

// Inhibitions match on labels the alerts carry: each `equal` label is on every firing case of
// every alert the rule's source or target side names by alertname.
const alertNames = alerts.map((a) => a.alert);
function named(matchers) {
  const names = new Set();
  for (const m of matchers ?? []) {
    const r = /^alertname\s*(=~|=)\s*"?([^"]*)"?$/.exec(m.trim());
    if (!r) continue;
    const re = new RegExp(`^(?:${r[1] === "=" ? r[2].replace(/[.*+?^${}()|[\]\\]/g, "\\$&") : r[2]})$`);
    const hits = alertNames.filter((n) => re.test(n));
    if (!hits.length) errs.push(`alertmanager.yml: ${m} names no alert of the rules`);
    for (const n of hits) names.add(n);
  }
  return names;
}
for (const [i, rule] of (alertmanager.inhibit_rules ?? []).entries()) {
  const sources = named(rule.source_matchers);
  const sides = [...sources, ...named(rule.target_matchers)];
  if (!sides.length) errs.push(`alertmanager.yml inhibit_rules[${i}] names no alert`);
  for (const n of sides) {
    for (const l of firing.get(n)) {
      for (const e of rule.equal ?? []) {
        // Absent equals absent in Alertmanager: fine for cluster (left out in the tests, kept by
        // the rules where set) and for the namespace of --log-glob files (workload_kind="Node",
        // which the workload, their node, tells apart); not for a label a side never has.
        // fault_node: always on a source (a node fault); on a job alert only when one of the
        // job's nodes has such a fault (absent: nothing explains it, nothing silences it).
        const absentOk = e === "cluster" || (e === "namespace" && l.workload_kind === "Node") ||
          (e === "fault_node" && !sources.has(n));
        if (!absentOk && !(e in l)) errs.push(`inhibit_rules[${i}]: ${n} fires without ${e}`);
      }
    }
  }
}
if ((alertmanager.inhibit_rules ?? []).length < 3) errs.push("alertmanager.yml: fewer than 3 inhibit_rules");

// Every critical finding kind has an alert: one of its own (named in an expression, or the
// per-container gauge it comes with), or the catch-all EfawatchCriticalFinding, which must
// then not leave it out.
const findingDocs = read("docs/findings.md") + read("docs/nccl-findings.md");
const critical = new Set();
for (const m of findingDocs.matchAll(/^\| ((?:`[a-z_*]+`(?:, )?)+) \| ([^|]*) \|/gm)) {
  if (!/critical/.test(m[2])) continue;
  for (const k of m[1].matchAll(/`([a-z_]+)`/g)) critical.add(k[1]);
}
for (const k of ["efa_admin_queue_stuck", "net_completion_error", "collective_timeout"]) {
  if (!critical.has(k)) errs.push(`critical finding ${k} not found in docs/findings.md or nccl-findings.md`);
}
const GAUGE_OF_KIND = {
  tcp_fallback: "efawatch_nccl_tcp_fallback",
  loopback_misuse: "efawatch_nccl_loopback_misuse",
  mesh_self_suspect: "efawatch_mesh_self_suspect",
};
const catchAll = alerts.find((a) => a.alert === "EfawatchCriticalFinding");
const excluded = /kind!~"([^"]+)"/.exec(catchAll?.expr ?? "")?.[1];
if (!catchAll || !excluded) errs.push("no EfawatchCriticalFinding with a kind!~ exclusion");
// An alert reads a kind in its own expression or in a recorded series it reads, at any depth
// (the job failures: efawatch:nccl_node_workload_failure:info).
const recordExprs = new Map();
for (const r of all.filter((r) => r.record)) {
  recordExprs.set(r.record, (recordExprs.get(r.record) ?? "") + "\n" + r.expr);
}
const escapeRe = (x) => x.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
function reads(expr, seen = new Set()) {
  const out = [expr];
  for (const [name, e] of recordExprs) {
    if (seen.has(name) || !new RegExp(`${escapeRe(name)}(?![A-Za-z0-9_:])`).test(expr)) continue;
    seen.add(name);
    out.push(...reads(e, seen));
  }
  return out;
}
for (const k of critical) {
  const own = alerts.filter((a) => a !== catchAll && (
    reads(a.expr).some((e) => new RegExp(`kind=~?"[^"]*\\b${k}\\b`).test(e)) ||
    (GAUGE_OF_KIND[k] && a.expr.includes(GAUGE_OF_KIND[k])) ||
    (GAUGE_OF_KIND[k] && all.some((r) => r.record && r.expr.includes(GAUGE_OF_KIND[k])))));
  const caught = excluded && !new RegExp(`^(?:${excluded})$`).test(k);
  if (!own.length && !caught) errs.push(`critical finding ${k}: no alert (EfawatchCriticalFinding leaves it out)`);
  if (["efa_admin_queue_stuck", "net_completion_error", "collective_timeout"]
    .includes(k) && !own.length) errs.push(`critical finding ${k}: no alert of its own`);
}

// Long windows only in slowly evaluated groups.
const seconds = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
for (const g of rules.groups) {
  const [, n0, u0] = /^(\d+)([smhdw])$/.exec(g.interval ?? "30s") ?? [null, 0, "s"];
  const every = Number(n0) * seconds[u0];
  for (const r of g.rules) {
    for (const [, n, u] of r.expr.matchAll(/\[(\d+)([smhdw])\]/g)) {
      if (Number(n) * seconds[u] >= 3600 && every < 300) {
        errs.push(`${r.alert ?? r.record}: a [${n}${u}] window in group ${g.name}, evaluated every ${every} s`);
      }
    }
  }
}

const documented = new Set([...metricsDoc.matchAll(/^\| `(efawatch_\w+)` \|/gm)].map((m) => m[1]));
for (const p of PENDING_METRICS) {
  if (documented.has(p)) errs.push(`${p} is in docs/metrics.md now: remove it from PENDING_METRICS`);
}
for (const r of all) {
  for (const [name] of r.expr.matchAll(/\befawatch[:_][A-Za-z0-9_:]+/g)) {
    const base = name.replace(/_(bucket|sum|count)$/, "");
    if (!documented.has(name) && !documented.has(base) && !records.has(name) && !PENDING_METRICS.has(name)) {
      errs.push(`${r.alert ?? r.record}: unknown metric ${name}`);
    }
  }
}

for (const e of errs) console.error(e);
if (errs.length) process.exit(1);
console.log(`${alerts.length} alerts, ${records.size} recorded series: runbook, tests, node labels, ` +
  `PrometheusRule and runbook links, inhibition labels, critical findings, windows, metrics ok`);
