#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The compiler enforces the tiers: a file of a lower tier that includes a header of a higher one
(or of a module its target does not link) does not compile.

For one source file of each checked target, takes its real compile command from the build's
compile_commands.json, keeps the include paths and the language flags, and compiles a probe
that includes (a) a header of the target's own module or a module it links: must compile; (b) a
header of a higher tier: must fail with "No such file". A global include path (the whole source
root on every target) would make (b) compile, and this fails.

    check_compile.py <source dir> <build dir>
"""
import json
import pathlib
import shlex
import subprocess
import sys
import tempfile

# (a source of the target, a header it may include, headers of higher tiers it must not reach)
CASES = [
    ("lib/nccl/verdict.cc", "lib/common/clock.h",
     ["daemon/logs/pod_analysis.h", "probes/fabric/probe.h", "cli/status.h"]),
    ("lib/common/finding.cc", "lib/common/clock.h",
     ["lib/nccl/verdict.h", "daemon/app.h"]),
    ("probes/fabric/endpoint.cc", "lib/common/clock.h",
     ["daemon/agent/agent_handler.h", "daemon/rpc/grpc_edge.h"]),
    ("daemon/logs/tailer.cc", "lib/common/clock.h",
     ["daemon/rpc/grpc_edge.h", "cli/status.h"]),
    ("daemon/agent/operations.cc", "daemon/agent/agent_handler.h",
     ["daemon/rpc/grpc_edge.h", "daemon/app.h"]),
]


def flags_of(entry):
    args = entry.get("arguments") or shlex.split(entry["command"])
    keep, i = [args[0]], 1
    while i < len(args):
        a = args[i]
        if a in ("-I", "-isystem", "-iquote"):
            keep += [a, args[i + 1]]
            i += 2
            continue
        if a.startswith(("-I", "-isystem", "-std=", "-D")):
            keep.append(a)
        i += 1
    return keep


def compiles(flags, header, cwd):
    with tempfile.NamedTemporaryFile("w", suffix=".cc", delete=False) as f:
        f.write(f'#include "{header}"\n')
        probe = f.name
    r = subprocess.run(flags + ["-fsyntax-only", "-x", "c++", probe], cwd=cwd,
                       capture_output=True, text=True)
    pathlib.Path(probe).unlink()
    return r.returncode == 0, r.stderr


def main():
    src, build = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
    db = json.loads((build / "compile_commands.json").read_text())
    by_file = {str(pathlib.Path(e["file"]).resolve()): e for e in db}
    failures = 0
    for source, allowed, forbidden in CASES:
        entry = by_file.get(str(src / source))
        if entry is None:
            print(f"FAIL: {source} is not in compile_commands.json")
            failures += 1
            continue
        flags = flags_of(entry)
        ok, err = compiles(flags, allowed, entry["directory"])
        if not ok:
            print(f"FAIL: {source}'s target cannot include {allowed}:\n{err}")
            failures += 1
        for header in forbidden:
            ok, err = compiles(flags, header, entry["directory"])
            if ok:
                print(f"FAIL: {source}'s target can include {header} (a higher tier)")
                failures += 1
            elif "No such file" not in err:
                print(f"FAIL: including {header} from {source}'s target failed for another "
                      f"reason:\n{err}")
                failures += 1
    if failures:
        return 1
    print(f"{len(CASES)} targets: each compiles its own tier's headers and cannot reach "
          f"{sum(len(c[2]) for c in CASES)} headers of higher tiers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
