#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fleet dashboard's "On TCP / loopback now" query over made-up series, evaluated by
`promtool test rules` with the shipped recording rules: every verdict (tcp fallback proven by the
pod's own log or by the fleet, suspected, deliberate, loopback), the workload left join (pods
without a workload stay listed), "since", and the $workload and $pod filters. The e2e test
(tests/e2e/prometheus) runs the same query against a real agent, whose fixtures have no
suspected or deliberate pod.

Series start at t=0, one sample a minute; the query runs at 42m with a 1h range:
  proven-0   node a  TCP, its log proves two nodes, workload PyTorchJob/llm       since 0
  suspect-0  node a  TCP, node count unknown, no workload series                 since 0
  chosen-0   node b  TCP chosen by configuration (NCCL_NET=Socket)                since 0
  loop-0     node b  loopback misuse from 30m                                     since 30m
  ring-1/-9  nodes a and b, TCP, node count unknown each, one commId across both: the fleet
             proves the job spans nodes (tcp fallback) once ring-9 shows up at 41m. ring-1 was
             suspected until then; "since" is when it went on TCP                  since 0
             ring-9 came after the subquery's last 5 m step (40m)                since 42m (now)
  ok-0       node a  EFA, healthy: no row
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

SOURCE = pathlib.Path(os.environ.get("EFAWATCH_SOURCE_DIR", pathlib.Path(__file__).parents[3]))
TITLE = "On TCP / loopback now"
MIN = 60_000  # ms


def query():
    d = json.loads((SOURCE / "dashboards/efawatch-fleet.json").read_text())
    [p] = [p for p in d["panels"] if p["title"] == TITLE and p["type"] == "table"]
    [t] = p["targets"]
    return t["expr"]


def substitute(expr, **values):
    v = {"cluster": ".*", "node": ".*", "namespace": ".*", "workload": ".*", "pod": ".*",
         "__range": "1h"}
    v.update(values)
    for name, value in sorted(v.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace("${" + name + "}", value).replace("$" + name, value)
    return expr


def series(metric, values, **labels):
    labels = {"cluster": "c1", "namespace": "train", "container": "main", **labels}
    body = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{metric}{{{body}}}", "values": values}


def container(node, pod, tcp, loopback="0x50", deliberate="0x50", nodes="unknown"):
    out = [
        series("efawatch_nccl_tcp_fallback", tcp, node=node, pod=pod),
        series("efawatch_nccl_loopback_misuse", loopback, node=node, pod=pod),
        series("efawatch_nccl_tcp_deliberate", deliberate, node=node, pod=pod),
        series("efawatch_logs_lines_total", "100+10x50", node=node, pod=pod),
    ]
    info = {"network": "Socket", "transport": "NET/Socket", "ofi_provider": "none",
            "nccl_version": "2.19.3", "nodes": nodes}
    out.append(series("efawatch_nccl_info", "1x50", node=node, pod=pod, **info))
    return out


def inputs():
    s = []
    s += container("a", "proven-0", "1x50", nodes="proven_multi")
    s.append({"series": 'efawatch_pod_workload_info{cluster="c1", node="a", namespace="train", '
                        'pod="proven-0", workload_kind="PyTorchJob", workload="llm"}',
              "values": "1x50"})
    s += container("a", "suspect-0", "1x50")
    s += container("b", "chosen-0", "1x50", deliberate="1x50")
    s += container("b", "loop-0", "0x50", loopback="0x29 1x20")
    s += container("a", "ok-0", "0x50")
    # One communicator with ranks on both nodes: the rules prove it spans nodes.
    s += container("a", "ring-1", "1x50")
    s += container("b", "ring-9", "_x41 1x9")
    for node, pod, values in (("a", "ring-1", "1x50"), ("b", "ring-9", "_x41 1x9")):
        s.append(series("efawatch_nccl_communicator_info", values, node=node, pod=pod,
                        comm_id="0xabcabcabcabcabca", nranks="16", nnodes="unknown",
                        transport="NET/Socket", provider="none"))
    return s


def row(node, pod, verdict, since_min, workload=None):
    labels = {"cluster": "c1", "node": node, "namespace": "train", "pod": pod,
              "container": "main", "verdict": verdict, "evidence": f"efawatch status on {node}"}
    if workload:
        labels["workload_kind"], labels["workload"] = workload
    body = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"labels": "{" + body + "}", "value": since_min * MIN}


ALL_ROWS = [
    row("a", "proven-0", "tcp fallback", 0, ("PyTorchJob", "llm")),
    row("a", "suspect-0", "suspected", 0),
    row("b", "chosen-0", "deliberate", 0),
    row("b", "loop-0", "loopback", 30),
    row("a", "ring-1", "tcp fallback", 0),
    row("b", "ring-9", "tcp fallback", 42),
]
CASES = [
    ({}, ALL_ROWS),
    ({"workload": "llm"}, ALL_ROWS[:1]),
    ({"pod": "suspect-0|loop-0"}, [ALL_ROWS[1], ALL_ROWS[3]]),
    ({"node": "b"}, [ALL_ROWS[2], ALL_ROWS[3], ALL_ROWS[5]]),
    ({"namespace": "elsewhere"}, []),
]


def main():
    promtool = shutil.which("promtool")
    if not promtool:
        raise SystemExit("promtool not found (scripts/setup.sh installs it)")
    expr = query()
    tests = {
        "rule_files": [str(SOURCE / "deploy/prometheus/efawatch-rules.yml")],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": inputs(),
            "promql_expr_test": [
                {"expr": substitute(expr, **values), "eval_time": "42m", "exp_samples": rows}
                for values, rows in CASES
            ],
        }],
    }
    with tempfile.TemporaryDirectory(prefix="efawatch-fleet-table-") as tmp:
        path = pathlib.Path(tmp) / "fleet-table.test.yml"
        path.write_text(json.dumps(tests, indent=1))
        run = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True,
                             text=True)
    if run.returncode != 0:
        print(run.stdout + run.stderr, file=sys.stderr)
        print(f"FAILED: the fleet table query over {len(CASES)} variable settings")
        return 1
    print(f"fleet table: {len(CASES)} variable settings, {len(ALL_ROWS)} rows: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
