#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A decision for every exported metric: each metric of docs/metrics.md (generated from
lib/common/metric_table.cc) is read by a rule of deploy/prometheus/efawatch-rules.yml or a panel
of dashboards/*.json, or is listed under "Debug only" there (DebugOnlyMetrics() in the table),
and none listed there is read by a rule or panel (the list would then lie). Exits 1 with one
line per problem.
"""
import os
import pathlib
import re
import sys

SOURCE = pathlib.Path(os.environ.get("EFAWATCH_SOURCE_DIR", pathlib.Path(__file__).parents[3]))


def main():
    doc = (SOURCE / "docs/metrics.md").read_text()
    table, _, debug_part = doc.partition("\n## Debug only\n")
    names = re.findall(r"^\| `(efawatch_\w+)` \|", table, re.M)
    debug = set(re.findall(r"^- `(efawatch_\w+)`$", debug_part, re.M))
    readers = (SOURCE / "deploy/prometheus/efawatch-rules.yml").read_text() + "".join(
        p.read_text() for p in sorted((SOURCE / "dashboards").glob("*.json")))

    def read(n):
        return re.search(re.escape(n) + r"(_bucket|_sum|_count)?(?![A-Za-z0-9_:])", readers)

    errs = []
    if not names:
        errs.append("docs/metrics.md lists no metric")
    for n in names:
        if read(n) and n in debug:
            errs.append(f"{n}: listed debug-only in docs/metrics.md, but a rule or panel reads it")
        elif not read(n) and n not in debug:
            errs.append(f"{n}: read by no rule or panel and not listed debug-only "
                        "(DebugOnlyMetrics() in lib/common/metric_table.cc, then "
                        "scripts/regen-docs.sh): decide")
    for n in sorted(debug - set(names)):
        errs.append(f"{n}: listed debug-only but not a metric of the table")
    for e in errs:
        print(e, file=sys.stderr)
    if errs:
        return 1
    print(f"{len(names)} metrics: {len(names) - len(debug)} read by a rule or panel, "
          f"{len(debug)} debug-only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
