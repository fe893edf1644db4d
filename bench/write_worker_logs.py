#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes Ray Train workers' output into log files, for bench/ray_volumes.sh.

Each file of the list (one per line: path, host, node IP, pid, tab-separated) is one training
worker. `init` appends the NCCL INFO block a worker prints when its communicator comes up (run
before the agent starts: the files it finds). `run` appends, for SECONDS, RATE lines per second
per file in 20 ms ticks, flushed per tick as a line-buffered process would: training chatter,
and one line in NCCL_EVERY an NCCL INFO record behind Ray's `(RayTrainWorker pid=…, ip=…)`
prefix (half with Ray's ANSI colour codes). `--cri` frames each line as kubelet's CRI log
format, for the same lines written to container logs. Prints the lines it wrote to stdout.
"""
import argparse
import time

CRI = "2026-12-02T10:00:00.000000001Z stdout F "

# NCCL 2.29 with aws-ofi-nccl over EFA, 8 ranks on 2 nodes: what a worker prints at init.
INIT = [
    "NCCL INFO Bootstrap: Using eth0:{ip}<0>",
    "NCCL INFO NCCL version 2.29.7+cuda13.0",
    "NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v9)",
    "NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.16.0",
    "NCCL INFO NET/OFI Selected Provider is efa (found 1 nics)",
    "NCCL INFO Using network Libfabric",
    "NCCL INFO ncclCommInitRank comm 0x{comm:x} rank {rank} nranks 8 cudaDev {dev} nvmlDev {dev} "
    "busId 38000 commId 0x3c9f27d1e04b6a55 - Init START",
    "NCCL INFO comm 0x{comm:x} rank {rank} nRanks 8 nNodes 2 localRanks 4 localRank {dev} MNNVL 0",
    "NCCL INFO Channel 00/0 : {rank}[{dev}] -> {peer}[{dev}] [send] via NET/Libfabric/0/GDRDMA",
    "NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "NCCL INFO ncclCommInitRank comm 0x{comm:x} rank {rank} nranks 8 cudaDev {dev} nvmlDev {dev} "
    "busId 38000 commId 0x3c9f27d1e04b6a55 - Init COMPLETE",
]

# Steady state: the records a job keeps printing (new channels and communicators of FSDP's
# process groups, proxy progress), cycled.
STEADY = [
    "NCCL INFO Channel {ch:02d}/0 : {rank}[{dev}] -> {peer}[{dev}] [send] "
    "via NET/Libfabric/0/GDRDMA",
    "NCCL INFO Channel {ch:02d}/0 : {peer}[{dev}] -> {rank}[{dev}] [receive] "
    "via NET/Libfabric/0/GDRDMA",
    "NCCL INFO Connected all trees",
    "NCCL INFO NET/OFI Selected Provider is efa (found 1 nics)",
]


class Worker:
    def __init__(self, line, i, cri):
        path, host, ip, pid = line.rstrip("\n").split("\t")
        self.f = open(path, "a", buffering=1 << 16)
        self.cri = cri
        self.dev = i % 4
        self.rank = (0 if ip.endswith(".11") else 4) + self.dev
        self.fields = dict(ip=ip, rank=self.rank, dev=self.dev, peer=(self.rank + 4) % 8,
                           comm=0x5619D04C0000 + i * 0x1F30)
        tag = "(RayTrainWorker pid=%s, ip=%s)" % (pid, ip)
        self.prefix = ("\x1b[36m%s\x1b[0m " % tag if i % 2 else tag + " ")
        self.origin = "%s:%s:%s [%d] " % (host, pid, pid, self.dev)
        self.n = 0

    def write(self, text):
        self.f.write((CRI if self.cri else "") + text + "\n")

    def nccl(self, template, **extra):
        self.write(self.prefix + self.origin + template.format(**self.fields, **extra))

    def line(self, nccl_every):
        self.n += 1
        if self.n % nccl_every == 0:
            self.nccl(STEADY[(self.n // nccl_every) % len(STEADY)], ch=self.n % 32)
        else:
            self.write("epoch 0 step %d loss %.4f lr 3.0e-04 tokens/s 41236" %
                       (self.n, 2.0 / (1 + self.n * 1e-3)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["init", "run"])
    p.add_argument("files", help="list of path<TAB>host<TAB>ip<TAB>pid")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--rate", type=float, default=20, help="lines per second per file")
    p.add_argument("--nccl-every", type=int, default=5)
    p.add_argument("--cri", action="store_true")
    a = p.parse_args()
    with open(a.files) as f:
        workers = [Worker(l, i, a.cri) for i, l in enumerate(f) if l.strip()]
    total = 0
    if a.mode == "init":
        for w in workers:
            w.write(":actor_name:RayTrainWorker")
            for t in INIT:
                w.nccl(t)
            total += 1 + len(INIT)
    else:
        start = time.monotonic()
        while True:
            tick = time.monotonic()
            elapsed = min(tick - start, a.seconds)
            due = int(elapsed * a.rate)  # lines each file should have written by now
            for w in workers:
                while w.n < due:
                    w.line(a.nccl_every)
                    total += 1
                w.f.flush()
            if elapsed >= a.seconds:
                break
            time.sleep(max(0.0, 0.020 - (time.monotonic() - tick)))
    for w in workers:
        w.f.close()
    print(total)


if __name__ == "__main__":
    main()
