#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the efawatch Grafana dashboards (dashboards/*.json) from the panel lists below.

    dashboards/generate.py           rewrite the JSON files
    dashboards/generate.py --check   exit 1 if a committed file differs from what this writes

Every dashboard is templated by datasource, cluster, node, namespace, workload and pod, and every
query filters by each of them whose label its metric has, inside the selector (so rate() and sum()
run on the selected series only). Per-pod metrics have no workload label: they are joined on the
pods of $workload (see pods_in_workload).
Queries use only metrics from docs/metrics.md and recording rules from
deploy/prometheus/efawatch-rules.yml. Every time-series panel that reads a metric an alert
compares draws the alert's threshold as a line, from deploy/prometheus/rule-parameters.yml (the
one place for the thresholds; tests/deploy/checks/check_thresholds.py compares panels, rules and
parameters). The JSON goes to dashboards/ and, for the Grafana sidecar, to the
prometheus-operator component, whose configMapGenerator makes the ConfigMap of them (kustomize
reads files only below a kustomization). tests/deploy/checks/check_dashboards.py checks that and the
rest of the house rules (thresholds on every stat, named table columns, legends, top-k on the
fleet view, links that carry variables); tests/e2e/prometheus runs every query against a real
Prometheus scraping a real agent.
"""
import json
import pathlib
import re
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
PARAMETERS = HERE.parent / "deploy/prometheus/rule-parameters.yml"
# Copies for the configMapGenerator of the prometheus-operator component.
COMPONENT_COPY = HERE.parent / "deploy/kubernetes/components/prometheus-operator/dashboards"
THRESHOLDS = yaml.safe_load(PARAMETERS.read_text())["thresholds"]
METRIC_RE = re.compile(r"efawatch[:_][A-Za-z0-9_:]+")
DS = {"type": "prometheus", "uid": "${datasource}"}
FLEET_UID, NODE_UID, JOB_UID = "efawatch-fleet", "efawatch-node", "efawatch-job"

SEL = 'cluster=~"$cluster"'
NODE_SEL = 'cluster=~"$cluster", node=~"$node"'
# Per-container series (namespace, pod, container).
POD_SEL = 'cluster=~"$cluster", node=~"$node", namespace=~"$namespace", pod=~"$pod"'
POD_BY = "cluster, node, namespace, pod"
CONTAINER_BY = "cluster, node, namespace, pod, container"
# The job view's communicators, by workload (efawatch:nccl_communicator_workload:info: the pod's
# workload from efawatch_pod_workload_info, else the communicator itself).
COMMS = (
    'efawatch:nccl_communicator_workload:info{cluster=~"$cluster", node=~"$node", '
    'namespace=~"$namespace", pod=~"$pod", workload=~"$workload"}'
)
COMMS_TCP = COMMS[:-1] + ', net="tcp"}'
MULTINODE = f"efawatch:nccl_communicator_multinode:count{{{SEL}}}"


def pods_in_workload(job_view):
    """One series per pod (POD_BY labels) that belongs to $workload, or to any workload or none
    when $workload is "All" (.*). A pod's workload: efawatch_pod_workload_info; in the job view
    also its communicators' (efawatch:nccl_communicator_workload:info, where a communicator
    stands in for the job of a pod without a workload series); else "" (the agent does not read
    the Kubernetes API, or has not listed the pod yet), which only "All" matches.

    label_replace adds keep="1" where the workload label matches the (anchored) $workload regex
    and leaves other series unchanged; `and on (keep)` then keeps only the marked ones."""
    pods = []
    if job_view:
        pods.append(f"max by ({POD_BY}, workload) "
                    f"(efawatch:nccl_communicator_workload:info{{{POD_SEL}}})")
    pods.append(f"max by ({POD_BY}, workload) (efawatch_pod_workload_info{{{POD_SEL}}})")
    pods.append(f"max by ({POD_BY}) (efawatch_logs_lines_total{{{POD_SEL}}})")
    return (
        f'label_replace({f" or on ({POD_BY}) ".join(pods)}, "keep", "1", "workload", '
        '"$workload") and on (keep) label_replace(vector(1), "keep", "1", "", "")'
    )


def in_workload(expr):
    """`expr` (per-pod series) for the pods of $workload only (fleet and node views)."""
    return f"({expr}) and on ({POD_BY}) ({pods_in_workload(False)})"


def findings(extra=""):
    """efawatch_findings of the node (no pod) and of the pods of $namespace, $pod and
    $workload: a node's own findings show while no pod is selected."""
    sel = POD_SEL + extra
    return (f'(efawatch_findings{{{sel}, pod=""}} or '
            + in_workload(f'efawatch_findings{{{sel}, pod!=""}}') + ")")


def in_job_workload(expr):
    """in_workload for the job view, whose $workload may be a communicator."""
    return f"({expr}) and on ({POD_BY}) ({pods_in_workload(True)})"


def not_deliberate(expr):
    """`expr` (per-container series) without containers whose TCP net was chosen by configuration
    (efawatch_nccl_tcp_deliberate): those are on the fleet table, not in the fallback counts."""
    return f"({expr}) unless on ({CONTAINER_BY}) (efawatch_nccl_tcp_deliberate{{{POD_SEL}}} == 1)"


def top_pods(k, metric, fn=None, within=None):
    """The k pods with the highest sum of a per-container metric (fn: rate or increase for a
    counter), after every filter (within: in_workload or in_job_workload)."""
    inner = f"{metric}{{{POD_SEL}}}"
    if fn:
        inner = f"{fn}({inner}[$__rate_interval])"
    return f"topk({k}, sum by (namespace, pod) ({(within or in_workload)(inner)}))"


# Every view has these variables; a link carries each (the row's value, else the current one).
FILTER_VARS = ("cluster", "node", "namespace", "workload", "pod")


def data_link(title, uid, **params):
    """A link from a table cell to another efawatch dashboard, with this one's datasource, time
    range and variables; params: variable -> the row's column (`${__data.fields.<column>}`) whose
    value replaces the current one."""
    query = ["${datasource:queryparam}"]
    for v in FILTER_VARS:
        if v in params:
            query.append(f"var-{v}=${{__data.fields.{params[v]}}}")
        else:
            query.append(f"${{{v}:queryparam}}")
    query.append("${__url_time_range}")
    return {"title": title, "url": f"/d/{uid}?" + "&".join(query)}


def node_link(**extra):
    return data_link("Node detail: ${__data.fields.node}", NODE_UID, node="node", **extra)


def job_link_pod():
    return data_link("Job view: ${__data.fields.namespace}/${__data.fields.pod}", JOB_UID,
                     namespace="namespace", pod="pod")


def job_link_workload():
    return data_link("Job view: ${__data.fields.namespace}/${__data.fields.workload}", JOB_UID,
                     namespace="namespace", workload="workload")


def query_var(name, query, multi=True, include_all=True, all_value=".*"):
    v = {
        "name": name,
        "label": name,
        "type": "query",
        "datasource": DS,
        "query": {"query": query, "refId": name},
        "definition": query,
        "refresh": 2,
        "sort": 1,
        "multi": multi,
        "includeAll": include_all,
        "current": {},
    }
    # With "All" and ".*", match any value, including series without the label (a Prometheus that
    # adds no cluster label). Without an allValue, "All" is the list of the variable's values.
    if include_all and all_value is not None:
        v["allValue"] = all_value
    return v


def variables(view):
    """The variables of the fleet, node or job view, each after those its query uses."""
    out = [
        {
            "name": "datasource",
            "label": "Prometheus",
            "type": "datasource",
            "query": "prometheus",
            "current": {},
            "hide": 0,
        },
        query_var("cluster", "label_values(efawatch_build_info, cluster)"),
    ]
    nodes = 'label_values(efawatch_build_info{cluster=~"$cluster"}, node)'
    if view == "fleet":
        out.append(query_var("node", nodes))
    elif view == "node":
        out.append(query_var("node", nodes, multi=False, include_all=False))
    ns_sel = SEL if view != "node" else NODE_SEL
    out.append(
        query_var("namespace", f"label_values(efawatch_nccl_info{{{ns_sel}}}, namespace)")
    )
    if view == "job":
        # The job's workloads, communicators standing in for jobs without one.
        out.append(query_var(
            "workload",
            'label_values(efawatch:nccl_communicator_workload:info{cluster=~"$cluster", '
            'namespace=~"$namespace"}, workload)',
        ))
    else:
        out.append(query_var(
            "workload",
            f'label_values(efawatch_pod_workload_info{{{ns_sel}, namespace=~"$namespace"}}, '
            "workload)",
        ))
    out.append(query_var(
        "pod", f'label_values(efawatch_nccl_info{{{ns_sel}, namespace=~"$namespace"}}, pod)'
    ))
    if view == "job":
        # The nodes of the job's pods; "All" is that list (no allValue), so the per-node EFA
        # panels rate the devices of these nodes only, not of the whole fleet.
        out.append(query_var(
            "node",
            'label_values(efawatch_nccl_info{cluster=~"$cluster", namespace=~"$namespace", '
            'pod=~"$pod"}, node)',
            all_value=None,
        ))
    return out


GREEN, RED, ORANGE, TEXT = "green", "red", "orange", "text"


def steps(*pairs):
    """Threshold steps: (colour, from value), the first from -inf."""
    return {
        "mode": "absolute",
        "steps": [{"color": c, "value": None if i == 0 else v} for i, (c, v) in enumerate(pairs)],
    }


COLOURS = {"orange": ORANGE, "red": RED}  # rule-parameters.yml's `colour`
# Stat colours by what the number means.
BAD_IF_ANY = steps((GREEN, None), (RED, 1))         # a count of broken things
WARN_IF_ANY = steps((GREEN, None), (ORANGE, 1))     # a count of degraded things
BAD_IF_NONE = steps((RED, None), (GREEN, 1))        # a count of working things
NEUTRAL = steps((TEXT, None))                       # a size, neither good nor bad


class Board:
    """Lays panels out on Grafana's 24-column grid, row by row."""

    def __init__(self, uid, title, description):
        self.uid, self.title, self.description = uid, title, description
        self.panels = []
        self.x = self.y = 0
        self.row_h = 0

    def _place(self, w, h):
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        pos = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def row(self, title):
        if self.x:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        self.panels.append(
            {
                "type": "row",
                "title": title,
                "id": len(self.panels) + 1,
                "collapsed": False,
                "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1},
                "panels": [],
            }
        )
        self.y += 1

    def _panel(self, kind, title, w, h, description):
        p = {
            "type": kind,
            "title": title,
            "description": description,
            "id": len(self.panels) + 1,
            "datasource": DS,
            "gridPos": self._place(w, h),
            "targets": [],
            "fieldConfig": {"defaults": {}, "overrides": []},
            "options": {},
        }
        self.panels.append(p)
        return p

    @staticmethod
    def _target(p, expr, **extra):
        t = {"refId": chr(ord("A") + len(p["targets"])), "datasource": DS, "expr": expr}
        t.update(extra)
        p["targets"].append(t)

    def stat(self, title, expr, thresholds, w=4, h=4, unit=None, description=""):
        p = self._panel("stat", title, w, h, description)
        p["fieldConfig"]["defaults"] = {"color": {"mode": "thresholds"}, "thresholds": thresholds}
        if unit:
            p["fieldConfig"]["defaults"]["unit"] = unit
        p["options"] = {
            # Neutral sizes colour their number; alarms their background.
            "colorMode": "value" if thresholds["steps"][0]["color"] == TEXT else "background",
            "graphMode": "none",
            "justifyMode": "auto",
            "textMode": "value",
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
        }
        self._target(p, expr, instant=True, range=False)

    def table(self, title, targets, columns=None, w=12, h=8, links=None, mappings=None,
              units=None, description="", sort=None):
        # sort: (header, descending)
        """targets: (expr, header of its value column, or None to hide it). columns: field ->
        header, in display order; a field is a label, or "Value" (one query) / "Value #<refId>"
        (several, merged). Label columns not named keep their name after the named ones; Time is
        hidden. links, mappings, units: field -> data links, value mappings, unit of its cells."""
        p = self._panel("table", title, w, h, description)
        rename, exclude = {}, {"Time": True}
        multi = len(targets) > 1
        for expr, header in targets:
            self._target(p, expr, instant=True, range=False, format="table")
            # Grafana names the value column "Value", or "Value #<refId>" when several queries
            # are merged into one table: never a header anyone should read.
            value_col = "Value #" + p["targets"][-1]["refId"] if multi else "Value"
            if header:
                rename[value_col] = header
            else:
                exclude[value_col] = True
        columns = columns or {}
        rename.update({f: h for f, h in columns.items() if f not in exclude})
        index = {f: i for i, f in enumerate(columns)}
        p["transformations"] = ([{"id": "merge", "options": {}}] if multi else []) + [
            {
                "id": "organize",
                "options": {"excludeByName": exclude, "renameByName": rename, "indexByName": index},
            }
        ]

        def override(field, *properties):
            p["fieldConfig"]["overrides"].append({
                "matcher": {"id": "byName", "options": rename.get(field, field)},
                "properties": list(properties),
            })

        for field, ls in (links or {}).items():
            override(field, {"id": "links", "value": ls})
        for field, m in (mappings or {}).items():
            override(field, {"id": "mappings", "value": m},
                     {"id": "custom.cellOptions", "value": {"type": "color-text"}})
        for field, unit in (units or {}).items():
            override(field, {"id": "unit", "value": unit})
        p["options"] = {"showHeader": True, "cellHeight": "sm"}
        if sort:
            p["options"]["sortBy"] = [{"displayName": sort[0], "desc": sort[1]}]

    def timeseries(self, title, targets, w=12, h=8, unit=None, description="", negative=()):
        """targets: (expr, legend). negative: refIds drawn below the axis (receive under
        transmit)."""
        p = self._panel("timeseries", title, w, h, description)
        if unit:
            p["fieldConfig"]["defaults"]["unit"] = unit
        for expr, legend in targets:
            self._target(p, expr, legendFormat=legend)
        for ref in negative:
            p["fieldConfig"]["overrides"].append({
                "matcher": {"id": "byFrameRefID", "options": ref},
                "properties": [{"id": "custom.transform", "value": "negative-Y"}],
            })
        p["options"] = {
            "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
        # The alerts' thresholds on the metrics this panel reads, as lines.
        read = {m for t in p["targets"] for m in METRIC_RE.findall(t["expr"])}
        lines = sorted({(t["value"], t["colour"]) for t in THRESHOLDS
                        if read & set(t["panel_metrics"])})
        if lines:
            p["fieldConfig"]["defaults"]["thresholds"] = steps(
                (GREEN, None), *[(COLOURS[c], v) for v, c in lines])
            p["fieldConfig"]["defaults"]["custom"] = {"thresholdsStyle": {"mode": "line"}}

    def alert_list(self, title, label_filter, w=24, h=6, description=""):
        """Grafana's alert list of the efawatch alerts firing or pending in the data source's
        Prometheus, filtered by the dashboard's variables (label_filter: a label matcher set)."""
        p = self._panel("alertlist", title, w, h, description)
        del p["targets"]
        p["options"] = {
            "viewMode": "list",
            "groupMode": "default",
            "groupBy": [],
            "maxItems": 50,
            "sortOrder": 3,  # importance: critical first
            "dashboardAlerts": False,
            "alertName": "Efawatch",
            "alertInstanceLabelFilter": label_filter,
            "datasource": "${datasource}",
            "showInstances": True,
            "stateFilter": {"firing": True, "pending": True, "noData": False, "normal": False,
                            "error": True},
            "folder": None,
        }

    def json(self, variables_):
        return {
            "uid": self.uid,
            "title": self.title,
            "description": self.description,
            "tags": ["efawatch"],
            "editable": True,
            "schemaVersion": 39,
            "version": 1,
            "time": {"from": "now-6h", "to": "now"},
            "refresh": "1m",
            "timezone": "",
            "graphTooltip": 1,
            "templating": {"list": variables_},
            "annotations": {
                "list": [
                    {
                        "name": "efawatch alerts",
                        "datasource": DS,
                        "enable": True,
                        "iconColor": "red",
                        "expr": 'ALERTS{alertstate="firing", alertname=~"Efawatch.*", '
                        + SEL
                        + "}",
                        "titleFormat": "{{alertname}}",
                        "textFormat": "{{node}} {{pod}} {{peer_node}}",
                    }
                ]
            },
            # The other efawatch dashboards, with this one's variables and time range.
            "links": [
                {
                    "title": "efawatch",
                    "type": "dashboards",
                    "tags": ["efawatch"],
                    "asDropdown": True,
                    "includeVars": True,
                    "keepTime": True,
                }
            ],
            "panels": self.panels,
        }


YES_NO = [{"type": "value", "options": {
    "0": {"text": "no", "color": "green", "index": 0},
    "1": {"text": "yes", "color": "red", "index": 1},
}}]
UP_DOWN = [{"type": "value", "options": {
    "0": {"text": "down", "color": "red", "index": 0},
    "1": {"text": "up", "color": "green", "index": 1},
}}]
VERDICTS = [{"type": "value", "options": {
    "tcp fallback": {"color": "red", "index": 0},
    "loopback": {"color": "red", "index": 1},
    "suspected": {"color": "orange", "index": 2},
    "deliberate": {"color": "blue", "index": 3},
}}]

# The per-container verdict gauges the job and node views tabulate, with their column names.
NCCL_VERDICTS = [
    ("efawatch_nccl_tcp_fallback", "TCP fallback"),
    ("efawatch_nccl_tcp_deliberate", "TCP by configuration"),
    ("efawatch_nccl_loopback_misuse", "loopback"),
    ("efawatch_nccl_net_plugin_missing", "net plugin missing"),
    ("efawatch_nccl_gdr_disabled", "GPUDirect RDMA off"),
]


def on_tcp_now():
    """The fleet view's first panel: one row per container and verdict, with the pod's workload.

      tcp fallback  efawatch_nccl_tcp_fallback, the job proven to span nodes: by the container's
                    own log (efawatch_nccl_info{nodes="proven_multi"}) or by the fleet (another
                    node's agent saw the same communicator: efawatch:nccl_tcp_fallback_fleet_proven)
      suspected     efawatch_nccl_tcp_fallback, the node count not proven
      deliberate    efawatch_nccl_tcp_fallback with efawatch_nccl_tcp_deliberate (NCCL_IB_DISABLE=1,
                    NCCL_NET=Socket): chosen, not fallen back to
      loopback      efawatch_nccl_loopback_misuse

    The value is "since": the first time in the dashboard's time range (at 5 m resolution) that
    the container was on TCP (for the first three) or on loopback, in ms for Grafana's date
    units. A container that left TCP and came back shows its first time. The evidence line is not
    a metric: the evidence column names the node whose `efawatch status` shows it and links to
    the node view.
    """
    tcp = f"efawatch_nccl_tcp_fallback{{{POD_SEL}}} == 1"
    loopback = f"efawatch_nccl_loopback_misuse{{{POD_SEL}}} == 1"
    proven = (
        f'max by ({CONTAINER_BY}) (efawatch_nccl_info{{{POD_SEL}, nodes="proven_multi"}}) '
        f"or efawatch:nccl_tcp_fallback_fleet_proven:max{{{POD_SEL}}}"
    )
    deliberate = f"efawatch_nccl_tcp_deliberate{{{POD_SEL}}} == 1"
    chosen = f"max by ({CONTAINER_BY}) ({tcp}) and on ({CONTAINER_BY}) ({deliberate})"
    fallen = f"max by ({CONTAINER_BY}) ({tcp}) unless on ({CONTAINER_BY}) ({deliberate})"

    def verdict(expr, name):
        return f'label_replace({expr}, "verdict", "{name}", "", "")'

    def since(cond):
        # The subquery's steps fall on multiples of 5 m: a container on TCP since after the last
        # one is not in it yet, and is on TCP since now.
        return (
            f"1000 * (min by ({CONTAINER_BY}) (min_over_time(timestamp({cond})[$__range:5m])) "
            f"or max by ({CONTAINER_BY}) (timestamp({cond})))"
        )

    tcp_rows = " or ".join([
        verdict(f"({fallen}) and on ({CONTAINER_BY}) ({proven})", "tcp fallback"),
        verdict(f"({fallen}) unless on ({CONTAINER_BY}) ({proven})", "suspected"),
        verdict(chosen, "deliberate"),
    ])
    # group_left (): the rows keep their verdict label (a plain one-to-one `on` would drop it).
    rows = (
        f"({tcp_rows}) * on ({CONTAINER_BY}) group_left () ({since(tcp)}) "
        f"or {verdict(f'max by ({CONTAINER_BY}) ({loopback})', 'loopback')} "
        f"* on ({CONTAINER_BY}) group_left () ({since(loopback)})"
    )
    # Left join: the pod's workload, or no workload labels for a pod without a workload series.
    workload = (
        f"max by ({POD_BY}, workload_kind, workload) "
        f"(efawatch_pod_workload_info{{{POD_SEL}}}) "
        f"or on ({POD_BY}) max by ({POD_BY}) (efawatch_nccl_info{{{POD_SEL}}})"
    )
    joined = in_workload(f"({rows}) * on ({POD_BY}) group_left (workload_kind, workload) "
                         f"({workload})")
    return f'label_replace({joined}, "evidence", "efawatch status on $1", "node", "(.+)")'


def fleet():
    b = Board(
        FLEET_UID,
        "efawatch / Fleet overview",
        "Which pods are off the fast fabric now (NCCL over TCP or loopback), then the nodes: EFA "
        "errors, missing devices, ping mesh loss, agents down.",
    )
    b.row("Alerts")
    b.alert_list(
        "efawatch alerts firing or pending",
        '{cluster=~"$cluster"}',
        description="The efawatch alerts of this cluster (docs/runbook.md has a section for each): "
        "a job's alert is silenced in Alertmanager under its node's fault (fault_node), not here.",
    )
    b.row("Pods off the fast fabric")
    b.table(
        "On TCP / loopback now",
        [(on_tcp_now(), "since")],
        columns={"workload": "workload", "workload_kind": "kind", "namespace": "namespace",
                 "pod": "pod", "container": "container", "node": "node", "verdict": "verdict",
                 "Value": "since", "evidence": "evidence", "cluster": "cluster"},
        w=24,
        h=9,
        links={
            "workload": [job_link_workload()],
            "pod": [job_link_pod()],
            "node": [node_link()],
            "evidence": [node_link(namespace="namespace", pod="pod")],
        },
        mappings={"verdict": VERDICTS},
        units={"Value": "dateTimeFromNow"},
        sort=("since", True),  # the newest first
        description="Containers whose NCCL runs over TCP or the loopback interface now. verdict: "
        "tcp fallback (the job spans nodes: certain), suspected (TCP selected, the node count "
        "not proven), deliberate (TCP chosen by configuration: NCCL_IB_DISABLE=1 or "
        "NCCL_NET=Socket), loopback. since: first seen on TCP (or loopback) in the time range. "
        "evidence: `efawatch status` on the node shows the log line (the link opens the node "
        "view).",
    )
    b.table(
        "NCCL pods efawatch cannot judge",
        [(f"max by (cluster, node, namespace, pod, workload_kind, workload, reason) ("
          f"efawatch:nccl_unjudged:info{{{POD_SEL}, workload=~\"$workload\"}})", None)],
        columns={"workload": "workload", "workload_kind": "kind", "namespace": "namespace",
                 "pod": "pod", "node": "node", "reason": "reason", "cluster": "cluster"},
        w=24,
        h=6,
        links={"workload": [job_link_workload()], "pod": [job_link_pod()],
               "node": [node_link()]},
        description="Pods whose transport the agent cannot tell, so an empty table above is not "
        "proof: no_nccl_output (a training job's pod with no NCCL line in the logs the agent "
        "reads: NCCL_DEBUG unset, or NCCL_DEBUG_FILE outside pod volumes), nccl_debug_not_info "
        "(NCCL_DEBUG=WARN: no line names the transport), transport_unknown (no transport line "
        "yet). Set NCCL_DEBUG=INFO in the job (docs/logs.md).",
    )
    b.row("Fleet now")
    b.stat("Agents up", f'sum(up{{job="efawatch", {NODE_SEL}}}) or vector(0)', BAD_IF_NONE)
    b.stat("Agents down", f'count(up{{job="efawatch", {NODE_SEL}}} == 0) or vector(0)', BAD_IF_ANY)
    b.stat(
        "Agents scheduled",
        'sum(efawatch:agents_scheduled:sum{cluster=~"$cluster"}) or vector(0)',
        NEUTRAL,
        description="Agent pods the efawatch DaemonSets should run (kube-state-metrics: the "
        "nodes their affinities admit). 0 without kube-state-metrics: compare Agents up with "
        "the GPU nodes you expect agents on.",
    )
    b.stat(
        "Agents scheduled, not ready",
        '(sum(efawatch:agents_scheduled:sum{cluster=~"$cluster"}) - '
        'sum(efawatch:agents_ready:sum{cluster=~"$cluster"})) or vector(0)',
        BAD_IF_ANY,
        description="Agents that should run and are not ready (Pending, ErrImagePull, "
        "CrashLoopBackOff): Agents down cannot see an agent that never got a scrape target "
        "(EfawatchAgentPodsNotReady).",
    )
    b.stat(
        "Nodes with NCCL TCP fallback",
        f"count(count by (cluster, node) ("
        + in_workload(not_deliberate(f"efawatch_nccl_tcp_fallback{{{POD_SEL}}} == 1"))
        + ")) or vector(0)",
        BAD_IF_ANY,
        description="Nodes with a container on TCP (certain or suspected), not counting TCP "
        "chosen by configuration.",
    )
    b.stat(
        "Nodes with loopback misuse",
        "count(count by (cluster, node) ("
        + in_workload(f"efawatch_nccl_loopback_misuse{{{POD_SEL}}} == 1")
        + ")) or vector(0)",
        BAD_IF_ANY,
    )
    b.stat(
        "Nodes with EFA errors (15m)",
        f"count(sum by (cluster, node) (efawatch:efa_errors:increase15m{{{NODE_SEL}}})) "
        "or vector(0)",
        BAD_IF_ANY,
    )
    b.stat(
        "Nodes missing EFA devices",
        f"count(max by (cluster, node) (efawatch_efa_devices_expected{{{NODE_SEL}}} - "
        f"efawatch_efa_devices{{{NODE_SEL}}}) > 0) or vector(0)",
        BAD_IF_ANY,
    )
    b.row("Nodes")
    b.table(
        "Nodes with findings",
        [(f"sum by (cluster, node, kind, severity) ({findings()} > 0)",
          "findings")],
        columns={"node": "node", "kind": "kind", "severity": "severity"},
        links={"node": [node_link()]},
        description="Current findings per node (self-clearing); `efawatch status` on the node "
        "shows their evidence.",
    )
    b.table(
        "Agents",
        [
            (f"max by (cluster, node, version, revision) (efawatch_build_info{{{NODE_SEL}}})",
             None),
            (f'max by (cluster, node) (up{{job="efawatch", {NODE_SEL}}})', "scrape"),
        ],
        columns={"node": "node", "version": "version", "revision": "revision",
                 "Value #B": "scrape"},
        links={"node": [node_link()]},
        mappings={"Value #B": UP_DOWN},
    )
    b.timeseries(
        "Containers on NCCL TCP fallback, top 10 nodes",
        [("topk(10, sum by (cluster, node) ("
          + in_workload(not_deliberate(f"efawatch_nccl_tcp_fallback{{{POD_SEL}}} == 1"))
          + "))", "{{node}}")],
    )
    b.timeseries(
        "Containers with loopback misuse, top 10 nodes",
        [("topk(10, sum by (cluster, node) ("
          + in_workload(f"efawatch_nccl_loopback_misuse{{{POD_SEL}}} == 1")
          + "))", "{{node}}")],
    )
    b.timeseries(
        "EFA errors and SRD events per GB moved (15m), top 10 nodes",
        [(f"topk(10, max by (cluster, node) (efawatch:efa_errors_per_gb:15m{{{NODE_SEL}}}))",
          "{{node}}")],
    )
    b.timeseries(
        "EFA devices missing, top 10 nodes",
        [(f"topk(10, max by (cluster, node) (efawatch_efa_devices_expected{{{NODE_SEL}}} - "
          f"efawatch_efa_devices{{{NODE_SEL}}}) > 0)", "{{node}}")],
    )
    b.row("Fabric")
    b.timeseries(
        "Ping mesh: worst loss per pinging node, top 10",
        [(f"topk(10, max by (cluster, node) (efawatch:mesh_peer_loss_ratio:5m{{{NODE_SEL}}}))",
          "{{node}}")],
        unit="percentunit",
    )
    b.timeseries(
        "Ping mesh: complaints per peer (pingers losing >10%), top 10",
        [(f'topk(10, efawatch:mesh_peer_complainers:count{{{SEL}, peer_node=~"$node"}})',
          "{{peer_node}}")],
    )
    b.timeseries(
        "Ping mesh: share of peers reachable, 10 lowest",
        [(f"bottomk(10, efawatch_mesh_peers_reachable{{{NODE_SEL}}} / "
          f"efawatch_mesh_peers_expected{{{NODE_SEL}}})", "{{node}}")],
        unit="percentunit",
    )
    b.timeseries(
        "On-demand probes: ping loss, top 10",
        [(f"topk(10, efawatch_fabric_ping_loss_ratio{{{NODE_SEL}}})", "{{node}} → {{peer}}")],
        unit="percentunit",
    )
    b.row("Agents")
    b.timeseries(
        "Dropped log analysis work, top 10 nodes each",
        [
            (f"topk(10, sum by (cluster, node) (rate(efawatch_logs_truncated_lines_total"
             f"{{{NODE_SEL}}}[$__rate_interval])))", "{{node}} cut lines"),
            (f"topk(10, sum by (cluster, node) (rate(efawatch_logs_files_over_cap_total"
             f"{{{NODE_SEL}}}[$__rate_interval])))", "{{node}} files over cap"),
            (f"topk(10, sum by (cluster, node) (rate(efawatch_logs_state_evicted_total"
             f"{{{NODE_SEL}}}[$__rate_interval])))", "{{node}} evicted state"),
        ],
        unit="short",
        description="Per second. EfawatchAgentDegraded: any eviction or file over the cap, or "
        "more than one cut line a second (the line), for 30 minutes.",
    )
    b.timeseries(
        "Ping mesh: fewest rounds, most discovery errors (10 nodes each)",
        [
            (f"bottomk(10, sum by (cluster, node) (increase(efawatch_mesh_rounds_total"
             f"{{{NODE_SEL}}}[$__rate_interval])))", "{{node}} rounds"),
            (f"topk(10, sum by (cluster, node) (increase(efawatch_mesh_discovery_errors_total"
             f"{{{NODE_SEL}}}[$__rate_interval])))", "{{node}} discovery errors"),
        ],
    )
    b.timeseries(
        "Collector success, 10 lowest (0 = failing)",
        [(f"bottomk(10, min by (cluster, node, collector) "
          f"(efawatch_collector_success{{{NODE_SEL}}}))", "{{node}} {{collector}}")],
    )
    return b.json(variables("fleet"))


def node():
    b = Board(
        NODE_UID,
        "efawatch / Node detail",
        "One node: EFA devices and counters, NCCL pods and their transports, fabric probes.",
    )
    b.row("EFA devices")
    b.stat("EFA devices", f"efawatch_efa_devices{{{NODE_SEL}}}", NEUTRAL)
    b.stat("Expected", f"efawatch_efa_devices_expected{{{NODE_SEL}}}", NEUTRAL,
           description="EFA devices of this node's instance type (none when the type is "
           "unknown).")
    b.stat(
        "EFA devices missing",
        f"clamp_min(max(efawatch_efa_devices_expected{{{NODE_SEL}}} - "
        f"efawatch_efa_devices{{{NODE_SEL}}}), 0) or vector(0)",
        BAD_IF_ANY,
    )
    b.stat(
        "Containers on NCCL TCP fallback",
        "count("
        + in_workload(not_deliberate(f"efawatch_nccl_tcp_fallback{{{POD_SEL}}} == 1"))
        + ") or vector(0)",
        BAD_IF_ANY,
    )
    b.stat(
        "Containers with loopback misuse",
        "count(" + in_workload(f"efawatch_nccl_loopback_misuse{{{POD_SEL}}} == 1")
        + ") or vector(0)",
        BAD_IF_ANY,
    )
    b.stat(
        "Critical findings",
        "sum(" + findings(', severity="critical"') + ") or vector(0)",
        BAD_IF_ANY,
    )
    b.table(
        "RDMA devices",
        [(f"max by (device, driver, efa, pci_address, numa_node, p2p) "
          f"(efawatch_rdma_device_info{{{NODE_SEL}}})", None)],
        columns={"device": "device", "driver": "driver", "efa": "efa",
                 "pci_address": "PCI address", "numa_node": "NUMA node", "p2p": "p2p"},
        w=12,
        h=8,
    )
    b.timeseries(
        "EFA port throughput per device (receive below the axis)",
        [
            (f"sum by (device) (rate(efawatch_efa_tx_bytes_total{{{NODE_SEL}}}"
             "[$__rate_interval]))", "{{device}} transmit"),
            (f"sum by (device) (rate(efawatch_efa_rx_bytes_total{{{NODE_SEL}}}"
             "[$__rate_interval]))", "{{device}} receive"),
        ],
        unit="Bps",
        negative=("B",),
    )
    b.timeseries(
        "RDMA read/write throughput per device (write below the axis)",
        [
            (f"sum by (device) (rate(efawatch_efa_rdma_read_bytes_total{{{NODE_SEL}}}"
             "[$__rate_interval]))", "{{device}} read"),
            (f"sum by (device) (rate(efawatch_efa_rdma_write_bytes_total{{{NODE_SEL}}}"
             "[$__rate_interval]))", "{{device}} write"),
        ],
        unit="Bps",
        negative=("B",),
    )
    b.timeseries(
        "EFA errors and SRD events (15m increase) per device",
        [(f"sum by (device, counter) (efawatch:efa_errors:increase15m{{{NODE_SEL}}})",
          "{{device}} {{counter}}")],
    )
    b.timeseries(
        "SRD retransmits and receive drops per device",
        [
            (f"sum by (device) (rate(efawatch_efa_retrans_pkts_total{{{NODE_SEL}}}"
             "[$__rate_interval]))", "{{device}} retransmits"),
            (f"sum by (device) (rate(efawatch_efa_rx_drops_total{{{NODE_SEL}}}"
             "[$__rate_interval]))", "{{device}} receive drops"),
        ],
        unit="pps",
    )
    b.timeseries(
        "Ethernet throughput (TCP fallback traffic shows here, EFA does not; receive below)",
        [
            (f"sum by (interface) (rate(efawatch_net_transmit_bytes_total{{{NODE_SEL}}}"
             "[$__rate_interval]))", "{{interface}} transmit"),
            (f"sum by (interface) (rate(efawatch_net_receive_bytes_total{{{NODE_SEL}}}"
             "[$__rate_interval]))", "{{interface}} receive"),
        ],
        unit="Bps",
        negative=("B",),
    )
    b.row("NCCL")
    b.table(
        "NCCL containers and their transports",
        [("max by (namespace, pod, container, network, transport, ofi_provider, nccl_version, "
          f"nodes) ({in_workload(f'efawatch_nccl_info{{{POD_SEL}}}')})", None)],
        columns={"namespace": "namespace", "pod": "pod", "container": "container",
                 "network": "network", "transport": "transport", "ofi_provider": "OFI provider",
                 "nccl_version": "NCCL", "nodes": "nodes (log proves)"},
        w=24,
        links={"pod": [job_link_pod()]},
    )
    b.table(
        "Verdicts per container",
        [(f"max by (namespace, pod, container) ({in_workload(f'{m}{{{POD_SEL}}}')})", name)
         for m, name in NCCL_VERDICTS],
        columns={"namespace": "namespace", "pod": "pod", "container": "container"},
        w=24,
        links={"pod": [job_link_pod()]},
        mappings={f"Value #{chr(ord('A') + i)}": YES_NO for i in range(len(NCCL_VERDICTS))},
    )
    b.table(
        "Findings",
        [(f"sum by (kind, severity) ({findings()} > 0)", "count")],
        columns={"kind": "kind", "severity": "severity"},
        w=12,
    )
    b.timeseries(
        "NCCL warnings and errors, top 10 pods each",
        [
            (top_pods(10, "efawatch_nccl_warnings_total", "increase"), "{{pod}} warnings"),
            (top_pods(10, "efawatch_nccl_errors_total", "increase"), "{{pod}} errors"),
        ],
    )
    b.row("Fabric probes")
    b.table(
        "Fabric responder",
        [(f"max by (provider, fabric, domain) (efawatch_fabric_provider_info{{{NODE_SEL}}})",
          None)],
        columns={"provider": "provider", "fabric": "fabric", "domain": "domain"},
        w=12,
    )
    b.timeseries(
        "On-demand ping RTT (median, p99)",
        [(f'efawatch_fabric_ping_rtt_seconds{{{NODE_SEL}, quantile=~"0.5|0.99"}}',
          "{{peer}} q{{quantile}}")],
        unit="s",
    )
    b.timeseries(
        "On-demand bandwidth",
        [(f"efawatch_fabric_bandwidth_bytes_per_second{{{NODE_SEL}}}",
          "{{peer}} {{size}} {{direction}}")],
        unit="Bps",
    )
    b.timeseries(
        "Ping mesh: p99 RTT per peer",
        [(f"efawatch:mesh_peer_rtt_seconds:p99_5m{{{NODE_SEL}}}", "{{peer_node}}")],
        unit="s",
    )
    b.timeseries(
        "Ping mesh: loss per peer",
        [(f"efawatch:mesh_peer_loss_ratio:5m{{{NODE_SEL}}}", "{{peer_node}}")],
        unit="percentunit",
    )
    b.timeseries(
        "Ping mesh: peers up, self-suspicion",
        [
            (f"efawatch_mesh_peers_reachable{{{NODE_SEL}}}", "peers reachable"),
            (f"efawatch_mesh_peers_expected{{{NODE_SEL}}}", "peers expected"),
            (f"efawatch_mesh_self_suspect{{{NODE_SEL}}}", "self-suspect"),
        ],
    )
    b.table(
        "Ping mesh: peers answering in the latest round",
        [(f"max by (peer_node) (efawatch_mesh_peer_up{{{NODE_SEL}}})", "latest round")],
        columns={"peer_node": "peer node"},
        links={"peer_node": [data_link("Node detail: ${__data.fields.peer_node}", NODE_UID,
                                       node="peer_node")]},
        mappings={"Value": UP_DOWN},
    )
    b.row("Scheduled collective probe (--collective-probe-interval-ms; none when off)")
    b.stat("Latest run", f"max(efawatch_collective_probe_success{{{NODE_SEL}}})", BAD_IF_NONE,
           description="1: the latest run that was not skipped completed; 0: it failed.")
    b.stat("Since the last completed run",
           f"time() - max(efawatch_collective_probe_last_success_timestamp_seconds{{{NODE_SEL}}})",
           NEUTRAL, unit="s")
    b.stat("Latest run took", f"max(efawatch_collective_probe_duration_seconds{{{NODE_SEL}}})",
           NEUTRAL, unit="s")
    b.timeseries(
        "Bus bandwidth per size (latest completed run)",
        [(f"max by (size) (efawatch_collective_probe_busbw_bytes_per_second{{{NODE_SEL}}})",
          "{{size}} B")],
        unit="Bps",
        description="nccl-tests' busbw of the probe's collective across this node and its "
        "probe peers, per message size in bytes.",
    )
    b.timeseries(
        "Runs by result (1h), failures in a row",
        [
            (f"sum by (result) (increase(efawatch_collective_probe_runs_total{{{NODE_SEL}}}[1h]))",
             "{{result}}"),
            (f"max(efawatch_collective_probe_consecutive_failures{{{NODE_SEL}}})",
             "failures in a row"),
        ],
        w=24,
        description="skipped_busy: a collective slot here or at a peer was taken (not a "
        "failure); EfawatchCollectiveProbeFailing fires at two failures in a row.",
    )
    b.row("Agent")
    b.timeseries(
        "Agent memory",
        [(f"efawatch_process_resident_memory_bytes{{{NODE_SEL}}}", "resident")],
        unit="bytes",
        w=8,
    )
    b.timeseries(
        "Agent CPU",
        [(f"rate(efawatch_process_cpu_seconds_total{{{NODE_SEL}}}[$__rate_interval])", "cpu")],
        unit="percentunit",
        w=8,
    )
    b.timeseries(
        "Collector time per scrape",
        [(f"efawatch_collector_duration_seconds{{{NODE_SEL}}}", "{{collector}}")],
        unit="s",
        w=8,
    )
    return b.json(variables("node"))


def job():
    b = Board(
        JOB_UID,
        "efawatch / Job view",
        "The pods of a job (a workload, or a namespace): NCCL transport, version and verdict per "
        "pod; its communicators across nodes, by workload (RayCluster, PyTorchJob, JobSet, ...).",
    )
    b.row("Alerts")
    b.alert_list(
        "efawatch alerts of the job",
        '{cluster=~"$cluster", namespace=~"$namespace", workload=~"$workload"}',
        h=5,
        description="The job's efawatch alerts, one per job (docs/runbook.md); node-level alerts "
        "show when the workload filter is All.",
    )
    b.row("Job across nodes")
    b.stat(
        "Communicators spanning nodes",
        f"count(count by (comm_id) ({COMMS} and on (cluster, comm_id) {MULTINODE})) or vector(0)",
        NEUTRAL,
        w=6,
        description="Communicators of the workload seen on two or more nodes (joined by commId), "
        "or whose log shows several nodes.",
    )
    b.stat(
        "Ranks on TCP between nodes",
        f"count({COMMS_TCP} and on (cluster, comm_id) {MULTINODE}) or vector(0)",
        BAD_IF_ANY,
        w=6,
        description="Pod series of communicators that span nodes whose ranks use TCP "
        "(EfawatchNcclTcpFallback, once per job).",
    )
    b.stat(
        "Mixed-transport communicators",
        f"count(count by (comm_id) ({COMMS} and on (cluster, comm_id) "
        f"(efawatch:nccl_communicator_nets:count{{{SEL}}} >= 2))) or vector(0)",
        BAD_IF_ANY,
        w=6,
        description="Communicators on RDMA on some nodes and TCP on others "
        "(EfawatchNcclMixedTransport).",
    )
    b.stat("Nodes of the workload", f"count(count by (node) ({COMMS})) or vector(0)", NEUTRAL,
           w=6)
    b.table(
        "Communicators: node, pod and net",
        [(f"max by (workload_kind, workload, comm_id, node, namespace, pod, net, transport, "
          f"provider, nranks, nnodes) ({COMMS})", None)],
        columns={"workload_kind": "kind", "workload": "workload", "comm_id": "commId",
                 "node": "node", "namespace": "namespace", "pod": "pod", "net": "net",
                 "transport": "transport", "provider": "provider", "nranks": "ranks",
                 "nnodes": "nodes"},
        w=24,
        links={"node": [node_link(namespace="namespace", pod="pod")]},
        description="One row per pod and communicator (commId): the net its ranks use between "
        "nodes (net: tcp or rdma).",
    )
    b.row("Pods")
    b.table(
        "Pods: transport and NCCL version",
        [("max by (node, namespace, pod, container, network, transport, ofi_provider, "
          f"nccl_version, nodes) ({in_job_workload(f'efawatch_nccl_info{{{POD_SEL}}}')})", None)],
        columns={"node": "node", "namespace": "namespace", "pod": "pod",
                 "container": "container", "network": "network", "transport": "transport",
                 "ofi_provider": "OFI provider", "nccl_version": "NCCL",
                 "nodes": "nodes (log proves)"},
        w=24,
        links={"node": [node_link(namespace="namespace", pod="pod")]},
    )
    b.table(
        "Pods: verdicts",
        [(f"max by (node, namespace, pod, container) "
          f"({in_job_workload(f'{m}{{{POD_SEL}}}')})", name) for m, name in NCCL_VERDICTS],
        columns={"node": "node", "namespace": "namespace", "pod": "pod",
                 "container": "container"},
        w=24,
        links={"node": [node_link(namespace="namespace", pod="pod")]},
        mappings={f"Value #{chr(ord('A') + i)}": YES_NO for i in range(len(NCCL_VERDICTS))},
    )
    b.stat(
        "Pods on TCP fallback",
        "count("
        + in_job_workload(not_deliberate(f"efawatch_nccl_tcp_fallback{{{POD_SEL}}} == 1"))
        + ") or vector(0)",
        BAD_IF_ANY,
        w=6,
        description="Containers on TCP (certain or suspected), not counting TCP chosen by "
        "configuration.",
    )
    b.stat(
        "Pods without GPUDirect RDMA",
        "count(" + in_job_workload(f"efawatch_nccl_gdr_disabled{{{POD_SEL}}} == 1")
        + ") or vector(0)",
        WARN_IF_ANY,
        w=6,
    )
    b.stat(
        "NCCL versions in use",
        "count(count by (nccl_version) ("
        + in_job_workload(f"efawatch_nccl_info{{{POD_SEL}}}") + "))",
        steps((TEXT, None), (ORANGE, 2)),
        w=6,
        description="More than one NCCL version in one job is worth a look (orange).",
    )
    b.stat(
        "Nodes",
        "count(count by (node) (" + in_job_workload(f"efawatch_nccl_info{{{POD_SEL}}}") + "))",
        NEUTRAL,
        w=6,
    )
    b.row("Activity")

    b.timeseries(
        "NCCL communicators per pod, top 20",
        [(top_pods(20, "efawatch_nccl_communicators", within=in_job_workload), "{{pod}}")],
    )
    b.timeseries(
        "NCCL log lines per pod, top 20",
        [(top_pods(20, "efawatch_logs_nccl_lines_total", "rate", in_job_workload), "{{pod}}")],
    )
    b.timeseries(
        "NCCL warnings and errors per pod, top 20 each",
        [
            (top_pods(20, "efawatch_nccl_warnings_total", "increase", in_job_workload),
             "{{pod}} warnings"),
            (top_pods(20, "efawatch_nccl_errors_total", "increase", in_job_workload),
             "{{pod}} errors"),
        ],
    )
    # The node variable is the job's nodes: the rate runs on their devices only.
    job_nodes = f"count by (cluster, node) ({in_job_workload(f'efawatch_nccl_info{{{POD_SEL}}}')})"
    b.timeseries(
        "EFA throughput of the job's nodes (receive below the axis)",
        [
            (f"sum by (cluster, node) (rate(efawatch_efa_tx_bytes_total{{{NODE_SEL}}}"
             f"[$__rate_interval])) and on (cluster, node) {job_nodes}", "{{node}} transmit"),
            (f"sum by (cluster, node) (rate(efawatch_efa_rx_bytes_total{{{NODE_SEL}}}"
             f"[$__rate_interval])) and on (cluster, node) {job_nodes}", "{{node}} receive"),
        ],
        unit="Bps",
        negative=("B",),
    )
    inspector_panels(b)
    return b.json(variables("job"))


def inspector_panels(b):
    """The job's own collectives, from the NCCL Inspector (docs/inspector.md): median busbw of
    large messages per collective against what the job's nodes should give, the ratio the
    EfawatchNcclSlowCollectives alert judges, the time since the last progress that
    EfawatchNcclJobStalled judges, and each pod's time against its job's median that
    EfawatchNcclStraggler judges; and each pod's NCCL stack, which EfawatchNcclJobInconsistent
    compares. Empty for jobs that do not load the Inspector."""
    b.row("Collective bandwidth (NCCL Inspector)")
    measured = in_job_workload(f"efawatch:nccl_busbw_bytes_per_second:p50_5m{{{POD_SEL}}}")
    b.timeseries(
        "NCCL busbw against expected, per collective (64 MiB and more)",
        [
            (f"min by (collective) ({measured})", "{{collective}} (slowest pod)"),
            (f"max by (collective) ({measured})", "{{collective}} (fastest pod)"),
            (f"min(efawatch_fabric_expected_bandwidth_bytes_per_second{{{NODE_SEL}}} "
             f"and on (cluster, node) count by (cluster, node) ({measured}))", "expected"),
        ],
        unit="Bps",
        description="Median bus bandwidth (nccl-tests' busbw) of the job's collectives of 64 MiB "
        "and more over 5 minutes, as the NCCL Inspector measured them, and the network "
        "bandwidth the job's nodes should give (their instance type's EFA devices).",
    )
    b.timeseries(
        "NCCL busbw / expected, per collective",
        [(f"min by (collective) ({in_job_workload(f'efawatch:nccl_busbw_expected_ratio:p50_5m{{{POD_SEL}}}')})",
          "{{collective}}"),
         ("min(efawatch:nccl_workload_busbw_expected_ratio:min"
          f"{{{NODE_SEL}, namespace=~\"$namespace\", workload=~\"$workload\"}})",
          "the job (what the alert judges)")],
        unit="percentunit",
        description="The slowest pod's share of its node's expected bandwidth; under 25 % for 10 "
        "minutes raises EfawatchNcclSlowCollectives.",
    )
    b.timeseries(
        "Time since the last NCCL progress, per pod",
        [(f"time() - max by (pod) ({in_job_workload(f'efawatch_nccl_inspector_progress_timestamp_seconds{{{POD_SEL}}}')})",
          "{{pod}}"),
         ("min(efawatch:nccl_workload_progress_age_seconds:min"
          f"{{{NODE_SEL}, namespace=~\"$namespace\", workload=~\"$workload\"}})",
          "the job (what the alert judges)")],
        unit="s",
        description="Seconds since each pod's newest NCCL Inspector progress (any of its "
        "communicators), and since the job's newest; over 5 minutes raises "
        "EfawatchNcclJobStalled. A saw-tooth under the dump interval is a job that progresses.",
    )
    b.timeseries(
        "NCCL time per collective against the job's median, per pod",
        [("efawatch:nccl_pod_exec_time_median_ratio:avg5m"
          f"{{{NODE_SEL}, namespace=~\"$namespace\", workload=~\"$workload\", pod=~\"$pod\"}}",
          "{{pod}} on {{node}}")],
        unit="percentunit",
        description="Each pod's mean time per collective over its job's median for the same "
        "communicator, collective and size class (jobs of three pods or more; 100 %: like the "
        "others). The rank that arrives last waits least: a pod under 70 % for 10 minutes is a "
        "straggler and raises EfawatchNcclStraggler naming its node.",
    )
    b.table(
        "NCCL stack per pod (odd pods marked)",
        [(in_job_workload(
            f"max by (cluster, node, namespace, pod, nccl_version, net_plugin, net_plugin_version, "
            f"ofi_provider, gdr, nccl_algo, nccl_proto, fi_efa_use_device_rdma, "
            f"settings_fingerprint) (efawatch_nccl_stack_info{{{POD_SEL}}})"), None),
         ("count by (cluster, node, namespace, pod) (efawatch:nccl_pod_stack_odd:info"
          f"{{{POD_SEL}, workload=~\"$workload\"}}) or on (cluster, node, namespace, pod) "
          f"0 * count by (cluster, node, namespace, pod) (efawatch_nccl_stack_info{{{POD_SEL}}})",
          "odd facts")],
        columns={"pod": "pod", "node": "node", "nccl_version": "NCCL",
                 "net_plugin": "net plugin", "net_plugin_version": "plugin version",
                 "ofi_provider": "provider", "gdr": "GDR", "nccl_algo": "NCCL_ALGO",
                 "nccl_proto": "NCCL_PROTO", "fi_efa_use_device_rdma": "FI_EFA_USE_DEVICE_RDMA",
                 "settings_fingerprint": "other settings", "Value #B": "odd facts"},
        w=24,
        description="The NCCL stack each pod's log shows (efawatch_nccl_stack_info): every pod "
        "of a job should show the same. \"other settings\" is a fingerprint of the NCCL_*/FI_* "
        "settings the log echoes besides the three shown. \"odd facts\": how many facts of the "
        "pod at most half of the job's pods share; for 10 minutes it raises "
        "EfawatchNcclJobInconsistent.",
    )


BOARDS = {"efawatch-fleet.json": fleet, "efawatch-node.json": node, "efawatch-job.json": job}


def render():
    """{file name: dashboard JSON text}."""
    return {name: json.dumps(make(), indent=2, ensure_ascii=False) + "\n"
            for name, make in BOARDS.items()}


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, text in render().items():
        for path in (HERE / name, COMPONENT_COPY / name):
            if check:
                if not path.exists() or path.read_text() != text:
                    stale.append(str(path.relative_to(HERE.parent)))
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    if stale:
        print("stale dashboards (run dashboards/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
