// Validates rendered manifests (`kubectl kustomize` output) against the Kubernetes and Prometheus
// Operator schemas (kubernetes-models), then checks what the deployment promises beyond the
// schema: read-only host mounts, HTTP health probes, mutual TLS gRPC with roles outside
// insecure-dev, the runbook's in-pod and port-forward commands, hostPID only in host-processes,
// bounded resources, least-privilege RBAC, per-overlay device access (none in the default
// `eks`; device overlays on EFA instance types only), an image kustomize `images:` sets, the
// ServiceMonitor's honorLabels, and /metrics TLS consistent across agent, probes and scraper.
//
//   node validate_manifests.mjs <overlay-name> <rendered.yaml>
//   node validate_manifests.mjs --self-test
//
// Exits 1 with one line per problem.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const groups = {
  v1: "kubernetes-models/v1",
  "apps/v1": "kubernetes-models/apps/v1",
  "rbac.authorization.k8s.io/v1": "kubernetes-models/rbac.authorization.k8s.io/v1",
  "scheduling.k8s.io/v1": "kubernetes-models/scheduling.k8s.io/v1",
  "monitoring.coreos.com/v1": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1",
};

// cert-manager objects (the cert-manager overlay) have no schema package here: the fields the
// overlay relies on are checked by hand.
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

// The overlay docs/deploy.md and the README recommend: monitoring only, no device.
const DEFAULT_OVERLAY = "eks";
const DEVICE_OVERLAYS = new Set(["efa-device-plugin", "eks-efa", "host-devices"]);
// EC2 instance types with EFA (AWS, "Supported instance types" of the EFA user guide), the ones
// the base DaemonSet targets by type.
const EFA_TYPES = new Set([
  "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
  "p6-b200.48xlarge", "g6.12xlarge", "g6.48xlarge", "g6e.12xlarge", "g6e.24xlarge",
  "g6e.48xlarge", "trn1.32xlarge", "trn1n.32xlarge",
]);
// The image name kustomize `images:` entries match (docs/deploy.md, "The image").
const IMAGE_NAME = "efawatchd";

// Device overlays schedule only where the device is: every term of the required node affinity
// (terms are ORed) limits the instance type to EFA types, so no term admits another node.
function deviceAffinityErrors(pod) {
  const terms = pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms ?? [];
  if (!terms.length) return ["device overlay without a required node affinity"];
  const errs = [];
  for (const [i, t] of terms.entries()) {
    const types = (t.matchExpressions ?? []).find(
      (e) => e.key === "node.kubernetes.io/instance-type" && e.operator === "In");
    if (!types) errs.push(`node affinity term ${i} does not limit the instance type`);
    else {
      const other = types.values.filter((v) => !EFA_TYPES.has(v));
      if (other.length) errs.push(`node affinity term ${i} admits non-EFA types ${other.join(",")}`);
    }
  }
  return errs;
}

// The runbook's commands: `kubectl exec <agent> -- efawatch status --agent 127.0.0.1:9478` with
// the CLI's EFAWATCH_TLS_* pointing at the agent's own certificate, whose identity reads; and
// `kubectl port-forward`, which connects to 127.0.0.1 in the pod's (the host's) network.
function runbookCommandErrors(c, pod, overlay) {
  const env = (name) => c.env?.find((e) => e.name === name)?.value;
  const errs = [];
  const listen = env("EFAWATCH_GRPC_LISTEN") ?? "127.0.0.1:9478";
  if (!/^(:|0\.0\.0\.0:|\[::\]:)9478$/.test(listen)) {
    errs.push(`gRPC listens on ${listen}: not on 127.0.0.1:9478, where the runbook's commands connect`);
  }
  if (overlay === "insecure-dev") return errs;
  const mount = (c.volumeMounts ?? []).find((m) => m.name === "grpc-tls")?.mountPath;
  for (const name of ["EFAWATCH_TLS_CA", "EFAWATCH_TLS_CERT", "EFAWATCH_TLS_KEY"]) {
    if (!mount || !env(name)?.startsWith(`${mount}/`)) errs.push(`${name} not in the agent's certificate mount`);
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

function agentContainer(ds) {
  return ds.spec.template.spec.containers.find((c) => c.name === "efawatchd");
}

// gRPC is mutual TLS with the role table everywhere but in the overlay named for plaintext
// (docs/security.md): no EFAWATCH_GRPC_INSECURE, no grpc-insecure in the config file, the
// agent's certificate, key and client CA set, a role for each kind of caller, and the Secret
// mounted without `optional` (a missing Secret stops the pod instead of starting it plaintext).
function grpcSecurityErrors(objs, c, pod, overlay) {
  const env = (name) => c.env?.find((e) => e.name === name)?.value;
  const insecureEnv = ["true", "1", "yes", "on"].includes(String(env("EFAWATCH_GRPC_INSECURE")).toLowerCase());
  const configs = objs.filter((o) => o.kind === "ConfigMap").map((o) => Object.values(o.data ?? {}).join("\n"));
  const insecureFile = configs.some((t) => /^\s*grpc-insecure\s*=\s*(true|1|yes|on)\b/im.test(t));
  if (overlay === "insecure-dev") {
    return insecureEnv ? [] : ["insecure-dev does not serve plaintext: rename it or drop it"];
  }
  const errs = [];
  if (insecureEnv || env("EFAWATCH_GRPC_INSECURE") !== undefined) {
    errs.push("EFAWATCH_GRPC_INSECURE set outside insecure-dev");
  }
  if (insecureFile) errs.push("grpc-insecure in the config file outside insecure-dev");
  for (const name of ["EFAWATCH_GRPC_TLS_CERT", "EFAWATCH_GRPC_TLS_KEY", "EFAWATCH_GRPC_TLS_CLIENT_CA",
                      "EFAWATCH_GRPC_AUTHZ_READERS", "EFAWATCH_GRPC_AUTHZ_OPERATORS",
                      "EFAWATCH_GRPC_AUTHZ_AGENTS", "EFAWATCH_GRPC_PEER_SERVER_NAME"]) {
    if (!env(name)) errs.push(`${name} empty or missing: gRPC would not be mutual TLS with roles`);
  }
  const tls = pod.volumes?.find((v) => v.name === "grpc-tls")?.secret;
  if (!tls?.secretName || tls.optional) errs.push("grpc-tls Secret missing or optional");
  return errs;
}

// /metrics over HTTPS (the metrics-tls overlay, docs/security.md): on or off together across the
// agent, the kubelet's probes and the ServiceMonitor. On: the certificate, key and client CA are
// files of a mounted Secret, the probes use HTTPS, the ServiceMonitor scrapes https checking the
// agents' certificate name and presenting a client certificate when the agent asks for one, and a
// bearer token when the agent wants one. Off: nothing speaks HTTPS to a plain-HTTP port.
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
  if (tls.serverName !== env("EFAWATCH_GRPC_PEER_SERVER_NAME")) {
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

// The host's PID namespace lets the agent see every process of the node and, with SYS_PTRACE,
// read any container's files (docs/deploy.md, "Host processes"): only the overlay made for it
// has them, and there with --container-rootfs on, the host's /proc read-only where procfs-root
// points, and no other capability or privilege.
function hostProcessErrors(objs, c, pod, overlay) {
  const added = c.securityContext?.capabilities?.add ?? [];
  const ptrace = added.includes("SYS_PTRACE");
  const configs = objs.filter((o) => o.kind === "ConfigMap").map((o) => Object.values(o.data ?? {}).join("\n"));
  const rootfsEnv = c.env?.find((e) => e.name === "EFAWATCH_CONTAINER_ROOTFS")?.value;
  const rootfsFile = configs.some((t) => /^\s*container-rootfs\s*=\s*(true|1|yes|on)\b/im.test(t));
  const rootfs = rootfsEnv !== undefined
    ? ["true", "1", "yes", "on"].includes(String(rootfsEnv).toLowerCase()) : rootfsFile;
  if (overlay !== "host-processes") {
    const errs = [];
    if (pod.hostPID) errs.push("hostPID outside host-processes");
    if (ptrace) errs.push("SYS_PTRACE outside host-processes");
    if (rootfs) errs.push("container-rootfs on outside host-processes (it needs hostPID)");
    return errs;
  }
  const errs = [];
  if (pod.hostPID !== true) errs.push("host-processes without hostPID");
  if (!rootfs) errs.push("host-processes without container-rootfs on");
  if (!ptrace) errs.push("host-processes without SYS_PTRACE: /proc/<pid>/root would be refused");
  const extra = added.filter((a) => a !== "SYS_PTRACE");
  if (extra.length) errs.push(`host-processes adds more than SYS_PTRACE: ${extra.join(",")}`);
  if (c.securityContext?.privileged) errs.push("host-processes is privileged");
  const procfs = configs.map((t) => /^\s*procfs-root\s*=\s*(\S+)/m.exec(t)?.[1]).find((v) => v)
    ?? c.env?.find((e) => e.name === "EFAWATCH_PROCFS_ROOT")?.value ?? "/proc";
  const procVolumes = new Set(
    (pod.volumes ?? []).filter((v) => v.hostPath?.path === "/proc").map((v) => v.name));
  const mount = (c.volumeMounts ?? []).find((m) => procVolumes.has(m.name) && m.mountPath === procfs);
  if (procfs !== "/proc" && !mount) errs.push(`host /proc not mounted at procfs-root ${procfs}`);
  if (mount && !mount.readOnly) errs.push("host /proc mounted read-write");
  return errs;
}

// Promises of the deployment that the schema cannot express.
function policyErrors(objs, overlay) {
  const errs = [];
  const byKind = (k) => objs.filter((o) => o.kind === k);
  const [ds] = byKind("DaemonSet");
  if (!ds) return ["no DaemonSet"];
  const pod = ds.spec.template.spec;
  const c = agentContainer(ds);
  if (!c) return ["DaemonSet has no efawatchd container"];

  // The kubelet presents no client certificate: its probes go to HTTP on the metrics port.
  for (const [p, path] of [["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"]]) {
    if (c[p]?.httpGet?.path !== path || c[p]?.httpGet?.port !== "metrics") {
      errs.push(`${p} is not an HTTP probe of ${path} on the metrics port`);
    }
  }
  errs.push(...grpcSecurityErrors(objs, c, pod, overlay));
  errs.push(...metricsTlsErrors(objs, c, pod));
  errs.push(...runbookCommandErrors(c, pod, overlay));
  errs.push(...metricsListenErrors(c));
  for (const k of [...(pod.initContainers ?? []), ...pod.containers]) {
    const [name, tag] = k.image.split(":");
    if (k === c && name !== IMAGE_NAME) errs.push(`image ${k.image}: kustomize images name ${IMAGE_NAME} no longer matches`);
    if (!tag || tag === "latest") errs.push(`image ${k.image}: no registry serves it; set a tag`);
  }
  errs.push(...hostProcessErrors(objs, c, pod, overlay));
  for (const r of ["cpu", "memory"]) {
    if (!c.resources?.requests?.[r]) errs.push(`no ${r} request`);
  }
  if (!c.resources?.limits?.memory) errs.push("no memory limit");
  if (!pod.priorityClassName) errs.push("no priorityClassName");
  if (!byKind("PriorityClass").some((p) => p.metadata.name === pod.priorityClassName)) {
    errs.push(`PriorityClass ${pod.priorityClassName} not in the output`);
  }
  if (!pod.tolerations?.length) errs.push("no tolerations");
  if (!pod.affinity?.nodeAffinity) errs.push("no node affinity");
  const envFrom = (name) => c.env?.find((e) => e.name === name)?.valueFrom?.fieldRef?.fieldPath;
  if (envFrom("EFAWATCH_NODE_NAME") !== "spec.nodeName") errs.push("node name not from spec.nodeName");
  if (envFrom("EFAWATCH_POD_IP") !== "status.podIP") errs.push("pod IP not from status.podIP");
  const env = (name) => c.env?.find((e) => e.name === name)?.value;

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

  // RBAC: list pods in the agent's namespace; cluster-wide exactly what each feature uses,
  // bound to the agent's service account; nothing more. Workload identity lists its node's
  // pods; Kubernetes signals create Events and patch its node's status (daemon/signals).
  const clusterRules = {
    "efawatch-workload-identity": [{ apiGroups: [""], resources: ["pods"], verbs: ["list"] }],
    "efawatch-kube-signals": [
      { apiGroups: ["events.k8s.io", ""], resources: ["events"], verbs: ["create"] },
      { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch"] },
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

  const sc = c.securityContext ?? {};
  const efa = c.resources?.limits?.["vpc.amazonaws.com/efa"];
  const devMount = (c.volumeMounts ?? []).some((m) => m.mountPath === "/dev/infiniband");
  if (DEVICE_OVERLAYS.has(overlay)) errs.push(...deviceAffinityErrors(pod));
  if (overlay === DEFAULT_OVERLAY) {
    const requests = [...(pod.initContainers ?? []), ...pod.containers].flatMap((k) => [
      ...Object.keys(k.resources?.requests ?? {}), ...Object.keys(k.resources?.limits ?? {})]);
    if (requests.includes("vpc.amazonaws.com/efa")) errs.push("the default overlay requests vpc.amazonaws.com/efa");
    if (pod.containers.some((k) => k.securityContext?.privileged)) errs.push("the default overlay is privileged");
  }
  if (overlay === "efa-device-plugin" || overlay === "eks-efa") {
    if (String(efa) !== "1") errs.push("no vpc.amazonaws.com/efa limit of 1");
    if (!sc.capabilities?.add?.includes("IPC_LOCK")) errs.push("no IPC_LOCK for memory registration");
    if (sc.privileged) errs.push("privileged with a device plugin device");
    if (env("EFAWATCH_MESH_DISCOVERY") !== "kubernetes") errs.push("ping mesh not on with a device");
  } else if (overlay === "host-devices") {
    if (!sc.privileged || !devMount) errs.push("host-devices needs privileged and /dev/infiniband");
    if (efa) errs.push("host-devices must not take an EFA from the device plugin");
    if (env("EFAWATCH_MESH_DISCOVERY") !== "kubernetes") errs.push("ping mesh not on with a device");
  } else {
    if (efa || devMount || sc.privileged) errs.push("the base must not have device access");
    if (env("EFAWATCH_MESH_DISCOVERY")) errs.push("the base must leave the ping mesh off");
    if (sc.capabilities?.drop?.[0] !== "ALL") errs.push("the base must drop all capabilities");
  }
  if (["eks-efa", DEFAULT_OVERLAY, "monitoring", "metrics-tls"].includes(overlay)) {
    const [sm] = byKind("ServiceMonitor");
    const relabel = sm?.spec.endpoints?.[0]?.relabelings ?? [];
    if (!relabel.some((r) => r.targetLabel === "node" &&
        r.sourceLabels?.includes("__meta_kubernetes_pod_node_name"))) {
      errs.push("ServiceMonitor does not set node from __meta_kubernetes_pod_node_name");
    }
    if (!byKind("PrometheusRule").length) errs.push("no PrometheusRule");
    // The agent's NCCL series carry the workload's namespace/pod/container (operator_labels.mjs).
    if (sm?.spec.endpoints?.[0]?.honorLabels !== true) errs.push("ServiceMonitor without honorLabels: true");
  }
  return errs;
}

async function check(overlay, text) {
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
  if (overlay !== "monitoring") errs.push(...policyErrors(objs, overlay));
  else if (!objs.some((o) => o.kind === "ServiceMonitor")) errs.push("no ServiceMonitor");
  else if (objs.find((o) => o.kind === "ServiceMonitor").spec.endpoints?.[0]?.honorLabels !== true) {
    errs.push("ServiceMonitor without honorLabels: true");
  }
  return { errs, count: objs.length };
}

// The validator must reject what the schema forbids, or a green run means nothing.
async function selfTest() {
  const bad = [
    { apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "x" },
      spec: { selector: {}, template: { spec: { containers: [{ name: "c", ports: [{ containerPort: "x" }] }] } } } },
    { apiVersion: "monitoring.coreos.com/v1", kind: "PrometheusRule", metadata: { name: "r" },
      spec: { groups: [{ name: "g", rules: [{ alert: "A" }] }] } },
    { apiVersion: "v1", kind: "Servce", metadata: { name: "typo" } },
  ];
  for (const o of bad) {
    const errs = await schemaErrors(o);
    if (!errs.length) {
      console.error(`self-test: ${o.kind} should have been rejected`);
      process.exit(1);
    }
  }
  // A plaintext setting anywhere but insecure-dev must be caught.
  const ds = (env) => ({ kind: "DaemonSet", spec: { template: { spec: { volumes: [
    { name: "grpc-tls", secret: { secretName: "efawatch-agent-tls" } }] } } },
  });
  const c = { env: [{ name: "EFAWATCH_GRPC_INSECURE", value: "true" }] };
  if (!grpcSecurityErrors([], c, ds().spec.template.spec, "eks-efa").length) {
    console.error("self-test: EFAWATCH_GRPC_INSECURE in eks-efa should have been rejected");
    process.exit(1);
  }
  const file = [{ kind: "ConfigMap", data: { "efawatchd.conf": "grpc-insecure = true\n" } }];
  if (!grpcSecurityErrors(file, { env: [] }, ds().spec.template.spec, "base")
      .some((e) => e.includes("config file"))) {
    console.error("self-test: grpc-insecure in the config file should have been rejected");
    process.exit(1);
  }
  // hostPID anywhere but host-processes, and host-processes without it, must be caught.
  const conf = [{ kind: "ConfigMap", data: { "efawatchd.conf": "procfs-root = /host/proc\n" } }];
  const procPod = { hostPID: true, volumes: [{ name: "proc", hostPath: { path: "/proc" } }] };
  const agent = (add, env) => ({
    env, securityContext: { capabilities: { drop: ["ALL"], add } },
    volumeMounts: [{ name: "proc", mountPath: "/host/proc", readOnly: true }],
  });
  const on = [{ name: "EFAWATCH_CONTAINER_ROOTFS", value: "true" }];
  if (hostProcessErrors(conf, agent(["SYS_PTRACE"], on), procPod, "host-processes").length) {
    console.error("self-test: a well-formed host-processes was rejected");
    process.exit(1);
  }
  for (const [what, c2, pod2, overlay] of [
    ["hostPID in the base", agent([], []), procPod, "base"],
    ["hostPID in eks-efa", agent([], []), procPod, "eks-efa"],
    ["SYS_PTRACE in the base", agent(["SYS_PTRACE"], []), { volumes: [] }, "base"],
    ["host-processes without hostPID", agent(["SYS_PTRACE"], on), { ...procPod, hostPID: false },
     "host-processes"],
    ["host-processes with SYS_ADMIN", agent(["SYS_PTRACE", "SYS_ADMIN"], on), procPod,
     "host-processes"],
    ["host-processes without container-rootfs", agent(["SYS_PTRACE"], []), procPod,
     "host-processes"],
  ]) {
    if (!hostProcessErrors(conf, c2, pod2, overlay).length) {
      console.error(`self-test: ${what} should have been rejected`);
      process.exit(1);
    }
  }
  // Device overlays only on EFA instance types; the runbook's commands reach the agent.
  const term = (values) => ({ matchExpressions: [
    { key: "node.kubernetes.io/instance-type", operator: "In", values }] });
  const aff = (...terms) => ({ affinity: { nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } });
  if (deviceAffinityErrors(aff(term(["p5.48xlarge"]))).length) {
    console.error("self-test: an EFA-only affinity was rejected");
    process.exit(1);
  }
  for (const [what, p] of [
    ["no affinity", {}],
    ["a non-EFA type", aff(term(["p5.48xlarge", "g5.48xlarge"]))],
    ["a GPU-label term", aff(term(["p5.48xlarge"]), { matchExpressions: [
      { key: "nvidia.com/gpu.present", operator: "In", values: ["true"] }] })],
  ]) {
    if (!deviceAffinityErrors(p).length) {
      console.error(`self-test: a device overlay with ${what} should have been rejected`);
      process.exit(1);
    }
  }
  const cli = (listen, readers) => ({
    env: [["EFAWATCH_GRPC_LISTEN", listen], ["EFAWATCH_TLS_CA", "/t/ca.crt"],
      ["EFAWATCH_TLS_CERT", "/t/tls.crt"], ["EFAWATCH_TLS_KEY", "/t/tls.key"],
      ["EFAWATCH_TLS_SERVER_NAME", "a"], ["EFAWATCH_GRPC_PEER_SERVER_NAME", "a"],
      ["EFAWATCH_GRPC_AUTHZ_AGENTS", "a"], ["EFAWATCH_GRPC_AUTHZ_READERS", readers]]
      .map(([name, value]) => ({ name, value })),
    volumeMounts: [{ name: "grpc-tls", mountPath: "/t" }],
  });
  // /metrics on the pod IP, from a variable defined before it.
  const podIp = { name: "EFAWATCH_POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } };
  const listenOn = (value) => ({ name: "EFAWATCH_METRICS_LISTEN", value });
  const metricsPort = [{ name: "metrics", containerPort: 9477 }];
  if (metricsListenErrors({ env: [podIp, listenOn("$(EFAWATCH_POD_IP):9477")], ports: metricsPort }).length) {
    console.error("self-test: /metrics on the pod IP was rejected");
    process.exit(1);
  }
  for (const [what, env] of [["all addresses", [podIp, listenOn(":9477")]],
                             ["no setting", [podIp]],
                             ["the pod IP defined after it", [listenOn("$(EFAWATCH_POD_IP):9477"), podIp]]]) {
    if (!metricsListenErrors({ env, ports: metricsPort }).length) {
      console.error(`self-test: /metrics on ${what} should have been rejected`);
      process.exit(1);
    }
  }
  if (runbookCommandErrors(cli(":9478", "r,a"), {}, "eks").length) {
    console.error("self-test: a DaemonSet the runbook's commands reach was rejected");
    process.exit(1);
  }
  for (const [what, c2] of [["gRPC on the pod IP", cli("$(EFAWATCH_POD_IP):9478", "r,a")],
                            ["an agent identity that cannot read", cli(":9478", "r")]]) {
    if (!runbookCommandErrors(c2, {}, "eks").length) {
      console.error(`self-test: ${what} should have been rejected`);
      process.exit(1);
    }
  }
  // /metrics over HTTPS: the agent, its probes and the ServiceMonitor agree.
  const tlsPod = { volumes: [{ name: "grpc-tls", secret: { secretName: "s" } }] };
  const tlsAgent = (scheme, env) => ({
    env: [["EFAWATCH_GRPC_PEER_SERVER_NAME", "a"], ...env].map(([name, value]) => ({ name, value })),
    volumeMounts: [{ name: "grpc-tls", mountPath: "/t" }],
    livenessProbe: { httpGet: { scheme } }, readinessProbe: { httpGet: { scheme } },
  });
  const tlsOn = [["EFAWATCH_METRICS_TLS_CERT", "/t/tls.crt"], ["EFAWATCH_METRICS_TLS_KEY", "/t/tls.key"],
    ["EFAWATCH_METRICS_TLS_CLIENT_CA", "/t/ca.crt"]];
  const monitor = (endpoint) => [{ kind: "ServiceMonitor", spec: { endpoints: [endpoint] } }];
  const good = { scheme: "https", tlsConfig: { serverName: "a", ca: { secret: { name: "r" } },
    cert: { secret: { name: "r" } }, keySecret: { name: "r" } } };
  if (metricsTlsErrors(monitor(good), tlsAgent("HTTPS", tlsOn), tlsPod).length ||
      metricsTlsErrors(monitor({}), tlsAgent(undefined, []), tlsPod).length) {
    console.error("self-test: a consistent metrics TLS setup (or none) was rejected");
    process.exit(1);
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
    if (!metricsTlsErrors(objs2, c2, tlsPod).length) {
      console.error(`self-test: ${what} should have been rejected`);
      process.exit(1);
    }
  }
  console.log("self-test: invalid objects, plaintext gRPC, misplaced hostPID, device overlays " +
    "off EFA types, agents the runbook cannot reach and inconsistent metrics TLS rejected");
}

const [arg, file] = process.argv.slice(2);
if (arg === "--self-test") {
  await selfTest();
} else {
  const { errs, count } = await check(arg, readFileSync(file, "utf8"));
  if (errs.length) {
    for (const e of errs) console.error(`${arg}: ${e}`);
    process.exit(1);
  }
  console.log(`${arg}: ${count} objects valid`);
}
