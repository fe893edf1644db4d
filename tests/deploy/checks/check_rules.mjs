// Checks of deploy/prometheus/efawatch-rules.yml that promtool does not make:
//   - every alert has a severity, a summary, a description and a runbook_url that points at its
//     own section of docs/runbook.md, and that section exists;
//   - efawatch-rules.test.yml has, for every alert, a case where it fires and one where it does
//     not (promtool only runs the cases that exist);
//   - the PrometheusRule in deploy/kubernetes/monitoring holds exactly the same groups;
//   - every metric the rules read is in docs/metrics.md.
//
//   node check_rules.mjs <source dir>
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { isDeepStrictEqual } from "node:util";

const src = process.argv[2] ?? "../../..";
const read = (p) => readFileSync(`${src}/${p}`, "utf8");
const rules = parse(read("deploy/prometheus/efawatch-rules.yml"));
const tests = parse(read("deploy/prometheus/efawatch-rules.test.yml"));
const operator = parse(read("deploy/kubernetes/monitoring/prometheusrule.yaml"));
const runbook = read("docs/runbook.md");
const metricsDoc = read("docs/metrics.md");
const errs = [];

// GitHub's heading anchors: lower case, spaces to dashes, punctuation dropped.
const anchors = new Set(
  [...runbook.matchAll(/^#{2,3} (.+)$/gm)].map((m) =>
    m[1].toLowerCase().replace(/[^a-z0-9 _-]/g, "").replace(/ /g, "-"),
  ),
);

const all = rules.groups.flatMap((g) => g.rules);
const alerts = all.filter((r) => r.alert);
const records = new Set(all.filter((r) => r.record).map((r) => r.record));
if (alerts.length < 13) errs.push(`only ${alerts.length} alerts`);

for (const a of alerts) {
  const sev = a.labels?.severity;
  if (!["warning", "critical"].includes(sev)) errs.push(`${a.alert}: severity ${sev}`);
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
for (const a of alerts) {
  const mine = cases.filter((c) => c.alertname === a.alert);
  if (!mine.some((c) => c.exp_alerts?.length)) errs.push(`${a.alert}: no promtool case where it fires`);
  if (!mine.some((c) => !c.exp_alerts?.length)) {
    errs.push(`${a.alert}: no promtool case where it stays silent`);
  }
}
for (const c of cases) {
  if (!alerts.some((a) => a.alert === c.alertname)) errs.push(`test case for unknown alert ${c.alertname}`);
}

if (!isDeepStrictEqual(operator.spec?.groups, rules.groups)) {
  errs.push("PrometheusRule groups differ from efawatch-rules.yml: run deploy/prometheus/gen-prometheusrule.sh");
}

const documented = new Set([...metricsDoc.matchAll(/^\| `(efawatch_\w+)` \|/gm)].map((m) => m[1]));
for (const r of all) {
  for (const [name] of r.expr.matchAll(/\befawatch[:_][A-Za-z0-9_:]+/g)) {
    const base = name.replace(/_(bucket|sum|count)$/, "");
    if (!documented.has(name) && !documented.has(base) && !records.has(name)) {
      errs.push(`${r.alert ?? r.record}: unknown metric ${name}`);
    }
  }
}

for (const e of errs) console.error(e);
if (errs.length) process.exit(1);
console.log(`${alerts.length} alerts, ${records.size} recorded series: runbook, tests, PrometheusRule, metrics ok`);
