#!/usr/bin/env bash
# Runs HERE (the build machine), after build-cuda is built: the ring attention probes of s24_a.sh.
# Applies docs/patches/s24-ring-probes.patch to a copy of attention.cu, compiles it once per probe
# N (-DVB_RING_PROBE=N: 1 consumers compute nothing, 2 producers copy nothing, 4 the folder folds
# nothing; every barrier handshake kept) and links verbatim against a copy of libvb_cuda.a with
# that object: /tmp/vb_probe/pN/verbatim. Then pack them beside main's build, e.g.
#   PACK_XZ=1 scripts/device/pack.sh build-cuda verbatim /tmp/vb_probe/p1/verbatim=verbatim_p1 ...
# (each probe binary adds ~7 MB packed: hide bench/results for the call, scripts/device/slim.sh).
# Usage: scripts/device/build_ring_probes.sh [probe numbers, default 1 2 4 5]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/build-cuda
P=/tmp/vb_probe
PROBES=("$@")
[ ${#PROBES[@]} -eq 0 ] && PROBES=(1 2 4 5)
mkdir -p $P/src/kernels/cuda
cp "$ROOT/src/kernels/cuda/attention.cu" $P/src/kernels/cuda/attention.cu
(cd $P && patch -p1 -s < "$ROOT/docs/patches/s24-ring-probes.patch")
NVCC_FLAGS=$(sed -n 's/^CUDA_FLAGS = //p' $B/CMakeFiles/vb_cuda.dir/flags.make)
NVCC_DEFS=$(sed -n 's/^CUDA_DEFINES = //p' $B/CMakeFiles/vb_cuda.dir/flags.make)
build_one() {
  local n=$1 d=$P/p$1
  mkdir -p $d
  (cd $B && eval /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler $NVCC_DEFS \
    --options-file CMakeFiles/vb_cuda.dir/includes_CUDA.rsp $NVCC_FLAGS -DVB_RING_PROBE=$n \
    -x cu -c $P/src/kernels/cuda/attention.cu -o $d/attention.cu.o) 2> $d/nvcc.log
  cp $B/libvb_cuda.a $d/libvb_cuda.a
  (cd $d && ar r libvb_cuda.a attention.cu.o)
  local cmd
  cmd=$(sed "s# libvb_cuda.a # $d/libvb_cuda.a #; s#-o verbatim #-o $d/verbatim #" $B/CMakeFiles/verbatim.dir/link.txt)
  (cd $B && eval "$cmd")
  echo "probe $n: $d/verbatim"
}
for n in "${PROBES[@]}"; do build_one "$n" & done
wait
