#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every flag name the documentation mentions exists: each `--name` in README.md, docs/*.md and
the comments and alert texts under deploy/ is a flag of efawatchd (the flag table, as
docs/configuration.md holds `efawatchd --help`; a unit test keeps the two equal), of the
efawatch CLI (its add_option/add_flag calls under cli/), of one of our scripts (their `case`
arms), or of another tool the docs tell the reader to run (OTHER_TOOLS, each with its tool). A
`--name-*` (or `--name*`) stands for a family: some flag must start with it. The runbook once
sent the on-call to `--doctor-interval`, a flag that does not exist (`--doctor-interval-ms`
does); this test fails on such a name and says where it is.

  check_flags.py            (EFAWATCH_SOURCE_DIR, else three levels up)
"""
import os
import pathlib
import re
import sys

SRC = pathlib.Path(os.environ.get("EFAWATCH_SOURCE_DIR", pathlib.Path(__file__).parents[3]))

# Flags of other programs that the docs show in commands, by program. Not ours to check.
OTHER_TOOLS = {
    "kubectl": {"--previous", "--tail", "--field-selector", "--selector", "--from-file", "--raw",
                "--image",
                "--from-literal", "--as", "--timeout", "--namespace", "--context", "--dry-run",
                "--output", "--all-namespaces", "--kustomize", "--server-side", "--watch",
                "--for", "--subresource", "--type"},
    "docker/buildah": {"--build-arg", "--target", "--isolation", "--file", "--tag", "--platform",
                       "--push", "--username", "--password-stdin"},
    "aws": {"--repository-name", "--region", "--query", "--instance-types", "--output"},
    "git": {"--branch", "--depth", "--short", "--no-verify-source"},
    "openssl/curl": {"--days", "--cacert", "--cert", "--key", "--header", "--silent"},
    "prometheus/promtool/amtool": {"--config", "--config.file", "--web.listen-address"},
    "helm": {"--set", "--values", "--version", "--namespace"},
    "kubelet": {"--register-with-taints"},
    "ld (the linker)": {"--gc-sections"},
}
# Written as placeholders for any flag, not as a flag.
PLACEHOLDERS = {"--x-y", "--flag"}

TOKEN = re.compile(r"(?<![A-Za-z0-9_./-])--([a-z][a-z0-9.-]*[a-z0-9])(-?\*)?")


def daemon_flags():
    doc = (SRC / "docs/configuration.md").read_text()
    m = re.search(r"^```\n(.*?)^```\n", doc, re.S | re.M)
    if not m:
        sys.exit("docs/configuration.md: no ``` block with efawatchd --help")
    flags = set(re.findall(r"^\s+--([a-z0-9-]+)", m.group(1), re.M))
    if len(flags) < 50:
        sys.exit(f"docs/configuration.md's help block names only {len(flags)} flags")
    return flags


def cli_flags():
    flags = set()
    # The CLI's commands, `efawatch admission` among them (built in daemon/admission).
    for f in [*(SRC / "cli").rglob("*.cc"), *(SRC / "daemon/admission").rglob("*.cc")]:
        for m in re.finditer(r'add_(?:option|flag)\(\s*"([^"]+)"', f.read_text()):
            flags |= {n[2:] for n in m.group(1).split(",") if n.startswith("--")}
    return flags | {"help", "version"}


def script_flags():
    flags = set()
    for d in ("scripts", "bench", "deploy", "dashboards", "tests"):
        for f in (SRC / d).rglob("*"):
            if f.suffix in (".sh", ".py") and f.is_file():
                text = f.read_text(errors="replace")
                # shell `case` arms: --name) or --name=*) or "--name"; python argparse.
                flags |= set(re.findall(r"^\s*(?:\|\s*)?--([a-z][a-z0-9-]*)[=*)|]", text, re.M))
                flags |= set(re.findall(r"add_argument\(\s*\"--([a-z][a-z0-9-]*)\"", text))
                if f.suffix == ".sh":  # [ "$1" = "--name" ]
                    flags |= set(re.findall(r"= \"--([a-z][a-z0-9-]*)\"", text))
    return flags


def documents():
    yield SRC / "README.md"
    yield from sorted((SRC / "docs").glob("*.md"))
    for f in sorted((SRC / "deploy").rglob("*")):
        if f.suffix in (".yaml", ".yml") and f.is_file():
            yield f


def main():
    ours = daemon_flags() | cli_flags() | script_flags()
    others = set().union(*OTHER_TOOLS.values())
    errs = []
    checked = 0
    for f in documents():
        for n, line in enumerate(f.read_text().splitlines(), 1):
            for m in TOKEN.finditer(line):
                name, family = m.group(1), m.group(2)
                flag = "--" + name
                checked += 1
                if flag in PLACEHOLDERS or flag in others:
                    continue
                if family:
                    if not any(x.startswith(name) for x in ours):
                        errs.append(f"{f.relative_to(SRC)}:{n}: no flag starts with {flag}")
                elif name not in ours:
                    near = sorted(x for x in ours if x.startswith(name) or name.startswith(x))
                    hint = f" (did you mean --{', --'.join(near)}?)" if near else ""
                    errs.append(f"{f.relative_to(SRC)}:{n}: {flag} is no flag of efawatchd, "
                                f"the CLI or our scripts{hint}")
    for e in errs:
        print(e, file=sys.stderr)
    if errs:
        sys.exit(1)
    print(f"{checked} flag mentions in README.md, docs/ and deploy/: every one a flag that exists")


if __name__ == "__main__":
    main()
