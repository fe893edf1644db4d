#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End to end, the three job signals of issue #48: four real efawatchd agents (nodes sig-1 to
sig-4), each reading its pods' container logs (NCCL INFO) and the NCCL Inspector files they
write into their emptyDirs, and a real Prometheus evaluating the shipped rules (every `for:` cut
to 2 s). No Kubernetes API: each job is its namespace (workload_kind="Namespace").

  strag   strag-0..3, one pod per node, AllReduce of 256 MiB four times a second; strag-2 on
          sig-3 spends 0.4 of the others' time in each (it arrives last):
          EfawatchNcclStraggler names sig-3 and strag-2, and nothing else of the job.
  stall   stall-0 on sig-1, stall-1 on sig-2: their Inspector records stopped 15 minutes ago
          (the agents start after the hang): EfawatchNcclJobStalled names the job and both pods.
  incon   incon-0..3, one pod per node, the same NCCL; incon-3 on sig-4 runs aws-ofi-nccl
          1.13.2 with NCCL_PROTO=LL128, the others 1.14.0 with simple:
          EfawatchNcclJobInconsistent names the job, incon-3 on sig-4 and both facts.
  healthy healthy-0..3, one pod per node, progressing, one stack, times within ±5 % of each
          other: none of the three alerts.
"""
import json
import pathlib
import random
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "prometheus"))
import e2e_test as e2e  # noqa: E402  (the shared helpers: agents, Prometheus, waits)

NODES = ["sig-1", "sig-2", "sig-3", "sig-4"]
SIGNALS = ("EfawatchNcclStraggler", "EfawatchNcclJobStalled", "EfawatchNcclJobInconsistent")
SIZE = 256 << 20
BASE_US = 20000.0  # one AllReduce of 256 MiB on 32 ranks, 20 ms
# Running jobs: namespace -> commId, per-pod time factors (pod i on NODES[i]).
RUNNING = {"strag": ("0x5a5a5a5a5a5a5a", [1.0, 1.0, 0.4, 1.0]),
           # ±5 % at most: a fixed offset per pod and ±1 % per record.
           "healthy": ("0x4e4e4e4e4e4e4e", [0.96, 1.04, 1.0, 0.97])}
STALL = ("stall", "0x3c3c3c3c3c3c3c", 2)
INCON = "incon"


def nccl_log(host, comm, rank, plugin="1.14.0", proto="simple"):
    """A rank's NCCL INFO start on EFA: version, aws-ofi-nccl, provider, settings, one
    communicator whose channels cross nodes."""
    who = f"{host}:7:7 [0] NCCL INFO "
    return [who + "NCCL version 2.27.5+cuda12.9",
            who + f"NET/OFI Initializing aws-ofi-nccl {plugin}",
            who + "NET/OFI Selected provider is efa, fabric is efa (found 4 nics)",
            who + "Using network AWS Libfabric",
            who + f"NCCL_PROTO set by environment to {proto}",
            who + "NCCL_BUFFSIZE set by environment to 8388608",
            who + f"comm 0x7f0000 rank {rank} nranks 32 cudaDev 0 nvmlDev 0 busId 1000 "
                  f"commId {comm} - Init START",
            who + f"Channel 00/0 : {(rank + 31) % 32}[0] -> {rank}[0] [receive] via "
                  "NET/AWS Libfabric/0/GDRDMA",
            who + f"comm 0x7f0000 rank {rank} nranks 32 cudaDev 0 nvmlDev 0 busId 1000 "
                  f"commId {comm} localSize 8 used 1024 bytes - Init COMPLETE"]


def record(comm, sn, exec_us, host, at_s):
    algbw = SIZE / (exec_us * 1e-6) / 1e9
    return json.dumps({
        "header": {"id": comm, "rank": 0, "n_ranks": 32, "nnodes": 4},
        "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "",
                     "rec_mechanism": "profiler_plugin",
                     "dump_timestamp_us": int(at_s * 1e6), "hostname": host, "pid": 7},
        "coll_perf": {"coll": "AllReduce", "coll_sn": sn, "coll_msg_size_bytes": SIZE,
                      "coll_exec_time_us": exec_us, "coll_timing_source": "kernel_gpu",
                      "coll_algobw_gbs": algbw, "coll_busbw_gbs": algbw * 62 / 32}}) + "\n"


def add_pod(roots, node_i, ns, pod, lines):
    """The pod's container log on its node and its emptyDir's Inspector folder."""
    logs, kubelet = roots[node_i]
    d = logs / f"{ns}_{pod}_uid-{pod}" / "main"
    d.mkdir(parents=True)
    (d / "0.log").write_text(e2e.cri(lines))
    inspector = kubelet / f"uid-{pod}/volumes/kubernetes.io~empty-dir/logs/nccl-inspector"
    inspector.mkdir(parents=True)
    return inspector / f"{pod}-pid7.log"


def write_jobs(tmp):
    roots = [(tmp / "hosts" / n / "pods", tmp / "hosts" / n / "kubelet") for n in NODES]
    for logs, kubelet in roots:
        logs.mkdir(parents=True)
        kubelet.mkdir(parents=True)
    running = {}
    for ns, (comm, factors) in RUNNING.items():
        for i in range(len(NODES)):
            pod = f"{ns}-{i}"
            running[pod] = (add_pod(roots, i, ns, pod, nccl_log(pod, comm, i * 8)), comm,
                            factors[i])
    ns, comm, pods = STALL
    hung_at = time.time() - 900
    for i in range(pods):
        pod = f"{ns}-{i}"
        path = add_pod(roots, i, ns, pod, nccl_log(pod, comm, i * 8))
        path.write_text("".join(record(comm, sn, BASE_US, pod, hung_at - 60 + sn)
                                for sn in range(1, 41)))
    for i in range(len(NODES)):
        odd = i == 3
        add_pod(roots, i, INCON, f"{INCON}-{i}",
                nccl_log(f"{INCON}-{i}", "0x1d1d1d1d1d1d1d", i * 8,
                         plugin="1.13.2" if odd else "1.14.0", proto="LL128" if odd else "simple"))
    return roots, running


def writer(running, stop):
    """The running jobs: four AllReduce records a second per pod, as the Inspector's dump thread
    appends them."""
    rng = random.Random(48)
    sn = 0
    while not stop.is_set():
        sn += 1
        now = time.time()
        for pod, (path, comm, factor) in running.items():
            exec_us = BASE_US * factor * (1 + rng.uniform(-0.01, 0.01))
            with open(path, "a") as f:
                f.write(record(comm, sn, exec_us, pod, now))
        stop.wait(0.25)


def main():
    e2e.require_tools("prometheus")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="efawatch-signals-"))
    procs = []
    ok = False
    stop = threading.Event()
    thread = None
    try:
        roots, running = write_jobs(tmp)
        thread = threading.Thread(target=writer, args=(running, stop), daemon=True)
        thread.start()
        ports, grpc = {}, {}
        for node, (logs, kubelet) in zip(NODES, roots):
            proc, (metrics_port, grpc[node]) = e2e.start_agent(tmp, node, [
                f"--node-name={node}", f"--sysfs-root={tmp / 'nosys'}", f"--pod-log-root={logs}",
                f"--pod-volume-root={kubelet}", "--instance-type=p5.48xlarge"])
            procs.append(proc)
            ports[node] = metrics_port
        prom_proc, prom = e2e.start_prometheus_with_rules(tmp, ports)
        procs.append(prom_proc)
        deadline = time.monotonic() + e2e.DEADLINE_S

        def signals():
            out = {}
            for a in prom.get("/api/v1/alerts")["alerts"]:
                if a["labels"]["alertname"] in SIGNALS and a["state"] == "firing":
                    out.setdefault(a["labels"]["alertname"], []).append(a)
            return out

        e2e.wait_for("the three signals", lambda: len(signals()) == 3, deadline)
        # Every pod's time ratio is in: the healthy job has had its chance to fire.
        e2e.wait_for("time ratios of both running jobs", lambda: len(prom.query(
            "efawatch:nccl_pod_exec_time_median_ratio:avg5m")) == 8, deadline)
        ratios = {r["metric"]["pod"]: round(float(r["value"][1]), 3)
                  for r in prom.query("efawatch:nccl_pod_exec_time_median_ratio:avg5m")}
        e2e.log(f"time / job median: {ratios}")
        time.sleep(5)  # several more evaluations: nothing else comes up
        got = signals()
        named = {name: sorted((a["labels"]["namespace"], a["labels"].get("pod", ""),
                               a["labels"]["node"]) for a in alerts)
                 for name, alerts in got.items()}
        e2e.log(f"signals: {named}")
        assert named["EfawatchNcclStraggler"] == [("strag", "strag-2", "sig-3")], named
        assert named["EfawatchNcclJobStalled"] == [("stall", "", "multiple")], named
        assert named["EfawatchNcclJobInconsistent"] == [("incon", "", "sig-4")], named
        for alerts in got.values():
            for a in alerts:
                assert a["labels"]["namespace"] != "healthy", a["labels"]
        assert all(0.9 < ratios[f"healthy-{i}"] < 1.1 for i in range(4)), ratios

        straggler = got["EfawatchNcclStraggler"][0]["annotations"]
        for want in ("Node sig-3 slows", "pod strag-2"):
            assert want in straggler["summary"], straggler
        for want in ("transport NET/OFI", "provider efa", "No EFA error counter of sig-3 rose"):
            assert want in straggler["description"], straggler
        stalled = got["EfawatchNcclJobStalled"][0]["annotations"]["description"]
        for want in ("stall-0 on sig-1", "stall-1 on sig-2"):
            assert want in stalled, stalled
        incon = got["EfawatchNcclJobInconsistent"][0]["annotations"]["description"]
        for want in ("incon-3 on sig-4: nccl_proto LL128", "incon-3 on sig-4: net_plugin_version 1.13.2",
                     "The rest of the job: nccl_proto simple; net_plugin_version 1.14.0"):
            assert want in incon, incon
        for name, alerts in got.items():
            e2e.log(f"{name}: {alerts[0]['annotations']['summary']}")

        # `efawatch status` on sig-1 shows the node's side of all three: each pod's stack, the
        # stalled pod's old progress (stale), and the running pods' time per operation.
        status = subprocess.run(
            [str(e2e.BINARY / "bin/efawatch"), "status", "--agent", f"127.0.0.1:{grpc['sig-1']}"],
            capture_output=True, text=True, timeout=30)
        assert status.returncode == 0, status.stdout + status.stderr
        text = status.stdout
        for want in ("stack: NCCL 2.27.5, aws-ofi-nccl 1.14.0, provider efa, GDR on, "
                     "NCCL_PROTO=simple, other settings ",
                     "stall/stall-0  comm 0x3c3c3c3c3c3c3c  last progress ", "(STALE)",
                     "strag/strag-0  comm 0x5a5a5a5a5a5a5a  last progress ",
                     "AllReduce 256MiB: "):
            assert want in text, f"{want!r} not in efawatch status:\n{text}"
        e2e.log("efawatch status on sig-1: " + " | ".join(
            line.strip() for line in text.splitlines() if "stack:" in line or "comm 0x" in line)[:600])
        ok = True
    finally:
        stop.set()
        if thread:
            thread.join(timeout=5)
        e2e.finish(procs, tmp, ok)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    e2e.run(main)
