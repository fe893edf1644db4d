// SPDX-License-Identifier: Apache-2.0
// Builds the kustomizations docs/deploy.md tells users to write (each YAML block after a
// `tested:` marker), as a user would next to a clone of this repository, and checks what the
// page promises of them:
//   - each builds with `kubectl kustomize`, printing nothing on stderr, and passes
//     validate_manifests.mjs's check() with the components it lists;
//   - its `images:` entry sets the agent's image (the shipped name is one `images:` matches);
//   - the one of "The image" builds on the default overlay (overlays/eks), and its `labels:` land
//     on the ServiceMonitor and PrometheusRule (what kube-prometheus-stack selects by) and leave
//     the DaemonSet's and the Service's selectors as shipped (a DaemonSet's selector is
//     immutable: `commonLabels` would break the next apply).
//
//   node check_deploy_docs.mjs <source dir>       (kubectl on PATH)
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { parse, parseAllDocuments, stringify } from "yaml";
import { check, componentsOf } from "./validate_manifests.mjs";

const src = process.argv[2] ?? "../../..";
const doc = readFileSync(`${src}/docs/deploy.md`, "utf8");
const MARKER = "<!-- tested: tests/deploy/checks/manifests_test.sh builds this block -->";
const DEFAULT = "../efawatch/deploy/kubernetes/overlays/eks";
const errs = [];

// The section each block is in, for messages, and the block.
const blocks = doc.split(MARKER).slice(1).map((after, i) => {
  const before = doc.split(MARKER).slice(0, i + 1).join(MARKER);
  const section = [...before.matchAll(/^#{2,3} (.+)$/gm)].pop()?.[1] ?? "?";
  return { section, yaml: /^\s*```yaml\n([\s\S]*?)```/.exec(after)?.[1] };
});
if (!blocks.length || blocks.some((b) => !b.yaml)) {
  console.error("docs/deploy.md: a `tested:` marker without a YAML block right after it, or none");
  process.exit(1);
}
if (!blocks.some((b) => (parse(b.yaml).resources ?? []).includes(DEFAULT))) {
  errs.push("The image: no tested example builds on the default overlay, overlays/eks");
}

// `kubectl kustomize` of a directory: the objects and the text, or null with the reason in errs.
function build(where, d) {
  const r = spawnSync("kubectl", ["kustomize", d], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0 || r.stderr.trim()) {
    errs.push(`${where}: kubectl kustomize ${r.status !== 0 ? "failed" : "wrote to stderr"}: ${r.stderr.trim()}`);
    return null;
  }
  return { text: r.stdout, objs: parseAllDocuments(r.stdout).map((x) => x.toJS()).filter(Boolean) };
}
const one = (list, kind) => list.find((o) => o.kind === kind);

const dir = mkdtempSync(join(tmpdir(), "efawatch-kustomize-"));
try {
  const shipped = build("overlays/eks", join(src, "deploy/kubernetes/overlays/eks"));
  for (const [i, { section, yaml }] of blocks.entries()) {
    const where = `docs/deploy.md, ${section}`;
    const k = parse(yaml);
    // `../efawatch/<path>` is the clone next to the user's directory: here, the source tree.
    const mine = join(dir, `my-efawatch-${i}`);
    mkdirSync(mine);
    const local = (r) => {
      const m = /^\.\.\/efawatch\/(.+)$/.exec(r);
      return m ? relative(mine, join(src, m[1])) : r;
    };
    const resources = (k.resources ?? []).map(local);
    const components = (k.components ?? []).map(local);
    writeFileSync(join(mine, "kustomization.yaml"), stringify({
      ...k, resources, ...(components.length ? { components } : {}) }));
    const built = build(where, mine);
    if (!built) continue;
    // The image its `images:` entry sets must be the agent's (check() compares them).
    const [image] = k.images ?? [];
    const want = `${image?.newName}:${image?.newTag}`;
    const { errs: e } = await check(`docs-example-${i}`, built.text, componentsOf(mine), want);
    errs.push(...e.map((x) => `${where}: ${x}`));
    if (/^\s*commonLabels:/m.test(yaml)) errs.push(`${where}: the example uses commonLabels`);
    if (!(k.resources ?? []).includes(DEFAULT) || !shipped) continue;

    for (const kind of ["DaemonSet", "Service"]) {
      const sel = (o) => o?.spec.selector;
      if (!isDeepStrictEqual(sel(one(built.objs, kind)), sel(one(shipped.objs, kind)))) {
        errs.push(`${where}: ${kind} selector changed: ${JSON.stringify(sel(one(built.objs, kind)))}`);
      }
    }
    const pairs = Object.assign({}, ...(k.labels ?? []).map((l) => l.pairs));
    if (!Object.keys(pairs).length) errs.push(`${where}: the example sets no labels for the Prometheus to select by`);
    for (const kind of ["ServiceMonitor", "PrometheusRule"]) {
      for (const [key, v] of Object.entries(pairs)) {
        if (one(built.objs, kind)?.metadata.labels?.[key] !== v) {
          errs.push(`${where}: ${kind} lacks the label ${key}=${v}`);
        }
      }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
for (const e of errs) console.error(e);
if (errs.length) process.exit(1);
console.log(`docs/deploy.md: ${blocks.length} example kustomizations build silently, set the image, ` +
  "keep the selectors and pass the manifest checks");
