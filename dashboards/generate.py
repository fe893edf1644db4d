#!/usr/bin/env python3
"""Writes the efawatch Grafana dashboards (dashboards/*.json) from the panel lists below.

    dashboards/generate.py           rewrite the JSON files
    dashboards/generate.py --check   exit 1 if a committed file differs from what this writes

Every dashboard is templated by datasource, cluster, node and namespace. Queries use only
metrics from docs/metrics.md and recording rules from deploy/prometheus/efawatch-rules.yml;
tests/deploy/checks/check_dashboards.py checks that, and tests/e2e/prometheus runs every query
against a real Prometheus scraping a real agent.
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'cluster=~"$cluster"'
NODE_SEL = 'cluster=~"$cluster", node=~"$node"'
NS_SEL = 'cluster=~"$cluster", namespace=~"$namespace"'
NODE_NS_SEL = 'cluster=~"$cluster", node=~"$node", namespace=~"$namespace"'
# The job view's communicators, by workload (efawatch:nccl_communicator_workload:info: the pod's
# workload from efawatch_pod_workload_info, else the communicator itself).
JOB_SEL = 'cluster=~"$cluster", namespace=~"$namespace", workload=~"$workload"'
COMMS = f"efawatch:nccl_communicator_workload:info{{{JOB_SEL}}}"
COMMS_TCP = f'efawatch:nccl_communicator_workload:info{{{JOB_SEL}, net="tcp"}}'


def variables(node_multi=True):
    def query_var(name, query, multi=True, include_all=True):
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
        # With "All", match any value, including series without the label (a Prometheus
        # that adds no cluster label).
        if include_all:
            v["allValue"] = ".*"
        return v

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
        query_var(
            "node",
            'label_values(efawatch_build_info{cluster=~"$cluster"}, node)',
            multi=node_multi,
            include_all=node_multi,
        ),
    ]
    out.append(
        query_var("namespace", 'label_values(efawatch_nccl_info{cluster=~"$cluster"}, namespace)')
    )
    return out


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

    def panel(self, kind, title, targets, w=12, h=8, unit=None, description="", instant=False,
              legend=None):
        targets = [targets] if isinstance(targets, str) else targets
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
        if unit:
            p["fieldConfig"]["defaults"]["unit"] = unit
        if kind == "table":
            p["transformations"] = [{"id": "merge", "options": {}}]
        for i, expr in enumerate(targets):
            t = {"refId": chr(ord("A") + i), "datasource": DS, "expr": expr}
            if kind in ("table", "stat"):
                t["instant"] = True
                t["range"] = False
                if kind == "table":
                    t["format"] = "table"
            elif instant:
                t["instant"] = True
            if legend and kind == "timeseries":
                t["legendFormat"] = legend
            p["targets"].append(t)
        self.panels.append(p)

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
            "links": [
                {"title": "efawatch", "type": "dashboards", "tags": ["efawatch"], "asDropdown": True}
            ],
            "panels": self.panels,
        }


def fleet():
    b = Board(
        "efawatch-fleet",
        "efawatch / Fleet overview",
        "Which GPU nodes are off the fast fabric: NCCL TCP fallback, loopback misuse, EFA errors, "
        "missing devices, ping mesh loss, agents down.",
    )
    b.row("Now")
    b.panel("stat", "Agents up", f'sum(up{{job="efawatch", {SEL}}})', w=4, h=4)
    b.panel("stat", "Agents down", f'count(up{{job="efawatch", {SEL}}} == 0) or vector(0)', w=4, h=4)
    b.panel(
        "stat",
        "Nodes with NCCL TCP fallback",
        f"count(efawatch:nccl_tcp_fallback_containers:sum{{{SEL}}} > 0) or vector(0)",
        w=4,
        h=4,
    )
    b.panel(
        "stat",
        "Nodes with loopback misuse",
        f"count(efawatch:nccl_loopback_misuse_containers:sum{{{SEL}}} > 0) or vector(0)",
        w=4,
        h=4,
    )
    b.panel(
        "stat",
        "Nodes with EFA errors (15m)",
        f"count(sum by (cluster, node) (efawatch:efa_errors:increase15m{{{SEL}}}) > 0) or vector(0)",
        w=4,
        h=4,
    )
    b.panel(
        "stat",
        "Nodes missing EFA devices",
        f"count(max by (cluster, node) (efawatch_efa_devices_expected{{{SEL}}} - efawatch_efa_devices{{{SEL}}}) > 0)"
        " or vector(0)",
        w=4,
        h=4,
    )
    b.row("Nodes")
    b.panel(
        "table",
        "Nodes with findings",
        f"sum by (cluster, node, kind, severity) (efawatch_findings{{{SEL}}} > 0)",
        w=12,
        description="Current findings per node (self-clearing); `efawatch status` on the node "
        "shows their evidence.",
    )
    b.panel(
        "table",
        "Agents",
        [
            f"max by (cluster, node, version, revision) (efawatch_build_info{{{SEL}}})",
            f'max by (cluster, node) (up{{job="efawatch", {SEL}}})',
        ],
        w=12,
    )
    b.panel(
        "timeseries",
        "Containers on NCCL TCP fallback, by node",
        f"efawatch:nccl_tcp_fallback_containers:sum{{{SEL}}}",
        legend="{{node}}",
    )
    b.panel(
        "timeseries",
        "Containers with loopback misuse, by node",
        f"efawatch:nccl_loopback_misuse_containers:sum{{{SEL}}}",
        legend="{{node}}",
    )
    b.panel(
        "timeseries",
        "EFA errors and SRD events (15m increase), by node",
        f"sum by (node) (efawatch:efa_errors:increase15m{{{SEL}}})",
        legend="{{node}}",
    )
    b.panel(
        "timeseries",
        "EFA devices missing, by node",
        f"max by (node) (efawatch_efa_devices_expected{{{SEL}}} - efawatch_efa_devices{{{SEL}}})",
        legend="{{node}}",
    )
    b.row("Fabric")
    b.panel(
        "timeseries",
        "Ping mesh: worst loss per pinging node",
        f"max by (node) (efawatch:mesh_peer_loss_ratio:5m{{{SEL}}})",
        unit="percentunit",
        legend="{{node}}",
    )
    b.panel(
        "timeseries",
        "Ping mesh: complaints per peer (pingers losing >10%)",
        f"efawatch:mesh_peer_complainers:count{{{SEL}}}",
        legend="{{peer_node}}",
    )
    b.panel(
        "timeseries",
        "Ping mesh: share of peers reachable",
        f"efawatch_mesh_peers_reachable{{{SEL}}} / efawatch_mesh_peers_expected{{{SEL}}}",
        unit="percentunit",
        legend="{{node}}",
    )
    b.panel(
        "timeseries",
        "On-demand probes: ping loss",
        f"efawatch_fabric_ping_loss_ratio{{{SEL}}}",
        unit="percentunit",
        legend="{{node}} → {{peer}}",
    )
    b.row("Agents")
    b.panel(
        "timeseries",
        "Dropped log analysis work (cut lines, files over cap, evicted state)",
        [
            f"sum by (node) (increase(efawatch_logs_truncated_lines_total{{{SEL}}}[$__rate_interval]))",
            f"sum by (node) (increase(efawatch_logs_files_over_cap_total{{{SEL}}}[$__rate_interval]))",
            f"sum by (node) (increase(efawatch_logs_state_evicted_total{{{SEL}}}[$__rate_interval]))",
        ],
    )
    b.panel(
        "timeseries",
        "Ping mesh: rounds and discovery errors",
        [
            f"sum by (node) (increase(efawatch_mesh_rounds_total{{{SEL}}}[$__rate_interval]))",
            f"sum by (node) (increase(efawatch_mesh_discovery_errors_total{{{SEL}}}[$__rate_interval]))",
        ],
    )
    b.panel(
        "timeseries",
        "Failing collectors",
        f"min by (node, collector) (efawatch_collector_success{{{SEL}}})",
        legend="{{node}} {{collector}}",
    )
    return b.json(variables())


def node():
    b = Board(
        "efawatch-node",
        "efawatch / Node detail",
        "One node: EFA devices and counters, NCCL pods and their transports, fabric probes.",
    )
    b.row("EFA devices")
    b.panel("stat", "EFA devices", f"efawatch_efa_devices{{{NODE_SEL}}}", w=4, h=4)
    b.panel("stat", "Expected", f"efawatch_efa_devices_expected{{{NODE_SEL}}}", w=4, h=4)
    b.panel("stat", "RDMA devices (any)", f"efawatch_rdma_devices{{{NODE_SEL}}}", w=4, h=4)
    b.panel(
        "table",
        "RDMA devices",
        f"max by (device, driver, efa, pci_address, numa_node, p2p) (efawatch_rdma_device_info{{{NODE_SEL}}})",
        w=12,
        h=8,
    )
    b.panel(
        "timeseries",
        "EFA port throughput per device",
        [
            f"sum by (device) (rate(efawatch_efa_tx_bytes_total{{{NODE_SEL}}}[$__rate_interval]))",
            f"sum by (device) (rate(efawatch_efa_rx_bytes_total{{{NODE_SEL}}}[$__rate_interval]))",
        ],
        unit="Bps",
    )
    b.panel(
        "timeseries",
        "RDMA read/write throughput per device",
        [
            f"sum by (device) (rate(efawatch_efa_rdma_read_bytes_total{{{NODE_SEL}}}[$__rate_interval]))",
            f"sum by (device) (rate(efawatch_efa_rdma_write_bytes_total{{{NODE_SEL}}}[$__rate_interval]))",
        ],
        unit="Bps",
    )
    b.panel(
        "timeseries",
        "EFA errors and SRD events (15m increase) per device",
        f"sum by (device, counter) (efawatch:efa_errors:increase15m{{{NODE_SEL}}})",
        legend="{{device}} {{counter}}",
    )
    b.panel(
        "timeseries",
        "SRD retransmits and receive drops per device",
        [
            f"sum by (device) (rate(efawatch_efa_retrans_pkts_total{{{NODE_SEL}}}[$__rate_interval]))",
            f"sum by (device) (rate(efawatch_efa_rx_drops_total{{{NODE_SEL}}}[$__rate_interval]))",
        ],
        unit="pps",
    )
    b.panel(
        "timeseries",
        "Ethernet throughput (TCP fallback traffic shows here, EFA does not)",
        [
            f"sum by (interface) (rate(efawatch_net_transmit_bytes_total{{{NODE_SEL}}}[$__rate_interval]))",
            f"sum by (interface) (rate(efawatch_net_receive_bytes_total{{{NODE_SEL}}}[$__rate_interval]))",
        ],
        unit="Bps",
    )
    b.row("NCCL")
    b.panel(
        "table",
        "NCCL containers and their transports",
        f"max by (namespace, pod, container, network, transport, ofi_provider, nccl_version) (efawatch_nccl_info{{{NODE_NS_SEL}}})",
        w=24,
    )
    b.panel(
        "table",
        "Verdicts per container",
        [
            f"max by (namespace, pod, container) (efawatch_nccl_tcp_fallback{{{NODE_NS_SEL}}})",
            f"max by (namespace, pod, container) (efawatch_nccl_loopback_misuse{{{NODE_NS_SEL}}})",
            f"max by (namespace, pod, container) (efawatch_nccl_net_plugin_missing{{{NODE_NS_SEL}}})",
            f"max by (namespace, pod, container) (efawatch_nccl_gdr_disabled{{{NODE_NS_SEL}}})",
        ],
        w=24,
    )
    b.panel(
        "table",
        "Findings",
        f"sum by (kind, severity) (efawatch_findings{{{NODE_SEL}}} > 0)",
        w=12,
    )
    b.panel(
        "timeseries",
        "NCCL warnings and errors",
        [
            f"sum by (namespace, pod) (increase(efawatch_nccl_warnings_total{{{NODE_NS_SEL}}}[$__rate_interval]))",
            f"sum by (namespace, pod) (increase(efawatch_nccl_errors_total{{{NODE_NS_SEL}}}[$__rate_interval]))",
        ],
    )
    b.row("Fabric probes")
    b.panel(
        "table",
        "Fabric responder",
        f"max by (provider, fabric, domain) (efawatch_fabric_provider_info{{{NODE_SEL}}})",
        w=12,
    )
    b.panel(
        "timeseries",
        "On-demand ping RTT (median, p99)",
        f'efawatch_fabric_ping_rtt_seconds{{{NODE_SEL}, quantile=~"0.5|0.99"}}',
        unit="s",
        legend="{{peer}} q{{quantile}}",
    )
    b.panel(
        "timeseries",
        "On-demand bandwidth",
        f"efawatch_fabric_bandwidth_bytes_per_second{{{NODE_SEL}}}",
        unit="Bps",
        legend="{{peer}} {{size}} {{direction}}",
    )
    b.panel(
        "timeseries",
        "Ping mesh: p99 RTT per peer",
        f"efawatch:mesh_peer_rtt_seconds:p99_5m{{{NODE_SEL}}}",
        unit="s",
        legend="{{peer_node}}",
    )
    b.panel(
        "timeseries",
        "Ping mesh: loss per peer",
        f"efawatch:mesh_peer_loss_ratio:5m{{{NODE_SEL}}}",
        unit="percentunit",
        legend="{{peer_node}}",
    )
    b.panel(
        "timeseries",
        "Ping mesh: peers up, self-suspicion",
        [
            f"efawatch_mesh_peers_reachable{{{NODE_SEL}}}",
            f"efawatch_mesh_peers_expected{{{NODE_SEL}}}",
            f"efawatch_mesh_self_suspect{{{NODE_SEL}}}",
        ],
    )
    b.panel(
        "table",
        "Ping mesh: peers answering in the latest round",
        f"max by (peer_node) (efawatch_mesh_peer_up{{{NODE_SEL}}})",
    )
    b.row("Agent")
    b.panel(
        "timeseries",
        "Agent memory",
        f"efawatch_process_resident_memory_bytes{{{NODE_SEL}}}",
        unit="bytes",
        w=8,
    )
    b.panel(
        "timeseries",
        "Agent CPU",
        f"rate(efawatch_process_cpu_seconds_total{{{NODE_SEL}}}[$__rate_interval])",
        unit="percentunit",
        w=8,
    )
    b.panel(
        "timeseries",
        "Collector time per scrape",
        f"efawatch_collector_duration_seconds{{{NODE_SEL}}}",
        unit="s",
        w=8,
        legend="{{collector}}",
    )
    return b.json(variables(node_multi=False))


def job_variables():
    out = variables()
    q = 'label_values(efawatch:nccl_communicator_workload:info{cluster=~"$cluster", namespace=~"$namespace"}, workload)'
    out.append(
        {
            "name": "workload",
            "label": "workload",
            "type": "query",
            "datasource": DS,
            "query": {"query": q, "refId": "workload"},
            "definition": q,
            "refresh": 2,
            "sort": 1,
            "multi": True,
            "includeAll": True,
            "allValue": ".*",
            "current": {},
        }
    )
    return out


def job():
    b = Board(
        "efawatch-job",
        "efawatch / Job view",
        "The pods of a namespace (a training job): NCCL transport, version and verdict per pod; "
        "its communicators across nodes, by workload (RayCluster, PyTorchJob, JobSet, ...).",
    )
    b.row("Job across nodes")
    b.panel(
        "stat",
        "Communicators spanning nodes",
        f"count(count by (comm_id) ({COMMS} and on (cluster, comm_id) "
        "efawatch:nccl_communicator_multinode:count)) or vector(0)",
        w=6,
        h=4,
        description="Communicators of the workload seen on two or more nodes (joined by commId), "
        "or whose log shows several nodes.",
    )
    b.panel(
        "stat",
        "Ranks on TCP between nodes",
        f"count({COMMS_TCP} and on (cluster, comm_id) efawatch:nccl_communicator_multinode:count) "
        "or vector(0)",
        w=6,
        h=4,
        description="Pod series of communicators that span nodes whose ranks use TCP "
        "(EfawatchNcclJobTcpFallback).",
    )
    b.panel(
        "stat",
        "Mixed-transport communicators",
        f"count(count by (comm_id) ({COMMS} and on (cluster, comm_id) "
        "(efawatch:nccl_communicator_nets:count >= 2))) or vector(0)",
        w=6,
        h=4,
        description="Communicators on RDMA on some nodes and TCP on others "
        "(EfawatchNcclMixedTransport).",
    )
    b.panel(
        "stat",
        "Nodes of the workload",
        f"count(count by (node) ({COMMS})) or vector(0)",
        w=6,
        h=4,
    )
    b.panel(
        "table",
        "Communicators: node, pod and net",
        f"max by (workload_kind, workload, comm_id, node, pod, net, transport, provider, nranks, "
        f"nnodes) ({COMMS})",
        w=24,
        description="One row per pod and communicator (commId): the net its ranks use between "
        "nodes (net: tcp or rdma).",
    )
    b.row("Pods")
    b.panel(
        "table",
        "Pods: transport and NCCL version",
        f"max by (node, namespace, pod, container, network, transport, ofi_provider, nccl_version) (efawatch_nccl_info{{{NS_SEL}}})",
        w=24,
    )
    b.panel(
        "table",
        "Pods: verdicts",
        [
            f"max by (node, namespace, pod, container) (efawatch_nccl_tcp_fallback{{{NS_SEL}}})",
            f"max by (node, namespace, pod, container) (efawatch_nccl_loopback_misuse{{{NS_SEL}}})",
            f"max by (node, namespace, pod, container) (efawatch_nccl_net_plugin_missing{{{NS_SEL}}})",
            f"max by (node, namespace, pod, container) (efawatch_nccl_gdr_disabled{{{NS_SEL}}})",
        ],
        w=24,
    )
    b.panel(
        "stat",
        "Pods on TCP fallback",
        f"count(efawatch_nccl_tcp_fallback{{{NS_SEL}}} == 1) or vector(0)",
        w=6,
        h=4,
    )
    b.panel(
        "stat",
        "Pods without GPUDirect RDMA",
        f"count(efawatch_nccl_gdr_disabled{{{NS_SEL}}} == 1) or vector(0)",
        w=6,
        h=4,
    )
    b.panel(
        "stat",
        "NCCL versions in use",
        f"count(count by (nccl_version) (efawatch_nccl_info{{{NS_SEL}}}))",
        w=6,
        h=4,
    )
    b.panel(
        "stat",
        "Nodes",
        f"count(count by (node) (efawatch_nccl_info{{{NS_SEL}}}))",
        w=6,
        h=4,
    )
    b.row("Activity")
    b.panel(
        "timeseries",
        "NCCL communicators per pod",
        f"sum by (pod) (efawatch_nccl_communicators{{{NS_SEL}}})",
        legend="{{pod}}",
    )
    b.panel(
        "timeseries",
        "NCCL log lines per pod",
        f"sum by (pod) (rate(efawatch_logs_nccl_lines_total{{{NS_SEL}}}[$__rate_interval]))",
        legend="{{pod}}",
    )
    b.panel(
        "timeseries",
        "NCCL warnings and errors per pod",
        [
            f"sum by (pod) (increase(efawatch_nccl_warnings_total{{{NS_SEL}}}[$__rate_interval]))",
            f"sum by (pod) (increase(efawatch_nccl_errors_total{{{NS_SEL}}}[$__rate_interval]))",
        ],
    )
    b.panel(
        "timeseries",
        "EFA throughput of the job's nodes",
        f"sum by (node) (rate(efawatch_efa_tx_bytes_total{{cluster=~\"$cluster\"}}[$__rate_interval])) "
        f"and on (node) count by (node) (efawatch_nccl_info{{{NS_SEL}}})",
        unit="Bps",
        legend="{{node}}",
    )
    return b.json(job_variables())


BOARDS = {"efawatch-fleet.json": fleet, "efawatch-node.json": node, "efawatch-job.json": job}


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, make in BOARDS.items():
        text = json.dumps(make(), indent=2, ensure_ascii=False) + "\n"
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print("stale dashboards (run dashboards/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
