#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the SBOM of the image scripts/build-image.sh packs, as SPDX 2.3 JSON on stdout.

One package for efawatch (its three binaries), one per Debian package a file of the image came
from (name, version, a purl), and every regular file of the image with its SHA-256, each tied to
the package that contains it. Deterministic: the same root filesystem and inputs give the same
bytes (sorted, no clock read; the creation time is SOURCE_DATE_EPOCH's, passed in).

Usage: image-sbom.py --rootfs DIR --files LIST --owners DPKG_S_OUTPUT --versions PKG_TAB_VERSION
                     --version V --revision R --created RFC3339 --source URL
"""
import argparse
import hashlib
import json
import os
import re


def spdx_id(text):
    return "SPDXRef-" + re.sub(r"[^A-Za-z0-9.-]", "-", text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("rootfs", "files", "owners", "versions", "version", "revision", "created",
                 "source"):
        ap.add_argument("--" + flag, required=True)
    a = ap.parse_args()

    files = [l for l in open(a.files).read().splitlines() if l]
    owner = {}  # path as dpkg knows it -> package (architecture qualified)
    for line in open(a.owners).read().splitlines():
        pkgs, sep, path = line.partition(": ")
        if sep and not line.startswith("diversion") and "," not in pkgs:
            owner[path.strip()] = pkgs.strip()
    versions = dict(l.split("\t", 1) for l in open(a.versions).read().splitlines() if "\t" in l)

    efawatch = {
        "SPDXID": "SPDXRef-Package-efawatch",
        "name": "efawatch",
        "versionInfo": a.version,
        "downloadLocation": f"git+{a.source}@{a.revision}",
        "licenseConcluded": "Apache-2.0",
        "licenseDeclared": "Apache-2.0",
        "copyrightText": "NOASSERTION",
        "supplier": "NOASSERTION",
        "filesAnalyzed": False,
        "comment": f"efawatchd, efawatch and efawatch-rpc built from revision {a.revision}",
    }
    packages = {}
    out_files, relationships = [], []
    for path in files:
        with open(os.path.join(a.rootfs, path.lstrip("/")), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        fid = spdx_id("File" + path)
        out_files.append({"SPDXID": fid, "fileName": "." + path,
                          "checksums": [{"algorithm": "SHA256", "checksumValue": digest}],
                          "licenseConcluded": "NOASSERTION", "copyrightText": "NOASSERTION"})
        pkg = owner.get(path) or (owner.get(path[4:]) if path.startswith("/usr/lib/") else None)
        if path.startswith("/usr/local/bin/"):
            relationships.append(("SPDXRef-Package-efawatch", "CONTAINS", fid))
            continue
        if pkg is None:
            continue
        name, _, arch = pkg.partition(":")
        pid = spdx_id("Package-deb-" + pkg)
        if pid not in packages:
            version = versions.get(pkg) or versions.get(name) or "NOASSERTION"
            purl = f"pkg:deb/debian/{name}@{version}" + (f"?arch={arch}" if arch else "")
            packages[pid] = {
                "SPDXID": pid, "name": name, "versionInfo": version,
                "downloadLocation": "NOASSERTION", "licenseConcluded": "NOASSERTION",
                "licenseDeclared": "NOASSERTION", "copyrightText": "NOASSERTION",
                "supplier": "Organization: Debian", "filesAnalyzed": False,
                "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER",
                                  "referenceType": "purl", "referenceLocator": purl}],
            }
        relationships.append((pid, "CONTAINS", fid))

    image_id = "SPDXRef-Image-efawatchd"
    image = {"SPDXID": image_id, "name": "efawatchd", "versionInfo": a.version,
             "downloadLocation": "NOASSERTION", "licenseConcluded": "NOASSERTION",
             "licenseDeclared": "NOASSERTION", "copyrightText": "NOASSERTION",
             "supplier": "NOASSERTION", "filesAnalyzed": False,
             "primaryPackagePurpose": "CONTAINER"}
    content = hashlib.sha256("\n".join(f["checksums"][0]["checksumValue"] + " " + f["fileName"]
                                       for f in out_files).encode()).hexdigest()
    doc = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": f"efawatchd-{a.version}",
        "documentNamespace": f"{a.source}/spdx/efawatchd-{a.version}-{content[:16]}",
        "creationInfo": {"created": a.created, "creators": ["Tool: efawatch-build-image"]},
        "documentDescribes": [image_id],
        "packages": [image, efawatch] + [packages[k] for k in sorted(packages)],
        "files": out_files,
        "relationships": [{"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
                           "relatedSpdxElement": image_id}] +
                         [{"spdxElementId": image_id, "relationshipType": "CONTAINS",
                           "relatedSpdxElement": p["SPDXID"]}
                          for p in [efawatch] + [packages[k] for k in sorted(packages)]] +
                         [{"spdxElementId": s, "relationshipType": r, "relatedSpdxElement": o}
                          for s, r, o in relationships],
    }
    print(json.dumps(doc, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
