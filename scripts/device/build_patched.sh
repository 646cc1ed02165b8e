#!/usr/bin/env bash
# Runs HERE (the build machine), after build-cuda is built: a verbatim and a cuda_ops_test from
# main's build with a patch of docs/patches/ applied to src/kernels/cuda/attention.cu (the only CUDA
# source it recompiles) and tests/cuda_ops_test.cpp; extra nvcc defines after the name. Output:
# /tmp/vb_patched/NAME/{verbatim,cuda_ops_test} (the op tests run the patched kernels). Pack them
# beside main's build, e.g.
#   PACK_XZ=1 scripts/device/pack.sh build-cuda verbatim /tmp/vb_patched/NAME/verbatim=verbatim_NAME
# (~7 MB packed a binary: hide bench/results for the call, scripts/device/slim.sh).
# Usage: scripts/device/build_patched.sh PATCH NAME [-DDEFINE=VALUE ...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/build-cuda
PATCH=$(realpath "$1")
NAME=$2
shift 2
D=/tmp/vb_patched/$NAME
rm -rf $D && mkdir -p $D/src/kernels/cuda $D/tests
cp "$ROOT/src/kernels/cuda/attention.cu" $D/src/kernels/cuda/attention.cu
cp "$ROOT/tests/cuda_ops_test.cpp" $D/tests/cuda_ops_test.cpp
(cd $D && patch -p1 -s < "$PATCH")
NVCC_FLAGS=$(sed -n 's/^CUDA_FLAGS = //p' $B/CMakeFiles/vb_cuda.dir/flags.make)
NVCC_DEFS=$(sed -n 's/^CUDA_DEFINES = //p' $B/CMakeFiles/vb_cuda.dir/flags.make)
(cd $B && eval /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler $NVCC_DEFS \
  --options-file CMakeFiles/vb_cuda.dir/includes_CUDA.rsp $NVCC_FLAGS "$@" \
  -x cu -c $D/src/kernels/cuda/attention.cu -o $D/attention.cu.o) 2> $D/nvcc.log || { cat $D/nvcc.log; exit 1; }
cp $B/libvb_cuda.a $D/libvb_cuda.a
(cd $D && ar r libvb_cuda.a attention.cu.o)
cmd=$(sed "s# libvb_cuda.a # $D/libvb_cuda.a #; s#-o verbatim #-o $D/verbatim #" $B/CMakeFiles/verbatim.dir/link.txt)
(cd $B && eval "$cmd")
echo "$NAME: $D/verbatim"
T=$B/tests/CMakeFiles/cuda_ops_test.dir
CXX_DEFS=$(sed -n 's/^CXX_DEFINES = //p' $T/flags.make)
CXX_INCS=$(sed -n 's/^CXX_INCLUDES = //p' $T/flags.make)
CXX_FLAGS=$(sed -n 's/^CXX_FLAGS = //p' $T/flags.make)
(cd $B/tests && eval /usr/bin/c++ $CXX_DEFS $CXX_INCS $CXX_FLAGS -c $D/tests/cuda_ops_test.cpp -o $D/cuda_ops_test.cpp.o)
cmd=$(sed "s#CMakeFiles/cuda_ops_test.dir/cuda_ops_test.cpp.o#$D/cuda_ops_test.cpp.o#; s#-o cuda_ops_test #-o $D/cuda_ops_test #; s# ../libvb_cuda.a # $D/libvb_cuda.a #" $T/link.txt)
(cd $B/tests && eval "$cmd")
echo "$NAME: $D/cuda_ops_test"
