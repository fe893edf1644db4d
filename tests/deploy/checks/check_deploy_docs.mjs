// Builds the kustomization docs/deploy.md shows under "The image" (the YAML block after the
// `tested:` marker), as a user would next to a clone of this repository, and checks what the
// page promises of it:
//   - it builds on the default overlay (overlays/eks) with `kubectl kustomize`;
//   - its `images:` entry sets the agent's image (the shipped name is one `images:` matches);
//   - its `labels:` land on the ServiceMonitor and PrometheusRule (what kube-prometheus-stack
//     selects by) and leave the DaemonSet's and the Service's selectors as shipped (a DaemonSet's
//     selector is immutable: `commonLabels` would break the next apply).
//
//   node check_deploy_docs.mjs <source dir>       (kubectl on PATH)
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { parse, parseAllDocuments, stringify } from "yaml";

const src = process.argv[2] ?? "../../..";
const doc = readFileSync(`${src}/docs/deploy.md`, "utf8");
const errs = [];

const marker = doc.indexOf("<!-- tested: tests/deploy/checks/manifests_test.sh builds this block -->");
const block = marker < 0 ? null : /```yaml\n([\s\S]*?)```/.exec(doc.slice(marker))?.[1];
if (!block) {
  console.error("docs/deploy.md: no tested kustomization block after the marker");
  process.exit(1);
}
const k = parse(block);
const dir = mkdtempSync(join(tmpdir(), "efawatch-kustomize-"));
const build = (d) => parseAllDocuments(execFileSync("kubectl", ["kustomize", d],
  { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })).map((x) => x.toJS()).filter(Boolean);
try {
  // `../efawatch/<path>` is the clone next to the user's directory: here, the source tree.
  const mine = join(dir, "my-efawatch");
  mkdirSync(mine);
  const resources = (k.resources ?? []).map((r) => {
    const m = /^\.\.\/efawatch\/(.+)$/.exec(r);
    return m ? relative(mine, join(src, m[1])) : r;
  });
  if (!(k.resources ?? []).includes("../efawatch/deploy/kubernetes/overlays/eks")) {
    errs.push("the example does not build on the default overlay, overlays/eks");
  }
  writeFileSync(join(mine, "kustomization.yaml"), stringify({ ...k, resources }));
  const objs = build(mine);
  const shipped = build(join(src, "deploy/kubernetes/overlays/eks"));
  const one = (list, kind) => list.find((o) => o.kind === kind);

  const [image] = k.images ?? [];
  const container = one(objs, "DaemonSet")?.spec.template.spec.containers.find((c) => c.name === "efawatchd");
  const want = `${image?.newName}:${image?.newTag}`;
  if (container?.image !== want) errs.push(`DaemonSet image ${container?.image}, want ${want} from images:`);

  for (const kind of ["DaemonSet", "Service"]) {
    const sel = (o) => o?.spec.selector;
    if (!isDeepStrictEqual(sel(one(objs, kind)), sel(one(shipped, kind)))) {
      errs.push(`${kind} selector changed: ${JSON.stringify(sel(one(objs, kind)))}`);
    }
  }
  const pairs = Object.assign({}, ...(k.labels ?? []).map((l) => l.pairs));
  if (!Object.keys(pairs).length) errs.push("the example sets no labels for the Prometheus to select by");
  for (const kind of ["ServiceMonitor", "PrometheusRule"]) {
    for (const [key, v] of Object.entries(pairs)) {
      if (one(objs, kind)?.metadata.labels?.[key] !== v) errs.push(`${kind} lacks the label ${key}=${v}`);
    }
  }
  if (/^\s*commonLabels:/m.test(block)) errs.push("the example uses commonLabels");
} catch (e) {
  errs.push(`kubectl kustomize of the example failed: ${e.stderr ?? e.message}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
for (const e of errs) console.error(`docs/deploy.md, The image: ${e}`);
if (errs.length) process.exit(1);
console.log("docs/deploy.md: the example kustomization builds, sets the image, keeps the selectors");
