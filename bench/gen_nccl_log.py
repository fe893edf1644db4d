#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates a large NCCL_DEBUG=INFO log for bench/analyze.sh from the repository's fixtures.

Every NCCL record of the plain fixtures becomes a template; each template is printed by many
ranks (hosts, pids, tids, devices and ranks varied), interleaved as in a real multi-node job.
Blocks with different pid bases are cycled so the analyzer keeps ~2k processes in play.
"""
import argparse
import glob
import os
import re

PREFIX = re.compile(r"^(.*?)(\S+):(\d+):(\d+) \[(\d+)\] (NCCL (?:INFO|WARN) .*)$")


def templates(fixture_dir):
    out = []
    for path in sorted(glob.glob(os.path.join(fixture_dir, "*.log"))):
        name = os.path.basename(path)
        if name.startswith(("cri-", "docker-json-")):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = PREFIX.match(line.rstrip("\r\n"))
                if m:
                    out.append(m.group(6))
    return out


def block(tmpl, hosts, ranks_per_host, pid_base):
    lines = []
    for i, t in enumerate(tmpl):
        for h in range(hosts):
            for local in range(ranks_per_host):
                rank = h * ranks_per_host + local
                pid = pid_base + rank
                t2 = t.replace("rank 0 ", "rank %d " % rank, 1)
                lines.append("gpu-node-%03d:%d:%d [%d] %s" % (h, pid, pid + 40 + i % 3, local, t2))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--size-mb", type=int, default=1100)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    tmpl = templates(args.fixtures)
    blocks = [block(tmpl, 32, 8, 10000 + 1000 * k).encode() for k in range(8)]
    target = args.size_mb * 1024 * 1024
    written = 0
    with open(args.out, "wb") as f:
        k = 0
        while written < target:
            b = blocks[k % len(blocks)]
            f.write(b)
            written += len(b)
            k += 1
    print("generated %s: %.1f MB" % (args.out, written / 1e6))


if __name__ == "__main__":
    main()
