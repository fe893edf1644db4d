#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The agent never opens a file or lists a directory in a pod's secret, projected (service-account
token), configmap or downward-api volume (issue #33).

The real efawatchd runs over a fixture kubelet tree of four Ray worker pods, named by their
directories under the pod log root. Each has an emptyDir with Ray's session layout and NCCL lines
(what the agent is for), and beside it forbidden volumes in kubelet's layout (`..data` ->
`..<timestamp>`, one symlink per key into `..data`) holding files named exactly like Ray worker
logs and NCCL_DEBUG_FILE outputs, Ray-like `session_*/logs` trees, and NCCL lines of a TCP
fallback. Links cross both ways: from the emptyDirs into the forbidden volumes (worker files,
debug files, a directory, `session_latest`, a session directory, and a `logs` directory swapped
for a link while the agent follows it) and from a secret volume into the emptyDir. While the
agent runs, the forbidden files are appended to, new ones appear, and kubelet updates a secret in
place (new timestamp directory, `..data` swapped), so it rescans many times.

Every directory of the forbidden volumes, from `volumes/<plugin>` down, is watched:
  - fanotify (FAN_OPEN, FAN_ACCESS, FAN_ONDIR, FAN_EVENT_ON_CHILD inode marks) where the test may
    use it (root with CAP_SYS_ADMIN): each event names the process, so any open by the agent's
    pid fails the test, whatever the test itself writes meanwhile;
  - inotify always (IN_OPEN, IN_ACCESS, IN_CLOSE_NOWRITE): inotify names no process, so the test
    never reads or lists those directories while it watches and counts its own opens for writing;
    any read-only open or listing (IN_CLOSE_NOWRITE at the latest when the agent exits), any read,
    and any open beyond the test's own is the agent's.
Listing `<uid>/volumes/` itself is allowed (it names volume plugins, and is how the emptyDirs are
found); the forbidden plugin directories and everything below them are not.

Controls, in every run: the same watchers must see the agent open the emptyDir's worker file
(their marks see the agent at all), and after the agent stops, `cat` of a secret file and `ls` of
a secret directory must be caught (the forbidden directories are really watched). The scrape
must show each pod's emptyDir verdict (EFA, no TCP fallback) with exactly the lines written to
allowed files, and the links counted as refused.

To see it fail on the agent, give it a way in, e.g.
  secret_volumes_test.py build/bin/efawatchd \
    --agent-arg='--log-glob={tree}/kubelet/pods/*/volumes/kubernetes.io~secret/*/..data/nccl*.log'
({tree} is the fixture tree). Needs Linux and Python 3; about 8 s.

--race-seconds=N adds three pods whose containers keep swapping a directory of their emptyDir
(the session's logs, the session, a subdirectory) with a link into their secret volume for N
seconds (renameat2 RENAME_EXCHANGE, which any container can do in its emptyDir): the agent checks
a path for links and then lists or opens it by name, so it sometimes lists and reads the secret
(issue #33). That run is registered as secret_volumes_race_test, disabled until this is fixed.
"""
import argparse
import ctypes
import os
import pathlib
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

SOURCE = pathlib.Path(os.environ.get("EFAWATCH_SOURCE_DIR",
                                     pathlib.Path(__file__).resolve().parents[3]))
FIXTURES = SOURCE / "tests/fixtures/nccl"
EFA = (FIXTURES / "ray-worker-efa-2.29.log").read_text().splitlines()
SOCKET = (FIXTURES / "socket-fallback-plugin-missing-2.19.log").read_text().splitlines()

FORBIDDEN_PLUGINS = ("kubernetes.io~secret", "kubernetes.io~projected",
                     "kubernetes.io~configmap", "kubernetes.io~downward-api")
NS = "ray"
# Ray's worker file names: worker-<worker id, 56 hex>-<job id, 8 hex>-<pid>.out|.err
WORKER = "worker-5c1d9e2a7b3f4e6d8a0c2b4d6f8e1a3c5b7d9f0e2a4c6b8d0f1e3a5c-02000000-"
SESSION = "session_2026-03-02_09-00-00_000001_7"
CONTAINER = "(volume:ray-logs)"


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


class Writer:
    """Every write the test makes once the watch runs goes through here, so that inotify's
    IN_OPEN events can be told from the agent's: opens per real path."""

    def __init__(self):
        self.opens = {}
        self.files = set()  # every file written, by real path

    def append(self, path, lines):
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, "".join(l + "\n" for l in lines).encode())
        finally:
            os.close(fd)
        real = os.path.realpath(path)
        self.opens[real] = self.opens.get(real, 0) + 1
        self.files.add(real)


# --- kubelet's layout -------------------------------------------------------------------------

def kubelet_timestamp(n):
    # AtomicWriter: os.MkdirTemp(dir, "..2006_01_02_15_04_05.") -> ..<UTC time>.<random digits>
    return f"..2026_03_02_08_59_{58 + n:02d}.{1180346912 + n}"


def kubelet_volume(w, volume, files, n=0):
    """Writes `files` ({relative path: lines}) as kubelet's AtomicWriter lays out a secret,
    configmap, projected or downward-api volume; returns the timestamp directory."""
    ts = volume / kubelet_timestamp(n)
    for rel, lines in files.items():
        w.append(ts / rel, lines)
    os.symlink(ts.name, volume / "..data")
    for top in sorted({rel.split("/")[0] for rel in files}):
        os.symlink(f"..data/{top}", volume / top)
    return ts


class Pod:
    def __init__(self, tree, letter, uid):
        self.name = f"rc-gpu-worker-{letter}"
        self.uid = uid
        self.log_dir = tree / "pods" / f"{NS}_{self.name}_{uid}" / "ray-worker"
        self.volumes = tree / "kubelet/pods" / uid / "volumes"
        self.empty = self.volumes / "kubernetes.io~empty-dir/ray-logs"
        self.secret = self.volumes / "kubernetes.io~secret/ray-creds"
        self.token = self.volumes / "kubernetes.io~projected/kube-api-access-7xk2p"
        self.config = self.volumes / "kubernetes.io~configmap/ray-config"
        self.downward = self.volumes / "kubernetes.io~downward-api/podinfo"
        self.expected_lines = 0

    def container_log(self, w):
        w.append(self.log_dir / "0.log",
                 ["2026-03-02T09:00:00.000000001Z stdout F Ray runtime started."])

    def forbidden(self, w):
        """The four forbidden volumes, each with decoys the agent would read in an emptyDir."""
        w_out, s_logs = WORKER + "4242", f"{SESSION}/logs/{WORKER}3105"
        kubelet_volume(w, self.secret, {
            "password": ["hunter2"],
            w_out + ".out": SOCKET, w_out + ".err": SOCKET[:2],
            "nccl.0.log": SOCKET, "nccl.rc.1": SOCKET, "rank0.nccl": SOCKET,
            s_logs + ".out": SOCKET, s_logs + ".err": SOCKET[:2],
            f"{SESSION}/logs/job-driver-raysubmit_7Hc2.log": SOCKET,
            f"{SESSION}/nccl.0.log": SOCKET})
        # Not something kubelet writes, but the agent must not follow it either way.
        os.symlink(f"../../kubernetes.io~empty-dir/ray-logs/{SESSION}/logs/{WORKER}3105.out",
                   self.secret / (WORKER + "5555.out"))
        os.symlink("../../kubernetes.io~empty-dir/ray-logs", self.secret / "ray")
        kubelet_volume(w, self.token, {
            "token": ["eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl"], "ca.crt": ["-----BEGIN"],
            "namespace": [NS], "nccl.1.log": SOCKET, WORKER + "4243.out": SOCKET})
        kubelet_volume(w, self.config, {
            "ray-start.sh": ["ray start"], "nccl.0.log": SOCKET, WORKER + "4244.out": SOCKET,
            s_logs + ".out": SOCKET, f"session_2026-03-02_09-10-00_000003_7/logs/{WORKER}77.out":
            SOCKET})
        kubelet_volume(w, self.downward, {
            "labels": ['ray.io/node-type="worker"'], "annotations": ["a=b"],
            "nccl-podinfo.log": SOCKET})

    def session(self):
        """Ray's session directory, and session_latest as Ray writes it (the container's path)."""
        logs = self.empty / SESSION / "logs"
        logs.mkdir(parents=True)
        os.symlink(f"/tmp/ray/{SESSION}", self.empty / "session_latest")
        return logs


def build(tree, w):
    """Four pods; returns them and the links that the agent must refuse."""
    pods = [Pod(tree, c, f"{i}f0c9a4e-5b1d-4c2e-9a7f-1b2c3d4e5f6{i}")
            for i, c in enumerate("abcd")]
    a, b, c, d = pods
    for p in pods:
        p.container_log(w)
        p.forbidden(w)

    # A: a Ray session (the worker's first half now, the rest while the agent runs), and links
    # from the emptyDir into every forbidden volume, relative and absolute, through `..data`
    # and through the per-key links.
    logs = a.session()
    w.append(logs / f"{WORKER}3105.out", EFA[:7])
    w.append(logs / f"{WORKER}3105.err", ["a warning on stderr"])
    a.expected_lines = len(EFA) + 1
    refused = [logs / f"{WORKER}9001.out", logs / f"{WORKER}9002.err",
               logs / f"{WORKER}9003.out", a.empty / "nccl.token.log",
               a.empty / "nccl.config.log"]
    os.symlink(f"../../../../kubernetes.io~secret/ray-creds/{WORKER}4242.out", refused[0])
    os.symlink(a.secret / f"..data/{WORKER}4242.err", refused[1])
    os.symlink("../../../../kubernetes.io~downward-api/podinfo/nccl-podinfo.log", refused[2])
    os.symlink("../../kubernetes.io~projected/kube-api-access-7xk2p/token", refused[3])
    os.symlink(a.config / "..data/nccl.0.log", refused[4])
    # Directories: the debug-file walk does not enter linked ones.
    os.symlink("../../kubernetes.io~secret/ray-creds", a.empty / "nccl-debug")
    os.symlink(a.token / "..data", a.empty / "sa")

    # B: an NCCL_DEBUG_FILE output; session_latest leads into the secret's Ray-like session.
    w.append(b.empty / "nccl.rc-gpu-worker-b.4410.log", EFA)
    b.expected_lines = len(EFA)
    os.symlink(f"../../kubernetes.io~secret/ray-creds/{SESSION}", b.empty / "session_latest")
    refused.append(b.empty / "session_latest")

    # C: a debug file two levels down; the session directory itself is a link into the
    # configmap, with session_latest absolute as Ray writes it.
    w.append(c.empty / "debug/nccl.rc-gpu-worker-c.77.log", EFA)
    c.expected_lines = len(EFA)
    c_session = "session_2026-03-02_09-10-00_000003_7"
    os.symlink(c.config / f"..data/{c_session}", c.empty / c_session)
    os.symlink(f"/tmp/ray/{c_session}", c.empty / "session_latest")
    refused.append(c.empty / "session_latest")

    # D: an ordinary session until its logs directory is swapped for a link (in run()).
    logs = d.session()
    w.append(logs / f"{WORKER}5120.out", EFA)
    d.expected_lines = len(EFA)
    return pods, refused


def build_racers(tree, w):
    """Three more pods whose containers keep swapping a directory of their emptyDir with a link
    into their own secret volume, racing the agent's check of a path against its use: the logs
    directory of the session, the session directory, a directory the debug-file walk enters."""
    out = []
    for i, (letter, kind) in enumerate((("e", "logs"), ("f", "session"), ("g", "debug"))):
        p = Pod(tree, letter, f"{4 + i}f0c9a4e-5b1d-4c2e-9a7f-1b2c3d4e5f6{4 + i}")
        p.container_log(w)
        p.forbidden(w)
        p.expected_lines = len(EFA)
        if kind == "debug":
            real = p.empty / "debug"
            w.append(real / f"nccl.{p.name}.1.log", EFA)
            target = p.secret / "..data"
        else:
            logs = p.session()
            w.append(logs / f"{WORKER}1.out", EFA)
            real = logs if kind == "logs" else logs.parent
            target = p.secret / ("..data/" + str(real.relative_to(p.empty)))
        alt = real.with_name(real.name + ".swap")
        os.symlink(target, alt)
        out.append((p, real, alt))
    return out


# --- watchers ---------------------------------------------------------------------------------

libc = ctypes.CDLL(None, use_errno=True)
libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int,
                               ctypes.c_char_p]
libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]

IN_ACCESS, IN_CLOSE_WRITE, IN_CLOSE_NOWRITE, IN_OPEN = 0x1, 0x8, 0x10, 0x20
IN_Q_OVERFLOW, IN_IGNORED, IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = (
    0x4000, 0x8000, 0x01000000, 0x02000000, 0x40000000)
FAN_ACCESS, FAN_OPEN, FAN_Q_OVERFLOW, FAN_ONDIR, FAN_EVENT_ON_CHILD = (
    0x1, 0x20, 0x4000, 0x40000000, 0x08000000)
FAN_CLOEXEC, FAN_NONBLOCK, FAN_MARK_ADD, FAN_MARK_DONT_FOLLOW, FAN_MARK_ONLYDIR = (
    0x1, 0x2, 0x1, 0x4, 0x8)
AT_FDCWD = -100


def exchange(a, b):
    """renameat2(RENAME_EXCHANGE): `a` and `b` swap names atomically, as a container can."""
    if libc.renameat2(AT_FDCWD, str(a).encode(), AT_FDCWD, str(b).encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), f"renameat2 {a} {b}")


class Inotify:
    """IN_OPEN, IN_ACCESS and closes on a set of directories; events as (path, mask)."""
    name = "inotify"

    def __init__(self):
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.dirs, self.events, self.overflow = {}, [], False

    def watch(self, d):
        mask = IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE | IN_CLOSE_WRITE | IN_ONLYDIR | IN_DONT_FOLLOW
        wd = libc.inotify_add_watch(self.fd, str(d).encode(), mask)
        if wd < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {d}")
        self.dirs[wd] = str(d)

    def drain(self):
        while select.select([self.fd], [], [], 0)[0]:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            off = 0
            while off < len(data):
                wd, mask, _, n = struct.unpack_from("iIII", data, off)
                name = data[off + 16:off + 16 + n].rstrip(b"\0").decode()
                off += 16 + n
                if mask & IN_Q_OVERFLOW:
                    self.overflow = True
                elif not mask & IN_IGNORED and wd in self.dirs:
                    path = os.path.join(self.dirs[wd], name) if name else self.dirs[wd]
                    self.events.append((path, mask))

    def take(self):
        self.drain()
        out, self.events = self.events, []
        return out

    def close(self):
        os.close(self.fd)


class Fanotify:
    """FAN_OPEN and FAN_ACCESS on a set of directories and their entries; events as
    (pid, path, mask). Needs CAP_SYS_ADMIN: without it Fanotify.open() returns (None, why)."""
    name = "fanotify"

    @classmethod
    def open(cls):
        fd = libc.fanotify_init(FAN_CLOEXEC | FAN_NONBLOCK,
                                os.O_RDONLY | os.O_LARGEFILE | os.O_CLOEXEC)
        if fd < 0:
            return None, os.strerror(ctypes.get_errno())
        return cls(fd), ""

    def __init__(self, fd):
        self.fd, self.events, self.overflow = fd, [], False

    def watch(self, d):
        mask = FAN_OPEN | FAN_ACCESS | FAN_ONDIR | FAN_EVENT_ON_CHILD
        if libc.fanotify_mark(self.fd, FAN_MARK_ADD | FAN_MARK_DONT_FOLLOW | FAN_MARK_ONLYDIR,
                              mask, AT_FDCWD, str(d).encode()) < 0:
            raise OSError(ctypes.get_errno(), f"fanotify_mark {d}")

    def drain(self):
        while select.select([self.fd], [], [], 0)[0]:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            off = 0
            while off < len(data):
                n, _, _, meta, mask, fd, pid = struct.unpack_from("IBBHQii", data, off)
                off += n
                if mask & FAN_Q_OVERFLOW:
                    self.overflow = True
                if fd >= 0:
                    try:
                        path = os.readlink(f"/proc/self/fd/{fd}")
                    finally:
                        os.close(fd)
                    self.events.append((pid, path, mask))

    def take(self):
        self.drain()
        out, self.events = self.events, []
        return out

    def close(self):
        os.close(self.fd)


def directories_below(top):
    """`top` and every real directory under it (links not followed): listed before the watch."""
    out = []
    for root, dirs, _ in os.walk(top, followlinks=False):
        out.append(pathlib.Path(root))
    return out


def describe(mask, bits):
    return "|".join(n for n, b in bits.items() if mask & b) or hex(mask)


IN_BITS = {"IN_OPEN": IN_OPEN, "IN_ACCESS": IN_ACCESS, "IN_CLOSE_NOWRITE": IN_CLOSE_NOWRITE,
           "IN_CLOSE_WRITE": IN_CLOSE_WRITE, "IN_ISDIR": IN_ISDIR}
FAN_BITS = {"FAN_OPEN": FAN_OPEN, "FAN_ACCESS": FAN_ACCESS, "FAN_ONDIR": FAN_ONDIR}


def inotify_reads(events, writer):
    """What in inotify's events the test did not do: reads, read-only closes, listings, and
    opens beyond the test's own."""
    bad, opens = [], {}
    for path, mask in events:
        if mask & (IN_ACCESS | IN_CLOSE_NOWRITE) or (mask & IN_OPEN and mask & IN_ISDIR):
            bad.append(f"{describe(mask, IN_BITS)} {path}")
        elif mask & IN_OPEN:
            opens[path] = opens.get(path, 0) + 1
    for path, n in sorted(opens.items()):
        mine = writer.opens.get(os.path.realpath(path), 0)
        if n > mine:
            bad.append(f"IN_OPEN x{n}, the test's own {mine}: {path}")
    return bad


# --- the agent --------------------------------------------------------------------------------

def start_agent(binary, tree, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EFAWATCH_")}
    for d in ("state", "sys"):
        (tree / d).mkdir(exist_ok=True)
    argv = [binary, "--metrics-listen=127.0.0.1:0", "--grpc-listen=127.0.0.1:0",
            f"--port-file={tree}/ports.json", f"--state-dir={tree}/state",
            f"--sysfs-root={tree}/sys", f"--pod-log-root={tree}/pods",
            f"--pod-volume-root={tree}/kubelet/pods", "--container-rootfs=false",
            "--fabric-responder=false", "--kube-signals=false", "--workload-identity=false",
            "--mesh-discovery=off"] + [a.replace("{tree}", str(tree)) for a in extra]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(tree / "agent.log", "w"))
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        m = re.search(r'"metrics": (\d+)', (tree / "ports.json").read_text()
                      if (tree / "ports.json").exists() else "")
        if m:
            return proc, int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    fail(f"the agent did not start: {(tree / 'agent.log').read_text()[-2000:]}")


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def value(text, series):
    m = re.search(r"^" + re.escape(series) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def series(metric, pod):
    return f'{metric}{{namespace="{NS}",pod="{pod.name}",container="{CONTAINER}"}}'


def wait_for(port, pred, timeout):
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = scrape(port)
        if pred(text):
            return text
        time.sleep(0.1)
    return text


# --- the run ----------------------------------------------------------------------------------

def run(binary, extra, tree, use_fanotify, race_seconds):
    w = Writer()
    pods, refused = build(tree, w)
    a, _, _, d = pods
    racers = build_racers(tree, w) if race_seconds else []
    pods += [p for p, _, _ in racers]

    forbidden = [p.volumes / plugin for p in pods for plugin in FORBIDDEN_PLUGINS]
    watched = [x for top in forbidden for x in directories_below(top)]
    # The controls: the emptyDir where the agent must be seen reading.
    a_logs = a.empty / SESSION / "logs"
    control_file = str(a_logs / f"{WORKER}3105.out")
    watchers = [Inotify()]
    fan, why = Fanotify.open() if use_fanotify else (None, "--no-fanotify")
    if fan:
        watchers.append(fan)
    else:
        print(f"fanotify unavailable ({why}): inotify only, with the test's own writes counted")
    for wt in list(watchers):
        try:
            for x in watched + [a_logs]:
                wt.watch(x)
        except OSError as e:
            if wt is not fan:
                raise
            print(f"fanotify unavailable ({e}): inotify only, with the test's own writes counted")
            watchers.remove(fan)
            fan.close()
    w.opens.clear()

    def watch_new(path):
        for wt in watchers:
            wt.watch(path)

    agent, port = start_agent(binary, tree, extra)
    print(f"agent pid {agent.pid}, metrics 127.0.0.1:{port}; "
          f"{len(watched)} forbidden directories watched by {', '.join(x.name for x in watchers)}")
    started = time.monotonic()
    problems = []
    try:
        # The emptyDirs read: every pod's verdict, and all lines written so far (A: 7 + 1).
        first = {p.name: p.expected_lines for p in pods}
        first[a.name] = 8
        ok = lambda t: all(value(t, series("efawatch_nccl_tcp_fallback", p)) is not None and
                           value(t, series("efawatch_logs_lines_total", p)) == first[p.name]
                           for p in pods)
        text = wait_for(port, ok, 20)
        if not ok(text):
            fail("the emptyDirs were not read within 20 s:\n" + text[-3000:]
                 + (tree / "agent.log").read_text()[-2000:])
        print(f"every pod's emptyDir read, verdicts out, after {time.monotonic() - started:.1f} s")

        # Rounds of changes while the agent rescans (it walks on inotify wake-ups and every
        # second): forbidden files grow and appear, links into them appear in the emptyDir,
        # kubelet swaps a secret's ..data, D's logs directory becomes a link into its secret.
        rounds = 8
        per = (len(EFA) - 7 + rounds - 1) // rounds
        for i in range(rounds):
            for p in pods:
                ts = p.secret / kubelet_timestamp(0)
                if p is a and i >= 3:
                    ts = p.secret / kubelet_timestamp(1)
                w.append(ts / f"{WORKER}4242.out", SOCKET[i:i + 1])
                w.append(ts / "nccl.0.log", SOCKET[i:i + 1])
                w.append(ts / f"{SESSION}/logs/{WORKER}3105.out", SOCKET[i:i + 1])
                w.append(p.token / kubelet_timestamp(0) / "nccl.1.log", SOCKET[i:i + 1])
                w.append(p.config / kubelet_timestamp(0) / f"{WORKER}4244.out", SOCKET[i:i + 1])
                w.append(p.downward / kubelet_timestamp(0) / "nccl-podinfo.log", SOCKET[i:i + 1])
                w.append(ts / f"nccl.new{i}.log", SOCKET)
                w.append(ts / f"{WORKER}70{i}.out", SOCKET)
                os.symlink(f"..data/nccl.new{i}.log", p.secret / f"nccl.new{i}.log")
            w.append(a_logs / f"{WORKER}3105.out", EFA[7 + i * per:7 + (i + 1) * per])
            w.append(a_logs / f"python-core-worker-{i}_3105.log", ["not a worker file"])
            if i == 1:
                link = a_logs / f"{WORKER}9004.out"
                os.symlink(a.secret / f"nccl.new{i}.log", link)
                refused.append(link)
            if i == 2:
                kubelet_update(w, a.secret, watch_new)
            if i == 4:
                # D: the logs directory the agent follows becomes a link into D's secret.
                logs = d.empty / SESSION / "logs"
                os.rename(logs, d.empty / SESSION / "logs.moved")
                os.symlink(d.secret / f"..data/{SESSION}/logs", logs)
                refused.append(logs)
            for wt in watchers:
                wt.drain()
            time.sleep(0.6)
        if racers:
            print(f"racing the agent's checks for {race_seconds} s")
            end = time.monotonic() + race_seconds
            while time.monotonic() < end:
                for _ in range(100):
                    for _, real, alt in racers:
                        exchange(real, alt)
                for p, _, _ in racers:  # a rescan soon (IN_CREATE in a watched directory)
                    w.append(p.empty / "wake", [])
                    os.unlink(p.empty / "wake")
                for wt in watchers:
                    wt.drain()
            for _, real, alt in racers:
                if real.is_symlink():
                    exchange(real, alt)
        text = wait_for(port, lambda t: value(t, series("efawatch_logs_lines_total", a))
                        == a.expected_lines, 10)
        time.sleep(2.5)  # two more full rescans after the last change
        text = scrape(port)
    finally:
        agent.send_signal(signal.SIGTERM)
        try:
            rc = agent.wait(10)
        except subprocess.TimeoutExpired:
            agent.kill()
            rc = agent.wait()
    ran = time.monotonic() - started

    # What the agent did, from the watchers (every fd it had is closed now).
    agent_events = {wt.name: wt.take() for wt in watchers}
    for wt in watchers:
        evs = agent_events[wt.name]
        if wt.overflow:
            problems.append(f"{wt.name}: its queue overflowed; nothing can be concluded")
        if wt.name == "inotify":
            control = [e for e in evs if e[0] == control_file and e[1] & IN_CLOSE_NOWRITE]
            evs = [e for e in evs if not e[0].startswith(str(a_logs))]
            bad = inotify_reads(evs, w)
        else:
            control = [e for e in evs if e[0] == agent.pid and e[1] == control_file]
            # Only the test itself may touch the forbidden volumes while the agent runs.
            bad = [f"pid {pid} ({'the agent' if pid == agent.pid else 'another process'}) "
                   f"{describe(m, FAN_BITS)} {path}" for pid, path, m in evs
                   if pid != os.getpid() and not path.startswith(str(a_logs))]
        if not control:
            problems.append(f"{wt.name}: the control failed: the agent's open of {control_file} "
                            "was not seen")
        bad = sorted({b.replace(f"{tree}/", "") for b in bad})
        problems += [f"{wt.name}: not the test's own, in a forbidden volume: {b}" for b in bad[:12]]
        if len(bad) > 12:
            problems.append(f"{wt.name}: ... and {len(bad) - 12} more")
        print(f"{wt.name}: {len(evs)} events in the forbidden volumes during the run, "
              f"{len(bad)} not the test's own; the agent's open of the emptyDir worker file "
              f"{'seen' if control else 'NOT seen'}")

    # The canary: a reader and a lister in a forbidden volume must be caught by each watcher.
    canary_file = a.secret / kubelet_timestamp(1) / "password"
    canary_dir = a.token / kubelet_timestamp(0)
    cat = subprocess.run(["cat", str(canary_file)], capture_output=True)
    ls = subprocess.run(["ls", str(canary_dir)], capture_output=True)
    if cat.returncode or ls.returncode:
        problems.append(f"canary: cat/ls failed: {cat.stderr} {ls.stderr}")
    for wt in watchers:
        evs = wt.take()
        if wt.name == "inotify":
            caught = inotify_reads(evs, w)
            want = [str(canary_file), str(canary_dir)]
            missing = [x for x in want if not any(x in c for c in caught)]
        else:
            caught = [p for _, p, _ in evs]
            missing = [x for x in (str(canary_file), str(canary_dir)) if x not in caught]
        if missing:
            problems.append(f"{wt.name}: the canary's reads were not seen: {missing}")
    for wt in watchers:
        wt.close()

    # The scrape: the emptyDirs' verdicts with exactly their lines, and the links refused.
    for p in pods[:4]:  # the racers' counts depend on who won each race
        lines = value(text, series("efawatch_logs_lines_total", p))
        if lines != p.expected_lines:
            problems.append(f"{p.name}: {lines} lines counted from its emptyDir, "
                            f"{p.expected_lines} written to files it may read")
        if value(text, series("efawatch_nccl_tcp_fallback", p)) != 0:
            problems.append(f"{p.name}: a TCP fallback verdict: only the forbidden volumes "
                            "hold Socket lines")
        if f'pod="{p.name}",container="{CONTAINER}",network="Libfabric"' not in text:
            problems.append(f"{p.name}: no EFA verdict from its emptyDir")
    n_refused = value(text, "efawatch_logs_files_refused_total") or 0
    if n_refused < len(refused):
        problems.append(f"{n_refused:.0f} links refused, want at least {len(refused)}: "
                        + ", ".join(str(r.relative_to(tree)) for r in refused))
    if rc != 0:
        problems.append(f"the agent exited {rc} on SIGTERM")
    log = (tree / "agent.log").read_text()
    print(f"agent ran {ran:.1f} s; {n_refused:.0f} links refused")
    return problems, log


def kubelet_update(w, volume, watch_new):
    """kubelet's in-place update of a secret: a new timestamp directory with every key, ..data
    swapped through ..data_tmp, the old directory removed (by the names the test wrote: listing
    it here would look like a read)."""
    old = volume / kubelet_timestamp(0)
    new = volume / kubelet_timestamp(1)
    rels = sorted(os.path.relpath(f, old) for f in w.files if f.startswith(f"{old}/"))
    subs = sorted({os.path.dirname(r) for r in rels}, key=len)
    for sub in subs:
        (new / sub).mkdir(exist_ok=True)
        watch_new(new / sub)
    for rel in rels:
        w.append(new / rel, SOCKET + ["rotated"])
    os.symlink(new.name, volume / "..data_tmp")
    os.rename(volume / "..data_tmp", volume / "..data")
    for rel in rels:
        os.unlink(old / rel)
        w.files.discard(str(old / rel))
    for sub in reversed(subs):
        os.rmdir(old / sub)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("efawatchd")
    ap.add_argument("--agent-arg", action="append", default=[],
                    help="one more agent flag ({tree}: the fixture tree), to see the test fail")
    ap.add_argument("--race-seconds", type=float, default=0,
                    help="also race the agent's path checks this long (issue #33: it loses)")
    ap.add_argument("--no-fanotify", action="store_true", help="watch with inotify only")
    ap.add_argument("--keep", action="store_true", help="keep the fixture tree")
    args = ap.parse_args()
    tree = pathlib.Path(tempfile.mkdtemp(prefix="efawatch-secrets-")).resolve()
    t0 = time.monotonic()
    try:
        problems, log = run(args.efawatchd, args.agent_arg, tree, not args.no_fanotify,
                             args.race_seconds)
    finally:
        if args.keep:
            print(f"fixture tree kept: {tree}")
        else:
            shutil.rmtree(tree, ignore_errors=True)
    if problems:
        print("agent log (last lines):\n" + "\n".join(log.splitlines()[-20:]), file=sys.stderr)
        fail("\n  " + "\n  ".join(problems))
    print(f"PASS in {time.monotonic() - t0:.1f} s: no open or listing in a secret, projected, "
          "configmap or downward-api volume")


if __name__ == "__main__":
    main()
