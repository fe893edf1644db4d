#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs a test with a /dev/shm of its own where it can (root and unshare, as in CI). libfabric's
# shm provider only lists itself while /dev/shm has about 16 MiB free per online CPU, so a shm
# test on a small or shared /dev/shm (a container's 64 MiB, other tests' regions, regions a killed
# process left behind) failed for reasons outside it. The private tmpfs goes with the namespace.
set -eu
if [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2>/dev/null; then
  exec unshare --mount --propagation private sh -c '
    mount -t tmpfs -o mode=1777 efawatch-test-shm /dev/shm ||
      echo "private-shm: could not mount a private /dev/shm; using the shared one" >&2
    exec "$@"' private-shm "$@"
fi
exec "$@"
