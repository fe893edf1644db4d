#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The public surface (docs/compatibility.md) against docs/public-surface.txt.

The surface is read from the sources that define it, no build needed: metric names and labels
from docs/metrics.md (generated from the metric table, a unit test keeps it current), alert
names from deploy/prometheus/efawatch-rules.yml, efawatchd flags from docs/configuration.md
(generated from --help, kept current likewise), gRPC methods of efawatch.v1 from proto/, and
the kustomize components and overlays from deploy/kubernetes.

Fails when
  - something is public and not listed (list it, and say so in CHANGELOG.md);
  - something listed is gone without a `deprecated` line for it, or before its overlap ended:
    a name deprecated in x.y is kept (both names exported) through x.y and may go from the
    next minor release on; the deprecation must name a replacement that exists and appear in
    CHANGELOG.md;
  - a metric's labels changed without the same (a label set is part of the name's contract).

Usage: check_surface.py [--write] [--self-test]
  --write      rewrite the list from the sources (keeps the deprecated lines); then review the
               diff and add the CHANGELOG note
  --self-test  show that a removed metric, alert and flag fail, and that a deprecation lets them go
"""
import os
import re
import sys

import yaml

SRC = os.environ.get("EFAWATCH_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LIST = "docs/public-surface.txt"
KINDS = ("metric", "alert", "flag", "rpc", "component", "overlay")


def read(rel):
    with open(os.path.join(SRC, rel)) as f:
        return f.read()


def current_surface():
    """{(kind, name): detail} of what the sources define now; detail is a metric's labels."""
    s = {}
    for m in re.finditer(r"^\| `(efawatch_[a-z0-9_]+)` \| [a-z]+ \| ([^|]*)\|", read("docs/metrics.md"),
                         re.M):
        labels = ",".join(x.strip() for x in m.group(2).split(",") if x.strip())
        s[("metric", m.group(1))] = labels or "-"
    rules = yaml.safe_load(read("deploy/prometheus/efawatch-rules.yml"))
    for g in rules["groups"]:
        for r in g["rules"]:
            if "alert" in r:
                s[("alert", r["alert"])] = ""
    for m in re.finditer(r"^  (--[a-z0-9-]+)", read("docs/configuration.md"), re.M):
        s[("flag", m.group(1))] = ""
    proto_dir = os.path.join(SRC, "proto/efawatch/v1")
    for name in sorted(os.listdir(proto_dir)):
        if not name.endswith(".proto"):
            continue
        service = None
        for line in read(os.path.join("proto/efawatch/v1", name)).splitlines():
            sm = re.match(r"^service (\w+)", line)
            if sm:
                service = sm.group(1)
            rm = re.match(r"^\s+rpc (\w+)\(", line)
            if rm and service:
                s[("rpc", f"efawatch.v1.{service}/{rm.group(1)}")] = ""
    for kind, folder in (("component", "components"), ("overlay", "overlays")):
        base = os.path.join(SRC, "deploy/kubernetes", folder)
        for name in sorted(os.listdir(base)):
            if os.path.isfile(os.path.join(base, name, "kustomization.yaml")):
                s[(kind, name)] = ""
    return s


def parse_list(text):
    """(listed {(kind, name): detail}, deprecated {(kind, name): (since, replacement)}, errors)."""
    listed, deprecated, errs = {}, {}, []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        f = line.split()
        if f[0] == "deprecated" and len(f) == 5 and f[1] in KINDS and \
                re.fullmatch(r"\d+\.\d+\.\d+", f[3]):
            deprecated[(f[1], f[2])] = (f[3], f[4])
        elif f[0] in KINDS and len(f) in (2, 3):
            listed[(f[0], f[1])] = f[2] if len(f) == 3 else ""
        else:
            errs.append(f"{LIST}:{n}: cannot read '{line}' (kind name [labels] | "
                        "deprecated kind name since-version replacement)")
    return listed, deprecated, errs


def version_of(cmake):
    return re.search(r"^project\(efawatch VERSION (\d+)\.(\d+)\.(\d+)", cmake, re.M).groups()


def check(current, text, version, changelog):
    listed, deprecated, errs = parse_list(text)
    major, minor = int(version[0]), int(version[1])
    for key, detail in sorted(current.items()):
        if key not in listed:
            errs.append(f"{key[0]} {key[1]} is public and not in {LIST}: add it there and to "
                        "CHANGELOG.md (or run check_surface.py --write and review)")
        elif key[0] == "metric" and listed[key] != detail and key not in deprecated:
            errs.append(f"metric {key[1]}: labels {detail}, {LIST} says {listed[key]}: a label "
                        "change is a rename (docs/compatibility.md)")
    for key in sorted(listed):
        dep = deprecated.get(key)
        if key in current:
            continue
        if dep is None:
            errs.append(f"{key[0]} {key[1]} is in {LIST} but gone, with no deprecation: keep it "
                        "one minor release beside its replacement (docs/compatibility.md)")
            continue
        since = [int(x) for x in dep[0].split(".")]
        if (major, minor) <= (since[0], since[1]):
            errs.append(f"{key[0]} {key[1]} deprecated in {dep[0]} is gone in "
                        f"{'.'.join(version)}: it stays through {since[0]}.{since[1]}.x")
    for key, (since, replacement) in sorted(deprecated.items()):
        if key not in listed:
            errs.append(f"deprecated {key[0]} {key[1]} is not listed: keep its line")
        if (key[0], replacement) not in current:
            errs.append(f"deprecated {key[0]} {key[1]}: replacement {replacement} does not exist")
        if key[1] not in changelog:
            errs.append(f"deprecated {key[0]} {key[1]}: no CHANGELOG.md note names it")
    return errs


def render(current, old_text):
    _, deprecated, _ = parse_list(old_text)
    header = [l for l in old_text.splitlines() if l.startswith("#")] or [
        "# The public surface (docs/compatibility.md): one line per stable name, kind name [labels].",
    ]
    lines = header + [""]
    listed_old, _, _ = parse_list(old_text)
    keys = set(current) | {k for k in listed_old if k in deprecated}
    for kind in KINDS:
        for key in sorted(k for k in keys if k[0] == kind):
            detail = current.get(key, listed_old.get(key, ""))
            lines.append(f"{kind} {key[1]}" + (f" {detail}" if detail else ""))
    if deprecated:
        lines.append("")
        for key, (since, repl) in sorted(deprecated.items()):
            lines.append(f"deprecated {key[0]} {key[1]} {since} {repl}")
    return "\n".join(lines) + "\n"


def self_test():
    current = {("metric", "efawatch_a_total"): "x", ("metric", "efawatch_b_total"): "x",
               ("alert", "EfawatchA"): "", ("flag", "--a"): ""}
    full = "metric efawatch_a_total x\nmetric efawatch_b_total x\nalert EfawatchA\nflag --a\n"
    ok = lambda errs, what: errs and sys.exit(f"self-test: {what}: {errs}")
    bad = lambda errs, what: errs or sys.exit(f"self-test: {what} should have failed")
    ok(check(current, full, ("0", "1", "0"), ""), "the same surface")
    for kind, name in (("metric", "efawatch_a_total"), ("alert", "EfawatchA"), ("flag", "--a")):
        gone = {k: v for k, v in current.items() if k != (kind, name)}
        bad(check(gone, full, ("0", "1", "0"), ""), f"{kind} {name} removed")
    bad(check({**current, ("flag", "--b"): ""}, full, ("0", "1", "0"), ""), "an unlisted flag")
    bad(check({**current, ("metric", "efawatch_a_total"): "y"}, full, ("0", "1", "0"), ""),
        "a label change")
    gone = {k: v for k, v in current.items() if k != ("metric", "efawatch_a_total")}
    dep = full + "deprecated metric efawatch_a_total 0.1.0 efawatch_b_total\n"
    note = "efawatch_a_total is deprecated"
    bad(check(gone, dep, ("0", "1", "3"), note), "a removal within the overlap release")
    ok(check(current, dep, ("0", "1", "3"), note), "both names during the overlap")
    ok(check(gone, dep, ("0", "2", "0"), note), "a removal after the overlap")
    bad(check(gone, dep, ("0", "2", "0"), ""), "a deprecation without a CHANGELOG note")
    bad(check(current, full + "deprecated metric efawatch_a_total 0.1.0 efawatch_c_total\n",
              ("0", "1", "0"), note), "a deprecation whose replacement does not exist")
    print("self-test: removals, unlisted names and label changes fail; deprecations let names go")


def main():
    if "--self-test" in sys.argv:
        self_test()
        return
    current = current_surface()
    path = os.path.join(SRC, LIST)
    text = open(path).read() if os.path.exists(path) else ""
    if "--write" in sys.argv:
        with open(path, "w") as f:
            f.write(render(current, text))
        return
    errs = check(current, text, version_of(read("CMakeLists.txt")), read("CHANGELOG.md"))
    for e in errs:
        print(e)
    if errs:
        sys.exit(1)
    counts = {k: sum(1 for key in current if key[0] == k) for k in KINDS}
    print("public surface as listed: " + ", ".join(f"{n} {k}s" for k, n in counts.items()))


if __name__ == "__main__":
    main()
