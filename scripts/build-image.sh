#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the efawatchd image with buildah from `scratch`, over this build's own binaries, and
# writes it as an OCI archive. No registry, no base image and no container engine are needed:
# this is the image CI builds and runs (tests/image). deploy/Dockerfile builds the same image
# for users with docker, on debian:bookworm-slim, by the same rule.
#
# Usage: scripts/build-image.sh [--out FILE] [--bin DIR]
#   --out FILE  the OCI archive to write (default build/efawatchd-image.tar); its SBOM is written
#               beside it as FILE.spdx.json (SPDX 2.3: every file of the image with its SHA-256,
#               and the Debian package each library came from)
#   --bin DIR   where efawatchd, efawatch, efawatch-rpc and efawatch-admission are (default build/bin)
# Environment: SOURCE_DATE_EPOCH (default: the commit time of the source's HEAD, else 0) is the
# image's creation time and every file's modification time; EFAWATCH_IMAGE_SOURCE (default
# https://github.com/efawatch/efawatch) its org.opencontainers.image.source label.
#
# Reproducible: the same binaries and libraries give the same image digest, run after run (fixed
# file times, one layer written in a fixed order, fixed history; tests/image checks it). The
# labels say what the image is: org.opencontainers.image.{title,version,revision,source,
# licenses,created}, version and revision as the agent's --version prints them.
# Then, e.g.: skopeo copy oci-archive:build/efawatchd-image.tar docker://REGISTRY/efawatchd:TAG
#        or: podman load -i build/efawatchd-image.tar
#
# What the image holds (the Dockerfile's rule, with files taken from this machine instead of
# Debian packages installed in a base image):
#   /usr/local/bin/{efawatchd,efawatch,efawatch-rpc,efawatch-admission}  debug info stripped; efawatchd the entrypoint
#   every shared library the binaries link (ldd), those the agent opens only where it uses them
#     (dlopen, invisible to ldd: the Dockerfile's `for so in` list, which tests/deploy keeps in
#     step with the code), the libibverbs providers (libefa) with /etc/libibverbs.d, libfabric's
#     provider directory if the build has one, and every library those need, recursively,
#     each under its own path with its symlinks, plus the dynamic loader
#   /tmp, and /var/lib/efawatch owned by the image's non-root user 65532 (as in the Dockerfile)
# No shell, no package manager, no CA bundle: the Kubernetes API is reached with the cluster's
# CA file only (lib/kube/api_client.cc sets CURLOPT_CAINFO to it).
#
# The NCCL probe of a CUDA build opens libcudart and libnccl, which the image does not carry (the
# Dockerfile builds without CUDA): in the image it answers FAILED_PRECONDITION unless the node
# provides them on LD_LIBRARY_PATH. The script says so when it packs a CUDA build.
#
# Needs buildah (scripts/setup.sh installs it) and root (CI runs as root). Images and containers
# live in a private storage (vfs driver, no daemon) under a temporary directory, removed at exit;
# buildah keeps only its small blob-info cache under /var/lib/containers. Exits 2 with one line
# when something it needs is missing.
set -euo pipefail
PATH="$PATH:/usr/sbin:/sbin" # ldconfig
src=$(cd "$(dirname "$0")/.." && pwd)
out="$src/build/efawatchd-image.tar"
bin="$src/build/bin"
while (($#)); do
  case "$1" in
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --bin) bin=${2:?--bin needs a directory}; shift 2 ;;
    --bin=*) bin=${1#--bin=}; shift ;;
    -h | --help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
die() { echo "build-image: $*" >&2; exit 2; }
# Any other failure names its line (die's exit 2 has said why already).
on_error() {
  local rc=$?
  ((rc == 2)) || echo "build-image: line $1 failed ($rc): $2" >&2
}
trap 'on_error "$LINENO" "$BASH_COMMAND"' ERR
command -v buildah >/dev/null ||
  die "buildah not installed (Debian: apt-get install buildah; scripts/setup.sh installs it)"
[[ $(id -u) -eq 0 ]] || die "needs root (buildah's storage, and files owned by the image's user)"
for b in efawatchd efawatch efawatch-rpc efawatch-admission; do
  [[ -x $bin/$b ]] || die "$bin/$b not found: build it first (cmake --build build)"
done
command -v strip >/dev/null || die "strip not installed (Debian: binutils)"
command -v python3 >/dev/null || die "python3 not installed (it writes the SBOM)"
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git -C "$src" log -1 --format=%ct 2>/dev/null || echo 0)
fi
[[ $SOURCE_DATE_EPOCH =~ ^[0-9]+$ ]] || die "SOURCE_DATE_EPOCH must be seconds since 1970, got $SOURCE_DATE_EPOCH"
export SOURCE_DATE_EPOCH
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
image_source=${EFAWATCH_IMAGE_SOURCE:-https://github.com/efawatch/efawatch}
bin=$(cd "$bin" && pwd)
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"

tmp=$(mktemp -d)
store=(--root "$tmp/storage" --runroot "$tmp/run" --storage-driver vfs)
ctr=""
cleanup() {
  if [[ -n $ctr ]]; then
    buildah "${store[@]}" umount "$ctr" >/dev/null 2>&1 || true
    buildah "${store[@]}" rm "$ctr" >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

rootfs="$tmp/rootfs"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/tmp" "$rootfs/var/lib/efawatch"
chmod 1777 "$rootfs/tmp"
chown 65532:65532 "$rootfs/var/lib/efawatch"
# Copies one path into the root filesystem under its real directory; a symlink is copied as a
# link and its target after it, so every name a library is opened by exists in the image.
copy_path() {
  local dir name target
  dir=$(realpath "$(dirname "$1")")
  name=$(basename "$1")
  [[ -e $rootfs$dir/$name || -L $rootfs$dir/$name ]] && return 0
  mkdir -p "$rootfs$dir"
  cp -a "$dir/$name" "$rootfs$dir/$name"
  if [[ -L $dir/$name ]]; then
    target=$(readlink "$dir/$name")
    [[ $target == /* ]] || target="$dir/$target"
    copy_path "$target"
  fi
}
# The libraries `ldd` lists for each file given (the loader's whole closure), or exits naming
# the libraries it cannot find.
needed() {
  local f listing missing
  for f in "$@"; do
    listing=$(ldd "$f") || die "ldd $f failed"
    missing=$(awk '/not found/ { print $1 }' <<<"$listing" | tr '\n' ' ')
    [[ -z $missing ]] || die "$f needs ${missing% }, not installed here"
    awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$listing"
  done
}

for b in efawatchd efawatch efawatch-rpc efawatch-admission; do
  strip --strip-debug -o "$rootfs/usr/local/bin/$b" "$bin/$b"
done
libs=$(needed "$bin/efawatchd" "$bin/efawatch" "$bin/efawatch-rpc" "$bin/efawatch-admission")

# Opened by name where they are used (the Dockerfile's list; tests/deploy checks it against
# every SharedLibrary::Open in the code).
dlopened=$(grep -m1 -oE 'for so in [^;]+;' "$src/deploy/Dockerfile" |
  sed -E 's/for so in (.*);/\1/')
[[ -n $dlopened ]] || die "no 'for so in ...;' list of opened libraries in deploy/Dockerfile"
for so in $dlopened; do
  path=$(ldconfig -p | awk -v so="$so" '$1 == so && !f { print $NF; f = 1 }')
  [[ -n $path ]] || die "$so not installed here (scripts/setup.sh installs its package)"
  libs+=$'\n'"$path"$'\n'"$(needed "$path")"
done

# libibverbs opens its providers at run time: the *.driver files name them and it loads
# lib<name>-rdmav<N>.so from its provider directory next to libibverbs.so.1.
verbs=$(grep -m1 '/libibverbs\.so\.1$' <<<"$libs" || true)
if [[ -n $verbs ]]; then
  providers="$(dirname "$(realpath "$verbs")")/libibverbs"
  [[ -d /etc/libibverbs.d && -d $providers ]] ||
    die "libibverbs without its providers (libefa): apt-get install ibverbs-providers"
  mkdir -p "$rootfs/etc"
  cp -a /etc/libibverbs.d "$rootfs/etc/"
  for p in "$providers"/*.so; do
    [[ -e $p ]] || continue
    copy_path "$p"
    libs+=$'\n'"$(needed "$p")"
  done
fi
# A libfabric built with providers as plugins loads them from <libdir>/libfabric.
fabric=$(grep -m1 '/libfabric\.so\.1$' <<<"$libs" || true)
if [[ -n $fabric ]]; then
  plugins="$(dirname "$(realpath "$fabric")")/libfabric"
  if [[ -d $plugins ]]; then
    for p in "$plugins"/*.so; do
      [[ -e $p ]] || continue
      copy_path "$p"
      libs+=$'\n'"$(needed "$p")"
    done
  fi
fi
libs=$(sort -u <<<"$libs" | sed '/^$/d')
while read -r lib; do copy_path "$lib"; done <<<"$libs"
# Debian 12 merges /lib into /usr/lib: keep the top-level links to what the image has, so the
# paths the binaries name (the loader /lib64/ld-linux-x86-64.so.2) and ldd prints resolve.
for d in lib lib64 lib32 libx32; do
  if [[ -L /$d && -d $rootfs/usr/$d ]]; then cp -a "/$d" "$rootfs/$d"; fi
done

version_line=$("$bin/efawatchd" --version)
version=$(sed -nE 's/^efawatchd ([^ ]+) .*/\1/p' <<<"$version_line")
revision=$(sed -nE 's/.*\(([^)]+)\).*/\1/p' <<<"$version_line")
[[ -n $version ]] || die "efawatchd --version said '$version_line', not 'efawatchd VERSION (REVISION)'"
# Every file's time is the source's, so the layer's bytes depend on the files' contents only.
find "$rootfs" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +
ctr=$(buildah "${store[@]}" from scratch)
mnt=$(buildah "${store[@]}" mount "$ctr")
cp -a "$rootfs/." "$mnt/"
buildah "${store[@]}" umount "$ctr" >/dev/null
# No io.buildah.version label (--identity-label=false): a buildah update would change the digest.
buildah "${store[@]}" config \
  --entrypoint '["/usr/local/bin/efawatchd"]' --cmd '' --user 65532:65532 --workingdir / \
  --env PATH=/usr/local/bin:/usr/bin --port 9477 --port 9478 \
  --label org.opencontainers.image.title=efawatchd \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=${revision:-unknown}" \
  --label "org.opencontainers.image.source=$image_source" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  --label "org.opencontainers.image.created=$created" \
  --created-by "scripts/build-image.sh (buildah from scratch)" "$ctr"
rm -f "$out"
# --timestamp fixes the image's created time, the history's and the layer's file times.
buildah "${store[@]}" commit --quiet --format oci --disable-compression=false \
  --timestamp "$SOURCE_DATE_EPOCH" --identity-label=false "$ctr" \
  "oci-archive:$out:efawatchd:$version" >/dev/null

# The SBOM: what the image holds, file by file, and the Debian package each file came from
# (dpkg -S on the build machine; the binaries are efawatch's own).
# One dpkg -S for all files (Debian 12 packages name a merged-/usr library by /lib as well),
# one dpkg-query for the versions; a file no package owns (efawatch's binaries) is left out.
find "$rootfs" -type f -printf '/%P\n' | LC_ALL=C sort >"$tmp/files"
sed -n 's|^/usr/lib/|/lib/|p' "$tmp/files" | cat "$tmp/files" - | xargs -r dpkg -S \
  2>/dev/null >"$tmp/owners" || true
cut -d: -f1 "$tmp/owners" | tr ',' '\n' | sed 's/ //g' | LC_ALL=C sort -u |
  xargs -r dpkg-query -W -f='${binary:Package}\t${Version}\n' >"$tmp/versions" 2>/dev/null || true
python3 "$src/scripts/image-sbom.py" --rootfs "$rootfs" --files "$tmp/files" \
  --owners "$tmp/owners" --versions "$tmp/versions" --version "$version" \
  --revision "${revision:-unknown}" --created "$created" --source "$image_source" \
  >"$out.spdx.json"

files=$(find "$rootfs" -name '*.so*' -type f | wc -l)
size=$(du -sk --apparent-size "$rootfs" | cut -f1)
echo "build-image: $out: $((size / 1024)) MiB unpacked, $(($(stat -c %s "$out") / 1024 / 1024))" \
  "MiB archive; $files library files; version $version, revision ${revision:-unknown}," \
  "created $created; SBOM $out.spdx.json"
if [[ $("$bin/efawatch-rpc" version) != *"NCCL probe not built"* ]]; then
  echo "build-image: note: a CUDA build; the image has no libcudart or libnccl, so its NCCL probe" \
    "needs them from the node (LD_LIBRARY_PATH); deploy/Dockerfile builds without CUDA"
fi
