#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The image says what it is and is reproducible (issue #46): scripts/build-image.sh run twice over
# the same binaries, at different wall-clock times, gives the same manifest digest; the image
# carries the OCI labels version, revision, source, licenses and created (version and revision as
# efawatchd --version prints them, created = SOURCE_DATE_EPOCH); the SBOM beside the archive is
# SPDX 2.3 JSON naming efawatch at that version, each binary with the SHA-256 of the image's copy,
# and a Debian package for every library. Two image builds, so about twice tests/image/agent's
# build time; skipped (77) without root or buildah, as that test is.
# Usage: reproducible_test.sh EFAWATCHD EFAWATCH EFAWATCH_RPC
set -euo pipefail
usage="usage: $0 path/to/efawatchd path/to/efawatch path/to/efawatch-rpc"
AGENT=$(realpath "${1:?$usage}")
BIN=$(dirname "$AGENT")
SRC=$(cd "$(dirname "$0")/../../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[[ $(id -u) -eq 0 ]] || skip "needs root (buildah's storage)"
command -v buildah >/dev/null || skip "buildah not installed (scripts/setup.sh installs it)"
command -v python3 >/dev/null || skip "python3 not installed"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export SOURCE_DATE_EPOCH=1700000000

for n in 1 2; do
  "$SRC/scripts/build-image.sh" --bin "$BIN" --out "$WORK/$n/image.tar" >"$WORK/build$n.log" 2>&1 ||
    fail "build $n: $(cat "$WORK/build$n.log")"
  ((n == 1)) && sleep 1 # the second build starts in another second of wall time
done

python3 - "$WORK" "$AGENT" <<'PY'
import hashlib, json, subprocess, sys, tarfile
work, agent = sys.argv[1], sys.argv[2]
def fail(msg):
    sys.exit("FAIL: " + msg)
def blob(tar, digest):
    return json.load(tar.extractfile("blobs/sha256/" + digest.split(":")[1]))
digests = []
for n in (1, 2):
    with tarfile.open(f"{work}/{n}/image.tar") as t:
        index = json.load(t.extractfile("index.json"))
        digests.append(index["manifests"][0]["digest"])
        if n == 1:
            manifest = blob(t, digests[0])
            config = blob(t, manifest["config"]["digest"])
if digests[0] != digests[1]:
    fail(f"two builds of the same binaries: {digests[0]} and {digests[1]}")
line = subprocess.run([agent, "--version"], capture_output=True, text=True, check=True).stdout
version, revision = line.split()[1], line.split()[2].strip("()")
want = {"org.opencontainers.image.version": version,
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.source": "https://github.com/efawatch/efawatch",
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.created": "2023-11-14T22:13:20Z"}
labels = config["config"].get("Labels", {})
for k, v in want.items():
    if labels.get(k) != v:
        fail(f"label {k}: {labels.get(k)!r}, want {v!r}")
if config.get("created") != want["org.opencontainers.image.created"]:
    fail(f"image created {config.get('created')}, want SOURCE_DATE_EPOCH's")
sbom = json.load(open(f"{work}/1/image.tar.spdx.json"))
if sbom.get("spdxVersion") != "SPDX-2.3":
    fail(f"SBOM spdxVersion {sbom.get('spdxVersion')}")
pkgs = {p["SPDXID"]: p for p in sbom["packages"]}
if pkgs.get("SPDXRef-Package-efawatch", {}).get("versionInfo") != version:
    fail("SBOM: no package efawatch at " + version)
files = {f["fileName"]: f for f in sbom["files"]}
owned = {r["relatedSpdxElement"] for r in sbom["relationships"]
         if r["relationshipType"] == "CONTAINS" and r["spdxElementId"] in pkgs}
for b in ("efawatchd", "efawatch", "efawatch-rpc"):
    f = files.get("./usr/local/bin/" + b)
    if f is None:
        fail(f"SBOM: no file /usr/local/bin/{b}")
    stripped = subprocess.run(["strip", "--strip-debug", "-o", f"{work}/{b}",
                               f"{agent.rsplit('/', 1)[0]}/{b}"], check=True)
    digest = hashlib.sha256(open(f"{work}/{b}", "rb").read()).hexdigest()
    if f["checksums"][0]["checksumValue"] != digest:
        fail(f"SBOM: /usr/local/bin/{b} sha256 is not the image's copy")
libs = [f for name, f in files.items() if ".so" in name]
unowned = [f["fileName"] for f in libs if f["SPDXID"] not in owned]
if not libs or unowned:
    fail(f"SBOM: libraries without a Debian package: {unowned[:5]}")
print(f"image {digests[0]}: the same twice, OCI labels {version} ({revision}), "
      f"SBOM of {len(files)} files in {len(pkgs) - 2} Debian packages")
PY
