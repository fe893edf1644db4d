// SPDX-License-Identifier: Apache-2.0
// Validates the example manifests under deploy/examples. No KubeRay CRD schema is published as
// an npm package, so a RayCluster is checked in two parts: each pod template (head and every
// worker group) against the Kubernetes PodTemplate schema (kubernetes-models), and the
// RayCluster's own fields by a structural check of what KubeRay's ray.io/v1 CRD requires. Then
// the promises the example makes for the agent: NCCL_DEBUG=INFO, FI_PROVIDER=efa, loopback
// excluded from NCCL_SOCKET_IFNAME, /tmp/ray on an emptyDir in every Ray container, the seed's
// shape (2 x g6.12xlarge, 4 GPUs and one EFA device each), and no training pod that needs more
// EFAs than its node has left beside the agent: where the efa-device component schedules an
// agent it holds one of the node's EFAs (docs/deploy.md, "Single-EFA instances").
//
//   node validate_examples.mjs <example.yaml>...
//   node validate_examples.mjs --self-test
//
// Exits 1 with one line per problem.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse, parseAllDocuments } from "yaml";
import { PodTemplate } from "kubernetes-models/v1/PodTemplate";
import { EFA_DEVICES } from "./efa_types.mjs";

// The instance types the efa-device component schedules an agent on, each taking one EFA.
const src = process.env.EFAWATCH_SOURCE_DIR ?? fileURLToPath(new URL("../../..", import.meta.url));
function efaDeviceTypes() {
  const patch = parse(readFileSync(
    `${src}/deploy/kubernetes/components/efa-device/daemonset-efa-device.yaml`, "utf8"));
  const terms = patch.spec.template.spec.affinity.nodeAffinity
    .requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
  return new Set(terms.flatMap((t) => t.matchExpressions ?? [])
    .filter((e) => e.key === "node.kubernetes.io/instance-type" && e.operator === "In")
    .flatMap((e) => e.values));
}

// A worker pod (one per node) asks for more EFAs than its node has for it: all there are, less
// the one an efa-device agent holds on that type.
function efaShareErrors(where, pod, agentTypes) {
  const type = pod.nodeSelector?.["node.kubernetes.io/instance-type"];
  const total = EFA_DEVICES.get(type);
  if (total === undefined) return [];
  const left = total - (agentTypes.has(type) ? 1 : 0);
  const errs = [];
  for (const c of pod.containers) {
    const n = Number(c.resources?.limits?.["vpc.amazonaws.com/efa"] ?? 0);
    if (n > left) {
      errs.push(`${where}: ${c.name} requests ${n} of ${type}'s ${total} EFA(s), but the efa-device ` +
        `component's agent holds one there: the pod or the agent stays Pending`);
    }
  }
  return errs;
}

function templateErrors(where, template) {
  if (!template?.spec) return [`${where}: no pod template`];
  try {
    new PodTemplate({ apiVersion: "v1", kind: "PodTemplate", metadata: { name: "t" }, template })
      .validate();
    return [];
  } catch (e) {
    return [`${where}: ${e.message}`];
  }
}

const isString = (v) => typeof v === "string";
const isStringMap = (m) =>
  m !== null && typeof m === "object" && !Array.isArray(m) && Object.values(m).every(isString);

// The fields KubeRay's RayCluster CRD (ray.io/v1) requires or types, as far as the example uses
// them: headGroupSpec.template, workerGroupSpecs[].groupName/template, rayStartParams string
// maps, integer replica counts with min <= replicas <= max.
function rayClusterErrors(rc) {
  const errs = [];
  const where = `RayCluster/${rc.metadata?.name}`;
  if (!rc.metadata?.name) errs.push("RayCluster without metadata.name");
  const spec = rc.spec ?? {};
  if (spec.rayVersion !== undefined && !isString(spec.rayVersion)) {
    errs.push(`${where}: rayVersion must be a string`);
  }
  if (!spec.headGroupSpec) errs.push(`${where}: no headGroupSpec`);
  else {
    const p = spec.headGroupSpec.rayStartParams;
    if (p !== undefined && !isStringMap(p)) errs.push(`${where}: head rayStartParams not strings`);
    errs.push(...templateErrors(`${where} head`, spec.headGroupSpec.template));
  }
  for (const [i, g] of (spec.workerGroupSpecs ?? []).entries()) {
    const w = `${where} workerGroupSpecs[${i}]`;
    if (!isString(g.groupName) || !g.groupName) errs.push(`${w}: no groupName`);
    if (g.rayStartParams !== undefined && !isStringMap(g.rayStartParams)) {
      errs.push(`${w}: rayStartParams not strings`);
    }
    for (const f of ["replicas", "minReplicas", "maxReplicas"]) {
      if (g[f] !== undefined && !Number.isInteger(g[f])) errs.push(`${w}: ${f} not an integer`);
    }
    if (g.minReplicas > g.replicas || g.replicas > g.maxReplicas) {
      errs.push(`${w}: replicas outside minReplicas..maxReplicas`);
    }
    errs.push(...templateErrors(w, g.template));
  }
  return errs;
}

// What the example promises for NCCL's output to reach the agent, and the seed's shape.
function promiseErrors(rc, agentTypes = efaDeviceTypes()) {
  const errs = [];
  const where = `RayCluster/${rc.metadata?.name}`;
  const groups = [rc.spec.headGroupSpec, ...(rc.spec.workerGroupSpecs ?? [])];
  for (const g of groups) {
    const pod = g.template.spec;
    const tmpRayVolumes = new Set(
      (pod.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name),
    );
    for (const c of pod.containers) {
      const m = (c.volumeMounts ?? []).find((v) => v.mountPath === "/tmp/ray");
      if (!m || !tmpRayVolumes.has(m.name)) {
        errs.push(`${where}: container ${c.name} has no /tmp/ray emptyDir (Ray's logs stay hidden)`);
      }
    }
  }
  const workers = rc.spec.workerGroupSpecs ?? [];
  const gpu = workers.filter((g) => g.template.spec.containers.some(
    (c) => String(c.resources?.limits?.["nvidia.com/gpu"]) === "4"));
  if (gpu.length !== 1 || gpu[0].replicas !== 2) errs.push(`${where}: not 2 workers with 4 GPUs`);
  for (const g of workers) errs.push(...efaShareErrors(where, g.template.spec, agentTypes));
  for (const g of gpu) {
    const pod = g.template.spec;
    if (pod.nodeSelector?.["node.kubernetes.io/instance-type"] !== "g6.12xlarge") {
      errs.push(`${where}: GPU workers not on g6.12xlarge`);
    }
    for (const c of pod.containers) {
      const env = (n) => c.env?.find((e) => e.name === n)?.value;
      if (env("NCCL_DEBUG") !== "INFO") errs.push(`${where}: ${c.name} without NCCL_DEBUG=INFO`);
      if (env("FI_PROVIDER") !== "efa") errs.push(`${where}: ${c.name} without FI_PROVIDER=efa`);
      const ifname = env("NCCL_SOCKET_IFNAME") ?? "";
      if (!ifname.startsWith("^") || !ifname.slice(1).split(",").includes("lo")) {
        errs.push(`${where}: ${c.name} does not exclude lo from NCCL_SOCKET_IFNAME`);
      }
      // The NCCL Inspector: loaded, dumping live (a positive interval: -1 writes nothing until
      // teardown in some versions), into the /tmp/ray volume the agent reads (docs/inspector.md).
      if (!(env("NCCL_PROFILER_PLUGIN") ?? "").includes("inspector") ||
          env("NCCL_INSPECTOR_ENABLE") !== "1") {
        errs.push(`${where}: ${c.name} does not load the NCCL Inspector`);
      }
      if (!(Number(env("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS")) > 0)) {
        errs.push(`${where}: ${c.name} without a positive Inspector dump interval`);
      }
      if (!(env("NCCL_INSPECTOR_DUMP_DIR") ?? "").startsWith("/tmp/ray/")) {
        errs.push(`${where}: ${c.name} writes Inspector files outside the /tmp/ray volume`);
      }
      if (String(c.resources?.limits?.["vpc.amazonaws.com/efa"]) !== "1") {
        errs.push(`${where}: ${c.name} without one EFA device`);
      }
      if (!c.securityContext?.capabilities?.add?.includes("IPC_LOCK")) {
        errs.push(`${where}: ${c.name} without IPC_LOCK (EFA memory registration)`);
      }
    }
  }
  return errs;
}

// A NodeReadinessRule (the Node Readiness Controller's readiness.node.x-k8s.io/v1alpha1, whose
// CRD has no npm schema either) that gates nodes on the agent's FabricReady condition
// (docs/node-readiness.md): the fields the API requires, FabricReady required True, a taint the
// controller may manage (its readiness.k8s.io/ prefix) that keeps pods off, and one the agent's
// DaemonSet tolerates, or the agent that sets FabricReady would never start on the node.
export function readinessRuleErrors(o, agentTolerations) {
  const errs = [];
  const where = `NodeReadinessRule/${o.metadata?.name}`;
  const spec = o.spec ?? {};
  if (!o.metadata?.name) errs.push("NodeReadinessRule without metadata.name");
  if (!spec.nodeSelector) errs.push(`${where}: no nodeSelector (it would taint every node)`);
  for (const c of spec.conditions ?? []) {
    if (!c.type || !["True", "False", "Unknown"].includes(c.requiredStatus)) {
      errs.push(`${where}: condition ${JSON.stringify(c)} needs a type and requiredStatus`);
    }
  }
  if (!(spec.conditions ?? []).some((c) => c.type === "FabricReady" && c.requiredStatus === "True")) {
    errs.push(`${where}: does not wait for FabricReady True`);
  }
  const taint = spec.taint ?? {};
  if (!taint.key?.startsWith("readiness.k8s.io/")) errs.push(`${where}: taint key ${taint.key} outside readiness.k8s.io/`);
  if (!["NoSchedule", "NoExecute"].includes(taint.effect)) errs.push(`${where}: taint effect ${taint.effect} keeps no pod off`);
  if (!["bootstrap-only", "continuous"].includes(spec.enforcementMode)) {
    errs.push(`${where}: enforcementMode ${spec.enforcementMode} unknown`);
  }
  const tolerated = (agentTolerations ?? []).some((t) =>
    (t.operator === "Exists" && (!t.key || t.key === taint.key)) ||
    (t.key === taint.key && (!t.effect || t.effect === taint.effect)));
  if (!tolerated) errs.push(`${where}: the agent's DaemonSet does not tolerate taint ${taint.key}`);
  return errs;
}

function agentTolerations() {
  const ds = parse(readFileSync(`${src}/deploy/kubernetes/base/daemonset.yaml`, "utf8"));
  return ds.spec.template.spec.tolerations;
}

function check(text) {
  const errs = [];
  for (const d of parseAllDocuments(text)) {
    if (d.errors.length) errs.push(...d.errors.map((e) => `yaml: ${e.message}`));
    const o = d.toJS();
    if (!o) continue;
    if (o.apiVersion === "readiness.node.x-k8s.io/v1alpha1" && o.kind === "NodeReadinessRule") {
      errs.push(...readinessRuleErrors(o, agentTolerations()));
      continue;
    }
    if (o.apiVersion !== "ray.io/v1" || o.kind !== "RayCluster") {
      errs.push(`${o.kind}: only ray.io/v1 RayCluster and NodeReadinessRule examples are checked here`);
      continue;
    }
    const e = rayClusterErrors(o);
    errs.push(...e);
    if (!e.length) errs.push(...promiseErrors(o));
  }
  return errs;
}

// The checks must reject what they claim to, or a green run means nothing.
function selfTest() {
  const worker = (over = {}) => ({
    groupName: "g", replicas: 2, minReplicas: 2, maxReplicas: 2, rayStartParams: {},
    template: { spec: { containers: [{ name: "w", image: "i", ...over }] } },
  });
  const bad = [
    { metadata: { name: "x" }, spec: { workerGroupSpecs: [worker()] } },  // no head
    { metadata: { name: "x" }, spec: { headGroupSpec: { template: { spec: { containers: [
      { name: "h", ports: [{ containerPort: "x" }] }] } } } } },         // schema: port type
    { metadata: { name: "x" }, spec: { headGroupSpec: { rayStartParams: { "num-gpus": 0 },
      template: { spec: { containers: [{ name: "h" }] } } } } },         // non-string param
  ];
  for (const o of bad) {
    if (!rayClusterErrors(o).length) {
      console.error(`self-test: ${JSON.stringify(o)} should have been rejected`);
      process.exit(1);
    }
  }
  const noLogs = { metadata: { name: "x" }, spec: {
    headGroupSpec: { template: { spec: { containers: [{ name: "h" }] } } },
    workerGroupSpecs: [worker()] } };
  if (!promiseErrors(noLogs).length) {
    console.error("self-test: a cluster without the /tmp/ray emptyDir should have been rejected");
    process.exit(1);
  }
  const onType = (type, efa) => ({ nodeSelector: { "node.kubernetes.io/instance-type": type },
    containers: [{ name: "w", resources: { limits: { "vpc.amazonaws.com/efa": efa } } }] });
  if (efaShareErrors("x", onType("g6.12xlarge", 1), new Set(["p5.48xlarge"])).length ||
      efaShareErrors("x", onType("p5.48xlarge", 31), new Set(["p5.48xlarge"])).length) {
    console.error("self-test: a pod that leaves the agent its EFA was rejected");
    process.exit(1);
  }
  for (const [what, pod, types] of [
    ["a g6.12xlarge pod beside an efa-device agent", onType("g6.12xlarge", 1), new Set(["g6.12xlarge"])],
    ["a p5.48xlarge pod with all 32 EFAs beside an efa-device agent", onType("p5.48xlarge", 32),
     new Set(["p5.48xlarge"])],
  ]) {
    if (!efaShareErrors("x", pod, types).length) {
      console.error(`self-test: ${what} should have been rejected`);
      process.exit(1);
    }
  }
  const rule = (spec = {}) => ({ metadata: { name: "r" }, spec: {
    nodeSelector: { matchLabels: { a: "b" } },
    conditions: [{ type: "FabricReady", requiredStatus: "True" }],
    taint: { key: "readiness.k8s.io/efawatch.io/fabric-not-ready", effect: "NoSchedule" },
    enforcementMode: "bootstrap-only", ...spec } });
  const all = [{ operator: "Exists" }];
  if (readinessRuleErrors(rule(), all).length) {
    console.error(`self-test: a good NodeReadinessRule was rejected: ${readinessRuleErrors(rule(), all)}`);
    process.exit(1);
  }
  for (const [what, o, tolerations] of [
    ["a rule on another condition", rule({ conditions: [{ type: "Ready", requiredStatus: "True" }] }), all],
    ["a rule without nodeSelector", rule({ nodeSelector: undefined }), all],
    ["a PreferNoSchedule taint", rule({ taint: { key: "readiness.k8s.io/x", effect: "PreferNoSchedule" } }), all],
    ["a taint the agent does not tolerate", rule(), [{ key: "other", operator: "Exists" }]],
  ]) {
    if (!readinessRuleErrors(o, tolerations).length) {
      console.error(`self-test: ${what} should have been rejected`);
      process.exit(1);
    }
  }
  console.log("self-test: invalid RayClusters, training pods that compete with the agent " +
    "for a node's EFAs, and NodeReadinessRules that would not gate on FabricReady, rejected");
}

const args = process.argv.slice(2);
if (args[0] === "--self-test") {
  selfTest();
} else {
  let failed = false;
  for (const file of args) {
    const errs = check(readFileSync(file, "utf8"));
    for (const e of errs) console.error(`${file}: ${e}`);
    if (errs.length) failed = true;
    else console.log(`${file}: valid`);
  }
  process.exit(failed ? 1 : 0);
}
