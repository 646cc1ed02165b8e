#!/usr/bin/env bash
# Runs HERE (the build machine): copies the CUDA build's binaries and the shared libraries the
# device image lacks into .carry/ (git-ignored), for `run` with carry [".carry"].
# Usage: [PACK_XZ=1] scripts/device/pack.sh [build-dir] [binaries...]   (default: build-cuda, the CUDA tests +
# verbatim). A binary given as PATH=NAME is copied from PATH (not under build-dir) as NAME, e.g. the
# build before a change for a same-call A/B: /tmp/base/verbatim=verbatim_base.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-cuda}
shift || true
BINS=("$@")
[ ${#BINS[@]} -eq 0 ] && BINS=(verbatim tests/cuda_ops_test tests/cuda_model_test)
rm -rf .carry && mkdir -p .carry/bin .carry/lib
for b in "${BINS[@]}"; do
  if [[ $b == *=* ]]; then src=${b%%=*} name=${b#*=}; else src=$BUILD/$b name=$(basename "$b"); fi
  cp "$src" .carry/bin/"$name" && strip --strip-debug .carry/bin/"$name"
done
# Libraries the device image (Ubuntu 24.04 + CUDA + PyTorch) may not have; env.sh adds each one
# only where the device's own loader cannot find it.
# ldconfig's list is read once: piped into an awk that exits early, ldconfig can die of SIGPIPE,
# which pipefail turns into a silent exit of this script.
CACHE=$(ldconfig -p)
for lib in libpcre2-8.so.0 libutf8proc.so.2 libcpp-httplib.so.0.11 libbrotlidec.so.1 libbrotlienc.so.1 \
           libbrotlicommon.so.1 libgomp.so.1; do
  src=$(awk -v l="$lib" '$1 == l {print $NF; exit}' <<< "$CACHE")
  [ -n "$src" ] && cp -L "$src" .carry/lib/
done
du -sh .carry
# PACK_XZ=1: strip the binaries and pack them as .carry/bin.tar.xz (env.sh unpacks it) with xz -9e:
# its 64 MiB dictionary spans whole binaries, so near-copies (a base build beside the new one) cost
# little: four CUDA binaries 86 MB -> 9.4 MB (tar cJf, 8 MiB dictionary: 34 MB), session 19.
if [ "${PACK_XZ:-0}" = 1 ]; then
  strip .carry/bin/*
  tar cf - -C .carry/bin . | xz -9e -T4 > .carry/bin.tar.xz && rm -rf .carry/bin
  du -sh .carry
fi
