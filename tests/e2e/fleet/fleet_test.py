#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End to end, across nodes: two real efawatchd agents on loopback, each tailing its node's half
of two two-node jobs (tests/fixtures/nccl-fleet), a real Prometheus with the shipped rules, and
the fake Kubernetes API server (tests/component/mesh/fake_apiserver.py) that tells each agent
which workload its pods belong to.

  llm (a PyTorchJob): rank 1 on node a, rank 9 on node b, one commId, NCCL's Socket transport.
      Each half alone proves nothing about the node count (the agents say nodes="unknown");
      the rules join the two communicator series: the suspected fallbacks are promoted, and
      EfawatchNcclTcpFallback fires once, for the workload (node="multiple"), naming both pods
      and both nodes.
  mix (a RayCluster): node a on aws-ofi-nccl/efa, node b on Socket (no EFA there), one commId:
      EfawatchNcclMixedTransport fires once, with node b as its `node`, naming node b's pod on
      TCP; the job's own TcpFallback is left out in its favour.

No EfawatchNcclTcpFallbackSuspected may be left firing. `efawatch status` and the fleet
dashboard's "On TCP / loopback now" table show the workloads.
The rules are the shipped ones with every `for:` cut to 2 s (as tests/e2e/prometheus does).
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "prometheus"))
import e2e_test as e2e  # noqa: E402  (the shared helpers: agents, Prometheus, waits)

SOURCE, BINARY = e2e.SOURCE, e2e.BINARY
CLUSTER = "e2e"
NODE_A, NODE_B = "fleet-node-a", "fleet-node-b"
FIXTURES = SOURCE / "tests/fixtures/nccl-fleet"
# node -> {pod: fixture}
PODS = {
    NODE_A: {"llm-worker-1": "socket-job-node-a-2.19.log", "mix-worker-1": "mixed-job-node-a-efa-2.19.log"},
    NODE_B: {"llm-worker-9": "socket-job-node-b-2.19.log", "mix-worker-9": "mixed-job-node-b-socket-2.19.log"},
}
WORKLOAD = {"llm": ("PyTorchJob", "llm"), "mix": ("RayCluster", "mix")}


def api_pod(name, node):
    if name.startswith("llm"):
        labels = {"training.kubeflow.org/job-name": "llm",
                  "training.kubeflow.org/replica-type": "worker"}
        owners = [{"kind": "PyTorchJob", "name": "llm", "controller": True}]
    else:
        labels = {"ray.io/cluster": "mix", "ray.io/node-type": "worker"}
        owners = [{"kind": "RayCluster", "name": "mix", "controller": True}]
    return {"metadata": {"name": name, "labels": labels, "ownerReferences": owners},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}}


def start_apiserver(tmp):
    """The fake API server over HTTPS with a self-signed certificate for 127.0.0.1."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(tmp / "api.key"), "-out", str(tmp / "api.pem"), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:TRUE"],
        check=True, capture_output=True)
    (tmp / "token").write_text("fleet-token\n")
    pods = [api_pod(p, node) for node, ps in PODS.items() for p in ps]
    (tmp / "objects.json").write_text(json.dumps({"namespaces": {"train": pods}}))
    proc = subprocess.Popen(
        [sys.executable, str(SOURCE / "tests/component/mesh/fake_apiserver.py"),
         "--cert", str(tmp / "api.pem"), "--key", str(tmp / "api.key"),
         "--token-file", str(tmp / "token"), "--objects", str(tmp / "objects.json"),
         "--port-file", str(tmp / "api.port"), "--request-log", str(tmp / "api.requests")],
        stdout=subprocess.DEVNULL, stderr=open(tmp / "api.log", "w"))
    port = e2e.wait_for("the fake API server", lambda: (tmp / "api.port").exists()
                        and (tmp / "api.port").read_text().strip(), time.monotonic() + 30, 0.1)
    return proc, f"https://127.0.0.1:{port}"


def write_pod_logs(root, node):
    for pod, fixture in PODS[node].items():
        d = root / f"train_{pod}_uid-{pod}" / "main"
        d.mkdir(parents=True)
        (d / "0.log").write_text(e2e.cri((FIXTURES / fixture).read_text().splitlines()))


def alerts(prom, state="firing"):
    return [a for a in prom.get("/api/v1/alerts")["alerts"] if a["state"] == state]


def find(prom, name, **labels):
    return [a for a in alerts(prom) if a["labels"]["alertname"] == name
            and all(a["labels"].get(k) == v for k, v in labels.items())]


def main():
    for tool in ("prometheus", "openssl"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} not found (scripts/setup.sh installs it)")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="efawatch-fleet-"))
    procs = []
    ok = False
    try:
        api_proc, api_url = start_apiserver(tmp)
        procs.append(api_proc)
        g6 = SOURCE / "tests/fixtures/sysfs/g6.12xlarge"
        ports, grpc = {}, {}
        for node in (NODE_A, NODE_B):
            pods = tmp / f"pods-{node}"
            write_pod_logs(pods, node)
            proc, (metrics_port, grpc_port) = e2e.start_agent(tmp, node, [
                f"--node-name={node}", f"--sysfs-root={g6 / 'sys'}", f"--procfs-root={g6 / 'proc'}",
                f"--pod-log-root={pods}", "--workload-identity=true", f"--mesh-k8s-api={api_url}",
                f"--mesh-k8s-token-file={tmp / 'token'}", f"--mesh-k8s-ca-file={tmp / 'api.pem'}",
                "--workload-interval-ms=1000"])
            procs.append(proc)
            ports[node], grpc[node] = metrics_port, grpc_port
        e2e.log(f"agents: {ports}")
        prom_proc, prom = e2e.start_prometheus_with_rules(tmp, ports)
        procs.append(prom_proc)
        deadline = time.monotonic() + e2e.DEADLINE_S

        # Each half alone: the agent's own verdict does not prove several nodes.
        for pod in ("llm-worker-1", "llm-worker-9", "mix-worker-9"):
            got = e2e.wait_for(f"{pod}'s verdict", lambda pod=pod: prom.query(
                f'efawatch_nccl_info{{pod="{pod}"}}'), deadline)
            assert got[0]["metric"]["nodes"] == "unknown", f"{pod}: {got[0]['metric']}"
        # Each agent learnt its own pods' workloads.
        e2e.wait_for("the workload series", lambda: len(prom.query(
            'efawatch_pod_workload_info{namespace="train"}')) == 4, deadline)
        for r in prom.query('efawatch_pod_workload_info{namespace="train"}'):
            m = r["metric"]
            want = WORKLOAD[m["pod"].split("-")[0]]
            assert (m["workload_kind"], m["workload"]) == want, m
            assert m["pod"] in PODS[m["node"]], f"{m['pod']} exported by the agent of {m['node']}"

        def job_alerts_fire():
            return (find(prom, "EfawatchNcclTcpFallback", workload="llm")
                    and find(prom, "EfawatchNcclMixedTransport", workload="mix"))
        try:
            e2e.wait_for("the job alerts", job_alerts_fire, deadline)
        except AssertionError:
            raise AssertionError("job alerts not firing in time; firing: " + json.dumps(
                [a["labels"] for a in alerts(prom)], indent=1)) from None
        # Several more evaluations: whatever was only pending or transient is settled.
        time.sleep(4)

        # One page per job: one alert for llm's two pods on two nodes.
        [llm] = find(prom, "EfawatchNcclTcpFallback")
        assert llm["labels"]["workload"] == "llm", llm["labels"]
        assert llm["labels"]["workload_kind"] == "PyTorchJob", llm["labels"]
        assert llm["labels"]["node"] == "multiple", llm["labels"]
        desc = llm["annotations"]["description"]
        assert f"2 pod(s) on 2 node(s): llm-worker-1 on {NODE_A}, llm-worker-9 on {NODE_B}." in desc, desc
        [mixed] = find(prom, "EfawatchNcclMixedTransport")
        assert mixed["labels"]["workload"] == "mix", mixed["labels"]
        assert mixed["labels"]["workload_kind"] == "RayCluster", mixed["labels"]
        assert mixed["labels"]["node"] == NODE_B, mixed["labels"]
        desc = mixed["annotations"]["description"]
        assert f"On TCP: mix-worker-9 on {NODE_B}; on RDMA: 1 node(s)." in desc, desc
        suspected = find(prom, "EfawatchNcclTcpFallbackSuspected")
        assert not suspected, f"suspected fallbacks left: {[a['labels'] for a in suspected]}"

        # The fleet dashboard's first table: the fleet-proven fallbacks with their workloads
        # (tests/e2e/prometheus checks the rest of the table).
        table = e2e.panel("efawatch-fleet.json", "On TCP / loopback now")["targets"][0]["expr"]

        def table_rows(**values):
            return sorted((r["metric"]["pod"], r["metric"]["verdict"], r["metric"].get("workload"))
                          for r in prom.query(e2e.substitute(table, node=".*", **values)))
        want = [("llm-worker-1", "tcp fallback", "llm"), ("llm-worker-9", "tcp fallback", "llm"),
                ("mix-worker-9", "tcp fallback", "mix")]
        assert table_rows() == want, f"fleet table: {table_rows()}"
        mix = table_rows(workload="mix")
        assert mix == want[2:], f"fleet table, $workload=mix: {mix}"

        # `efawatch status` on node a names each pod's workload.
        status = subprocess.run(
            [str(BINARY / "bin/efawatch"), "status", "--agent", f"127.0.0.1:{grpc[NODE_A]}"],
            capture_output=True, text=True, timeout=30)
        assert status.returncode == 0, status.stdout + status.stderr
        assert "PyTorchJob llm" in status.stdout and "RayCluster mix" in status.stdout, status.stdout
        requests = (tmp / "api.requests").read_text()
        assert f"fieldSelector=spec.nodeName%3D{NODE_A}" in requests, requests
        e2e.log("job alerts: " + "; ".join(
            f"{a['labels']['alertname']} {a['labels']['workload_kind']}/{a['labels']['workload']}"
            for a in alerts(prom) if "workload" in a["labels"]))
        ok = True
    finally:
        e2e.finish(procs, tmp, ok)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    e2e.run(main)
