#!/usr/bin/env bash
# Runs HERE (the build machine), after build-cuda is built: the ring attention probes of s24_a.sh,
# docs/patches/s24-ring-probes.patch compiled once per probe N (-DVB_RING_PROBE=N: 1 consumers
# compute nothing, 2 producers copy nothing, 4 the folder folds nothing; every barrier handshake
# kept) by build_patched.sh: /tmp/vb_patched/pN/verbatim. Then pack them beside main's build, e.g.
#   PACK_XZ=1 scripts/device/pack.sh build-cuda verbatim /tmp/vb_patched/p1/verbatim=verbatim_p1 ...
# (each probe binary adds ~7 MB packed: hide bench/results for the call, scripts/device/slim.sh).
# Usage: scripts/device/build_ring_probes.sh [probe numbers, default 1 2 4 5]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PROBES=("$@")
[ ${#PROBES[@]} -eq 0 ] && PROBES=(1 2 4 5)
for n in "${PROBES[@]}"; do
  "$HERE/build_patched.sh" "$HERE/../../docs/patches/s24-ring-probes.patch" p$n -DVB_RING_PROBE=$n &
done
wait
