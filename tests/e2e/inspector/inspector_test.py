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
  v51-0 (namespace v51job): NCCL >= 2.30's Prometheus mode, a v5.1 textfile per GPU rewritten
      in place (truncate, then a line pair at a time) every half second, AllReduce of 256 MiB
      at ~2 GB/s and AllGather of 64 MiB: the agent exports its busbw for each (collective,
      size class) within 10 s with 0 malformed and 0 torn-as-malformed, and
      EfawatchNcclSlowCollectives fires for it too, naming the communicator by its name and the
      pod's own transport (no commId to join).
"""
import json
import os
import pathlib
import urllib.request
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


V51_POD, V51_NS = "v51-0", "v51job"
V51_FILE = "nccl_inspector_metrics_5e6f7a8b-aaaa-bbbb-cccc-ddddeeeeffff.prom"


def v51_text(interval):
    """One dump of the v5.1 writer (NCCL >= 2.30.3): per (comm_name, collective, size class,
    algo_proto) the interval's geometric-mean busbw and mean exec time, no comm_id."""
    out = []
    for coll, size, algo, busbw in (("AllReduce", "256-257MB", "RING_SIMPLE", 2.0),
                                    ("AllGather", "64-65MB", "RING_LL128", 2.5)):
        labels = (f'version="v5.1",slurm_job_id="unknown",node="{V51_POD}",gpu="GPU0",'
                  f'comm_name="unknown",n_nodes="2",nranks="16",collective="{coll}",'
                  f'message_size="{size}",algo_proto="{algo}"')
        out.append(f"nccl_bus_bandwidth_gbs{{{labels}}} {busbw * (1 + 0.01 * (interval % 3)):.6g}\n"
                   f"nccl_collective_exec_time_microseconds{{{labels}}} {125000 + interval}\n")
    return out


def v51_writer(path, stop):
    """Rewrites the file in place as the plugin does: fopen("w") truncates it, then each sample
    pair is written and flushed, so a reader can find it empty or cut."""
    interval = 0
    while not stop.is_set():
        interval += 1
        with open(path, "w") as f:
            for chunk in v51_text(interval):
                f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
        stop.wait(0.5)


def agent_metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def metric_value(text, name, **labels):
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


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
        v51_log = logs / f"{V51_NS}_{V51_POD}_uid-{V51_POD}" / "main"
        v51_log.mkdir(parents=True)
        nccl = (SOURCE / "tests/fixtures/nccl/ray-two-nodes-socket-2.21.log").read_text()
        (v51_log / "0.log").write_text(e2e.cri(nccl.splitlines()))
        v51_dir = kubelet / f"uid-{V51_POD}/volumes/kubernetes.io~empty-dir/ray-logs/inspector"
        v51_dir.mkdir(parents=True)
        v51_thread = threading.Thread(target=v51_writer, args=(v51_dir / V51_FILE, stop),
                                      daemon=True)
        proc, (metrics_port, _) = e2e.start_agent(tmp, NODE, [
            f"--node-name={NODE}", f"--sysfs-root={tmp / 'nosys'}", f"--pod-log-root={logs}",
            f"--pod-volume-root={kubelet}", "--instance-type=p4d.24xlarge"])
        procs.append(proc)
        # The v5.1 file appears after the agent started, as a job's first dump does: its series
        # within 10 s, none of its lines malformed while the writer truncates and rewrites it.
        started = time.monotonic()
        v51_thread.start()
        series = {("AllReduce", "256MiB"), ("AllGather", "64MiB")}
        e2e.wait_for("the v5.1 pod's busbw series", lambda: all(
            metric_value(agent_metrics(metrics_port), "efawatch_nccl_busbw_bytes_per_second_count",
                         pod=V51_POD, comm_id="", comm_name="unknown", collective=c,
                         size_bucket=b) for c, b in series), started + 10)
        e2e.log(f"v5.1 series after {time.monotonic() - started:.1f} s")
        prom_proc, prom = e2e.start_prometheus_with_rules(tmp, {NODE: metrics_port})
        procs.append(prom_proc)
        deadline = time.monotonic() + e2e.DEADLINE_S

        ratios = e2e.wait_for("every job's busbw ratios", lambda: (
            r := prom.query("efawatch:nccl_busbw_expected_ratio:p50_5m")) and len(r) == 4
            and all(x["value"][1] not in ("NaN", "+Inf") for x in r) and r,
            deadline)
        by_pod = {(r["metric"]["pod"], r["metric"]["collective"]): float(r["value"][1])
                  for r in ratios}
        e2e.log(f"busbw / expected: {by_pod}")
        assert by_pod[("slow-0", "AllReduce")] < 0.25 < by_pod[("fast-0", "AllReduce")], by_pod
        assert by_pod[(V51_POD, "AllReduce")] < 0.25, by_pod

        def slow_alert():
            return [a for a in prom.get("/api/v1/alerts")["alerts"]
                    if a["labels"]["alertname"] == "EfawatchNcclSlowCollectives"
                    and a["state"] == "firing"]
        alerts = e2e.wait_for("EfawatchNcclSlowCollectives", slow_alert, deadline)
        e2e.wait_for("EfawatchNcclSlowCollectives for both slow jobs",
                     lambda: len(slow_alert()) == 2, deadline)
        time.sleep(4)  # several more evaluations: nothing else comes up
        alerts = {a["labels"]["namespace"]: a for a in slow_alert()}
        assert sorted(alerts) == ["slowjob", V51_NS], [a["labels"] for a in alerts.values()]
        v51 = alerts[V51_NS]["annotations"]["description"]
        for want in ("communicator named unknown", f"pod {V51_POD}",
                     "the pod's transport NET/Socket", "expected 50GB/s"):
            assert want in v51, f"{want!r} not in: {v51}"
        e2e.log(f"EfawatchNcclSlowCollectives (v5.1): {v51}")
        text = agent_metrics(metrics_port)
        for result in ("prom_malformed", "malformed"):
            got = metric_value(text, "efawatch_nccl_inspector_records_total", result=result)
            assert got == 0, f"{result}: {got}"
        e2e.log("records: " + ", ".join(
            f"{r}={metric_value(text, 'efawatch_nccl_inspector_records_total', result=r)}"
            for r in ("prom_op", "prom_torn", "prom_malformed")))
        a = alerts["slowjob"]
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
