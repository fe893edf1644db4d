#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the longest function definitions in our C++ sources, longest first.

    scripts/function_lengths.py [--top N] [--max LINES] [DIR ...]   (default: daemon probes lib cli)

A definition starts at a line in column 0 that opens a body (`... ) {`, `... ) const {`, a
constructor's initializer list) and ends at the next `}` in column 0: clang-format puts every
free function and out-of-class member there. Functions whose body is mostly a table (brace
initializer rows, or marked by a `// function-length: table` comment on the line above) are
reported with "table" and not held to --max, which exits 1 when a
non-table function is longer.
"""
import argparse
import pathlib
import re
import sys

# A signature's first line: it opens the body itself, or continues on the next line (ends in
# "(" or ",", or a return type on its own before a qualified name).
START = re.compile(r"^[A-Za-z_~][^;{}]*\)[^;{}]*\{\s*$|^[A-Za-z_~][^;{}]*\($|"
                   r"^[A-Za-z_~][^;{}=]*\([^;{}]*,\s*$")


def functions(path):
    lines = path.read_text(errors="replace").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if START.match(line) and not line.startswith(("namespace", "struct", "class", "enum",
                                                      "union", "extern", "template", "#")):
            # A signature can span lines; the body opens at the first line ending in "{".
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith("{"):
                if lines[j].rstrip().endswith(";"):
                    break
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and lines[k] != "}" and not lines[k].startswith("}"):
                    k += 1
                body = lines[j + 1:k]
                # Table rows: initializer braces, string literals (help texts, flag names),
                # comments between rows.
                rows = sum(1 for b in body
                           if re.match(r'^\s*(\{|\}|"|//|T::|[A-Za-z_:]+\(?\{?"|\{"|[a-z_]+,$)', b))
                table = (len(body) > 20 and rows * 10 > len(body) * 6) or (
                    i > 0 and "function-length: table" in lines[i - 1])
                name = re.sub(r"\(.*", "", line).split()[-1] if "(" in line else line
                yield (k - i + 1, f"{path}:{i + 1}", name, table)
                i = k + 1
                continue
        i += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--max", type=int, default=0)
    ap.add_argument("dirs", nargs="*", default=["daemon", "probes", "lib", "cli"])
    a = ap.parse_args()
    found = []
    for d in a.dirs:
        for p in sorted(pathlib.Path(d).rglob("*.cc")):
            found.extend(functions(p))
    found.sort(key=lambda f: -f[0])
    for n, where, name, table in found[: a.top]:
        print(f"{n:5d}  {where}  {name}{'  (table)' if table else ''}")
    over = [f for f in found if a.max and f[0] > a.max and not f[3]]
    if over:
        print(f"{len(over)} function(s) longer than {a.max} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
