#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/Dockerfile: lint (dockerfilelint; hadolint is not packaged for Debian 12), and its build
# steps agree with the rest of the repository:
#   - every package of its build stage is one scripts/setup.sh installs, and every library
#     setup.sh installs for building (its "# libraries" group, test frameworks aside) is in it;
#   - it builds the targets scripts/run-agent.sh builds;
#   - the README's `docker build` line is the one the Dockerfile documents;
#   - every library the code opens by name at run time (SharedLibrary::Open, invisible to the
#     image's ldd) is in the list the Dockerfile resolves with ldconfig.
set -euo pipefail
src="${EFAWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}"
here="$src/tests/deploy/checks"
df="$src/deploy/Dockerfile"
[ -x "$here/node_modules/.bin/dockerfilelint" ] ||
  { echo "dockerfilelint missing: run scripts/setup.sh" >&2; exit 1; }
"$here/node_modules/.bin/dockerfilelint" "$df"

fail=0
# Packages between the build stage's `apt-get install` and the end of that RUN.
build_pkgs=$(awk '/^FROM .* AS build/ { b = 1 } /^FROM / && !/AS build/ { b = 0 }
  b && /apt-get install/ { i = 1; next } b && i { print } b && i && !/\\$/ { i = 0 }' "$df" |
  tr -d '\\' | tr ' ' '\n' | grep -E '^[a-z0-9][a-z0-9+.-]+$' | grep -v '^rm$' || true)
[ -n "$build_pkgs" ] || { echo "no build-stage packages found in $df" >&2; exit 1; }
setup_pkgs=$(sed -n '/^packages=(/,/^)/p' "$src/scripts/setup.sh" | grep -v '^ *#' | tr ' ' '\n')
for p in $build_pkgs; do
  [ "$p" = ca-certificates ] && continue # only for git inside the image, present on any host
  if ! grep -qx "$p" <<<"$setup_pkgs"; then
    echo "Dockerfile build stage installs $p, which scripts/setup.sh does not" >&2
    fail=1
  fi
done

libs=$(sed -n '/^  # libraries/,/^  #/p' "$src/scripts/setup.sh" | grep -v '^ *#' | tr ' ' '\n' |
  grep -E '^[a-z0-9][a-z0-9+.-]+$' | grep -vE '^(libgtest-dev|libgmock-dev|googletest)$' || true)
[ -n "$libs" ] || { echo "no '# libraries' group found in scripts/setup.sh" >&2; exit 1; }
for p in $libs; do
  if ! grep -qx "$p" <<<"$build_pkgs"; then
    echo "scripts/setup.sh builds with $p, which the Dockerfile's build stage lacks" >&2
    fail=1
  fi
done

if ! grep -q -- '--target efawatchd efawatch' "$df" ||
  ! grep -q -- '--target efawatchd efawatch' "$src/scripts/run-agent.sh"; then
  echo "Dockerfile and scripts/run-agent.sh build different targets" >&2
  fail=1
fi

cmd=$(grep -m1 -o 'docker build -f deploy/Dockerfile.*' "$df")
if ! grep -qF -- "$cmd" "$src/README.md"; then
  echo "README.md lacks the Dockerfile's build command: $cmd" >&2
  fail=1
fi
sonames=$(grep -rhoE 'SharedLibrary::Open\("[^"]+"\)' "$src/lib" "$src/daemon" "$src/probes" |
  sed -E 's/.*\("([^"]+)"\)/\1/' | sort -u)
[ -n "$sonames" ] || { echo "no SharedLibrary::Open(\"...\") found in the sources" >&2; exit 1; }
dlopened=$(grep -m1 -oE 'for so in [^;]+;' "$df" | sed -E 's/for so in (.*);/\1/')
for so in $sonames; do
  if ! grep -qw -- "$so" <<<"$dlopened"; then
    echo "the agent opens $so at run time, but the Dockerfile does not install its package" >&2
    fail=1
  fi
done
exit "$fail"
