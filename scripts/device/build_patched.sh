#!/usr/bin/env bash
# Runs HERE (the build machine), after build-cuda is built: a verbatim and a cuda_ops_test from
# main's build with a patch of docs/patches/ applied, recompiling only the files it touches (CUDA
# sources under src/kernels/cuda/ and tests/cuda_ops_test.cpp); extra nvcc defines after the name.
# Output: /tmp/vb_patched/NAME/{verbatim,cuda_ops_test} (the op tests run the patched kernels).
# Pack them beside main's build, e.g.
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
rm -rf $D && mkdir -p $D
FILES=$(sed -n 's#^+++ b/\([^[:space:]]*\).*#\1#p' "$PATCH")
for f in $FILES; do
  case $f in
    src/kernels/cuda/*.cu | src/kernels/cuda/*.cuh | tests/cuda_ops_test.cpp) ;;
    *) echo "build_patched: $f is not a CUDA source or the op tests; rebuild with cmake instead" >&2; exit 1 ;;
  esac
  mkdir -p $D/$(dirname $f) && cp "$ROOT/$f" $D/$f
done
(cd $D && patch -p1 -s < "$PATCH")
# A touched header: every CUDA source that includes it is rebuilt (patched copies first, else main's).
CU=$(for f in $FILES; do
  case $f in
    *.cu) echo $f ;;
    *.cuh) grep -l "$(basename $f)" "$ROOT"/src/kernels/cuda/*.cu | sed "s#^$ROOT/##" ;;
  esac
done | sort -u)
NVCC_FLAGS=$(sed -n 's/^CUDA_FLAGS = //p' $B/CMakeFiles/vb_cuda.dir/flags.make)
NVCC_DEFS=$(sed -n 's/^CUDA_DEFINES = //p' $B/CMakeFiles/vb_cuda.dir/flags.make)
cp $B/libvb_cuda.a $D/libvb_cuda.a
for f in $CU; do
  [ -f $D/$f ] || { mkdir -p $D/$(dirname $f) && cp "$ROOT/$f" $D/$f; }
  o=$D/$(basename $f).o
  # -I the patched tree first, so a patched header wins over main's.
  (cd $B && eval /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler $NVCC_DEFS -I$D/src \
    --options-file CMakeFiles/vb_cuda.dir/includes_CUDA.rsp $NVCC_FLAGS "$@" -x cu -c $D/$f -o $o) \
    2> $o.log || { cat $o.log; exit 1; }
  (cd $D && ar r libvb_cuda.a $(basename $o))
done
cmd=$(sed "s# libvb_cuda.a # $D/libvb_cuda.a #; s#-o verbatim #-o $D/verbatim #" $B/CMakeFiles/verbatim.dir/link.txt)
(cd $B && eval "$cmd")
echo "$NAME: $D/verbatim ($(echo $CU | tr '\n' ' '))"
T=$B/tests/CMakeFiles/cuda_ops_test.dir
TOBJ=$T/cuda_ops_test.cpp.o
if [ -f $D/tests/cuda_ops_test.cpp ]; then
  CXX_DEFS=$(sed -n 's/^CXX_DEFINES = //p' $T/flags.make)
  CXX_INCS=$(sed -n 's/^CXX_INCLUDES = //p' $T/flags.make)
  CXX_FLAGS=$(sed -n 's/^CXX_FLAGS = //p' $T/flags.make)
  TOBJ=$D/cuda_ops_test.cpp.o
  (cd $B/tests && eval /usr/bin/c++ $CXX_DEFS $CXX_INCS $CXX_FLAGS -c $D/tests/cuda_ops_test.cpp -o $TOBJ)
fi
cmd=$(sed "s#CMakeFiles/cuda_ops_test.dir/cuda_ops_test.cpp.o#$TOBJ#; s#-o cuda_ops_test #-o $D/cuda_ops_test #; s# ../libvb_cuda.a # $D/libvb_cuda.a #" $T/link.txt)
(cd $B/tests && eval "$cmd")
echo "$NAME: $D/cuda_ops_test"
