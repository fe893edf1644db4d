#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End to end, a mixed fleet: three real efawatchd agents on loopback, a real Prometheus with the
shipped rules, and the fake Kubernetes API server (tests/component/mesh/fake_apiserver.py),
which names the pods' workloads, serves each Node (its allocatable vpc.amazonaws.com/efa) and
records the agents' NodeCondition patches.

  g6-noefa  a g6.12xlarge (DMI product name) launched without EFA: no EFA device in sysfs, none
            advertised. Nothing critical: no critical finding, no alert at all for the node, no
            efawatch_efa_devices_expected, no EfaHealthy patched (neither False nor True); the
            info finding efa_not_attached says why there is nothing to check.
  g6-lost   the same sysfs, but the node advertises one EFA (the device plugin found it, the
            device has gone since): efa_devices_missing is critical, EfawatchEfaDeviceMissing
            fires and EfaHealthy=False is patched.
  shared    a g6.12xlarge with its EFA, shared by two jobs: team-a's PyTorchJob a (its pod's
            log ends in a PyTorch watchdog collective timeout) and team-b's RayCluster b
            (healthy on EFA). EfawatchNcclCollectiveTimeout fires for a only; no alert names b.

Also checked over Prometheus' rules API: EfawatchEfaIdleTcpBusy is a warning. The rules are the
shipped ones with every `for:` cut to 2 s (tests/e2e/prometheus's write_rules).
"""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "prometheus"))
import e2e_test as e2e  # noqa: E402  (the shared helpers: agents, Prometheus, waits)

SOURCE, BINARY = e2e.SOURCE, e2e.BINARY
NO_EFA, LOST, SHARED = "g6-noefa", "g6-lost", "shared"
FIXTURES = SOURCE / "tests/fixtures/nccl"
# (namespace, pod) on the shared node -> (fixture, workload kind, workload, owner labels)
SHARED_PODS = {
    ("team-a", "a-0"): ("pytorch-watchdog-abort-2.18.log", "PyTorchJob", "a",
                        {"training.kubeflow.org/job-name": "a"}),
    ("team-b", "b-0"): ("efa-ofi-healthy-2.21.log", "RayCluster", "b", {"ray.io/cluster": "b"}),
}


def g6_without_efa(tmp):
    """The g6.12xlarge fixture with its EFA device removed and its DMI product name set, as EC2
    writes it on a g6.12xlarge launched without an EFA interface."""
    root = tmp / "g6-noefa-host"
    shutil.copytree(SOURCE / "tests/fixtures/sysfs/g6.12xlarge", root)
    shutil.rmtree(root / "sys/class/infiniband/rdmap0s31")
    dmi = root / "sys/devices/virtual/dmi/id"
    dmi.mkdir(parents=True, exist_ok=True)
    (dmi / "product_name").write_text("g6.12xlarge\n")
    return root


def objects():
    pods = {}
    for (ns, pod), (_, kind, name, labels) in SHARED_PODS.items():
        pods.setdefault(ns, []).append({
            "metadata": {"name": pod, "labels": labels,
                         "ownerReferences": [{"kind": kind, "name": name, "controller": True}]},
            "spec": {"nodeName": SHARED}, "status": {"phase": "Running"}})
    nodes = [
        # No device plugin resource at all on the node without EFA, as EKS shows it.
        {"metadata": {"name": NO_EFA}, "status": {"allocatable": {"nvidia.com/gpu": "4"}}},
        {"metadata": {"name": LOST},
         "status": {"allocatable": {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"}}},
        {"metadata": {"name": SHARED},
         "status": {"allocatable": {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"}}},
    ]
    return pods, nodes


def write_shared_logs(root):
    for (ns, pod), (fixture, *_) in SHARED_PODS.items():
        d = root / f"{ns}_{pod}_uid-{pod}" / "main"
        d.mkdir(parents=True)
        (d / "0.log").write_text(e2e.cri((FIXTURES / fixture).read_text().splitlines()))


def firing(prom):
    return [a for a in prom.get("/api/v1/alerts")["alerts"] if a["state"] == "firing"]


def condition_patches(tmp, node):
    """The EfaHealthy conditions the agent of `node` patched, in order."""
    writes = tmp / "api.requests.writes"
    out = []
    for line in (writes.read_text().splitlines() if writes.exists() else []):
        w = json.loads(line)
        if w["method"] == "PATCH" and w["path"] == f"/api/v1/nodes/{node}/status":
            out += [c for c in w["body"]["status"]["conditions"] if c["type"] == "EfaHealthy"]
    return out


def main():
    e2e.require_tools("prometheus", "openssl")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="efawatch-mixed-"))
    procs = []
    ok = False
    try:
        pods, nodes = objects()
        api, api_flags = e2e.start_apiserver(tmp, pods, nodes)
        procs.append(api)
        no_efa = g6_without_efa(tmp)
        g6 = SOURCE / "tests/fixtures/sysfs/g6.12xlarge"
        (tmp / "no-pods").mkdir()
        shared_pods = tmp / "shared-pods"
        write_shared_logs(shared_pods)
        common = ["--efa-evaluate-interval-seconds=1", "--efa-min-read-interval-ms=200",
                  "--kube-signals-interval-ms=500"] + api_flags
        hosts = {NO_EFA: (no_efa, tmp / "no-pods"), LOST: (no_efa, tmp / "no-pods"),
                 SHARED: (g6, shared_pods)}
        ports = {}
        for node, (host, pod_root) in hosts.items():
            proc, (metrics_port, _) = e2e.start_agent(tmp, node, [
                f"--node-name={node}", f"--sysfs-root={host / 'sys'}",
                f"--procfs-root={host / 'proc'}", f"--pod-log-root={pod_root}"] + common)
            procs.append(proc)
            ports[node] = metrics_port
        e2e.log(f"agents: {ports}")
        prom_proc, prom = e2e.start_prometheus_with_rules(tmp, ports)
        procs.append(prom_proc)
        deadline = time.monotonic() + e2e.DEADLINE_S

        # What must happen, first: the lost device pages, the failing job is named.
        def expected_alerts():
            names = {(a["labels"]["alertname"], a["labels"].get("node"),
                      a["labels"].get("workload")) for a in firing(prom)}
            return ((("EfawatchEfaDeviceMissing", LOST, None) in names)
                    and ("EfawatchNcclCollectiveTimeout", SHARED, "a") in names)
        try:
            e2e.wait_for("EfawatchEfaDeviceMissing on g6-lost and the timeout of job a",
                         expected_alerts, deadline)
        except AssertionError:
            raise AssertionError("alerts not firing in time; firing: " + json.dumps(
                [a["labels"] for a in firing(prom)], indent=1)) from None
        e2e.wait_for("EfaHealthy=False patched for g6-lost",
                     lambda: any(c["status"] == "False" for c in condition_patches(tmp, LOST)),
                     deadline)
        # Several more evaluations and signal rounds: whatever was pending or transient settles.
        time.sleep(4)

        # The node launched without EFA: nothing critical anywhere.
        crit = prom.query(f'efawatch_findings{{node="{NO_EFA}",severity="critical"}}')
        assert not crit, f"critical findings on {NO_EFA}: {[r['metric'] for r in crit]}"
        info = prom.query(f'efawatch_findings{{node="{NO_EFA}",kind="efa_not_attached",severity="info"}}')
        assert info, f"no efa_not_attached finding on {NO_EFA}"
        assert not prom.query(f'efawatch_efa_devices_expected{{node="{NO_EFA}"}}'), \
            f"{NO_EFA} expects EFA devices it was never given"
        # Nothing at all fires for it: not critical, and no warning either (the doctor SKIPs
        # its EFA checks there, as the agent expects no device).
        on_node = [a["labels"] for a in firing(prom) if a["labels"].get("node") == NO_EFA]
        assert not on_node, f"alerts for {NO_EFA}: {on_node}"
        assert not condition_patches(tmp, NO_EFA), \
            f"EfaHealthy patched for {NO_EFA}: {condition_patches(tmp, NO_EFA)}"
        # g6-lost: the node advertises the EFA it lost, so that stays critical.
        lost = prom.query(f'efawatch_findings{{node="{LOST}",kind="efa_devices_missing",severity="critical"}}')
        assert lost, f"no critical efa_devices_missing on {LOST}"

        # The shared node: only the failing job is named, its neighbour never.
        timeouts = [a["labels"] for a in firing(prom)
                    if a["labels"]["alertname"] == "EfawatchNcclCollectiveTimeout"]
        assert [(t["namespace"], t["workload_kind"], t["workload"]) for t in timeouts] == [
            ("team-a", "PyTorchJob", "a")], f"collective timeouts: {timeouts}"
        named_b = [a["labels"] for a in firing(prom) if a["labels"].get("namespace") == "team-b"
                   or a["labels"].get("workload") == "b"]
        assert not named_b, f"alerts name team-b's healthy job: {named_b}"
        failing = prom.query('efawatch_findings{kind="collective_timeout"}')
        assert [(r["metric"].get("namespace"), r["metric"].get("pod")) for r in failing] == [
            ("team-a", "a-0")], f"the timeout finding's pod: {[r['metric'] for r in failing]}"
        assert not [c for c in condition_patches(tmp, SHARED) if c["status"] == "False"], \
            f"EfaHealthy=False on {SHARED}, whose EFA is there"

        # The heuristic warns, never pages.
        idle = [r for g in prom.get("/api/v1/rules")["groups"] for r in g["rules"]
                if r.get("name") == "EfawatchEfaIdleTcpBusy"]
        assert idle and all(r["labels"]["severity"] == "warning" for r in idle), idle

        e2e.log("firing: " + "; ".join(
            f"{a['labels']['alertname']} {a['labels'].get('node')} {a['labels'].get('workload', '')}"
            for a in firing(prom)))
        ok = True
    finally:
        e2e.finish(procs, tmp, ok)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    e2e.run(main)
