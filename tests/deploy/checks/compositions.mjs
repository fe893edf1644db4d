// SPDX-License-Identifier: Apache-2.0
// Renders every overlay under deploy/kubernetes/overlays and every combination of components
// that docs/deploy.md documents (the table after its `tested:` marker), with `kubectl kustomize`,
// and holds each rendering to validate_manifests.mjs's check(). Also:
//   - a rendering that prints anything on stderr fails (kustomize's deprecation warnings, e.g.
//     for `bases:` or `patchesStrategicMerge:`, are the usual case);
//   - the table names every overlay, and with the components each overlay really has, in order;
//   - every component under deploy/kubernetes/components is a `kind: Component` and is in at
//     least one rendering (no untested component);
//   - the EFA counts the checks use are the agent's (lib/common/instance_types.cc).
//
//   node compositions.mjs <source dir>         (kubectl on PATH)
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { parse, parseAllDocuments, stringify } from "yaml";
import { cppTableErrors } from "./efa_types.mjs";
import { check, componentsOf } from "./validate_manifests.mjs";

const src = process.argv[2] ?? "../../..";
const k8s = join(src, "deploy/kubernetes");
const MARKER = "<!-- tested: tests/deploy/checks/compositions_test.sh renders every row of this table -->";
const errs = [];

// The table's rows: { overlay: name } for `overlays/<name>` rows, { name } for combinations, each
// with the components of its second column in order ("none" or no code span: no component).
function documentedRows() {
  const doc = readFileSync(join(src, "docs/deploy.md"), "utf8");
  const at = doc.indexOf(MARKER);
  if (at < 0) {
    errs.push("docs/deploy.md: no table after the marker " + MARKER);
    return [];
  }
  const lines = doc.slice(at + MARKER.length).trimStart().split("\n");
  const rows = [];
  for (const line of lines.slice(2)) {
    if (!line.startsWith("|")) break;
    const cells = line.split("|").slice(1, -1).map((c) => c.trim());
    const code = (cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const [first] = code(cells[0]);
    if (!first) {
      errs.push(`docs/deploy.md: a row without a name in code: ${line}`);
      continue;
    }
    const components = code(cells[1] ?? "");
    const m = /^overlays\/([\w-]+)$/.exec(first);
    rows.push(m ? { overlay: m[1], name: m[1], components } : { name: first, components });
  }
  if (!rows.length) errs.push("docs/deploy.md: the tested table has no rows");
  return rows;
}

// `kubectl kustomize` of a directory: its output, or null with the reason in errs.
function render(label, dir) {
  const r = spawnSync("kubectl", ["kustomize", dir], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0) {
    errs.push(`${label}: kubectl kustomize failed: ${(r.stderr || r.error?.message || "").trim()}`);
    return null;
  }
  if (r.stderr.trim()) {
    errs.push(`${label}: kubectl kustomize wrote to stderr (a build must be silent):\n${r.stderr.trim()}`);
  }
  return r.stdout;
}

// overlays/eks-mixed: two node groups in one rendering. Each DaemonSet is held to check() as the
// overlay it comes from (eks, eks-efa) with the other left out; and together:
//   - no instance type admits both (the default's every term has a NotIn of every type the EFA
//     group's only term admits), so no node runs two agents fighting over ports 9477 and 9478;
//   - one Service selecting both groups' pods and one ServiceMonitor scraping one port of it
//     (one scrape target per agent), one PrometheusRule (the shipped one), one dashboards
//     ConfigMap, and no object of any kind twice.
const MIXED = "eks-mixed";
async function mixedErrors(text) {
  const objs = parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean);
  const errs = [];
  const of = (kind) => objs.filter((o) => o.kind === kind);
  const dss = of("DaemonSet");
  const byName = (n) => dss.find((d) => d.metadata.name === n);
  const [plain, efa] = [byName("efawatch"), byName("efawatch-efa")];
  if (dss.length !== 2 || !plain || !efa) return [`DaemonSets ${dss.map((d) => d.metadata.name)}, want efawatch and efawatch-efa`];
  for (const [ds, from] of [[plain, "eks"], [efa, "eks-efa"]]) {
    const alone = objs.filter((o) => o.kind !== "DaemonSet" || o === ds).map((o) => stringify(o)).join("---\n");
    const { errs: e } = await check(from, alone, componentsOf(join(k8s, "overlays", from)));
    errs.push(...e.map((x) => `${ds.metadata.name} (as overlays/${from}): ${x}`));
  }
  const terms = (ds) => ds.spec.template.spec.affinity?.nodeAffinity
    ?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  const typeExpr = (t, op) => (t.matchExpressions ?? []).filter(
    (e) => e.key === "node.kubernetes.io/instance-type" && e.operator === op).flatMap((e) => e.values);
  const efaTypes = new Set();
  for (const [i, t] of terms(efa).entries()) {
    const inTypes = typeExpr(t, "In");
    if (!inTypes.length) errs.push(`efawatch-efa's node affinity term ${i} admits any instance type`);
    for (const v of inTypes) efaTypes.add(v);
  }
  for (const [i, t] of terms(plain).entries()) {
    const not = new Set(typeExpr(t, "NotIn"));
    const both = [...efaTypes].filter((v) => !not.has(v));
    if (both.length) errs.push(`efawatch's node affinity term ${i} also admits ${both.join(", ")}: two agents there`);
  }
  if (!terms(plain).length) errs.push("efawatch without a node affinity: it runs beside efawatch-efa");
  const seen = new Set();
  for (const o of objs) {
    const key = `${o.kind}/${o.metadata?.namespace ?? ""}/${o.metadata?.name}`;
    if (seen.has(key)) errs.push(`${key} twice`);
    seen.add(key);
  }
  for (const [kind, n] of [["Service", 1], ["ServiceMonitor", 1], ["PrometheusRule", 1], ["Namespace", 1]]) {
    if (of(kind).length !== n) errs.push(`${of(kind).length} ${kind}(s), want ${n}`);
  }
  // The renamed group's cert-manager objects still meet (kustomize knows nothing of issuerRef).
  const issuers = new Set(of("Issuer").map((i) => i.metadata.name));
  for (const c of of("Certificate")) {
    const ref = c.spec?.issuerRef;
    if ((ref?.kind ?? "Issuer") === "Issuer" && !issuers.has(ref?.name)) {
      errs.push(`Certificate ${c.metadata.name} names Issuer ${ref?.name}, which is not in the rendering`);
    }
  }
  const dashboards = of("ConfigMap").filter((c) => c.metadata?.labels?.grafana_dashboard === "1");
  if (dashboards.length !== 1) errs.push(`${dashboards.length} dashboard ConfigMaps, want 1`);
  const [svc] = of("Service");
  const [sm] = of("ServiceMonitor");
  for (const ds of dss) {
    const labels = ds.spec.template.metadata.labels ?? {};
    if (!Object.entries(svc?.spec.selector ?? {}).every(([k, v]) => labels[k] === v)) {
      errs.push(`the Service does not select ${ds.metadata.name}'s pods`);
    }
  }
  if ((sm?.spec.endpoints ?? []).length !== 1) errs.push("the ServiceMonitor scrapes more than one port per agent");
  const shipped = parse(readFileSync(join(k8s, "components/prometheus-operator/prometheusrule.yaml"), "utf8"));
  // Key order aside (kustomize sorts keys).
  const canon = (v) => Array.isArray(v) ? v.map(canon) : v && typeof v === "object"
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])])) : v;
  if (JSON.stringify(canon(of("PrometheusRule")[0]?.spec)) !== JSON.stringify(canon(shipped.spec))) {
    errs.push("the PrometheusRule is not the shipped one");
  }
  return errs;
}

const componentDirs = readdirSync(join(k8s, "components"), { withFileTypes: true })
  .filter((d) => d.isDirectory()).map((d) => d.name).sort();
for (const c of componentDirs) {
  const k = parse(readFileSync(join(k8s, "components", c, "kustomization.yaml"), "utf8"));
  if (k?.kind !== "Component" || k?.apiVersion !== "kustomize.config.k8s.io/v1alpha1") {
    errs.push(`components/${c}: not a kustomize.config.k8s.io/v1alpha1 Component`);
  }
}
const overlayDirs = readdirSync(join(k8s, "overlays"), { withFileTypes: true })
  .filter((d) => d.isDirectory()).map((d) => d.name).sort();

const rows = documentedRows();
const documented = new Set(rows.filter((r) => r.overlay).map((r) => r.overlay));
for (const o of overlayDirs) {
  if (!documented.has(o)) errs.push(`overlays/${o} is not in docs/deploy.md's tested table`);
}
const used = new Set();
const tmp = mkdtempSync(join(tmpdir(), "efawatch-compositions-"));
let rendered = 0;
try {
  for (const row of rows) {
    let dir;
    if (row.overlay) {
      dir = join(k8s, "overlays", row.overlay);
      if (!existsSync(join(dir, "kustomization.yaml"))) {
        errs.push(`docs/deploy.md names overlays/${row.overlay}, which does not exist`);
        continue;
      }
      const actual = componentsOf(dir);
      if (actual.join(",") !== row.components.join(",")) {
        errs.push(`docs/deploy.md says overlays/${row.overlay} is [${row.components.join(", ")}], ` +
          `its kustomization is [${actual.join(", ")}]`);
      }
    } else {
      // A kustomization of the user's own, as docs/deploy.md shows: base + the components.
      const unknown = row.components.filter((c) => !componentDirs.includes(c));
      if (unknown.length) {
        errs.push(`${row.name}: no component ${unknown.join(", ")} under deploy/kubernetes/components`);
        continue;
      }
      dir = join(tmp, row.name);
      const rel = (p) => relative(dir, join(k8s, p));
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "kustomization.yaml"), stringify({
        apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization",
        resources: [rel("base")],
        ...(row.components.length ? { components: row.components.map((c) => rel(`components/${c}`)) } : {}),
      }));
    }
    const label = row.overlay ? `overlays/${row.overlay}` : row.name;
    const text = render(label, dir);
    if (text === null) continue;
    const components = componentsOf(dir);
    for (const c of components) used.add(c);
    // The prometheus-operator component ships the dashboards for Grafana's sidecar: one
    // ConfigMap labelled grafana_dashboard "1" holding each dashboards/*.json as generated.
    if (components.includes("prometheus-operator")) {
      const cm = parseAllDocuments(text).map((d) => d.toJSON())
        .find((o) => o?.kind === "ConfigMap" && o.metadata?.labels?.grafana_dashboard === "1");
      const want = readdirSync(join(src, "dashboards")).filter((f) => f.endsWith(".json")).sort();
      if (!cm) errs.push(`${label}: no ConfigMap labelled grafana_dashboard: "1"`);
      else if (JSON.stringify(Object.keys(cm.data ?? {}).sort()) !== JSON.stringify(want)) {
        errs.push(`${label}: dashboards ConfigMap holds ${Object.keys(cm.data ?? {})}, want ${want}`);
      } else {
        for (const f of want) {
          if (cm.data[f] !== readFileSync(join(src, "dashboards", f), "utf8")) {
            errs.push(`${label}: dashboards ConfigMap's ${f} differs from dashboards/${f}`);
          }
        }
      }
    }
    if (row.overlay === MIXED) {
      const e = await mixedErrors(text);
      errs.push(...e.map((x) => `${label}: ${x}`));
      if (!e.length) console.log(`${label}: two node groups, one scrape target per agent, nothing duplicated`);
      rendered++;
      continue;
    }
    const { errs: e, count } = await check(row.name, text, components);
    errs.push(...e.map((x) => `${label}: ${x}`));
    if (!e.length) console.log(`${label}: ${count} objects valid (${components.join(", ") || "no components"})`);
    rendered++;
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
for (const c of componentDirs) {
  if (!used.has(c)) errs.push(`components/${c} is in no tested rendering (add a row to docs/deploy.md's table)`);
}
if (!documented.has("eks")) errs.push("no default overlay deploy/kubernetes/overlays/eks in the tested table");
errs.push(...cppTableErrors(src).map((e) => `efa_types.mjs: ${e}`));

for (const e of errs) console.error(e);
if (errs.length) process.exit(1);
console.log(`${rendered} renderings (${overlayDirs.length} overlays, ${rendered - overlayDirs.length} ` +
  `combinations; ${componentDirs.length} components) built silently and valid`);
