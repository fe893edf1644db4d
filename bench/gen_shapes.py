#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the 2 %-NCCL pod logs bench/analyze.sh times, one file per shape.

Each NCCL line of a generated NCCL log (bench/gen_nccl_log.py) is followed by 49 lines of
training output, and the result is packaged the way a runtime stores it or a console shows it:

  chatty        plain "step ... loss ..." lines, first line an NCCL line
  trainer       Hugging Face Trainer's metric dicts ({'loss': ...}), first line an NCCL line
  trainer-dict  the same, first line a dict
  cri           chatty, each line a containerd CRI record ("<time> stdout F <line>")
  docker-json   chatty, each line a docker json-file record ({"log":"...\\n",...})
  <envelope>    chatty behind a console's or shipper's envelope, on every line: kubectl-ts,
                kubectl-prefix, ray, mpi, crlf, ansi, compose, syslog, stern, pylog, tab, bom
                (the envelopes the analyzer unwraps; tests/unit/nccl/nccl_test_util.h)

A cycle of about 4 MB is built once and written until the file holds --mb megabytes.
"""
import argparse
import os

ENVELOPES = {
    "kubectl-ts": lambda line, n: "2025-03-04T05:06:07.%09dZ %s" % (n % 10**9, line),
    "kubectl-prefix": lambda line, n: "[pod/train-worker-0/ray-worker] " + line,
    "ray": lambda line, n: "(RayTrainWorker pid=4242, ip=10.0.0.5) " + line,
    "mpi": lambda line, n: "[1,%d]<stdout>:%s" % (n % 2, line),
    "crlf": lambda line, n: line + "\r",
    "ansi": lambda line, n: "\x1b[36m" + line + "\x1b[0m",
    "compose": lambda line, n: "worker-1  | " + line,
    "syslog": lambda line, n: "Dec  5 04:00:00 node1 python[123]: " + line,
    "stern": lambda line, n: "train-worker-0 ray-worker " + line,
    "pylog": lambda line, n: "2025-03-04 05:06:07,123 - INFO - " + line,
    "tab": lambda line, n: "\t" + line,
    "bom": lambda line, n: ("\ufeff" + line) if n == 0 else line,
}
SHAPES = ["chatty", "trainer", "trainer-dict", "cri", "docker-json"] + list(ENVELOPES)


def plain(n, k):
    return "step %d loss 0.%04d lr 3e-4 tokens/s 181234 mem 61.2GiB" % (n, k)


def trainer(n, k):
    return ("{'loss': 1.%04d, 'grad_norm': 0.%d, 'learning_rate': 3e-05, 'epoch': %d.%02d}"
            % (k, n % 1000, n % 7, k))


def json_escape(s):
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x20:
            out.append("\\u%04x" % ord(c))
        else:
            out.append(c)
    return "".join(out)


def cycle(nccl_lines, shape):
    """The lines of one cycle: each NCCL line, then 49 training lines."""
    make = trainer if shape.startswith("trainer") else plain
    lines = []
    for i, rec in enumerate(nccl_lines):
        if shape == "trainer-dict":
            lines.extend(make(i, k) for k in range(49))
            lines.append(rec)
        else:
            lines.append(rec)
            lines.extend(make(i, k) for k in range(49))
    if shape == "cri":
        return ["2025-03-04T05:06:07.%09dZ stdout F %s" % (n, l) for n, l in enumerate(lines)]
    if shape == "docker-json":
        return ['{"log":"%s\\n","stream":"stdout","time":"2025-03-04T05:06:07.%09dZ"}'
                % (json_escape(l), n) for n, l in enumerate(lines)]
    if shape in ENVELOPES:
        wrap = ENVELOPES[shape]
        return [wrap(l, n) for n, l in enumerate(lines)]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nccl", required=True, help="a generated NCCL log")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--mb", type=int, default=400)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    args = ap.parse_args()
    nccl_lines = []
    with open(args.nccl, encoding="utf-8", errors="replace") as f:
        for line in f:
            nccl_lines.append(line.rstrip("\n"))
            if len(nccl_lines) >= 1600:  # ~4 MB of output per cycle
                break
    for shape in args.shapes.split(","):
        if shape not in SHAPES:
            raise SystemExit("unknown shape %s (one of %s)" % (shape, ",".join(SHAPES)))
        first = "\n".join(cycle(nccl_lines, shape)) + "\n"
        rest = first
        if shape == "bom":
            rest = "\n".join(cycle(nccl_lines, "chatty")) + "\n"
        first_b, rest_b = first.encode(), rest.encode()
        limit = args.mb * 1000 * 1000
        with open(os.path.join(args.out_dir, shape + ".log"), "wb") as o:
            o.write(first_b)
            written = len(first_b)
            while written < limit:
                o.write(rest_b)
                written += len(rest_b)


if __name__ == "__main__":
    main()
