// SPDX-License-Identifier: Apache-2.0
// Runs deploy/prometheus/alertmanager.yml in a real Alertmanager, posts efawatch alerts to it and
// checks which ones its inhibit_rules suppress: a job's missing net plugin under the job's TCP
// alert (and not another job's), a device under its node's page, a node's warnings under its
// node's fault (and not another node's), a job's alerts under the fault of a node it runs on
// (a 3-node hung job and its faulty node: one alert left to notify).
//
// The alerts carry the label sets the rules give them: every alert below has the label names of
// a firing case of the same alert in efawatch-rules.test.yml (which promtool checks against the
// rules), so the two cannot drift apart.
//
//   node alertmanager_inhibit.mjs <source dir> [alertmanager binary]
// (Debian's package calls the binary prometheus-alertmanager; alertmanager_test.sh finds it.)
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";

const src = process.argv[2] ?? "../../..";
const binary = process.argv[3] ?? "alertmanager";
const tests = parse(readFileSync(`${src}/deploy/prometheus/efawatch-rules.test.yml`, "utf8"));

const workload = (alertname, severity, extra) => ({
  alertname, severity, scope: "workload", cluster: "c1", namespace: "train",
  workload_kind: "PyTorchJob", workload: "llm", node: "multiple", ...extra,
});
const nodeAlert = (alertname, severity, scope, node, extra) => ({
  alertname, severity, scope, cluster: "c1", node, ...extra,
});
// [labels, inhibited?]
const cases = [
  // Job llm: the plugin failure is the fallback's cause and its description says so.
  [workload("EfawatchNcclTcpFallback", "critical"), false],
  [workload("EfawatchNcclNetPluginMissing", "warning"), true],
  // Job other, same namespace, no TCP alert: its missing plugin reaches the on-call.
  [workload("EfawatchNcclNetPluginMissing", "warning", { workload_kind: "Job", workload: "other", node: "n3" }), false],
  // Pods without a workload: the namespace stands for the job; a deliberate TCP job inhibits too.
  [workload("EfawatchNcclTcpDeliberate", "info", { namespace: "dev", workload_kind: "Namespace", workload: "dev", node: "n3" }), false],
  [workload("EfawatchNcclNetPluginMissing", "warning", { namespace: "dev", workload_kind: "Namespace", workload: "dev", node: "n3" }), true],
  // The same job name in another cluster is another job.
  [workload("EfawatchNcclNetPluginMissing", "warning", { cluster: "c2" }), false],
  // Node n1: a device gone is the page; the stuck device and the error counters go under it.
  [nodeAlert("EfawatchEfaDeviceMissing", "critical", "node", "n1", { fault_node: "n1" }), false],
  [nodeAlert("EfawatchEfaAdminQueueStuck", "critical", "device", "n1", { device: "rdmap80s0", fault_node: "n1" }), true],
  [nodeAlert("EfawatchEfaErrorsRising", "warning", "node", "n1"), true],
  // Node n2: the stuck device is the page (nothing above it); the counters go under it.
  [nodeAlert("EfawatchEfaAdminQueueStuck", "critical", "device", "n2", { device: "rdmap79s0", fault_node: "n2" }), false],
  [nodeAlert("EfawatchEfaErrorsRising", "warning", "node", "n2"), true],
  // Node n3: counters alone are a warning of their own.
  [nodeAlert("EfawatchEfaErrorsRising", "warning", "node", "n3"), false],
  // Suspect node x: its own pairs go under it, other nodes' pairs towards it do not.
  [nodeAlert("EfawatchFabricSuspectNode", "critical", "node", "x", { peer_node: "x", fault_node: "x" }), false],
  [nodeAlert("EfawatchFabricRttRegression", "warning", "pair", "x", { peer_node: "y" }), true],
  [nodeAlert("EfawatchFabricPingLoss", "warning", "pair", "a", { peer_node: "x" }), false],
  // Job mix hangs on f1, f2, f3; f2 lost an EFA device: the node's page, the job's timeout,
  // its completion errors and its mixed transport (f2 on TCP) under it, and f2's
  // EFA-idle-TCP-busy. One notification. Job llm hangs on healthy g1: its own page.
  [nodeAlert("EfawatchEfaDeviceMissing", "critical", "node", "f2", { fault_node: "f2" }), false],
  [workload("EfawatchNcclCollectiveTimeout", "critical", { workload: "mix", fault_node: "f2" }), true],
  [workload("EfawatchNcclNetCompletionError", "critical", { workload: "mix", node: "f2", fault_node: "f2" }), true],
  [workload("EfawatchNcclMixedTransport", "critical", { workload: "mix", node: "f2", fault_node: "f2" }), true],
  [workload("EfawatchEfaIdleTcpBusy", "warning", { workload: "mix", node: "f2" }), true],
  [workload("EfawatchNcclCollectiveTimeout", "critical", { workload: "llm2", node: "g1" }), false],
  // A job on another node with a fault of its own (f9: no alert for it here) is not silenced
  // by f2's page.
  [workload("EfawatchNcclCollectiveTimeout", "critical", { workload: "far", fault_node: "f9" }), false],
  // Suspect node x silences the jobs on it too.
  [workload("EfawatchNcclCollectiveTimeout", "critical", { workload: "onx", fault_node: "x" }), true],
];

const errs = [];
// The label names of each alert's firing cases in the promtool tests.
const shapes = new Map();
for (const c of tests.tests.flatMap((t) => t.alert_rule_test ?? [])) {
  for (const e of c.exp_alerts ?? []) {
    const keys = ["alertname", ...Object.keys(e.exp_labels ?? {})].sort().join(",");
    if (!shapes.has(c.alertname)) shapes.set(c.alertname, new Set());
    shapes.get(c.alertname).add(keys);
  }
}
for (const [labels] of cases) {
  const keys = Object.keys(labels).sort().join(",");
  const want = shapes.get(labels.alertname);
  // promtool's tests leave `cluster` out where they need no second cluster; the rules keep it.
  const known = [...(want ?? [])].some((k) =>
    k === keys || k.split(",").concat("cluster").sort().join(",") === keys);
  if (!known) errs.push(`${labels.alertname}: labels {${keys}} are not those of a firing promtool case`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), "efawatch-am-"));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
let log = "";
const am = spawn(binary, [
  `--config.file=${src}/deploy/prometheus/alertmanager.yml`,
  `--storage.path=${dir}`,
  `--web.listen-address=127.0.0.1:${port}`,
  "--cluster.listen-address=",
  "--log.level=warn",
], { stdio: ["ignore", "pipe", "pipe"] });
am.stdout.on("data", (d) => { log += d; });
am.stderr.on("data", (d) => { log += d; });
let exited = null;
am.on("exit", (code) => { exited = code; });
am.on("error", (e) => { exited = e.message; });

async function get(path) {
  const r = await fetch(base + path);
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

const key = (l) => JSON.stringify(Object.keys(l).sort().map((k) => [k, l[k]]));
try {
  const deadline = Date.now() + 30000;
  while (true) {
    if (exited !== null) throw new Error(`alertmanager exited with ${exited}:\n${log}`);
    try {
      if ((await fetch(`${base}/-/ready`)).ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`alertmanager not ready:\n${log}`);
    await sleep(100);
  }
  const now = Date.now();
  const body = cases.map(([labels]) => ({
    labels,
    annotations: { summary: labels.alertname },
    startsAt: new Date(now - 60000).toISOString(),
    endsAt: new Date(now + 600000).toISOString(),
  }));
  const post = await fetch(`${base}/api/v2/alerts`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  if (!post.ok) throw new Error(`POST /api/v2/alerts: HTTP ${post.status} ${await post.text()}`);

  // The inhibitor learns source alerts asynchronously: poll until the states settle.
  const want = new Map(cases.map(([l, inhibited]) => [key(l), inhibited]));
  let got = new Map();
  while (true) {
    const alerts = await get("/api/v2/alerts");
    got = new Map(alerts.map((a) => [key(a.labels), (a.status.inhibitedBy ?? []).length > 0]));
    const settled = [...want].every(([k, v]) => got.get(k) === v);
    if (settled || Date.now() > deadline) break;
    await sleep(200);
  }
  for (const [labels, inhibited] of cases) {
    const g = got.get(key(labels));
    const what = `${labels.alertname}{node=${labels.node}${labels.workload ? `,workload=${labels.workload}` : ""}${labels.cluster !== "c1" ? `,cluster=${labels.cluster}` : ""}}`;
    if (g === undefined) errs.push(`${what}: not in Alertmanager`);
    else if (g !== inhibited) errs.push(`${what}: ${g ? "inhibited" : "not inhibited"}, want ${inhibited ? "inhibited" : "not inhibited"}`);
  }
} catch (e) {
  errs.push(e.message);
} finally {
  // Alertmanager writes its state to the data directory as it stops: remove the directory only
  // once it has exited (removing it at once raced with that write: ENOTEMPTY).
  const exited = am.exitCode !== null || am.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => am.once("exit", resolve));
  am.kill("SIGTERM");
  const hard = setTimeout(() => am.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(hard);
  rmSync(dir, { recursive: true, force: true });
}

for (const e of errs) console.error(e);
if (errs.length) process.exit(1);
const n = cases.filter(([, i]) => i).length;
console.log(`alertmanager.yml: ${n} of ${cases.length} alerts inhibited as expected`);
