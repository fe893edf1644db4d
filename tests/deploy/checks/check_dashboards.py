#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Static checks of dashboards/*.json (the e2e test runs their queries against real data):
  - the JSON is what dashboards/generate.py writes (no hand edits that the generator would lose);
  - every dashboard is templated by datasource, cluster, node, namespace, workload and pod; every
    variable is used by a panel; every panel and query uses the datasource variable;
  - every query filters by each variable whose label its metric has, inside that metric's
    selector (so rates and sums run after filtering); a query on per-pod series uses $workload;
  - every metric a query names is in docs/metrics.md or is a recording rule of
    deploy/prometheus/efawatch-rules.yml;
  - every stat has colours from thresholds; a stat that counts broken things (its title says
    so: down, fallback, missing, ...) is green at 0 and not green at 1 or more; one that counts
    working things (up) is not green at 0;
  - no table shows a "Value" or "Value #A" column: each value column is renamed or hidden, and a
    table of several queries merges them first;
  - every time series query has its own legend (transmit and receive are told apart); the fleet
    view draws top-k / bottom-k, not one line per node;
  - dashboard links carry the variables and time range (includeVars, keepTime); a table cell's
    link goes to a known dashboard and carries the time range and each of its variables;
  - panel ids are unique and panels fit Grafana's 24-column grid.
Each check is proven to fail: self_test() breaks a copy of the dashboards once per check and
expects that check's complaint. Exits 1 with one line per problem.
"""
import copy
import json
import os
import pathlib
import re
import subprocess
import sys

SOURCE = pathlib.Path(os.environ.get("EFAWATCH_SOURCE_DIR", pathlib.Path(__file__).parents[3]))
METRIC_RE = re.compile(r"\b(efawatch[:_][A-Za-z0-9_:]+)\b")
# A metric and its label matchers, if any: efawatch metrics, and `up` with a selector.
SELECTOR_RE = re.compile(
    r'(?<![\w:"])(efawatch[:_][A-Za-z0-9_:]+|up(?=\s*\{))\s*(\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\})?'
)
REQUIRED_VARS = ("datasource", "cluster", "node", "namespace", "workload", "pod")
# Variables that name a label: a query on a metric with that label must filter by it.
FILTER_VARS = ("cluster", "node", "namespace", "workload", "pod")
# Labels every scraped series gets from the scrape config (deploy/prometheus/prometheus.yml).
TARGET_LABELS = {"cluster", "node", "instance", "job"}
# Stat titles that count broken things (any is bad) and working things (none is bad).
BAD_TITLE = re.compile(r"down|fallback|loopback|missing|error|failing|on tcp|mixed|without|"
                       r"lost|suspect|critical", re.I)
GOOD_TITLE = re.compile(r"\bup\b", re.I)


def metric_labels():
    """{metric or recording rule: the labels its series can have}."""
    labels = {}
    doc = (SOURCE / "docs/metrics.md").read_text()
    for name, kind, ls in re.findall(r"^\| `(efawatch_\w+)` \| (\w+) \| ([^|]*) \|", doc, re.M):
        own = {x.strip() for x in ls.split(",") if x.strip()}
        labels[name] = own | TARGET_LABELS
        if kind == "histogram":
            labels[name + "_bucket"] = own | TARGET_LABELS | {"le"}
            labels[name + "_sum"] = labels[name + "_count"] = own | TARGET_LABELS
    labels["up"] = set(TARGET_LABELS)
    # A recording rule keeps the labels of its first (outermost) `by (...)` clause and its own
    # `labels:`; one without a `by` keeps those of the series it reads.
    rules = (SOURCE / "deploy/prometheus/efawatch-rules.yml").read_text()
    chunks = re.split(r"(?m)^\s+- (?=record:|alert:)", rules)
    rule_text = {}
    for chunk in chunks:
        m = re.match(r"record: (\S+)", chunk)
        if m:
            rule_text[m.group(1)] = rule_text.get(m.group(1), "") + chunk
    unresolved = {}
    for name, text in rule_text.items():
        by = [re.search(r"\bby\s*\(([^)]*)\)", c) for c in text.split("record: ")[1:]]
        by = [b.group(1) for b in by if b]
        own = {x.strip() for b in by for x in b.split(",") if x.strip()}
        lab = re.search(r"(?m)^\s+labels:\n((?:\s{8,}\w+:.*\n?)+)", text)
        if lab:
            own |= set(re.findall(r"(?m)^\s+(\w+):", lab.group(1)))
        if by:
            labels[name] = own
        else:
            unresolved[name] = (own, set(METRIC_RE.findall(text.split("expr:", 1)[-1])) - {name})
    for _ in range(len(unresolved) + 1):
        for name, (own, reads) in list(unresolved.items()):
            if all(r in labels for r in reads):
                labels[name] = own.union(*(labels[r] for r in reads))
                del unresolved[name]
    for name, (own, _) in unresolved.items():
        labels[name] = own
    return labels


def load_boards():
    return {p.name: json.loads(p.read_text())
            for p in sorted((SOURCE / "dashboards").glob("*.json"))}


def threshold_colour(thresholds, value):
    colour = None
    for step in thresholds.get("steps", []):
        if step.get("value") is None or value >= step["value"]:
            colour = step["color"]
    return colour


def is_green(colour):
    return colour is not None and "green" in colour


def is_alarm(colour):
    return colour is not None and any(c in colour for c in ("red", "orange", "yellow"))


def uses_var(text, v):
    return re.search(r"\$\{?" + v + r"\b", text) is not None


def filters_by(selector, v):
    return re.search(r"\b" + v + r'\s*[=!]~\s*"\$\{?' + v + r'\}?"', selector or "") is not None


def panel_links(p):
    links = list(p.get("fieldConfig", {}).get("defaults", {}).get("links", []))
    for o in p.get("fieldConfig", {}).get("overrides", []):
        for prop in o.get("properties", []):
            if prop.get("id") == "links":
                links += prop.get("value", [])
    return links


def check_query(name, title, ref, expr, var_names, labels, errs):
    for metric, selector in SELECTOR_RE.findall(expr):
        own = labels.get(metric)
        if own is None:
            continue  # reported as an unknown metric
        for v in FILTER_VARS:
            if v not in var_names:
                continue
            if v == "workload":
                # Per-pod series have no workload label: the query joins them on $workload's pods.
                if ("workload" in own or "pod" in own) and not uses_var(expr, "workload"):
                    errs.append(f"{name}: panel '{title}' {ref}: {metric} ignores $workload")
            elif v in own and not filters_by(selector, v):
                errs.append(f"{name}: panel '{title}' {ref}: {metric} ignores ${v} "
                            f"(filter inside its selector)")


def check_stat(name, p, errs):
    d = p.get("fieldConfig", {}).get("defaults", {})
    t = d.get("thresholds")
    if not t or not t.get("steps"):
        errs.append(f"{name}: stat '{p['title']}' has no thresholds")
        return
    if d.get("color", {}).get("mode") != "thresholds":
        errs.append(f"{name}: stat '{p['title']}' does not take its colour from its thresholds")
    if p.get("options", {}).get("colorMode") not in ("value", "background"):
        errs.append(f"{name}: stat '{p['title']}' shows no colour (options.colorMode)")
    title = p["title"]
    if BAD_TITLE.search(title):
        if not is_green(threshold_colour(t, 0)):
            errs.append(f"{name}: stat '{title}' counts broken things but is not green at 0")
        for v in (1, 3):
            if not is_alarm(threshold_colour(t, v)):
                errs.append(f"{name}: stat '{title}' counts broken things but is "
                            f"{threshold_colour(t, v)} at {v} (want red, orange or yellow)")
    elif GOOD_TITLE.search(title):
        if is_green(threshold_colour(t, 0)):
            errs.append(f"{name}: stat '{title}' counts working things but is green at 0")


def check_table(name, p, errs):
    targets = p.get("targets", [])
    values = ["Value"] if len(targets) == 1 else ["Value #" + t["refId"] for t in targets]
    transforms = p.get("transformations", [])
    ids = [t["id"] for t in transforms]
    if len(targets) > 1 and not ({"merge", "joinByField"} & set(ids)):
        errs.append(f"{name}: table '{p['title']}' shows its {len(targets)} queries as separate "
                    "frames (merge them)")
    organize = [t["options"] for t in transforms if t["id"] == "organize"]
    rename = {k: v for o in organize for k, v in o.get("renameByName", {}).items()}
    exclude = {k for o in organize for k, v in o.get("excludeByName", {}).items() if v}
    for col in values:
        header = rename.get(col, col)
        if col not in exclude and re.match(r"Value( #|$)", header):
            errs.append(f"{name}: table '{p['title']}' has a column headed '{header}' "
                        "(rename or hide it with an organize transformation)")


def check_timeseries(name, p, fleet, errs):
    legends = []
    for t in p.get("targets", []):
        legend = t.get("legendFormat", "")
        if not legend or legend == "__auto":
            errs.append(f"{name}: panel '{p['title']}' {t['refId']} has no legend")
        elif legend in legends:
            errs.append(f"{name}: panel '{p['title']}' {t['refId']} has the legend of another "
                        f"query ('{legend}')")
        legends.append(legend)
        if fleet and not re.match(r"\s*(topk|bottomk)\s*\(", t["expr"]):
            errs.append(f"{name}: panel '{p['title']}' {t['refId']} draws every node "
                        "(use topk/bottomk on the fleet view)")


def check_links(name, d, boards_vars, errs):
    for link in d.get("links", []):
        if not link.get("includeVars") or not link.get("keepTime"):
            errs.append(f"{name}: dashboard link '{link.get('title')}' drops the variables or "
                        "time range (includeVars, keepTime)")
    for p in d["panels"]:
        for link in panel_links(p):
            url = link.get("url", "")
            m = re.match(r"/d/([\w-]+)(?:/[\w-]+)?\?(.*)$", url)
            if not m or m.group(1) not in boards_vars:
                errs.append(f"{name}: panel '{p['title']}' links to an unknown dashboard: {url}")
                continue
            target_vars, query = boards_vars[m.group(1)], m.group(2)
            if "${__url_time_range}" not in query:
                errs.append(f"{name}: panel '{p['title']}' link drops the time range: {url}")
            for v in target_vars:
                if f"var-{v}=" not in query and f"${{{v}:queryparam}}" not in query:
                    errs.append(f"{name}: panel '{p['title']}' link drops ${v}: {url}")
            for v in re.findall(r"var-(\w+)=", query):
                if v not in target_vars:
                    errs.append(f"{name}: panel '{p['title']}' link sets ${v}, which "
                                f"{m.group(1)} does not have: {url}")


def check(boards, labels):
    """The problems of `boards` ({file name: dashboard}), one line each."""
    errs = []
    if len(boards) < 3:
        errs.append(f"expected the fleet, node and job dashboards, found {len(boards)} files")
    boards_vars = {d["uid"]: [v["name"] for v in d["templating"]["list"]]
                   for d in boards.values()}
    uids = set()
    for name, d in boards.items():
        if d["uid"] in uids:
            errs.append(f"{name}: duplicate uid {d['uid']}")
        uids.add(d["uid"])
        variables = d["templating"]["list"]
        var_names = [v["name"] for v in variables]
        for want in REQUIRED_VARS:
            if want not in var_names:
                errs.append(f"{name}: no ${want} variable")
        exprs = [v["query"]["query"] for v in variables if v["type"] == "query"]
        panel_text = []
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
            if p["type"] == "alertlist":
                # Grafana's alert list reads the data source's alerts: no query, a label filter
                # by the dashboard's cluster.
                if "$cluster" not in p.get("options", {}).get("alertInstanceLabelFilter", ""):
                    errs.append(f"{name}: alert list '{p['title']}' is not filtered by $cluster")
            elif not p.get("targets"):
                errs.append(f"{name}: panel '{p['title']}' has no query")
            for t in p.get("targets", []):
                if t.get("datasource", {}).get("uid") != "${datasource}":
                    errs.append(f"{name}: panel '{p['title']}' {t['refId']} does not use "
                                "${datasource}")
                exprs.append(t["expr"])
                panel_text.append(t["expr"])
                check_query(name, p["title"], t["refId"], t["expr"], var_names, labels, errs)
            if p["type"] == "stat":
                check_stat(name, p, errs)
            elif p["type"] == "table":
                check_table(name, p, errs)
            elif p["type"] == "timeseries":
                check_timeseries(name, p, d["uid"] == "efawatch-fleet", errs)
        for v in var_names:
            if v != "datasource" and not any(uses_var(t, v) for t in panel_text):
                errs.append(f"{name}: variable ${v} is used by no panel")
        for e in exprs:
            for m in METRIC_RE.findall(e):
                if m not in labels:
                    errs.append(f"{name}: unknown metric {m} in {e}")
        check_links(name, d, boards_vars, errs)
    return errs


def first(boards, board, kind, title_re=".*"):
    return next(p for p in boards[board]["panels"]
                if p["type"] == kind and re.search(title_re, p["title"]))


def self_test(boards, labels):
    """Breaks a copy of the dashboards once per rule; returns the rules that did not complain."""
    fleet, node, job = "efawatch-fleet.json", "efawatch-node.json", "efawatch-job.json"

    def no_thresholds(b):
        del first(b, fleet, "stat")["fieldConfig"]["defaults"]["thresholds"]

    def green_fallback(b):
        p = first(b, fleet, "stat", "TCP fallback")
        p["fieldConfig"]["defaults"]["thresholds"]["steps"] = [{"color": "green", "value": None}]

    def green_up(b):
        p = first(b, fleet, "stat", "Agents up")
        p["fieldConfig"]["defaults"]["thresholds"]["steps"] = [{"color": "green", "value": None}]

    def value_column(b):
        p = first(b, node, "table", "Verdicts")
        for t in p["transformations"]:
            t.get("options", {}).get("renameByName", {}).pop("Value #A", None)

    def unmerged(b):
        p = first(b, node, "table", "Verdicts")
        p["transformations"] = [t for t in p["transformations"] if t["id"] != "merge"]

    def unused_variable(b):
        b[job]["templating"]["list"].append(dict(b[job]["templating"]["list"][-1], name="rack"))

    def unfiltered_namespace(b):
        t = first(b, node, "table", "NCCL containers")["targets"][0]
        t["expr"] = t["expr"].replace('namespace=~"$namespace", ', "", 1)

    def unfiltered_node_in_rate(b):
        t = first(b, job, "timeseries", "EFA throughput")["targets"][0]
        t["expr"] = t["expr"].replace('efawatch_efa_tx_bytes_total{cluster=~"$cluster", '
                                      'node=~"$node"}',
                                      'efawatch_efa_tx_bytes_total{cluster=~"$cluster"}')

    def no_workload(b):
        p = first(b, fleet, "stat", "loopback")
        p["targets"][0]["expr"] = ('count(efawatch_nccl_loopback_misuse{cluster=~"$cluster", '
                                   'node=~"$node", namespace=~"$namespace", pod=~"$pod"} == 1)')

    def shared_legend(b):
        p = first(b, node, "timeseries", "EFA port throughput")
        for t in p["targets"]:
            t["legendFormat"] = "{{device}}"

    def all_nodes(b):
        t = first(b, fleet, "timeseries")["targets"][0]
        t["expr"] = re.sub(r"^topk\(10, (.*)\)$", r"\1", t["expr"])

    def link_drops_vars(b):
        b[job]["links"][0]["includeVars"] = False

    def cell_links_drop(text):
        def mutate(b):
            p = first(b, fleet, "table", "On TCP")
            for o in p["fieldConfig"]["overrides"]:
                for prop in o["properties"]:
                    if prop["id"] == "links":
                        for link in prop["value"]:
                            link["url"] = link["url"].replace(text, "")
        return mutate

    cases = [
        (no_thresholds, "has no thresholds"),
        (green_fallback, "counts broken things but is green at 1"),
        (green_up, "counts working things but is green at 0"),
        (value_column, "column headed 'Value #A'"),
        (unmerged, "as separate frames"),
        (unused_variable, "$rack is used by no panel"),
        (unfiltered_namespace, "ignores $namespace"),
        (unfiltered_node_in_rate, "efawatch_efa_tx_bytes_total ignores $node"),
        (no_workload, "ignores $workload"),
        (shared_legend, "has the legend of another query"),
        (all_nodes, "draws every node"),
        (link_drops_vars, "drops the variables or time range"),
        (cell_links_drop("&${__url_time_range}"), "drops the time range"),
        (cell_links_drop("&${cluster:queryparam}"), "drops $cluster"),
    ]
    silent = []
    for breaks, complaint in cases:
        broken = copy.deepcopy(boards)
        try:
            breaks(broken)
        except (KeyError, IndexError, StopIteration) as e:
            silent.append(f"self-test: {breaks.__name__} found nothing to break ({e!r}): "
                          "update it to the dashboards' new shape")
            continue
        if not any(complaint in e for e in check(broken, labels)):
            silent.append(f"self-test: {breaks.__name__} broke a dashboard, but no "
                          f"'{complaint}' complaint")
    return silent, len(cases)


def main():
    errs = []
    gen = subprocess.run(
        [sys.executable, str(SOURCE / "dashboards/generate.py"), "--check"],
        capture_output=True, text=True,
    )
    if gen.returncode != 0:
        errs.append(gen.stderr.strip() or "dashboards/generate.py --check failed")
    labels = metric_labels()
    boards = load_boards()
    errs += check(boards, labels)
    silent, cases = self_test(boards, labels)
    errs += silent
    for e in errs:
        print(e, file=sys.stderr)
    if errs:
        return 1
    queries = sum(len(p.get("targets", [])) for d in boards.values() for p in d["panels"])
    print(f"{len(boards)} dashboards, {queries} panel queries: ok; "
          f"{cases} broken copies each rejected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
