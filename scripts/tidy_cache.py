#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs clang-tidy on the given files, skipping each file whose clean result is cached.

A file's cache key is a SHA-256 of: the clang-tidy version, .clang-tidy, the clang-tidy arguments,
the file's compile command and its preprocessed text (every header it includes, as ccache hashes a
compilation), with the clone's path replaced by a placeholder so that clones at other paths share
entries. Only a clean result (exit status 0, no diagnostic) is cached; a failing file is analysed
again on every run, so a failure is never hidden.

The cache lives outside the clone, as ccache's does: $EFAWATCH_TIDY_CACHE, else
$XDG_CACHE_HOME/efawatch-tidy, else ~/.cache/efawatch-tidy. EFAWATCH_TIDY_CACHE=off disables it.
CLANG_TIDY names the clang-tidy binary (default: clang-tidy).

Usage: tidy_cache.py BUILD_DIR FILE...   (FILEs relative to the repository root, the cwd)
Exit status: 0 when every file is clean, 1 otherwise.
"""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

EXTRA_ARGS = ["--quiet", "--extra-arg=-Wno-unknown-warning-option"]
PLACEHOLDER = b"@EFAWATCH_ROOT@"


def cache_dir():
    explicit = os.environ.get("EFAWATCH_TIDY_CACHE")
    if explicit == "off":
        return None
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "efawatch-tidy"


def preprocess_args(entry):
    """The compile command turned into a preprocessor run writing to stdout."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        out.append(a)
    return out + ["-E"]


def key_of(root, common, entry):
    """The cache key of one file, or None when it cannot be computed (then it is analysed)."""
    pp = subprocess.run(preprocess_args(entry), cwd=entry["directory"], capture_output=True)
    if pp.returncode != 0:
        return None
    h = hashlib.sha256(common)
    rooted = lambda b: b.replace(root, PLACEHOLDER)
    h.update(rooted(entry.get("command", " ".join(entry.get("arguments", []))).encode()))
    h.update(b"\0")
    h.update(rooted(pp.stdout))
    return h.hexdigest()


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = Path(sys.argv[1]).resolve()
    files = sys.argv[2:]
    root = Path.cwd().resolve()
    tidy = os.environ.get("CLANG_TIDY", "clang-tidy")
    db = {}
    for e in json.loads((build / "compile_commands.json").read_text()):
        db[str((Path(e["directory"]) / e["file"]).resolve())] = e
    cache = cache_dir()
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([tidy, "--version"], capture_output=True, check=True).stdout
    config = (root / ".clang-tidy").read_bytes()
    common = b"\0".join([version, config, " ".join(EXTRA_ARGS).encode(), b""])

    def check(f):
        """(file, skipped, ok, output) for one file."""
        entry = db.get(str((root / f).resolve()))
        key = key_of(str(root).encode(), common, entry) if entry and cache else None
        if key is not None and (cache / key).exists():
            return f, True, True, ""
        run = subprocess.run([tidy, "-p", str(build)] + EXTRA_ARGS + [f], capture_output=True)
        out = run.stdout.decode(errors="replace")
        ok = run.returncode == 0 and "warning:" not in out and "error:" not in out
        if ok and key is not None:
            tmp = cache / f"{key}.{os.getpid()}.tmp"
            tmp.write_text(f + "\n")
            tmp.replace(cache / key)  # atomic: a parallel run never reads half an entry
        if not ok and not out:
            out = run.stderr.decode(errors="replace")
        return f, False, ok, out

    start = time.monotonic()
    skipped = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for f, was_skipped, ok, out in pool.map(check, files):
            skipped += was_skipped
            if not ok:
                failed += 1
                sys.stdout.write(out if out.endswith("\n") else out + "\n")
                print(f"clang-tidy: {f} FAILED", flush=True)
    print(
        f"clang-tidy: {len(files)} files, {skipped} unchanged (cached clean), "
        f"{len(files) - skipped} analysed, {failed} failed, {time.monotonic() - start:.0f} s; "
        f"cache {cache if cache is not None else 'off'}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
