#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End to end, the job's own collectives: a real efawatchd on a p4d node (50 GB/s expected)
reading the NCCL Inspector files two pods write into their emptyDirs while they run, and a real
Prometheus with the shipped rules (every `for:` cut to 2 s).

  slow-0 (namespace slowjob): AllReduce of 256 MiB at ~3.2 GB/s on EFA (its NCCL log, with the
      Inspector's communicator id as commId, says NET/OFI over efa):
      EfawatchNcclSlowCollectives fires, once, with the measured and expected figures and the
      transport in its description.
  fast-0 (namespace fastjob): AllReduce of 256 MiB at ~45 GB/s: nothing.
"""
import json
import pathlib
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "prometheus"))
import e2e_test as e2e  # noqa: E402  (the shared helpers: agents, Prometheus, waits)

SOURCE = e2e.SOURCE
NODE, CLUSTER = "inspector-node", "e2e"
# pod -> (namespace, commId as NCCL's log prints it, busbw GB/s)
PODS = {"slow-0": ("slowjob", "0x1f2e3d4c5b6a7980", 3.2),
        "fast-0": ("fastjob", "0xc0ffee00c0ffee", 45.0)}


def inspector_id(comm):
    """The Inspector's header.id for NCCL's commId: it prints "0x%lx" into 17 bytes, so a hash
    of 15 or 16 hex digits loses its last ones; the alert must still find the log's commId."""
    return comm[:16]
SIZE = 256 << 20


def record(comm, sn, busbw, host):
    algbw = busbw * 16 / 30  # AllReduce on 16 ranks: busbw = algbw * 2(n-1)/n
    return json.dumps({
        "header": {"id": comm, "rank": 0, "n_ranks": 16, "nnodes": 2},
        "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "",
                     "rec_mechanism": "profiler_plugin",
                     "dump_timestamp_us": int(time.time() * 1e6), "hostname": host, "pid": 7},
        "coll_perf": {"coll": "AllReduce", "coll_sn": sn, "coll_msg_size_bytes": SIZE,
                      "coll_exec_time_us": SIZE / (algbw * 1e9) * 1e6,
                      "coll_timing_source": "kernel_gpu", "coll_algobw_gbs": algbw,
                      "coll_busbw_gbs": busbw}}) + "\n"


def write_pods(root, kubelet):
    """Each pod's container log (NCCL INFO on EFA, its commId the Inspector's id) and its
    emptyDir; returns the Inspector file of each pod (created by the writer)."""
    nccl = (SOURCE / "tests/fixtures/nccl-fleet/mixed-job-node-a-efa-2.19.log").read_text()
    files = {}
    for pod, (ns, comm, _) in PODS.items():
        d = root / f"{ns}_{pod}_uid-{pod}" / "main"
        d.mkdir(parents=True)
        (d / "0.log").write_text(e2e.cri(nccl.replace("0x5c5c5c5c5c5c5c5c", comm).splitlines()))
        inspector = kubelet / f"uid-{pod}/volumes/kubernetes.io~empty-dir/ray-logs/nccl-inspector"
        inspector.mkdir(parents=True)
        files[pod] = inspector / f"{pod}-pid7.log"
    return files


def writer(files, stop):
    """The jobs: four AllReduce records a second per pod, as the Inspector's dump thread adds
    them."""
    sn = 0
    while not stop.is_set():
        sn += 1
        for pod, path in files.items():
            _, comm, busbw = PODS[pod]
            with open(path, "a") as f:
                f.write(record(inspector_id(comm), sn, busbw * (1 + 0.02 * ((sn % 5) - 2)), pod))
        stop.wait(0.25)


def main():
    e2e.require_tools("prometheus")
    import tempfile
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="efawatch-inspector-"))
    procs = []
    ok = False
    stop = threading.Event()
    thread = None
    try:
        logs, kubelet = tmp / "pods", tmp / "kubelet"
        files = write_pods(logs, kubelet)
        thread = threading.Thread(target=writer, args=(files, stop), daemon=True)
        thread.start()
        proc, (metrics_port, _) = e2e.start_agent(tmp, NODE, [
            f"--node-name={NODE}", f"--sysfs-root={tmp / 'nosys'}", f"--pod-log-root={logs}",
            f"--pod-volume-root={kubelet}", "--instance-type=p4d.24xlarge"])
        procs.append(proc)
        rules = tmp / "rules.yml"
        e2e.write_rules(rules)
        config = tmp / "prometheus.yml"
        e2e.write_prometheus_config(config, rules, {NODE: metrics_port})
        prom_proc, prom = e2e.start_prometheus(tmp, config)
        procs.append(prom_proc)
        deadline = time.monotonic() + e2e.DEADLINE_S

        ratios = e2e.wait_for("both jobs' busbw ratios", lambda: (
            r := prom.query("efawatch:nccl_busbw_expected_ratio:p50_5m")) and len(r) == 2 and r,
            deadline)
        by_pod = {r["metric"]["pod"]: float(r["value"][1]) for r in ratios}
        e2e.log(f"busbw / expected: {by_pod}")
        assert by_pod["slow-0"] < 0.25 < by_pod["fast-0"], by_pod

        def slow_alert():
            return [a for a in prom.get("/api/v1/alerts")["alerts"]
                    if a["labels"]["alertname"] == "EfawatchNcclSlowCollectives"
                    and a["state"] == "firing"]
        alerts = e2e.wait_for("EfawatchNcclSlowCollectives", slow_alert, deadline)
        time.sleep(4)  # several more evaluations: nothing else comes up
        alerts = slow_alert()
        assert len(alerts) == 1, [a["labels"] for a in alerts]
        [a] = alerts
        assert a["labels"]["namespace"] == "slowjob", a["labels"]
        assert a["labels"]["workload_kind"] == "Namespace", a["labels"]
        assert a["labels"]["node"] == NODE, a["labels"]
        assert a["labels"]["severity"] == "warning", a["labels"]
        desc = a["annotations"]["description"]
        for want in ("expected 50GB/s", "transport NET/OFI (provider efa)",
                     "communicator 0x1f2e3d4c5b6a79", "pod slow-0"):
            assert want in desc, f"{want!r} not in: {desc}"
        measured = float(desc.split("measured ")[1].split("GB/s")[0])
        assert 2 <= measured <= 4, desc
        e2e.log(f"EfawatchNcclSlowCollectives: {a['annotations']['summary']} | {desc}")
        ok = True
    finally:
        stop.set()
        if thread:
            thread.join(timeout=5)
        e2e.finish(procs, tmp, ok)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    e2e.run(main)
