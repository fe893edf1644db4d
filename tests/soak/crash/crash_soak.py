#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Crash soak (issue #33): the real efawatchd counts every pod's log lines exactly, to the pod,
across SIGKILLs and kubelet's rotation.

Twenty pods (namespace `soak`, container `main`) write CRI lines under <tmp>/pods at a steady rate
each, half of them Hugging Face Trainer dicts, each line naming its pod and a sequence number. Each
pod opens its log with an NCCL init block and prints a second communicator's block later: half
the pods fall back to TCP (NET/Socket), the others run on EFA (NET/OFI, provider efa); every
communicator id names its pod. kubelet's rotation runs every few seconds per pod, in kubelet's
order (container_log_manager.go): remove the rotated files beyond four, gzip the uncompressed
rotated ones (write <f>.tmp, rename to <f>.gz, remove <f>), rename 0.log to
0.log.<YYYYMMDD-hhmmss>, create a new 0.log. Writers write whole lines only, and never into a
rotated file.

The agent starts after the first rotations (it reads the rotated files on first sight,
--log-history-bytes) and is SIGKILLed twice (--kills), each time restarted 2 s later on the same
state dir; while it is down half the pods, chosen at random, rotate once (the case where the agent
finishes a file it knows only by inode from its checkpoint). A pod rotates while the agent is down
only if the checkpoint names its live file, and only once, and none rotates while the agent
starts, until it has written its first checkpoint: a file created and rotated away while the agent
is down is one the checkpoint never named, and the agent does not promise to find it.

When the writers stop, /metrics is polled until it holds still, then, per pod:
  efawatch_logs_lines_total       == lines the pod wrote
  efawatch_logs_nccl_lines_total  == NCCL lines the pod wrote
  efawatch_nccl_tcp_fallback      == 1 for the TCP pods, 0 for the EFA ones
  efawatch_nccl_info              one series: the pod's network, transport, provider, NCCL
                                  version and node evidence, as without a restart
  efawatch_nccl_communicator_info only communicator ids the pod printed
and the agent logged no internal error. The figures are printed, with how many pods passed each
check; a pod that is off is listed with what it wrote and what the agent counted (or showed, and
when its NCCL blocks came against the restarts). A run in which no pod rotated while the agent
was down fails: it would prove nothing.

--inject-misattribution N checks the checker: while the agent is down for the first time, N
lines of the first pod go into the second pod's log (counted as the first pod's). The run then
passes only if exactly those two pods are found off, by -N and +N: the shape of issue #33.

Usage: crash_soak.py --agent build/bin/efawatchd [--runs N] [--duration 45] [--rate 800] ...
Exit status 0 when every run passed. Python 3 standard library only; traffic to 127.0.0.1 only.
"""
import argparse
import gzip
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

NAMESPACE = "soak"
CONTAINER = "main"
NCCL_VERSION = "2.21.5+cuda12.4"
# What the agent shows for each kind of pod (efawatch_nccl_info labels, tcp_fallback).
EXPECTED_VERDICT = {
    "tcp": {"tcp_fallback": 1, "network": "Socket", "transport": "NET/Socket",
            "ofi_provider": "none", "nccl_version": "2.21.5", "nodes": "proven_multi"},
    "efa": {"tcp_fallback": 0, "network": "Libfabric", "transport": "NET/OFI",
            "ofi_provider": "efa", "nccl_version": "2.21.5", "nodes": "proven_multi"},
}


def inode(path):
    return os.stat(path).st_ino


def cri_time():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%09dZ" % int((t % 1) * 1e9)


class Pod:
    """One container's log directory and what it wrote. Only the writer thread touches a pod
    while the writers run; the controller reads the figures after they stop."""

    def __init__(self, root, index, kind, rate, rng):
        self.index = index
        self.name = "trainer-%02d" % index
        self.kind = kind  # "tcp" or "efa"
        self.rate = rate  # lines per second
        self.dir = os.path.join(root, "%s_%s_%s" % (NAMESPACE, self.name, uuid.UUID(
            int=rng.getrandbits(128), version=4)), CONTAINER)
        os.makedirs(self.dir)
        self.path = os.path.join(self.dir, "0.log")
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o640)
        self.seq = 0  # lines written, NCCL ones included
        self.nccl_lines = 0
        self.bulk = 0  # lines written by the rate (not NCCL blocks)
        self.rotations = 0
        self.rotations_down = 0  # during the current outage of the agent
        self.last_rotation = -1e9
        self.next_rotation = 0.0
        self.comm_ids = []
        self.blocks_left = []  # (time, communicator number) of NCCL blocks still to write
        self.block_times = []  # when each NCCL block was written (monotonic)
        self.pid = 1000 + index

    def line(self, payload):
        self.seq += 1
        return "%s stdout F %s\n" % (cri_time(), payload)

    def bulk_lines(self, n, rng, owner=None):
        """n ordinary lines, half Trainer dicts; `owner` names another pod (injection)."""
        owner = owner or self
        out = []
        for _ in range(n):
            owner.bulk += 1
            s = owner.bulk
            if s % 2 == 0:
                payload = ("{'loss': %.4f, 'grad_norm': %.4f, 'learning_rate': %.3e, "
                           "'epoch': %.2f, 'step': %d, 'pod': '%s'}" % (
                               2.5 / (1 + s / 5000) + rng.random() * 0.05, rng.random() * 2,
                               1e-5 * (1 - s / 1e7), s / 20000, s, owner.name))
            else:
                payload = "%s step %d: %.1f samples/s, rank 0 seq %d" % (
                    owner.name, s, 300 + rng.random() * 20, s)
            owner.seq += 1
            out.append("%s stdout F %s\n" % (cri_time(), payload))
        return out

    def nccl_block(self, comm):
        """A communicator's init as rank 0 of a two-node job prints it; `comm` 0 also prints the
        process's net selection and the NCCL version (the first communicator)."""
        host, pid, tid = self.name, self.pid, self.pid + 50 + comm
        pre = "%s:%d:%d [0] NCCL INFO " % (host, pid, pid)
        ip = "10.%d.%d.1" % (0 if self.kind == "tcp" else 1, self.index)
        lines = []
        if comm == 0:
            lines.append(pre + "Bootstrap : Using eth0:%s<0>" % ip)
            if self.kind == "tcp":
                lines += [pre + "NET/IB : No device found.",
                          pre + "NET/Socket : Using [0]eth0:%s<0>" % ip,
                          pre + "Using network Socket"]
            else:
                lines += [pre + "NET/Plugin: Loaded net plugin Libfabric (v8)",
                          pre + "NET/OFI Selected Provider is efa (found 4 nics)",
                          pre + "Using network Libfabric"]
            lines.append("NCCL version " + NCCL_VERSION)
        comm_id = "0x%08x%08x" % (0x5a000000 + self.index, comm + 1)
        addr = "0x55d0%04x%04x00" % (self.index, comm)
        self.comm_ids.append(comm_id)
        via = "NET/Socket/0" if self.kind == "tcp" else "NET/Libfabric/0/GDRDMA"
        t = "%s:%d:%d [0] NCCL INFO " % (host, pid, tid)
        init = ("ncclCommInitRank comm %s rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 "
                "commId %s - Init " % (addr, comm_id))
        lines += [t + init + "START",
                  t + "comm %s rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0" % addr,
                  t + "Channel 00/0 : 1[0] -> 0[0] [receive] via " + via,
                  t + "Channel 00/0 : 0[0] -> 1[0] [send] via " + via,
                  t + "Connected all rings",
                  t + init + "COMPLETE"]
        self.nccl_lines += len(lines)
        return [self.line(p) for p in lines]

    def write(self, lines):
        data = "".join(lines).encode()
        while data:  # whole lines: a short write is finished before anything else happens
            n = os.write(self.fd, data)
            data = data[n:]

    def rotate(self, keep):
        """kubelet's rotateLog: remove excess, compress, rename 0.log, create 0.log. Returns
        False (nothing done) when this second's rotated name is taken."""
        name = "0.log." + time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        if os.path.exists(os.path.join(self.dir, name)) or os.path.exists(
                os.path.join(self.dir, name + ".gz")):
            return False
        rotated = sorted(f for f in os.listdir(self.dir)
                         if f.startswith("0.log.") and not f.endswith(".tmp"))
        # Keep keep-1 before renaming, so that keep are left after it (kubelet's MaxFiles - 1).
        while len(rotated) > keep - 1:
            os.unlink(os.path.join(self.dir, rotated.pop(0)))
        for f in rotated:
            if f.endswith(".gz"):
                continue
            src = os.path.join(self.dir, f)
            with open(src, "rb") as r, open(src + ".tmp", "wb") as w:
                with gzip.GzipFile(fileobj=w, mode="wb", compresslevel=1) as z:
                    shutil.copyfileobj(r, z)
            os.rename(src + ".tmp", src + ".gz")
            os.unlink(src)
        os.rename(self.path, os.path.join(self.dir, name))
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o640)
        os.close(self.fd)
        self.fd = fd
        self.rotations += 1
        return True


class Writers:
    """One thread writes every pod's lines (a batch per pod every 20 ms) and rotates them. The
    controller tells it, under `lock`, when no pod may rotate (`frozen`) and, while the agent is
    down, which pods may rotate once (`may_rotate`)."""

    def __init__(self, pods, args, rng):
        self.pods, self.args, self.rng = pods, args, rng
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.frozen = False
        self.may_rotate = None  # None: the agent is up, every pod rotates on its schedule
        self.inject = []  # (from pod, into pod, lines) to write once
        self.error = None
        self.t0 = None  # when writing starts (monotonic), set by the controller
        self.thread = threading.Thread(target=self.run, name="writers")

    def schedule(self, t0):
        period = self.args.rotate_every
        for p in self.pods:
            p.next_rotation = t0 + period * (0.3 + self.rng.random())  # spread the phases
            p.blocks_left = [(t0, 0), (t0 + self.args.duration * (0.3 + 0.6 * self.rng.random()),
                                       1)]

    def run(self):
        try:
            self.loop()
        except Exception as e:  # reported by the controller
            self.error = repr(e)

    def loop(self):
        t0 = self.t0
        self.schedule(t0)
        period = self.args.rotate_every
        while not self.stop.is_set():
            now = time.monotonic()
            with self.lock:
                for p in self.pods:
                    lines = []
                    while p.blocks_left and p.blocks_left[0][0] <= now:
                        lines += p.nccl_block(p.blocks_left.pop(0)[1])
                        p.block_times.append(now)
                    due = int((now - t0) * p.rate) - p.bulk
                    if due > 0:
                        lines += p.bulk_lines(due, self.rng)
                    if lines:
                        p.write(lines)
                    down = self.may_rotate is not None
                    if (now >= p.next_rotation and not self.frozen
                            and now - p.last_rotation >= 0.8 * period
                            and (not down or (p in self.may_rotate and p.rotations_down == 0))):
                        if p.rotate(self.args.keep):
                            p.last_rotation = now
                            p.next_rotation = now + period * (0.8 + 0.4 * self.rng.random())
                            p.rotations_down += down
                for src, dst, n in self.inject:
                    dst.write(src.bulk_lines(n, self.rng))
                self.inject = []
            self.stop.wait(0.02)

    def agent_down(self, may_rotate, force):
        """The agent is down: only the pods in `may_rotate` may rotate, once each; those in
        `force` do so soon. The caller holds `lock`."""
        self.may_rotate = may_rotate
        now = time.monotonic()
        for p in self.pods:
            p.rotations_down = 0
            if p in force:
                p.next_rotation = now + self.rng.uniform(0.1, 0.6 * self.args.down)


class Agent:
    """The efawatchd under test: started, SIGKILLed and restarted on one state dir. Only the
    process this class started is ever signalled."""

    def __init__(self, binary, work, history_bytes):
        self.binary, self.work = binary, work
        self.port_file = os.path.join(work, "ports.json")
        self.state_file = os.path.join(work, "state", "logs-checkpoint.json")
        self.log_path = os.path.join(work, "agent.log")
        self.args = [binary, "--metrics-listen=127.0.0.1:0", "--grpc-listen=127.0.0.1:0",
                     "--port-file=" + self.port_file,
                     "--pod-log-root=" + os.path.join(work, "pods"),
                     "--state-dir=" + os.path.join(work, "state"),
                     "--sysfs-root=" + os.path.join(work, "sys"),
                     "--fabric-responder=false", "--log-history-bytes=" + history_bytes]
        self.proc = None
        self.port = None
        self.starts = 0

    def start(self):
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        with open(self.log_path, "ab") as log:
            log.write(b"--- start %d\n" % (self.starts + 1))
            log.flush()
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        self.starts += 1
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("agent exited with %d at start; see %s" % (
                    self.proc.returncode, self.log_path))
            try:
                with open(self.port_file) as f:
                    self.port = json.load(f)["metrics"]
                return
            except (OSError, ValueError, KeyError):
                time.sleep(0.02)
        raise RuntimeError("agent wrote no port file within 30 s")

    def checkpoint_id(self):
        """Identifies the checkpoint file written last: each write renames a new file over it."""
        try:
            return os.stat(self.state_file).st_ino
        except FileNotFoundError:
            return None

    def wait_checkpoint(self, before):
        """Waits until the agent replaced the checkpoint `before` named: its first pass, which
        resumes every file the checkpoint names, is done."""
        deadline = time.monotonic() + 30
        while self.checkpoint_id() == before:
            if not self.alive():
                raise RuntimeError("agent exited; see %s" % self.log_path)
            if time.monotonic() > deadline:
                raise RuntimeError("agent wrote no checkpoint within 30 s of its start")
            time.sleep(0.02)

    def checkpointed_inodes(self):
        """{real path: inode} of the files the checkpoint names ({} without one)."""
        try:
            with open(self.state_file) as f:
                files = json.load(f).get("files", [])
        except (OSError, ValueError):
            return {}
        return {os.path.realpath(e["path"]): e["ino"] for e in files}

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.port = None

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def scrape(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=10) as r:
            return r.read().decode()


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """Prometheus text format to [(name, {label: value}, float)]."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if m:
            out.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def observe(samples):
    """Per pod of our namespace: counts, verdict series; and the agent's own counters."""
    pods, agent = {}, {}
    for name, labels, value in samples:
        if not labels:
            agent[name] = value
            continue
        if name == "efawatch_internal_errors_total":
            agent["internal_errors_" + labels.get("component", "")] = value
            continue
        if labels.get("namespace") != NAMESPACE:
            continue
        p = pods.setdefault(labels.get("pod"), {"info": [], "comms": set(), "containers": set()})
        # Per-container series name their container; per-pod ones (efawatch_findings) do not.
        if "container" in labels:
            p["containers"].add(labels["container"])
        if name == "efawatch_logs_lines_total":
            p["lines"] = int(value)
        elif name == "efawatch_logs_nccl_lines_total":
            p["nccl_lines"] = int(value)
        elif name == "efawatch_nccl_tcp_fallback":
            p["tcp_fallback"] = int(value)
        elif name == "efawatch_nccl_info":
            p["info"].append(labels)
        elif name == "efawatch_nccl_communicator_info":
            p["comms"].add(labels.get("comm_id"))
    return pods, agent


CHECKS = ("lines", "NCCL lines", "tcp_fallback", "nccl_info", "communicator ids")


def check(pods, seen, agent, t0, outages):
    """Returns the problems ([(check, text)]), per pod the line count difference, and per check
    how many pods passed it."""
    problems, diffs = [], {}
    passed = {c: 0 for c in CHECKS}

    def verdict(name, ok, text):
        if ok:
            passed[name] += 1
        else:
            problems.append((name, text))

    for p in pods:
        s = seen.get(p.name)
        if s is None:
            problems.append(("lines", "%s: no series" % p.name))
            diffs[p.name] = -p.seq
            continue
        d = s.get("lines", 0) - p.seq
        if d:
            diffs[p.name] = d
        verdict("lines", d == 0, "%s: wrote %d lines, agent counted %d (%+d)" % (
            p.name, p.seq, s.get("lines", 0), d))
        verdict("NCCL lines", s.get("nccl_lines") == p.nccl_lines,
                "%s: wrote %d NCCL lines, agent counted %s" % (
                    p.name, p.nccl_lines, s.get("nccl_lines")))
        want = EXPECTED_VERDICT[p.kind]
        verdict("tcp_fallback", s.get("tcp_fallback") == want["tcp_fallback"],
                "%s (%s): tcp_fallback %s, want %d" % (
                    p.name, p.kind, s.get("tcp_fallback"), want["tcp_fallback"]))
        offs = [{k: info.get(k) for k in want if k != "tcp_fallback" and info.get(k) != want[k]}
                for info in s["info"]]
        # When the pod printed its NCCL blocks, against the agent's outages: what the agent
        # makes of a verdict across a restart depends on it.
        when = ", ".join("%.1f s" % (t - t0) for t in p.block_times)
        verdict("nccl_info", len(s["info"]) == 1 and not offs[0],
                "%s (%s): efawatch_nccl_info %s, want %s (NCCL blocks at %s; agent down %s)" % (
                    p.name, p.kind, offs or "absent",
                    {k: want[k] for o in offs for k in o} or "one series", when,
                    ", ".join("%.1f-%.1f s" % o for o in outages) or "never"))
        verdict("communicator ids", s["comms"] and s["comms"] <= set(p.comm_ids),
                "%s: communicator ids %s, wrote %s" % (p.name, sorted(s["comms"]), p.comm_ids))
        if s["containers"] != {CONTAINER}:
            problems.append(("lines", "%s: containers %s" % (p.name, sorted(s["containers"]))))
    for name in sorted(set(seen) - {p.name for p in pods}):
        problems.append(("lines", "%s: series of a pod that never wrote" % name))
    for k, v in agent.items():
        if k.startswith("internal_errors_") and v:
            problems.append(("agent", "agent: %s = %d" % (k, v)))
    return problems, diffs, passed


def settle(agent, pods, timeout, quiet):
    """Scrapes until every pod's counts are what it wrote, or nothing moved for `quiet` s."""
    start = time.monotonic()
    last, last_change = None, start
    while True:
        seen, counters = observe(parse(agent.scrape()))
        key = ({n: (s.get("lines"), s.get("nccl_lines")) for n, s in seen.items()},
               counters.get("efawatch_logs_read_bytes_total"))
        if all(seen.get(p.name, {}).get("lines") == p.seq and
               seen.get(p.name, {}).get("nccl_lines") == p.nccl_lines for p in pods):
            return seen, counters, time.monotonic() - start
        now = time.monotonic()
        if key != last:
            last, last_change = key, now
        elif now - last_change >= quiet or now - start >= timeout:
            return seen, counters, now - start
        time.sleep(0.5)


def run_once(args, run_no, rng):
    work = tempfile.mkdtemp(prefix="efawatch-crash-soak-")
    for d in ("pods", "state", "sys"):
        os.makedirs(os.path.join(work, d))
    root = os.path.join(work, "pods")
    rates = [args.rate * (0.5 + rng.random()) for _ in range(args.pods)]
    pods = [Pod(root, i, "tcp" if i % 2 == 0 else "efa", rates[i], rng)
            for i in range(args.pods)]
    writers = Writers(pods, args, rng)
    agent = Agent(args.agent, work, args.history_bytes)
    t0 = writers.t0 = time.monotonic()
    kills, down_rotations, ok, show_log = [], [], False, False
    try:
        writers.thread.start()
        # A late agent reads what was rotated before it came (first sight). No rotation until
        # its first pass is done: kubelet's gzip leaves <f>.tmp, then <f> beside <f>.gz, for a
        # moment, and a first sight then would read them too (not this soak's subject).
        time.sleep(args.agent_late)
        with writers.lock:
            writers.frozen = True
        before = agent.checkpoint_id()
        agent.start()
        agent.wait_checkpoint(before)
        started = time.monotonic()
        with writers.lock:
            writers.frozen = False
        # Kills spread over the agent's run, none in its first or last 5 s.
        first, last = time.monotonic() + 5, t0 + args.duration - 5
        kill_at = [first + (last - first) * (i + 0.5) / args.kills for i in range(args.kills)]
        for i, at in enumerate(kill_at):
            time.sleep(max(0.0, at - time.monotonic() + rng.uniform(-1.0, 1.0)))
            if not agent.alive():
                raise RuntimeError("agent died on its own; see %s" % agent.log_path)
            agent.kill()
            killed = time.monotonic()
            with writers.lock:
                # While the agent is down a pod may rotate once, and only if the checkpoint names
                # its live file: the agent then finds the checkpointed file by inode under its
                # rotated name. Half the pods are made to.
                named = agent.checkpointed_inodes()
                may = [p for p in pods if inode(p.path) == named.get(os.path.realpath(p.path))]
                force = rng.sample(may, min(len(may), len(pods) // 2))
                writers.agent_down(set(may), set(force))
                if i == 0 and args.inject_misattribution:
                    writers.inject.append((pods[0], pods[1], args.inject_misattribution))
            time.sleep(args.down)
            with writers.lock:
                writers.frozen = True  # until the agent has resumed every file
                # Pods the agent must resume through a rotated file (issue #33's case).
                down_rotations.append(sum(
                    inode(p.path) != named.get(os.path.realpath(p.path)) for p in pods))
            before = agent.checkpoint_id()
            agent.start()
            restarted = time.monotonic()
            agent.wait_checkpoint(before)
            with writers.lock:
                writers.may_rotate = None
                writers.frozen = False
            kills.append((killed - t0, restarted - t0))
        time.sleep(max(0.0, t0 + args.duration - time.monotonic()))
        writers.stop.set()
        writers.thread.join()
        if writers.error:
            raise RuntimeError("writers failed: " + writers.error)
        for p in pods:
            os.close(p.fd)
        wrote_s = time.monotonic() - t0
        seen, counters, catch_up = settle(agent, pods, args.settle_timeout, args.quiet)
        problems, diffs, passed = check(pods, seen, counters, t0, kills)
        if not agent.alive():
            problems.append(("agent", "agent died; see %s" % agent.log_path))
            show_log = True
        total = sum(p.seq for p in pods)
        counted = sum(seen.get(p.name, {}).get("lines", 0) for p in pods)
        print("run %d: %d pods, %d lines (per pod %d..%d, %.0f/s each on average), "
              "%d NCCL lines, %d rotations (%s while the agent was down), agent up at %.1f s, "
              "%d kills (killed -> restarted at %s s), wrote for %.1f s, caught up %.1f s "
              "later" % (
                  run_no, len(pods), total, min(p.seq for p in pods),
                  max(p.seq for p in pods), total / wrote_s / len(pods),
                  sum(p.nccl_lines for p in pods), sum(p.rotations for p in pods),
                  "+".join(str(n) for n in down_rotations) or "0", started - t0, len(kills),
                  ", ".join("%.1f -> %.1f" % k for k in kills), wrote_s, catch_up))
        with open(agent.log_path, errors="replace") as f:
            history = sum(int(m.group(1)) for m in re.finditer(
                r"read (\d+) rotated file\(s\) of .* first", f.read()))
        print("       agent: counted %d lines (sum), read %d lines, followed %d rotations, "
              "read %d rotated files on first sight, %d checkpoint writes since its last "
              "start" % (counted, counters.get("efawatch_logs_read_lines_total", 0),
                         counters.get("efawatch_logs_rotations_total", 0), history,
                         counters.get("efawatch_logs_checkpoint_writes_total", 0)))
        print("       pods right: " + ", ".join("%s %d/%d" % (c, passed[c], len(pods))
                                                for c in CHECKS))
        if args.inject_misattribution:
            want = {pods[0].name: -args.inject_misattribution,
                    pods[1].name: args.inject_misattribution}
            # Only the line counts are judged here: the injection is about them.
            line_problems = [(c, t) for c, t in problems if c == "lines"]
            ok = diffs == want and all(
                t.startswith((pods[0].name, pods[1].name)) for _, t in line_problems)
            print("       injected %d lines of %s into %s: found %s -> %s" % (
                args.inject_misattribution, pods[0].name, pods[1].name, diffs or "nothing",
                "detected" if ok else "NOT as injected"))
            if not ok:
                for _, line in line_problems:
                    print("       " + line)
        else:
            ok = not problems and all(n > 0 for n in down_rotations)
            if not all(n > 0 for n in down_rotations):
                print("       no pod rotated while the agent was down: the run proves nothing")
            for _, line in problems:
                print("       " + line)
            if diffs and counted == total:
                print("       the sum is exact but pods are off: lines were credited to the "
                      "wrong pod")
        print("       run %d %s" % (run_no, "PASSED" if ok else "FAILED"))
    except Exception as e:
        print("run %d FAILED: %s" % (run_no, e))
        show_log = True
    finally:
        writers.stop.set()
        if writers.thread.is_alive():
            writers.thread.join()
        agent.stop()
        if ok and not args.keep_files:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("       kept %s (agent log: agent.log)" % work)
            if show_log and os.path.exists(agent.log_path):
                with open(agent.log_path, errors="replace") as f:
                    tail = f.readlines()[-20:]
                print("       agent log, last lines:\n" + "".join("         " + l for l in tail),
                      end="")
    sys.stdout.flush()
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent", default=os.environ.get("EFAWATCH_AGENT"),
                    help="efawatchd to test (or EFAWATCH_AGENT)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--pods", type=int, default=20)
    ap.add_argument("--rate", type=float, default=800,
                    help="mean lines/s per pod (each pod 0.5x..1.5x)")
    ap.add_argument("--duration", type=float, default=45, help="seconds of writing")
    ap.add_argument("--rotate-every", type=float, default=6, help="seconds between rotations")
    ap.add_argument("--keep", type=int, default=4, help="rotated files kept (kubelet MaxFiles-1)")
    ap.add_argument("--kills", type=int, default=2, help="SIGKILLs of the agent per run")
    ap.add_argument("--down", type=float, default=2, help="seconds the agent stays down")
    ap.add_argument("--agent-late", type=float, default=10,
                    help="seconds of writing before the agent first starts")
    ap.add_argument("--history-bytes", default="64Mi")
    ap.add_argument("--settle-timeout", type=float, default=90)
    ap.add_argument("--quiet", type=float, default=5,
                    help="seconds without change after which the counts are final")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep-files", action="store_true",
                    help="keep the pod logs, state and agent log of passed runs too")
    ap.add_argument("--inject-misattribution", type=int, default=0, metavar="N")
    args = ap.parse_args()
    if not args.agent or not os.access(args.agent, os.X_OK):
        ap.error("--agent: no efawatchd at %r" % args.agent)
    # Two rotations of a pod while the agent is down would lose the file between them: the agent
    # keeps its promise only for one (the rotated file its checkpoint names).
    if args.kills < 1 or args.duration - args.agent_late < 10 + 5 * args.kills:
        ap.error("--kills: at least 1, each with 5 s of the agent's run (--duration)")
    if args.agent_late + 2 >= args.keep * args.rotate_every * 0.8:
        ap.error("--agent-late: rotated files would be deleted before the agent first reads them")
    if args.keep < 2:
        ap.error("--keep: at least 2 (kubelet keeps the newest rotated file uncompressed)")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print("crash soak: %s, seed %d, %d pods x ~%.0f lines/s for %.0f s, rotation every ~%.0f s "
          "(keep %d), %d kills, %.0f s down" % (args.agent, seed, args.pods, args.rate,
                                               args.duration, args.rotate_every, args.keep,
                                               args.kills, args.down))
    results = []
    for r in range(1, args.runs + 1):
        results.append(run_once(args, r, random.Random(seed + r)))
    print("crash soak: %d of %d runs passed" % (sum(results), len(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
