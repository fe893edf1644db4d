#!/usr/bin/env python3
"""Static checks of dashboards/*.json (the e2e test runs their queries against real data):
  - the JSON is what dashboards/generate.py writes (no hand edits that the generator would lose);
  - every dashboard is templated by datasource, cluster, node and namespace, and every panel
    and query uses the datasource variable;
  - every metric a query names is in docs/metrics.md or is a recording rule of
    deploy/prometheus/efawatch-rules.yml;
  - panel ids are unique and panels fit Grafana's 24-column grid.
Exits 1 with one line per problem.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

SOURCE = pathlib.Path(os.environ.get("EFAWATCH_SOURCE_DIR", pathlib.Path(__file__).parents[3]))
METRIC_RE = re.compile(r"\b(efawatch[:_][A-Za-z0-9_:]+)\b")


def known_metrics():
    doc = (SOURCE / "docs/metrics.md").read_text()
    names = set(re.findall(r"^\| `(efawatch_\w+)` \|", doc, re.M))
    rules = (SOURCE / "deploy/prometheus/efawatch-rules.yml").read_text()
    names |= set(re.findall(r"^\s+- record: (\S+)", rules, re.M))
    return names


def main():
    errs = []
    gen = subprocess.run(
        [sys.executable, str(SOURCE / "dashboards/generate.py"), "--check"],
        capture_output=True, text=True,
    )
    if gen.returncode != 0:
        errs.append(gen.stderr.strip() or "dashboards/generate.py --check failed")
    known = known_metrics()
    paths = sorted((SOURCE / "dashboards").glob("*.json"))
    if len(paths) < 3:
        errs.append(f"expected the fleet, node and job dashboards, found {len(paths)} files")
    uids = set()
    queries = 0
    for path in paths:
        d = json.loads(path.read_text())
        name = path.name
        if d["uid"] in uids:
            errs.append(f"{name}: duplicate uid {d['uid']}")
        uids.add(d["uid"])
        var_names = [v["name"] for v in d["templating"]["list"]]
        for want in ("datasource", "cluster", "node", "namespace"):
            if want not in var_names:
                errs.append(f"{name}: no ${want} variable")
        exprs = [v["query"]["query"] for v in d["templating"]["list"] if v["type"] == "query"]
        ids = set()
        for p in d["panels"]:
            if p["id"] in ids:
                errs.append(f"{name}: duplicate panel id {p['id']}")
            ids.add(p["id"])
            g = p["gridPos"]
            if g["x"] + g["w"] > 24:
                errs.append(f"{name}: panel '{p['title']}' is wider than the grid")
            if p["type"] == "row":
                continue
            if p.get("datasource", {}).get("uid") != "${datasource}":
                errs.append(f"{name}: panel '{p['title']}' does not use ${{datasource}}")
            if not p.get("targets"):
                errs.append(f"{name}: panel '{p['title']}' has no query")
            for t in p.get("targets", []):
                if t.get("datasource", {}).get("uid") != "${datasource}":
                    errs.append(f"{name}: panel '{p['title']}' {t['refId']} does not use ${{datasource}}")
                exprs.append(t["expr"])
                if "$cluster" not in t["expr"]:
                    errs.append(f"{name}: panel '{p['title']}' {t['refId']} ignores $cluster")
        for e in exprs:
            queries += 1
            for m in METRIC_RE.findall(e):
                base = re.sub(r"_(bucket|sum|count)$", "", m)
                if m not in known and base not in known:
                    errs.append(f"{name}: unknown metric {m} in {e}")
    for e in errs:
        print(e, file=sys.stderr)
    if errs:
        return 1
    print(f"{len(paths)} dashboards, {queries} queries: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
