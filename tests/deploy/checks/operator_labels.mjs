// SPDX-License-Identifier: Apache-2.0
// The rules on the label shapes the Prometheus Operator gives efawatch's series.
//
// The agent exports its NCCL series with the *workload's* namespace, pod and container labels.
// The operator adds target labels of the same names (the agent pod's own: namespace=efawatch,
// pod=efawatch-xxxxx, container=efawatchd), and what the series keep depends on settings outside
// this repository (docs/deploy.md, "Prometheus Operator settings that break the alerts"):
//   - the shipped ServiceMonitor (honorLabels as the prometheus-operator component says): the
//     agent's labels win: one alert for the job, in the job's namespace;
//   - overrideHonorLabels: true on the Prometheus (honor_labels forced off): the agent's labels
//     become exported_namespace/exported_pod/exported_container and every pod on a node looks
//     like the agent pod: no alert finds the job in its namespace (the NCCL alerts name the
//     agent's pods, with one of the node's workloads), and EfawatchLabelsOverwritten says why;
//   - enforcedNamespaceLabel: namespace on the Prometheus: a metric relabeling sets namespace to
//     the ServiceMonitor's on every sample and every rule of the PrometheusRule gets the label:
//     the alert names the job, but in namespace efawatch; EfawatchLabelsOverwritten says why.
//
// This script scrapes a fixed exposition of two agents through the operator's relabeling (as
// prometheus-operator's pkg/prometheus/promcfg.go builds it for a ServiceMonitor endpoint, and
// Prometheus' honor_labels merge), writes one promtool test per setting and runs promtool.
// The first one reads honorLabels from the shipped ServiceMonitor: if that changes, it fails.
//
//   node operator_labels.mjs <source dir>          (promtool on PATH)
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";

const src = process.argv[2] ?? "../../..";
const read = (p) => readFileSync(`${src}/${p}`, "utf8");
const sm = parse(read("deploy/kubernetes/components/prometheus-operator/servicemonitor.yaml"));
const smNamespace = sm.metadata.namespace;
const service = parse(read("deploy/kubernetes/base/service.yaml"));
const rulesText = read("deploy/prometheus/efawatch-rules.yml");
const [endpoint] = sm.spec.endpoints;

// What each agent serves on /metrics (no target labels): a PyTorchJob llm with a pod on each
// node that falls back to TCP (its logs prove several nodes), and on n1 a healthy Deployment.
const agents = [
  { node: "n1", pod: "efawatch-aaaaa", ip: "10.0.0.1", series: [
    ['efawatch_pod_workload_info{namespace="train",pod="llm-0",workload_kind="PyTorchJob",workload="llm"}', 1],
    ['efawatch_nccl_tcp_fallback{namespace="train",pod="llm-0",container="main"}', 1],
    ['efawatch_nccl_info{namespace="train",pod="llm-0",container="main",network="Socket",transport="NET/Socket",ofi_provider="none",nccl_version="2.21.5",nodes="proven_multi"}', 1],
    ['efawatch_pod_workload_info{namespace="serve",pod="web-0",workload_kind="Deployment",workload="web"}', 1],
    ['efawatch_nccl_tcp_fallback{namespace="serve",pod="web-0",container="server"}', 0],
    ['efawatch_nccl_info{namespace="serve",pod="web-0",container="server",network="AWS Libfabric",transport="NET/OFI",ofi_provider="efa",nccl_version="2.21.5",nodes="proven_single"}', 1],
  ] },
  { node: "n2", pod: "efawatch-bbbbb", ip: "10.0.0.2", series: [
    ['efawatch_pod_workload_info{namespace="train",pod="llm-1",workload_kind="PyTorchJob",workload="llm"}', 1],
    ['efawatch_nccl_tcp_fallback{namespace="train",pod="llm-1",container="main"}', 1],
    ['efawatch_nccl_info{namespace="train",pod="llm-1",container="main",network="Socket",transport="NET/Socket",ofi_provider="none",nccl_version="2.21.5",nodes="proven_multi"}', 1],
  ] },
];

function parseSeries(s) {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}$/.exec(s);
  const labels = { __name__: m[1] };
  for (const [, k, v] of m[2].matchAll(/(\w+)="([^"]*)"/g)) labels[k] = v;
  return labels;
}

// The target's labels after the operator's relabel_configs for this endpoint: the fixed ones
// (promcfg.go: namespace, service, pod, container, job from jobLabel, endpoint from the port
// name, instance from the address) and then the ServiceMonitor's own relabelings.
function targetLabels(agent) {
  const meta = {
    __address__: `${agent.ip}:9477`,
    __meta_kubernetes_namespace: smNamespace,
    __meta_kubernetes_service_name: service.metadata.name,
    __meta_kubernetes_pod_name: agent.pod,
    __meta_kubernetes_pod_container_name: "efawatchd",
    __meta_kubernetes_pod_node_name: agent.node,
  };
  const t = {
    ...meta,
    namespace: smNamespace,
    service: service.metadata.name,
    pod: agent.pod,
    container: "efawatchd",
    job: service.metadata.labels?.[sm.spec.jobLabel] ?? service.metadata.name,
    endpoint: endpoint.port,
  };
  for (const r of endpoint.relabelings ?? []) {
    const action = r.action ?? "replace";
    if (action !== "replace") throw new Error(`relabeling action ${action} not simulated here`);
    const value = (r.sourceLabels ?? []).map((l) => t[l] ?? "").join(r.separator ?? ";");
    const m = new RegExp(`^(?:${r.regex ?? "(.*)"})$`).exec(value);
    if (m) t[r.targetLabel] = (r.replacement ?? "$1").replace(/\$\{?(\d)\}?/g, (_, i) => m[i] ?? "");
  }
  const out = { instance: t.__address__ };
  for (const [k, v] of Object.entries(t)) if (!k.startsWith("__") && v !== "") out[k] = v;
  return out;
}

// Prometheus' merge of scraped and target labels (scrape/scrape.go, mutateSampleLabels), then
// the metric_relabel_configs the operator adds for enforcedNamespaceLabel.
function scrape(agent, { honorLabels, enforcedNamespaceLabel }) {
  const target = targetLabels(agent);
  const up = Object.entries({ ...target, ...(enforcedNamespaceLabel ? { [enforcedNamespaceLabel]: smNamespace } : {}) })
    .sort().map(([k, v]) => `${k}="${v}"`).join(",");
  return [{ series: `up{${up}}`, values: "1x20" }].concat(agent.series.map(([text, value]) => {
    const l = parseSeries(text);
    for (const [k, v] of Object.entries(target)) {
      if (honorLabels) {
        if (!(k in l)) l[k] = v;
      } else {
        if (k in l) {
          let name = `exported_${k}`;
          while (name in l) name = `exported_${name}`;
          l[name] = l[k];
        }
        l[k] = v;
      }
    }
    if (enforcedNamespaceLabel) l[enforcedNamespaceLabel] = smNamespace;
    const { __name__: name, ...rest } = l;
    const body = Object.keys(rest).sort().map((k) => `${k}="${rest[k]}"`).join(",");
    return { series: `${name}{${body}}`, values: `${value}x20` };
  }));
}

const sample = (labels) => ({
  labels: `ALERTS{${Object.entries({ alertstate: "firing", ...labels })
    .map(([k, v]) => `${k}="${v}"`).join(",")}}`,
  value: 1,
});
const query = (expr, samples) => ({ expr, eval_time: "15m", exp_samples: samples });
const overwritten = { alertname: "EfawatchLabelsOverwritten", severity: "warning", scope: "cluster" };

const job = { alertname: "EfawatchNcclTcpFallback", namespace: "train", workload_kind: "PyTorchJob",
  workload: "llm", node: "multiple", severity: "critical", scope: "workload" };
const honored = endpoint.honorLabels ?? false;
const scenarios = [
  {
    name: `the shipped ServiceMonitor (honorLabels: ${honored}): one alert for the job, in its namespace`,
    settings: { honorLabels: honored },
    queries: [
      query('ALERTS{alertname="EfawatchNcclTcpFallback",alertstate="firing"}', [sample(job)]),
      query('ALERTS{alertname="EfawatchLabelsOverwritten"}', []),
    ],
  },
  {
    name: "overrideHonorLabels: true (honor_labels forced off): the job is lost, EfawatchLabelsOverwritten fires",
    settings: { honorLabels: false },
    queries: [
      query('ALERTS{alertname="EfawatchNcclTcpFallback",alertstate="firing",namespace="train"}', []),
      // The node's pods look alike: the alerts name the agent's namespace and whichever of the
      // node's workloads the join kept.
      query('count(ALERTS{alertname="EfawatchNcclTcpFallback",alertstate="firing",namespace="efawatch"}) > bool 0',
        [{ labels: "{}", value: 1 }]),
      query('ALERTS{alertname="EfawatchLabelsOverwritten",alertstate="firing"}', [sample(overwritten)]),
    ],
  },
  {
    name: "enforcedNamespaceLabel: namespace: the job in the agent's namespace, EfawatchLabelsOverwritten fires",
    settings: { honorLabels: honored, enforcedNamespaceLabel: "namespace" },
    queries: [
      query('ALERTS{alertname="EfawatchNcclTcpFallback",alertstate="firing"}',
        [sample({ ...job, namespace: smNamespace })]),
      query('ALERTS{alertname="EfawatchLabelsOverwritten",alertstate="firing"}',
        [sample({ ...overwritten, namespace: smNamespace })]),
    ],
  },
];

const dir = mkdtempSync(join(tmpdir(), "efawatch-operator-"));
const errs = [];
try {
  // The operator's PrometheusRule rewrite under enforcedNamespaceLabel: every rule gets the
  // label. (It also adds namespace="<ns>" to every selector, which every efawatch series
  // matches once the metric relabeling has set it.)
  const enforced = parse(rulesText);
  for (const g of enforced.groups) {
    for (const r of g.rules) r.labels = { ...(r.labels ?? {}), namespace: smNamespace };
  }
  writeFileSync(join(dir, "rules.yml"), rulesText);
  writeFileSync(join(dir, "rules-enforced.yml"), stringify(enforced));
  for (const [i, s] of scenarios.entries()) {
    const test = {
      rule_files: [s.settings.enforcedNamespaceLabel ? "rules-enforced.yml" : "rules.yml"],
      evaluation_interval: "1m",
      tests: [{
        name: s.name,
        interval: "1m",
        input_series: agents.flatMap((a) => scrape(a, s.settings)),
        promql_expr_test: s.queries,
      }],
    };
    const file = join(dir, `scenario-${i}.test.yml`);
    writeFileSync(file, stringify(test));
    try {
      execFileSync("promtool", ["test", "rules", file], { cwd: dir, encoding: "utf8", stdio: "pipe" });
      console.log(`ok: ${s.name}`);
    } catch (e) {
      errs.push(`${s.name}:\n${e.stdout}${e.stderr}`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (endpoint.honorLabels !== true) {
  errs.push("deploy/kubernetes/components/prometheus-operator/servicemonitor.yaml: honorLabels is not true");
}
for (const e of errs) console.error(e);
if (errs.length) process.exit(1);
