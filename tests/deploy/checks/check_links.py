#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks every relative link of README.md and docs/*.md: the file or directory it names exists
in the repository (and inside it), and its #anchor is a heading of the Markdown file it points
at, as GitHub names headings (lower case, punctuation dropped, spaces to hyphens, -1, -2 ... for
repeats). Links inside code (fenced blocks, `spans`) are not links; absolute URLs are not
checked (no network here). Anchors into files other than Markdown (e.g. #L10 of source) are not
checked, only that the file exists.

    check_links.py                 (the source tree: EFAWATCH_SOURCE_DIR, else three levels up)
    check_links.py --self-test     (each rule shown to reject a broken page)

Exits 1 with one line per broken link: file:line: target: why.
"""
import os
import pathlib
import re
import sys
import tempfile
import unicodedata

# [text](target "title") with balanced parentheses one level deep in the target; images too.
INLINE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]"
                    r"\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+\"[^\"]*\")?\s*\)")
# [label]: target
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
# <a href="..."> and explicit anchors <a id="..."> / <a name="...">
HREF = re.compile(r"<a\s[^>]*href=\"([^\"]+)\"", re.I)
HTML_ANCHOR = re.compile(r"<a\s[^>]*(?:id|name)=\"([^\"]+)\"", re.I)
ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def lines_outside_code(text, blank_spans=True):
    """(line number, line) of every line outside fenced code blocks; inline code spans blanked
    unless blank_spans is false (headings keep their code's text)."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        if blank_spans:
            line = re.sub(r"(`+)(?:(?!\1).)+?\1", lambda s: " " * len(s.group(0)), line)
        yield n, line


def slug(heading):
    """GitHub's anchor for a heading's text (github-slugger): the rendered text in lower case,
    every character that is not a letter, mark, digit, connector (_), space or hyphen dropped,
    spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)                         # inline HTML tags
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)               # _emphasis_, not snake_case
    keep = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in " -" or cat[0] in "LMN" or cat == "Pc":
            keep.append(ch)
    return "".join(keep).replace(" ", "-")


_ANCHORS = {}


def anchors(path):
    """Every anchor of a Markdown file: heading slugs (repeats numbered) and HTML anchors."""
    cache = _ANCHORS
    if path not in cache:
        seen = {}
        found = set()
        text = path.read_text(encoding="utf-8")
        for _, line in lines_outside_code(text, blank_spans=False):
            m = ATX.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        found.update(HTML_ANCHOR.findall(text))
        cache[path] = found
    return cache[path]


def links(text):
    """(line number, target) of every link of a Markdown text. A link's text may wrap onto the
    next lines, so the text outside code is searched whole."""
    kept = dict(lines_outside_code(text))
    lines = [kept.get(n, "") for n in range(1, text.count("\n") + 2)]
    prose = "\n".join(lines)
    for rx in (INLINE, HREF):
        for m in rx.finditer(prose):
            yield prose.count("\n", 0, m.start(1)) + 1, m.group(1)
    for n, line in enumerate(lines, 1):
        m = REFERENCE.match(line)
        if m:
            yield n, m.group(1)


def check_file(root, page):
    errs = []
    for n, target in links(page.read_text(encoding="utf-8")):
        where = f"{page.relative_to(root)}:{n}: {target}"
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # an absolute URL, mailto:, ...
        path, _, anchor = target.partition("#")
        # Lexically, not resolve(): a checkout reached through symbolic links stays the root.
        dest = page if not path else pathlib.Path(os.path.normpath(page.parent / path))
        if root not in (dest, *dest.parents):
            errs.append(f"{where}: leaves the repository")
            continue
        if not dest.exists():
            errs.append(f"{where}: no such file or directory")
            continue
        if anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
            errs.append(f"{where}: no heading #{anchor} in {dest.relative_to(root)}")
    return errs


def pages(root):
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp).resolve()
        (root / "docs").mkdir()
        (root / "src").mkdir()
        (root / "src/x.cc").write_text("")
        (root / "docs/b.md").write_text(
            "# B\n## The `--log-glob` flag\n## Ray Train on KubeRay\n## Without cert-manager: "
            "`scripts/make-certs.sh`\n## Same\n## Same\n## Protecting `/metrics`\n"
            "## snake_case and *emphasis*\n<a id=\"custom\"></a>\n```\n## not a heading\n```\n")
        good = ("[a](docs/b.md#the---log-glob-flag) [b](docs/b.md#ray-train-on-kuberay) "
                "[c](docs/b.md#without-cert-manager-scriptsmake-certssh) [d](docs/b.md#same-1) "
                "[e](docs/b.md#protecting-metrics) [f](docs/b.md#snake_case-and-emphasis) "
                "[g](docs/b.md#custom) [h](src/x.cc#L3) [i](src) [j](https://example.com/#x) "
                "`[k](nowhere.md)`\n[l]: docs/b.md#b\n```\n[m](nowhere.md)\n```\n")
        (root / "README.md").write_text(good)
        errs = [e for p in pages(root) for e in check_file(root, p)]
        if errs:
            sys.exit(f"self-test: a page with good links was rejected: {errs}")
        for bad in ["[x](docs/missing.md)", "[x](docs/b.md#nope)", "[x](docs/b.md#same-2)",
                    "[x](docs/b.md#not-a-heading)", "[x](../outside.md)", "[x]: docs/gone.md",
                    "[x](#nothing-here)", "<a href=\"docs/b.md#nope\">x</a>",
                    "[a link whose text\nwraps](docs/b.md#nope)"]:
            (root / "README.md").write_text(bad + "\n")
            _ANCHORS.clear()
            if not check_file(root, root / "README.md"):
                sys.exit(f"self-test: {bad} should have been rejected")
    print("self-test: missing files, missing anchors, links out of the repository and headings "
          "inside code rejected; GitHub's slugs for code, punctuation and repeated headings")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    root = pathlib.Path(os.path.abspath(os.environ.get("EFAWATCH_SOURCE_DIR")
                                        or pathlib.Path(__file__).resolve().parents[3]))
    self_test()
    errs = []
    checked = 0
    for page in pages(root):
        errs += check_file(root, page)
        checked += sum(1 for _ in links(page.read_text(encoding="utf-8")))
    for e in errs:
        print(e, file=sys.stderr)
    if errs:
        sys.exit(1)
    print(f"{len(pages(root))} pages, {checked} links: every relative link and anchor resolves")


if __name__ == "__main__":
    main()
