#!/usr/bin/env bash
# Sourced ON THE DEVICE before running carried binaries: finds cuBLAS (toolkit or the pip wheel
# PyTorch uses) and adds carried libraries only where the image lacks them.
export VB_ROOT=${VB_ROOT:-$(pwd)}
# Binaries may come xz-compressed (.carry/bin.tar.xz: five CUDA binaries are ~75 MB, over what a
# call carries): unpacked once per machine, under a lock (scripts run side by side source this).
if [ -f "$VB_ROOT/.carry/bin.tar.xz" ]; then
  mkdir -p "$VB_ROOT/.carry/bin"
  ( flock 9
    [ -f "$VB_ROOT/.carry/bin/.unpacked" ] ||
      { tar xJf "$VB_ROOT/.carry/bin.tar.xz" -C "$VB_ROOT/.carry/bin" && touch "$VB_ROOT/.carry/bin/.unpacked"; }
  ) 9> "$VB_ROOT/.carry/unpack.lock"
fi
mkdir -p /tmp/vb_lib
for f in "$VB_ROOT"/.carry/lib/*; do
  name=$(basename "$f")
  ldconfig -p | grep -q "^\s*$name " || cp -n "$f" /tmp/vb_lib/
done
CUBLAS_DIR=$(dirname "$( (ls /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13 2>/dev/null; \
  find /usr /opt -name 'libcublas.so.13' 2>/dev/null) | head -1)")
export LD_LIBRARY_PATH="/tmp/vb_lib:$CUBLAS_DIR:${LD_LIBRARY_PATH:-}"
export VB_BIN="$VB_ROOT/.carry/bin"
echo "env: cublas from $CUBLAS_DIR; carried libs used: $(ls /tmp/vb_lib | tr '\n' ' ')"
