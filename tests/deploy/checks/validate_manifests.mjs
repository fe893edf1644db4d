// SPDX-License-Identifier: Apache-2.0
// Validates a rendering of the deployment (`kubectl kustomize` output of an overlay, or of a
// combination of components on the base) against the Kubernetes and Prometheus Operator schemas
// (kubernetes-models), then checks what the deployment promises beyond the schema, given the
// components the rendering was built from:
//   - it starts: every Secret a pod mounts (or reads into its environment) is created in the same
//     rendering or optional; every volume mount names a volume; namespaced objects are in the
//     agent's namespace;
//   - gRPC: on a unix socket inside the pod (on an emptyDir, the CLI's EFAWATCH_AGENT pointing at
//     it), or on the node address with mutual TLS and roles from files of a mounted Secret
//     (fabric-probes), or plaintext in insecure-dev and nowhere else; the runbook's in-pod and
//     port-forward commands reach it;
//   - the default overlay `eks`: no device, no Secret, gRPC on the unix socket;
//   - device access only from efa-device (one EFA, IPC_LOCK, types with two EFAs or more) or
//     host-devices (privileged, EFA types), the ping mesh on exactly where there is a device;
//     hostPID and SYS_PTRACE only with host-processes; no other capability;
//   - read-only host mounts, HTTP health probes, bounded resources, least-privilege RBAC, an
//     image kustomize `images:` sets, the ServiceMonitor's honorLabels, /metrics on the pod IP
//     and /metrics TLS consistent across agent, probes and scraper.
//
//   node validate_manifests.mjs <name> <rendered.yaml> [<kustomization dir>]
//   node validate_manifests.mjs --self-test
//
// <name> is the overlay's directory name (insecure-dev and eks have rules of their own) or a
// combination's; the components are read from <kustomization dir>, following `resources:`
// into other kustomizations. Exits 1 with one line per problem. compositions_test.sh and
// check_deploy_docs.mjs import check() and componentsOf().
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parse, parseAllDocuments } from "yaml";
import { EFA_DEVICES, SINGLE_EFA_TYPES } from "./efa_types.mjs";

const groups = {
  v1: "kubernetes-models/v1",
  "apps/v1": "kubernetes-models/apps/v1",
  "rbac.authorization.k8s.io/v1": "kubernetes-models/rbac.authorization.k8s.io/v1",
  "scheduling.k8s.io/v1": "kubernetes-models/scheduling.k8s.io/v1",
  "policy/v1": "kubernetes-models/policy/v1",
  "networking.k8s.io/v1": "kubernetes-models/networking.k8s.io/v1",
  "admissionregistration.k8s.io/v1": "kubernetes-models/admissionregistration.k8s.io/v1",
  "monitoring.coreos.com/v1": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1",
};

// cert-manager objects (the certs-cert-manager component) have no schema package here: the
// fields the component relies on are checked by hand.
function certManagerErrors(obj, where) {
  const spec = obj.spec ?? {};
  if (obj.kind === "Issuer" || obj.kind === "ClusterIssuer") {
    return spec.selfSigned || spec.ca?.secretName ? [] : [`${where}: neither selfSigned nor ca`];
  }
  if (obj.kind === "Certificate") {
    const errs = [];
    if (!spec.secretName) errs.push(`${where}: no secretName`);
    if (!spec.issuerRef?.name) errs.push(`${where}: no issuerRef.name`);
    if (!spec.isCA && !spec.dnsNames?.length) errs.push(`${where}: no dnsNames (the identity)`);
    return errs;
  }
  return [`${where}: kind ${obj.kind} unknown in cert-manager.io/v1`];
}

// Schema errors of one object, or a line saying its kind is unknown here.
async function schemaErrors(obj) {
  const where = `${obj.kind}/${obj.metadata?.name}`;
  if (obj.apiVersion === "cert-manager.io/v1") return certManagerErrors(obj, where);
  const base = groups[obj.apiVersion];
  if (!base) return [`${where}: apiVersion ${obj.apiVersion} has no schema here`];
  let mod;
  try {
    mod = await import(`${base}/${obj.kind}`);
  } catch {
    return [`${where}: kind ${obj.kind} unknown in ${obj.apiVersion}`];
  }
  try {
    new mod[obj.kind](obj).validate();
    return [];
  } catch (e) {
    return [`${where}: ${e.message}`];
  }
}

// The overlay docs/deploy.md and the README recommend: monitoring only, no device, no Secret.
const DEFAULT_OVERLAY = "eks";
// The one rendering allowed to serve plaintext gRPC off the pod (docs/security.md, "Plaintext").
const PLAINTEXT_OVERLAY = "insecure-dev";
// The image name kustomize `images:` entries match (docs/deploy.md, "The image").
const IMAGE_NAME = "efawatchd";
// The identity in every agent certificate (scripts/make-certs.sh, certs-cert-manager).
const AGENT_IDENTITY = "efawatch-agent";
// Objects without a namespace; every other kind must be in the agent's.
const CLUSTER_SCOPED = new Set([
  "Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "ClusterIssuer",
  "ValidatingWebhookConfiguration",
]);
const truthy = (v) => ["true", "1", "yes", "on"].includes(String(v).toLowerCase());

// The components a kustomization is built from: its own `components:` (by directory name), and
// those of every kustomization its `resources:` include, in build order.
export function componentsOf(dir) {
  const k = parse(readFileSync(join(dir, "kustomization.yaml"), "utf8")) ?? {};
  const out = [];
  for (const r of k.resources ?? []) {
    const d = resolve(dir, r);
    if (existsSync(join(d, "kustomization.yaml"))) out.push(...componentsOf(d));
  }
  for (const c of k.components ?? []) {
    const d = resolve(dir, c);
    out.push(...componentsOf(d), basename(d));
  }
  return out;
}

// A setting of the agent: its EFAWATCH_* variable where the container sets one (an empty value
// counts as unset, as efawatchd reads it), else the config file's key, else undefined.
function settings(objs, c) {
  const configs = objs.filter((o) => o.kind === "ConfigMap").map((o) => Object.values(o.data ?? {}).join("\n"));
  return (key) => {
    const e = c.env?.find((x) => x.name === `EFAWATCH_${key.toUpperCase().replaceAll("-", "_")}`);
    if (e) return e.value === "" ? undefined : e.value;
    return configs.map((t) => new RegExp(`^\\s*${key}\\s*=\\s*(\\S+)`, "m").exec(t)?.[1]).find((v) => v);
  };
}

// Every pod template of the rendering with the object it belongs to.
function podTemplates(objs) {
  return objs.flatMap((o) => {
    const pod = o.kind === "Pod" ? o.spec : o.spec?.template?.spec ?? o.spec?.jobTemplate?.spec?.template?.spec;
    return pod?.containers ? [{ o, pod }] : [];
  });
}

// The pods start: every Secret they mount (secret volumes, projected secret sources) or read
// into their environment (secretKeyRef, envFrom) is created by this rendering (a Secret, or a
// cert-manager Certificate's secretName) in the pod's namespace, or is optional. Otherwise the
// pod waits in ContainerCreating (CreateContainerConfigError for the environment) for something
// a reader of the rendering cannot see.
export function secretErrors(objs) {
  const created = new Set();
  for (const o of objs) {
    const ns = o.metadata?.namespace ?? "";
    if (o.kind === "Secret") created.add(`${ns}/${o.metadata.name}`);
    if (o.kind === "Certificate" && o.apiVersion?.startsWith("cert-manager.io/")) {
      created.add(`${ns}/${o.spec?.secretName}`);
    }
  }
  const errs = [];
  for (const { o, pod } of podTemplates(objs)) {
    const ns = o.metadata?.namespace ?? "";
    const where = `${o.kind}/${o.metadata?.name}`;
    const need = (name, optional, how) => {
      if (!optional && !created.has(`${ns}/${name}`)) {
        errs.push(`${where}: ${how} Secret ${name}, which nothing in this rendering creates, ` +
          "and not optional: the pod would not start");
      }
    };
    for (const v of pod.volumes ?? []) {
      if (v.secret) need(v.secret.secretName, v.secret.optional, `volume ${v.name} mounts`);
      for (const src of v.projected?.sources ?? []) {
        if (src.secret) need(src.secret.name, src.secret.optional, `projected volume ${v.name} mounts`);
      }
    }
    for (const k of [...(pod.initContainers ?? []), ...pod.containers]) {
      for (const e of k.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) need(ref.name, ref.optional, `container ${k.name} reads ${e.name} from`);
      }
      for (const e of k.envFrom ?? []) {
        if (e.secretRef) need(e.secretRef.name, e.secretRef.optional, `container ${k.name} reads`);
      }
    }
  }
  return errs;
}

// Secrets a pod mounts at all (the default mounts none).
function secretVolumes(pod) {
  return (pod.volumes ?? []).filter((v) => v.secret || v.projected?.sources?.some((s) => s.secret));
}

// Objects in another namespace than the agent's (or in none) and mounts of missing volumes:
// kustomize does not catch either, the API server rejects the second.
function structureErrors(objs, ds, pod) {
  const errs = [];
  const ns = ds.metadata.namespace;
  if (!ns) errs.push("DaemonSet without a namespace");
  for (const o of objs) {
    if (CLUSTER_SCOPED.has(o.kind)) continue;
    if (o.metadata?.namespace !== ns) {
      errs.push(`${o.kind}/${o.metadata?.name} in namespace ${o.metadata?.namespace ?? "(none)"}, not ${ns}`);
    }
  }
  const volumes = new Set((pod.volumes ?? []).map((v) => v.name));
  for (const k of [...(pod.initContainers ?? []), ...pod.containers]) {
    for (const m of k.volumeMounts ?? []) {
      if (!volumes.has(m.name)) errs.push(`container ${k.name} mounts ${m.name}, which is no volume`);
    }
  }
  return errs;
}

// Device components schedule only where the device is: every term of the required node
// affinity (terms are ORed) limits the instance type to EFA types, so no term admits another
// node; efa-device also leaves out the types with a single EFA, which training pods need.
function deviceAffinityErrors(pod, noSingleEfa) {
  const terms = pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms ?? [];
  if (!terms.length) return ["device component without a required node affinity"];
  const errs = [];
  for (const [i, t] of terms.entries()) {
    const types = (t.matchExpressions ?? []).find(
      (e) => e.key === "node.kubernetes.io/instance-type" && e.operator === "In");
    if (!types) errs.push(`node affinity term ${i} does not limit the instance type`);
    else {
      const other = types.values.filter((v) => !EFA_DEVICES.has(v));
      if (other.length) errs.push(`node affinity term ${i} admits non-EFA types ${other.join(",")}`);
      const single = types.values.filter((v) => SINGLE_EFA_TYPES.has(v));
      if (noSingleEfa && single.length) {
        errs.push(`efa-device admits ${single.join(",")}, whose only EFA the training pods need`);
      }
    }
  }
  return errs;
}

// gRPC. On a unix socket (the default): plaintext, reachable only inside the pod; the socket's
// directory is an emptyDir (the root filesystem is read-only), the CLI's EFAWATCH_AGENT names the
// same socket (so `kubectl exec ... -- efawatch status` needs no flag), and no container port is
// declared (under hostNetwork it would reserve the node's port for nothing). On a TCP address:
// only with fabric-probes, and then mutual TLS with the role table, every file of it in a mounted
// Secret (a missing file stops the agent at start: daemon/config.cc checks each one), on every
// node address so that the runbook's `kubectl exec` and `kubectl port-forward` reach it on
// 127.0.0.1, with the CLI's EFAWATCH_TLS_* on the agent's own certificate, whose identity
// reads; or plaintext with EFAWATCH_GRPC_INSECURE in insecure-dev, and nowhere else. Plaintext on
// the node's loopback is no exception: under hostNetwork every host-network pod reaches it.
function grpcErrors(objs, c, pod, name, comps) {
  const setting = settings(objs, c);
  const env = (n) => c.env?.find((e) => e.name === n)?.value;
  const listen = setting("grpc-listen") ?? "127.0.0.1:9478";
  const agent = env("EFAWATCH_AGENT");
  const insecure = truthy(setting("grpc-insecure"));
  const grpcPort = (c.ports ?? []).find((p) => p.name === "grpc")?.containerPort;
  const errs = [];
  if (insecure && name !== PLAINTEXT_OVERLAY) errs.push(`grpc-insecure set outside ${PLAINTEXT_OVERLAY}`);

  if (listen.startsWith("unix:")) {
    const path = listen.slice("unix:".length);
    if (!path.startsWith("/")) errs.push(`gRPC socket ${listen}: not an absolute path`);
    const dir = dirname(path);
    const emptyDirs = new Set((pod.volumes ?? []).filter((v) => v.emptyDir).map((v) => v.name));
    const mount = (c.volumeMounts ?? []).find((m) => m.mountPath === dir);
    if (!mount || !emptyDirs.has(mount.name) || mount.readOnly) {
      errs.push(`gRPC socket directory ${dir} is no writable emptyDir: the root filesystem is read-only`);
    }
    if (agent !== listen) errs.push(`EFAWATCH_AGENT is ${agent}: not the socket ${listen} the agent listens on`);
    if (grpcPort !== undefined) errs.push(`container port grpc ${grpcPort} declared, but gRPC is on a unix socket`);
    if (name === PLAINTEXT_OVERLAY) {
      errs.push(`${PLAINTEXT_OVERLAY} does not serve plaintext on the network: rename it or drop it`);
    }
    return errs;
  }

  const port = listen.slice(listen.lastIndexOf(":") + 1);
  if (!/^(:|0\.0\.0\.0:|\[::\]:)\d+$/.test(listen)) {
    errs.push(`gRPC listens on ${listen}: not on every address, so not on 127.0.0.1:${port}, where ` +
      "the runbook's commands connect");
  }
  if (agent !== `127.0.0.1:${port}`) errs.push(`EFAWATCH_AGENT is ${agent}: not 127.0.0.1:${port}`);
  if (String(grpcPort) !== port) errs.push(`container port grpc is ${grpcPort}, gRPC listens on ${port}`);
  if (name === PLAINTEXT_OVERLAY) {
    if (!insecure) errs.push(`${PLAINTEXT_OVERLAY} does not serve plaintext: rename it or drop it`);
    return errs;
  }
  if (!comps.has("fabric-probes")) {
    errs.push(`gRPC on ${listen} without the fabric-probes component, the one that serves it off the pod`);
  }
  if (/^(127\.|\[::1\]:|localhost:)/.test(listen) && !setting("grpc-tls-cert")) {
    errs.push(`plaintext gRPC on ${listen}, the node's loopback: every host-network pod reaches it`);
  }
  for (const n of ["EFAWATCH_GRPC_TLS_CERT", "EFAWATCH_GRPC_TLS_KEY", "EFAWATCH_GRPC_TLS_CLIENT_CA",
                   "EFAWATCH_GRPC_AUTHZ_READERS", "EFAWATCH_GRPC_AUTHZ_OPERATORS",
                   "EFAWATCH_GRPC_AUTHZ_AGENTS", "EFAWATCH_GRPC_PEER_SERVER_NAME"]) {
    if (!env(n)) errs.push(`${n} empty or missing: gRPC on the network would not be mutual TLS with roles`);
  }
  const secrets = new Set(secretVolumes(pod).map((v) => v.name));
  const mounts = (c.volumeMounts ?? []).filter((m) => secrets.has(m.name)).map((m) => `${m.mountPath}/`);
  for (const n of ["EFAWATCH_GRPC_TLS_CERT", "EFAWATCH_GRPC_TLS_KEY", "EFAWATCH_GRPC_TLS_CLIENT_CA",
                   "EFAWATCH_TLS_CA", "EFAWATCH_TLS_CERT", "EFAWATCH_TLS_KEY"]) {
    const path = env(n);
    if (path && !mounts.some((m) => path.startsWith(m))) {
      errs.push(`${n} ${path} is in no mounted Secret (a certs component mounts one at /etc/efawatch-tls)`);
    }
    if (!path && n.startsWith("EFAWATCH_TLS_")) errs.push(`${n} unset: the CLI in the pod cannot authenticate`);
  }
  if (env("EFAWATCH_TLS_SERVER_NAME") !== env("EFAWATCH_GRPC_PEER_SERVER_NAME")) {
    errs.push("EFAWATCH_TLS_SERVER_NAME is not the agents' certificate name");
  }
  const readers = (env("EFAWATCH_GRPC_AUTHZ_READERS") ?? "").split(",").map((x) => x.trim());
  const agents = (env("EFAWATCH_GRPC_AUTHZ_AGENTS") ?? "").split(",").map((x) => x.trim());
  if (!agents.some((a) => a && readers.includes(a))) {
    errs.push("the agent's identity is no reader: `efawatch status` inside the pod is refused");
  }
  return errs;
}

// What the default overlay promises (README, docs/deploy.md): it starts on every GPU node with
// nothing made by hand and exposes nothing but /metrics.
function defaultErrors(c, pod) {
  const errs = [];
  const listen = c.env?.find((e) => e.name === "EFAWATCH_GRPC_LISTEN")?.value ?? "";
  if (!listen.startsWith("unix:")) errs.push(`the default serves gRPC on ${listen}, not on a unix socket in the pod`);
  for (const v of secretVolumes(pod)) errs.push(`the default mounts a Secret (volume ${v.name})`);
  const requests = [...(pod.initContainers ?? []), ...pod.containers].flatMap((k) => [
    ...Object.keys(k.resources?.requests ?? {}), ...Object.keys(k.resources?.limits ?? {})]);
  if (requests.includes("vpc.amazonaws.com/efa")) errs.push("the default requests vpc.amazonaws.com/efa");
  if (pod.containers.some((k) => k.securityContext?.privileged)) errs.push("the default is privileged");
  return errs;
}

// Every rendering (issue #46): the runtime's default seccomp filter for the pod, no container
// that turns it off short of privileged (host-devices, unconfined anyway), and amd64 in every
// required node-affinity term (terms are ORed, so one without it admits arm64 GPU nodes, where
// the amd64 image cannot start).
function hardeningErrors(pod) {
  const errs = [];
  if (pod.securityContext?.seccompProfile?.type !== "RuntimeDefault") {
    errs.push("the pod has no seccompProfile RuntimeDefault");
  }
  for (const k of [...(pod.initContainers ?? []), ...pod.containers]) {
    const type = k.securityContext?.seccompProfile?.type;
    if (type !== undefined && type !== "RuntimeDefault") errs.push(`container ${k.name}: seccompProfile ${type}`);
  }
  const terms = pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms ?? [];
  if (!terms.length) errs.push("no required node affinity: the amd64 image would land on arm64 nodes");
  terms.forEach((t, i) => {
    const arch = (t.matchExpressions ?? []).find((e) => e.key === "kubernetes.io/arch");
    if (arch?.operator !== "In" || JSON.stringify(arch.values) !== JSON.stringify(["amd64"])) {
      errs.push(`node-affinity term ${i} does not require kubernetes.io/arch In [amd64]`);
    }
  });
  return errs;
}

// Device access comes from efa-device (one EFA from the device plugin, IPC_LOCK, not
// privileged) or host-devices (privileged, the host's /dev/infiniband, no EFA taken), never
// both and never from elsewhere; the ping mesh is on exactly where there is a device (without
// one the responder stays on loopback and every peer would look lost), with gRPC off the pod
// for peers to ask for fabric addresses and the Role that lets it list its peers.
function deviceErrors(objs, c, pod, comps) {
  const setting = settings(objs, c);
  const sc = c.securityContext ?? {};
  const efa = c.resources?.limits?.["vpc.amazonaws.com/efa"];
  const devMount = (c.volumeMounts ?? []).some((m) => m.mountPath === "/dev/infiniband");
  const efaDevice = comps.has("efa-device"), hostDevices = comps.has("host-devices");
  const errs = [];
  if (efaDevice && hostDevices) errs.push("efa-device and host-devices together: choose one");
  if (efaDevice || hostDevices) errs.push(...deviceAffinityErrors(pod, efaDevice));
  if (efa !== undefined && !efaDevice) errs.push("vpc.amazonaws.com/efa without the efa-device component");
  if ((sc.privileged || devMount) && !hostDevices) {
    errs.push("privileged or /dev/infiniband without the host-devices component");
  }
  if (efaDevice) {
    if (String(efa) !== "1") errs.push("efa-device without a vpc.amazonaws.com/efa limit of 1");
    if (!sc.capabilities?.add?.includes("IPC_LOCK")) errs.push("efa-device without IPC_LOCK for memory registration");
    if (sc.privileged) errs.push("privileged with a device plugin device");
  }
  if (hostDevices && (!sc.privileged || !devMount)) errs.push("host-devices needs privileged and /dev/infiniband");
  if (sc.capabilities?.drop?.[0] !== "ALL") errs.push("capabilities not dropped: drop ALL first");
  const allowed = new Set([...(efaDevice ? ["IPC_LOCK"] : []),
    ...(comps.has("host-processes") ? ["SYS_PTRACE"] : [])]);
  const extra = (sc.capabilities?.add ?? []).filter((a) => !allowed.has(a));
  if (extra.length) errs.push(`capabilities added that no component in this rendering asks for: ${extra.join(",")}`);

  const device = efaDevice || hostDevices;
  const mesh = setting("mesh-discovery") ?? "off";
  if (device && mesh !== "kubernetes") errs.push("a fabric device without the ping mesh (fabric-probes)");
  if (!device && mesh !== "off") errs.push(`ping mesh ${mesh} without a fabric device: every peer would look lost`);
  if (mesh === "kubernetes") {
    const ns = objs.find((o) => o.kind === "DaemonSet")?.metadata.namespace;
    const roles = objs.filter((o) => o.kind === "Role" && o.metadata.namespace === ns &&
      o.rules.some((r) => r.resources.includes("pods") && r.verbs.includes("list")));
    const bound = objs.some((b) => b.kind === "RoleBinding" && b.metadata.namespace === ns &&
      roles.some((r) => r.metadata.name === b.roleRef.name) &&
      b.subjects.some((s) => s.kind === "ServiceAccount" && s.name === pod.serviceAccountName));
    if (!bound) errs.push("ping mesh discovery kubernetes without a Role to list the agent pods, bound to the agent");
    if ((setting("grpc-listen") ?? "").startsWith("unix:")) {
      errs.push("ping mesh on with gRPC on a unix socket: peers cannot ask for the fabric address");
    }
  }
  return errs;
}

// The host's PID namespace lets the agent see every process of the node and, with SYS_PTRACE,
// read any container's files (docs/deploy.md, "Host processes"): only the host-processes
// component gives them, and there with --container-rootfs on, the host's /proc read-only where
// procfs-root points, and no privilege.
function hostProcessErrors(objs, c, pod, comps) {
  const setting = settings(objs, c);
  const ptrace = (c.securityContext?.capabilities?.add ?? []).includes("SYS_PTRACE");
  const rootfs = truthy(setting("container-rootfs"));
  const errs = [];
  if (!comps.has("host-processes")) {
    if (pod.hostPID) errs.push("hostPID without host-processes");
    if (ptrace) errs.push("SYS_PTRACE without host-processes");
    if (rootfs) errs.push("container-rootfs on without host-processes (it needs hostPID)");
    return errs;
  }
  if (pod.hostPID !== true) errs.push("host-processes without hostPID");
  if (!rootfs) errs.push("host-processes without container-rootfs on");
  if (!ptrace) errs.push("host-processes without SYS_PTRACE: /proc/<pid>/root would be refused");
  if (c.securityContext?.privileged) errs.push("host-processes with a privileged container");
  const procfs = setting("procfs-root") ?? "/proc";
  const procVolumes = new Set(
    (pod.volumes ?? []).filter((v) => v.hostPath?.path === "/proc").map((v) => v.name));
  const mount = (c.volumeMounts ?? []).find((m) => procVolumes.has(m.name) && m.mountPath === procfs);
  if (procfs !== "/proc" && !mount) errs.push(`host /proc not mounted at procfs-root ${procfs}`);
  if (mount && !mount.readOnly) errs.push("host /proc mounted read-write");
  return errs;
}

// The Prometheus Operator's objects, where the rendering has them: the ServiceMonitor in the
// Service's namespace selecting it, node from the target's pod, the agent's labels honoured,
// and the PrometheusRule beside it.
function monitoringErrors(objs, comps) {
  const [sm] = objs.filter((o) => o.kind === "ServiceMonitor");
  const errs = [];
  if (comps.has("prometheus-operator") && !sm) errs.push("prometheus-operator without a ServiceMonitor");
  if (!sm) return errs;
  const ep = sm.spec.endpoints?.[0];
  if (!(ep?.relabelings ?? []).some((r) => r.targetLabel === "node" &&
      r.sourceLabels?.includes("__meta_kubernetes_pod_node_name"))) {
    errs.push("ServiceMonitor does not set node from __meta_kubernetes_pod_node_name");
  }
  if (!objs.some((o) => o.kind === "PrometheusRule")) errs.push("no PrometheusRule");
  // The agent's NCCL series carry the workload's namespace/pod/container (operator_labels.mjs).
  if (ep?.honorLabels !== true) errs.push("ServiceMonitor without honorLabels: true");
  const svc = objs.find((o) => o.kind === "Service");
  const sel = Object.entries(sm.spec.selector?.matchLabels ?? {});
  if (!svc || svc.metadata.namespace !== sm.metadata.namespace ||
      !sel.every(([k, v]) => svc.metadata.labels?.[k] === v)) {
    errs.push("the ServiceMonitor does not select the agents' Service in its own namespace");
  }
  if (!(svc?.spec.ports ?? []).some((p) => p.name === ep?.port)) errs.push(`the Service has no port ${ep?.port}`);
  return errs;
}

function agentContainer(ds) {
  return ds.spec.template.spec.containers.find((c) => c.name === "efawatchd");
}

// /metrics on the pod IP only (docs/security.md, "What /metrics exposes"): EFAWATCH_METRICS_LISTEN
// is "$(EFAWATCH_POD_IP):<metrics port>", with EFAWATCH_POD_IP from the downward API defined
// before it (Kubernetes expands only variables defined earlier in the list; a later or missing
// one stays literal and the agent exits on it).
function metricsListenErrors(c) {
  const env = c.env ?? [];
  const at = (name) => env.findIndex((e) => e.name === name);
  const listen = env[at("EFAWATCH_METRICS_LISTEN")]?.value;
  const port = (c.ports ?? []).find((p) => p.name === "metrics")?.containerPort;
  const errs = [];
  if (listen !== `$(EFAWATCH_POD_IP):${port}`) {
    errs.push(`EFAWATCH_METRICS_LISTEN is ${listen}: not $(EFAWATCH_POD_IP):${port} (the pod IP only)`);
  }
  const ip = env[at("EFAWATCH_POD_IP")];
  if (ip?.valueFrom?.fieldRef?.fieldPath !== "status.podIP" || at("EFAWATCH_POD_IP") > at("EFAWATCH_METRICS_LISTEN")) {
    errs.push("EFAWATCH_POD_IP is not status.podIP defined before EFAWATCH_METRICS_LISTEN");
  }
  return errs;
}

// /metrics over HTTPS (the metrics-tls component, docs/security.md): on or off together across
// the agent, the kubelet's probes and the ServiceMonitor. On: the certificate, key and client CA
// are files of a mounted Secret, the probes use HTTPS, the ServiceMonitor scrapes https checking
// the agents' certificate name and presenting a client certificate when the agent asks for one,
// and a bearer token when the agent wants one. Off: nothing speaks HTTPS to a plain-HTTP port.
function metricsTlsErrors(objs, c, pod) {
  const env = (name) => c.env?.find((e) => e.name === name)?.value;
  const configs = objs.filter((o) => o.kind === "ConfigMap").map((o) => Object.values(o.data ?? {}).join("\n"));
  const setting = (key) => env(`EFAWATCH_${key.toUpperCase().replaceAll("-", "_")}`) ??
    configs.map((t) => new RegExp(`^\\s*${key}\\s*=\\s*(\\S+)`, "m").exec(t)?.[1]).find((v) => v);
  const cert = setting("metrics-tls-cert"), key = setting("metrics-tls-key");
  const ca = setting("metrics-tls-client-ca"), token = setting("metrics-bearer-token-file");
  const on = Boolean(cert);
  const errs = [];
  const schemes = ["livenessProbe", "readinessProbe"].map((p) => [p, c[p]?.httpGet?.scheme ?? "HTTP"]);
  const [sm] = objs.filter((o) => o.kind === "ServiceMonitor");
  const ep = sm?.spec.endpoints?.[0];
  if (!on) {
    if (key || ca || token) errs.push("metrics TLS key, client CA or bearer token without EFAWATCH_METRICS_TLS_CERT");
    for (const [p, scheme] of schemes) if (scheme !== "HTTP") errs.push(`${p} uses ${scheme} but /metrics is plain HTTP`);
    if (ep && (ep.scheme ?? "http") !== "http") errs.push("ServiceMonitor scrapes https but /metrics is plain HTTP");
    return errs;
  }
  const secretVolumes = new Set((pod.volumes ?? []).filter((v) => v.secret).map((v) => v.name));
  const mounts = (c.volumeMounts ?? []).filter((m) => secretVolumes.has(m.name)).map((m) => `${m.mountPath}/`);
  for (const [name, path] of [["cert", cert], ["key", key], ["client CA", ca], ["bearer token", token]]) {
    if (path && !mounts.some((m) => path.startsWith(m))) errs.push(`metrics TLS ${name} ${path} is in no mounted Secret`);
  }
  if (!key) errs.push("EFAWATCH_METRICS_TLS_CERT without EFAWATCH_METRICS_TLS_KEY");
  for (const [p, scheme] of schemes) if (scheme !== "HTTPS") errs.push(`${p} uses ${scheme} but /metrics is HTTPS`);
  if (!ep) return errs;
  const tls = ep.tlsConfig ?? {};
  if (ep.scheme !== "https" || !ep.tlsConfig) errs.push("ServiceMonitor does not scrape https with a tlsConfig");
  if (!tls.ca?.secret?.name && !tls.ca?.configMap?.name) errs.push("ServiceMonitor tlsConfig has no CA to check the agents with");
  if (tls.serverName !== (env("EFAWATCH_GRPC_PEER_SERVER_NAME") ?? AGENT_IDENTITY)) {
    errs.push(`ServiceMonitor tlsConfig.serverName ${tls.serverName} is not the agents' certificate name`);
  }
  if (tls.insecureSkipVerify) errs.push("ServiceMonitor skips verifying the agents' certificates");
  if (ca && (!tls.cert?.secret?.name || !tls.keySecret?.name)) {
    errs.push("the agent wants a client certificate and the ServiceMonitor presents none");
  }
  if (token && !ep.authorization?.credentials?.name && !ep.bearerTokenSecret?.name) {
    errs.push("the agent wants a bearer token and the ServiceMonitor sends none");
  }
  return errs;
}

// The admission component's promises (docs/admission.md): it can never be the reason a cluster
// breaks. Every webhook fails open (failurePolicy Ignore) within 2 s, leaves kube-system and the
// agent's namespace alone, calls a Service of the rendering whose pods two replicas serve, a
// PodDisruptionBudget and a NetworkPolicy cover, with a CA bundle cert-manager injects from a
// Certificate of the rendering. Without the component, no webhook at all.
export function admissionErrors(objs, comps) {
  const errs = [];
  const of = (k) => objs.filter((o) => o.kind === k);
  const configs = of("ValidatingWebhookConfiguration");
  if (!comps.has("admission")) {
    return configs.length ? ["a ValidatingWebhookConfiguration without the admission component"] : [];
  }
  if (configs.length !== 1) return [`${configs.length} ValidatingWebhookConfigurations, not 1`];
  const [vwc] = configs;
  const inject = vwc.metadata.annotations?.["cert-manager.io/inject-ca-from"] ?? "";
  const [certNs, certName] = inject.split("/");
  if (!of("Certificate").some((c) => c.metadata.namespace === certNs && c.metadata.name === certName)) {
    errs.push(`webhook CA injected from ${inject || "(none)"}, no Certificate of the rendering`);
  }
  const labels = (sel) => Object.entries(sel?.matchLabels ?? {});
  const selects = (sel, podLabels) => labels(sel).length > 0 &&
    labels(sel).every(([k, v]) => podLabels?.[k] === v);
  for (const w of vwc.webhooks ?? []) {
    const where = `webhook ${w.name}`;
    if (w.failurePolicy !== "Ignore") errs.push(`${where}: failurePolicy ${w.failurePolicy}, not Ignore`);
    if (!(w.timeoutSeconds <= 2)) errs.push(`${where}: timeoutSeconds ${w.timeoutSeconds}, over 2`);
    const exempt = (w.namespaceSelector?.matchExpressions ?? []).find(
      (e) => e.key === "kubernetes.io/metadata.name" && e.operator === "NotIn");
    for (const ns of ["kube-system", "efawatch"]) {
      if (!exempt?.values?.includes(ns)) errs.push(`${where}: namespace ${ns} not exempt`);
    }
    const ref = w.clientConfig?.service;
    const svc = of("Service").find((o) => o.metadata.name === ref?.name && o.metadata.namespace === ref?.namespace);
    if (!svc) {
      errs.push(`${where}: calls Service ${ref?.namespace}/${ref?.name}, not in the rendering`);
      continue;
    }
    const dep = of("Deployment").find((d) =>
      Object.entries(svc.spec.selector ?? {}).every(([k, v]) => d.spec.template.metadata.labels?.[k] === v));
    if (!dep) {
      errs.push(`${where}: no Deployment behind Service ${svc.metadata.name}`);
      continue;
    }
    const podLabels = dep.spec.template.metadata.labels;
    if (!(dep.spec.replicas >= 2)) errs.push(`Deployment ${dep.metadata.name}: fewer than 2 replicas`);
    if (!of("PodDisruptionBudget").some((b) => selects(b.spec.selector, podLabels))) {
      errs.push(`Deployment ${dep.metadata.name}: no PodDisruptionBudget`);
    }
    if (!of("NetworkPolicy").some((n) => selects(n.spec.podSelector, podLabels))) {
      errs.push(`Deployment ${dep.metadata.name}: no NetworkPolicy`);
    }
  }
  return [...new Set(errs)];
}

// Promises of the deployment that the schema cannot express.
function policyErrors(objs, name, comps, image) {
  const errs = [];
  const byKind = (k) => objs.filter((o) => o.kind === k);
  const [ds] = byKind("DaemonSet");
  if (!ds) return ["no DaemonSet"];
  const pod = ds.spec.template.spec;
  const c = agentContainer(ds);
  if (!c) return ["DaemonSet has no efawatchd container"];

  // The kubelet reaches neither the gRPC socket nor, off the pod, gRPC's mutual TLS: its probes
  // go to HTTP(S) on the metrics port.
  for (const [p, path] of [["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"]]) {
    if (c[p]?.httpGet?.path !== path || c[p]?.httpGet?.port !== "metrics") {
      errs.push(`${p} is not an HTTP probe of ${path} on the metrics port`);
    }
  }
  errs.push(...secretErrors(objs));
  errs.push(...structureErrors(objs, ds, pod));
  errs.push(...grpcErrors(objs, c, pod, name, comps));
  errs.push(...metricsTlsErrors(objs, c, pod));
  const metricsTls = Boolean(settings(objs, c)("metrics-tls-cert"));
  if (metricsTls !== comps.has("metrics-tls")) {
    errs.push(metricsTls ? "/metrics over HTTPS without the metrics-tls component" : "metrics-tls without HTTPS /metrics");
  }
  errs.push(...metricsListenErrors(c));
  if (name === DEFAULT_OVERLAY) errs.push(...defaultErrors(c, pod));
  errs.push(...hardeningErrors(pod));
  errs.push(...deviceErrors(objs, c, pod, comps));
  errs.push(...hostProcessErrors(objs, c, pod, comps));
  errs.push(...monitoringErrors(objs, comps));
  errs.push(...admissionErrors(objs, comps));
  for (const k of [...(pod.initContainers ?? []), ...pod.containers]) {
    const [repo, tag] = k.image.split(":");
    if (k === c && !image && repo !== IMAGE_NAME) {
      errs.push(`image ${k.image}: kustomize images name ${IMAGE_NAME} no longer matches`);
    }
    if (k === c && image && k.image !== image) errs.push(`image ${k.image}, not ${image} from images:`);
    if (!tag || tag === "latest") errs.push(`image ${k.image}: no registry serves it; set a tag`);
  }
  for (const r of ["cpu", "memory"]) {
    if (!c.resources?.requests?.[r]) errs.push(`no ${r} request`);
  }
  if (!c.resources?.limits?.memory) errs.push("no memory limit");
  if (!c.securityContext?.readOnlyRootFilesystem) errs.push("root filesystem writable");
  if (!pod.priorityClassName) errs.push("no priorityClassName");
  if (!byKind("PriorityClass").some((p) => p.metadata.name === pod.priorityClassName)) {
    errs.push(`PriorityClass ${pod.priorityClassName} not in the output`);
  }
  if (!pod.tolerations?.length) errs.push("no tolerations");
  if (!pod.affinity?.nodeAffinity) errs.push("no node affinity");
  const envFrom = (n) => c.env?.find((e) => e.name === n)?.valueFrom?.fieldRef?.fieldPath;
  if (envFrom("EFAWATCH_NODE_NAME") !== "spec.nodeName") errs.push("node name not from spec.nodeName");
  if (envFrom("EFAWATCH_POD_IP") !== "status.podIP") errs.push("pod IP not from status.podIP");

  // Host paths are read-only, except the agent's own state directory.
  const hostVolumes = new Map(
    pod.volumes.filter((v) => v.hostPath).map((v) => [v.name, v.hostPath.path]),
  );
  for (const m of c.volumeMounts ?? []) {
    const path = hostVolumes.get(m.name);
    if (path && path !== "/var/lib/efawatch" && !m.readOnly) {
      errs.push(`hostPath ${path} mounted read-write`);
    }
  }
  for (const p of ["/var/log/pods", "/var/lib/kubelet/pods", "/sys", "/proc"]) {
    if (![...hostVolumes.values()].includes(p)) errs.push(`hostPath ${p} not mounted`);
  }

  // RBAC: list pods in the agent's namespace (the ping mesh); cluster-wide exactly what each
  // feature uses, bound to the agent's service account; nothing more. Workload identity lists
  // its node's pods; Kubernetes signals create Events and patch its node's status
  // (daemon/signals).
  const clusterRules = {
    "efawatch-workload-identity": [{ apiGroups: [""], resources: ["pods"], verbs: ["list"] }],
    "efawatch-kube-signals": [
      { apiGroups: ["events.k8s.io", ""], resources: ["events"], verbs: ["create"] },
      { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch"] },
      { apiGroups: [""], resources: ["nodes"], verbs: ["list"] },
    ],
  };
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  for (const role of byKind("ClusterRole")) {
    const want = clusterRules[role.metadata.name];
    const got = role.rules.map((r) => ({
      apiGroups: r.apiGroups, resources: r.resources, verbs: r.verbs,
    }));
    if (!want || !same(want, got)) {
      errs.push(`ClusterRole ${role.metadata.name} grants more than the agent uses`);
    }
  }
  for (const b of byKind("ClusterRoleBinding")) {
    const ok =
      b.roleRef.kind === "ClusterRole" && b.roleRef.name in clusterRules &&
      b.subjects.length === 1 && b.subjects[0].kind === "ServiceAccount" &&
      b.subjects[0].name === "efawatch";
    if (!ok) errs.push(`ClusterRoleBinding ${b.metadata.name} binds more than the agent's roles`);
  }
  for (const role of byKind("Role")) {
    for (const rule of role.rules) {
      // Exactly the verb the agent uses (probes/mesh/kubernetes.cc lists, never gets or watches).
      const extra = rule.verbs.filter((v) => v !== "list");
      if (rule.resources.some((r) => r !== "pods") || extra.length || rule.apiGroups.some((g) => g)) {
        errs.push(`Role ${role.metadata.name} grants more than list pods`);
      }
    }
  }
  return errs;
}

// Every problem of one rendering: schema, then the deployment's promises given its components.
// `image`: the agent's image a user's `images:` sets (else the shipped name must be there).
export async function check(name, text, components = [], image = undefined) {
  const docs = parseAllDocuments(text);
  const errs = [];
  const objs = [];
  for (const d of docs) {
    if (d.errors.length) errs.push(...d.errors.map((e) => `yaml: ${e.message}`));
    const o = d.toJS();
    if (o) objs.push(o);
  }
  if (!objs.length) errs.push("no objects");
  for (const o of objs) errs.push(...(await schemaErrors(o)));
  errs.push(...policyErrors(objs, name, new Set(components), image));
  return { errs, count: objs.length };
}

// Each check must reject what it claims to, or a green run means nothing.
async function selfTest() {
  const fail = (what) => {
    console.error(`self-test: ${what}`);
    process.exit(1);
  };
  const bad = [
    { apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "x" },
      spec: { selector: {}, template: { spec: { containers: [{ name: "c", ports: [{ containerPort: "x" }] }] } } } },
    { apiVersion: "monitoring.coreos.com/v1", kind: "PrometheusRule", metadata: { name: "r" },
      spec: { groups: [{ name: "g", rules: [{ alert: "A" }] }] } },
    { apiVersion: "v1", kind: "Servce", metadata: { name: "typo" } },
  ];
  for (const o of bad) {
    if (!(await schemaErrors(o)).length) fail(`${o.kind} should have been rejected`);
  }

  const env = (pairs) => Object.entries(pairs).map(([name, value]) => ({ name, value }));
  // gRPC: a unix socket on an emptyDir, or mutual TLS from a mounted Secret with fabric-probes.
  const sockPod = { volumes: [{ name: "run", emptyDir: {} }] };
  const sock = (more = {}) => ({
    env: env({ EFAWATCH_GRPC_LISTEN: "unix:/run/efawatch/grpc.sock",
      EFAWATCH_AGENT: "unix:/run/efawatch/grpc.sock", ...more }),
    volumeMounts: [{ name: "run", mountPath: "/run/efawatch" }],
  });
  const none = new Set();
  if (grpcErrors([], sock(), sockPod, "eks", none).length) fail("a unix socket on an emptyDir was rejected");
  const tlsPod = (optional) => ({ volumes: [{ name: "tls", secret: { secretName: "s", optional } }] });
  const mtls = (more = {}, ports = [{ name: "grpc", containerPort: 9478 }]) => ({
    env: env({ EFAWATCH_GRPC_LISTEN: ":9478", EFAWATCH_AGENT: "127.0.0.1:9478",
      EFAWATCH_GRPC_TLS_CERT: "/t/tls.crt", EFAWATCH_GRPC_TLS_KEY: "/t/tls.key",
      EFAWATCH_GRPC_TLS_CLIENT_CA: "/t/ca.crt", EFAWATCH_GRPC_PEER_SERVER_NAME: "a",
      EFAWATCH_GRPC_AUTHZ_READERS: "r,a", EFAWATCH_GRPC_AUTHZ_OPERATORS: "o",
      EFAWATCH_GRPC_AUTHZ_AGENTS: "a", EFAWATCH_TLS_CA: "/t/ca.crt", EFAWATCH_TLS_CERT: "/t/tls.crt",
      EFAWATCH_TLS_KEY: "/t/tls.key", EFAWATCH_TLS_SERVER_NAME: "a", ...more }),
    volumeMounts: [{ name: "tls", mountPath: "/t" }], ports,
  });
  const probes = new Set(["fabric-probes"]);
  for (const optional of [undefined, true]) {
    if (grpcErrors([], mtls(), tlsPod(optional), "eks-efa", probes).length) {
      fail(`mutual TLS from a Secret (optional: ${optional}) was rejected`);
    }
  }
  const insecureDev = { env: env({ EFAWATCH_GRPC_LISTEN: ":9478", EFAWATCH_GRPC_INSECURE: "true",
    EFAWATCH_AGENT: "127.0.0.1:9478" }), ports: [{ name: "grpc", containerPort: 9478 }] };
  if (grpcErrors([], insecureDev, {}, PLAINTEXT_OVERLAY, none).length) fail("insecure-dev was rejected");
  const file = (text) => [{ kind: "ConfigMap", data: { "efawatchd.conf": text } }];
  for (const [what, objs, c, pod, name, comps] of [
    ["EFAWATCH_GRPC_INSECURE in eks-efa", [], mtls({ EFAWATCH_GRPC_INSECURE: "true" }), tlsPod(), "eks-efa", probes],
    ["grpc-insecure in the config file", file("grpc-insecure = true\n"), sock(), sockPod, "eks", none],
    ["plaintext on the node's loopback", [], { ...insecureDev, env: env({
      EFAWATCH_GRPC_LISTEN: "127.0.0.1:9478", EFAWATCH_AGENT: "127.0.0.1:9478" }) }, {}, "eks", none],
    ["gRPC on the network without fabric-probes", [], mtls(), tlsPod(), "eks", none],
    ["gRPC on the pod IP", [], mtls({ EFAWATCH_GRPC_LISTEN: "$(EFAWATCH_POD_IP):9478" }), tlsPod(), "eks-efa", probes],
    ["mutual TLS without roles", [], mtls({ EFAWATCH_GRPC_AUTHZ_OPERATORS: "" }), tlsPod(), "eks-efa", probes],
    ["an agent identity that cannot read", [], mtls({ EFAWATCH_GRPC_AUTHZ_READERS: "r" }), tlsPod(), "eks-efa", probes],
    ["TLS files in no mounted Secret", [], mtls(), { volumes: [] }, "eks-efa", probes],
    ["a CLI pointed elsewhere", [], mtls({ EFAWATCH_AGENT: "10.0.0.1:9478" }), tlsPod(), "eks-efa", probes],
    ["no gRPC container port", [], mtls({}, []), tlsPod(), "eks-efa", probes],
    ["a socket outside an emptyDir", [], sock({ EFAWATCH_GRPC_LISTEN: "unix:/tmp/grpc.sock",
      EFAWATCH_AGENT: "unix:/tmp/grpc.sock" }), sockPod, "eks", none],
    ["a CLI that misses the socket", [], sock({ EFAWATCH_AGENT: "127.0.0.1:9478" }), sockPod, "eks", none],
    ["an insecure-dev without plaintext", [], sock(), sockPod, PLAINTEXT_OVERLAY, none],
  ]) {
    if (!grpcErrors(objs, c, pod, name, comps).length) fail(`${what} should have been rejected`);
  }

  // Secrets: created in the rendering (a Secret, a cert-manager Certificate) or optional.
  const ds = (volumes, containers = [{ name: "c" }]) => ({
    kind: "DaemonSet", metadata: { name: "d", namespace: "n" }, spec: { template: { spec: { volumes, containers } } } });
  const cert = { apiVersion: "cert-manager.io/v1", kind: "Certificate", metadata: { name: "x", namespace: "n" },
    spec: { secretName: "s" } };
  const vol = (secret) => [{ name: "v", secret: { secretName: "s", ...secret } }];
  if (secretErrors([ds(vol()), cert]).length || secretErrors([ds(vol({ optional: true }))]).length ||
      secretErrors([ds(vol()), { kind: "Secret", metadata: { name: "s", namespace: "n" } }]).length) {
    fail("a created or optional Secret was rejected");
  }
  for (const [what, objs] of [
    ["a Secret nothing creates", [ds(vol())]],
    ["a Secret created in another namespace", [ds(vol()), { ...cert, metadata: { name: "x", namespace: "m" } }]],
    ["a projected Secret nothing creates", [ds([{ name: "v", projected: { sources: [{ secret: { name: "s" } }] } }])]],
    ["an environment read from a Secret nothing creates", [ds([], [{ name: "c", env: [
      { name: "T", valueFrom: { secretKeyRef: { name: "s", key: "t" } } }] }])]],
  ]) {
    if (!secretErrors(objs).length) fail(`${what} should have been rejected`);
  }
  // The admission component: fails open, fast, exempts the system, two replicas, PDB, policy.
  const admission = new Set(["admission"]);
  const podLabels = { app: "w" };
  const webhookObjs = (w = {}, more = {}) => [
    { kind: "ValidatingWebhookConfiguration", metadata: { name: "v",
      annotations: { "cert-manager.io/inject-ca-from": "n/c" } },
    webhooks: [{ name: "w", failurePolicy: "Ignore", timeoutSeconds: 2,
      namespaceSelector: { matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "NotIn",
        values: ["kube-system", "efawatch"] }] },
      clientConfig: { service: { name: "s", namespace: "n" } }, ...w }] },
    { kind: "Certificate", metadata: { name: "c", namespace: "n" } },
    { kind: "Service", metadata: { name: "s", namespace: "n" }, spec: { selector: podLabels } },
    { kind: "Deployment", metadata: { name: "d", namespace: "n" },
      spec: { replicas: more.replicas ?? 2, template: { metadata: { labels: podLabels } } } },
    ...(more.noPdb ? [] : [{ kind: "PodDisruptionBudget", spec: { selector: { matchLabels: podLabels } } }]),
    ...(more.noPolicy ? [] : [{ kind: "NetworkPolicy", spec: { podSelector: { matchLabels: podLabels } } }]),
  ];
  if (admissionErrors(webhookObjs(), admission).length) {
    fail(`a safe webhook was rejected: ${admissionErrors(webhookObjs(), admission)}`);
  }
  for (const [what, objs, comps] of [
    ["failurePolicy Fail", webhookObjs({ failurePolicy: "Fail" }), admission],
    ["timeoutSeconds 10", webhookObjs({ timeoutSeconds: 10 }), admission],
    ["kube-system judged", webhookObjs({ namespaceSelector: {} }), admission],
    ["a Service not rendered", webhookObjs({ clientConfig: { service: { name: "x", namespace: "n" } } }), admission],
    ["one replica", webhookObjs({}, { replicas: 1 }), admission],
    ["no PodDisruptionBudget", webhookObjs({}, { noPdb: true }), admission],
    ["no NetworkPolicy", webhookObjs({}, { noPolicy: true }), admission],
    ["a webhook without the component", webhookObjs(), none],
  ]) {
    if (!admissionErrors(objs, comps).length) fail(`${what} should have been rejected`);
  }

  const defaultAgent = { ...sock(), resources: {} };
  const defaultPod = (volumes, c = defaultAgent) => ({ volumes, containers: [c] });
  if (defaultErrors(defaultAgent, defaultPod(sockPod.volumes)).length) {
    fail("a default without Secret or device was rejected");
  }
  if (!defaultErrors(defaultAgent, defaultPod([...sockPod.volumes, ...vol({ optional: true })])).length ||
      !defaultErrors(mtls(), defaultPod(sockPod.volumes, mtls())).length) {
    fail("a default with a Secret or with gRPC on the network should have been rejected");
  }

  const amd64 = { key: "kubernetes.io/arch", operator: "In", values: ["amd64"] };
  const gpu = { key: "nvidia.com/gpu.present", operator: "In", values: ["true"] };
  const hardPod = (terms, sc = { seccompProfile: { type: "RuntimeDefault" } }, c = {}) => ({
    securityContext: sc, containers: [{ name: "c", ...c }],
    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
  });
  if (hardeningErrors(hardPod([{ matchExpressions: [gpu, amd64] }])).length) fail("a hardened pod was rejected");
  for (const [what, pod] of [
    ["a pod without seccompProfile", hardPod([{ matchExpressions: [gpu, amd64] }], {})],
    ["a container with seccompProfile Unconfined", hardPod([{ matchExpressions: [gpu, amd64] }], undefined,
      { securityContext: { seccompProfile: { type: "Unconfined" } } })],
    ["a node-affinity term without the arch", hardPod([{ matchExpressions: [gpu, amd64] }, { matchExpressions: [gpu] }])],
    ["no node affinity", hardPod([])],
  ]) {
    if (!hardeningErrors(pod).length) fail(`${what} should have been rejected`);
  }

  // hostPID and SYS_PTRACE only with host-processes; other capabilities only from their component.
  const conf = file("procfs-root = /host/proc\n");
  const procPod = { hostPID: true, volumes: [{ name: "proc", hostPath: { path: "/proc" } }] };
  const agent = (add, more = {}) => ({
    env: env(more), securityContext: { capabilities: { drop: ["ALL"], add } },
    volumeMounts: [{ name: "proc", mountPath: "/host/proc", readOnly: true }],
  });
  const on = { EFAWATCH_CONTAINER_ROOTFS: "true" };
  const hp = new Set(["host-processes"]);
  if (hostProcessErrors(conf, agent(["SYS_PTRACE"], on), procPod, hp).length) {
    fail("a well-formed host-processes was rejected");
  }
  for (const [what, c2, pod2, comps] of [
    ["hostPID in the base", agent([]), procPod, none],
    ["hostPID in eks-efa", agent([]), procPod, new Set(["fabric-probes", "efa-device"])],
    ["SYS_PTRACE in the base", agent(["SYS_PTRACE"]), { volumes: [] }, none],
    ["host-processes without hostPID", agent(["SYS_PTRACE"], on), { ...procPod, hostPID: false }, hp],
    ["host-processes without container-rootfs", agent(["SYS_PTRACE"]), procPod, hp],
  ]) {
    if (!hostProcessErrors(conf, c2, pod2, comps).length) fail(`${what} should have been rejected`);
  }

  // Devices: from their component only, on EFA types (efa-device: two EFAs or more), the mesh
  // on exactly with a device.
  const term = (values) => ({ matchExpressions: [
    { key: "node.kubernetes.io/instance-type", operator: "In", values }] });
  const aff = (...terms) => ({ affinity: { nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } });
  if (deviceAffinityErrors(aff(term(["p5.48xlarge"])), true).length ||
      deviceAffinityErrors(aff(term(["g6.12xlarge"])), false).length) {
    fail("an EFA-only affinity was rejected");
  }
  for (const [what, p, noSingle] of [
    ["no affinity", {}, false],
    ["a non-EFA type", aff(term(["p5.48xlarge", "m7i.48xlarge"])), false],
    ["a GPU-label term", aff(term(["p5.48xlarge"]), { matchExpressions: [
      { key: "nvidia.com/gpu.present", operator: "In", values: ["true"] }] }), false],
    ["efa-device on a single-EFA type", aff(term(["p5.48xlarge", "g6.12xlarge"])), true],
  ]) {
    if (!deviceAffinityErrors(p, noSingle).length) fail(`a device component with ${what} should have been rejected`);
  }
  const rbac = [{ kind: "DaemonSet", metadata: { namespace: "n" } },
    { kind: "Role", metadata: { name: "r", namespace: "n" }, rules: [{ resources: ["pods"], verbs: ["list"] }] },
    { kind: "RoleBinding", metadata: { name: "r", namespace: "n" }, roleRef: { name: "r" },
      subjects: [{ kind: "ServiceAccount", name: "sa" }] }];
  const efaPod = { ...aff(term(["p5.48xlarge"])), serviceAccountName: "sa" };
  const efaAgent = (add, more = {}, limits = { "vpc.amazonaws.com/efa": 1 }) => ({
    env: env({ EFAWATCH_MESH_DISCOVERY: "kubernetes", EFAWATCH_GRPC_LISTEN: ":9478", ...more }),
    resources: { limits }, securityContext: { capabilities: { drop: ["ALL"], add } },
  });
  const efaComps = new Set(["fabric-probes", "efa-device"]);
  if (deviceErrors(rbac, efaAgent(["IPC_LOCK"]), efaPod, efaComps).length) fail("a well-formed efa-device was rejected");
  for (const [what, objs, c2, comps] of [
    ["efa-device without IPC_LOCK", rbac, efaAgent([]), efaComps],
    ["an EFA without efa-device", rbac, efaAgent(["IPC_LOCK"]), new Set(["fabric-probes"])],
    ["a device without the mesh", rbac, efaAgent(["IPC_LOCK"], { EFAWATCH_MESH_DISCOVERY: "off" }), efaComps],
    ["the mesh without a device", rbac, efaAgent([], {}, {}), new Set(["fabric-probes"])],
    ["the mesh without its Role", rbac.slice(0, 2), efaAgent(["IPC_LOCK"]), efaComps],
    ["the mesh on the unix socket", rbac, efaAgent(["IPC_LOCK"], { EFAWATCH_GRPC_LISTEN: "unix:/run/s" }), efaComps],
    ["SYS_ADMIN", rbac, efaAgent(["IPC_LOCK", "SYS_ADMIN"]), efaComps],
    ["IPC_LOCK without efa-device", [], efaAgent(["IPC_LOCK"], { EFAWATCH_MESH_DISCOVERY: "off" }, {}), none],
  ]) {
    if (!deviceErrors(objs, c2, efaPod, comps).length) fail(`${what} should have been rejected`);
  }

  // /metrics on the pod IP, from a variable defined before it.
  const podIp = { name: "EFAWATCH_POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } };
  const listenOn = (value) => ({ name: "EFAWATCH_METRICS_LISTEN", value });
  const metricsPort = [{ name: "metrics", containerPort: 9477 }];
  if (metricsListenErrors({ env: [podIp, listenOn("$(EFAWATCH_POD_IP):9477")], ports: metricsPort }).length) {
    fail("/metrics on the pod IP was rejected");
  }
  for (const [what, e] of [["all addresses", [podIp, listenOn(":9477")]],
                           ["no setting", [podIp]],
                           ["the pod IP defined after it", [listenOn("$(EFAWATCH_POD_IP):9477"), podIp]]]) {
    if (!metricsListenErrors({ env: e, ports: metricsPort }).length) fail(`/metrics on ${what} should have been rejected`);
  }

  // /metrics over HTTPS: the agent, its probes and the ServiceMonitor agree.
  const metricsPod = { volumes: [{ name: "grpc-tls", secret: { secretName: "s" } }] };
  const tlsAgent = (scheme, pairs) => ({
    env: pairs.map(([name, value]) => ({ name, value })),
    volumeMounts: [{ name: "grpc-tls", mountPath: "/t" }],
    livenessProbe: { httpGet: { scheme } }, readinessProbe: { httpGet: { scheme } },
  });
  const tlsOn = [["EFAWATCH_METRICS_TLS_CERT", "/t/tls.crt"], ["EFAWATCH_METRICS_TLS_KEY", "/t/tls.key"],
    ["EFAWATCH_METRICS_TLS_CLIENT_CA", "/t/ca.crt"]];
  const monitor = (endpoint) => [{ kind: "ServiceMonitor", spec: { endpoints: [endpoint] } }];
  const good = { scheme: "https", tlsConfig: { serverName: AGENT_IDENTITY, ca: { secret: { name: "r" } },
    cert: { secret: { name: "r" } }, keySecret: { name: "r" } } };
  if (metricsTlsErrors(monitor(good), tlsAgent("HTTPS", tlsOn), metricsPod).length ||
      metricsTlsErrors(monitor({}), tlsAgent(undefined, []), metricsPod).length) {
    fail("a consistent metrics TLS setup (or none) was rejected");
  }
  for (const [what, objs2, c2] of [
    ["HTTP probes of an HTTPS /metrics", monitor(good), tlsAgent("HTTP", tlsOn)],
    ["a plain-HTTP ServiceMonitor of an HTTPS /metrics", monitor({}), tlsAgent("HTTPS", tlsOn)],
    ["a ServiceMonitor without a client certificate", monitor({ ...good, tlsConfig: { ...good.tlsConfig, cert: undefined } }), tlsAgent("HTTPS", tlsOn)],
    ["a ServiceMonitor checking another name", monitor({ ...good, tlsConfig: { ...good.tlsConfig, serverName: "b" } }), tlsAgent("HTTPS", tlsOn)],
    ["HTTPS probes of a plain-HTTP /metrics", monitor({}), tlsAgent("HTTPS", [])],
    ["a bearer token without a ServiceMonitor token", monitor(good),
     tlsAgent("HTTPS", [...tlsOn, ["EFAWATCH_METRICS_BEARER_TOKEN_FILE", "/t/token"]])],
    ["a certificate outside any Secret", monitor(good),
     tlsAgent("HTTPS", [["EFAWATCH_METRICS_TLS_CERT", "/etc/tls.crt"], ...tlsOn.slice(1)])],
  ]) {
    if (!metricsTlsErrors(objs2, c2, metricsPod).length) fail(`${what} should have been rejected`);
  }

  // Objects outside the agent's namespace (a component's resources get none from the base) and
  // mounts of volumes that do not exist.
  const agentDs = { kind: "DaemonSet", metadata: { name: "d", namespace: "n" } };
  const podWith = (mounts) => ({ volumes: [{ name: "v" }], containers: [{ name: "c", volumeMounts: mounts }] });
  if (structureErrors([agentDs], agentDs, podWith([{ name: "v" }])).length) fail("a consistent rendering was rejected");
  if (!structureErrors([agentDs, { kind: "Issuer", metadata: { name: "i" } }], agentDs, podWith([])).length ||
      !structureErrors([agentDs], agentDs, podWith([{ name: "w" }])).length) {
    fail("an Issuer without a namespace, or a mount without a volume, should have been rejected");
  }
  console.log("self-test: invalid objects, plaintext gRPC off the pod, Secrets nothing creates, " +
    "misplaced hostPID and capabilities, devices off their types, agents the runbook cannot reach, " +
    "inconsistent metrics TLS and objects outside the namespace rejected");
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [arg, file, dir] = process.argv.slice(2);
  if (arg === "--self-test") {
    await selfTest();
  } else {
    const components = dir ? componentsOf(dir) : [];
    const { errs, count } = await check(arg, readFileSync(file, "utf8"), components);
    if (errs.length) {
      for (const e of errs) console.error(`${arg}: ${e}`);
      process.exit(1);
    }
    console.log(`${arg}: ${count} objects valid`);
  }
}
