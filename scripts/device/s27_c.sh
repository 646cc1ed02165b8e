#!/usr/bin/env bash
# Session 27 wrote this (one H200, BUDGET s, default 420; never run: the machines were paused) for
# docs/patches/s27-ring-swizzle-and-part-tr.patch, against main:
#   - the per-part kernel's transposed tiles (decode at 1-2 sequences, VERBATIM_ATTN_PART_TR, on in
#     the patch), as main's ring kernel has them;
#   - ring variants 5 (2 consumers x 3 stages) and 6 (3 x 3) at two CTAs an SM, on swizzled 32 KB
#     stages (transposed tiles, head_dim >= 64); auto never picks them.
# 1. Bits: the patched cuda_ops_test (every ring variant, transposed or not; the per-part kernel
#    with and without), the 0.6B digests of record with the patched binary, `verbatim generate`
#    of 48 prompts on the 0.6B and 8B: the patched binary (default, variant 5, variant 6) against
#    main's.
# 2. Speed: batch 1, main against patched (8B, 0.6B), alternated twice; 8B decode at 8 / 16 / 32 / 64,
#    main / patched auto / variant 5 / variant 6, alternated twice; ncu of the ring kernel at
#    16 / 32 / 64 under variants 2, 5 and 6.
# Build (the patch changes AttnArgs in kernels.h: a full build, ~25 min on two cores):
#   git worktree add /tmp/s27p HEAD && cd /tmp/s27p && git apply docs/patches/s27-ring-swizzle-and-part-tr.patch &&
#   bash scripts/deps.sh && cmake -S . -B build-cuda -DVERBATIM_CUDA=ON && cmake --build build-cuda -j2
# Pack (from main's checkout, main built in build-cuda):
#   PACK_XZ=1 scripts/device/pack.sh /tmp/s27p/build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test \
#     build-cuda/verbatim=verbatim_main
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s27_c 420
wrap() { printf '#!/bin/sh\n%s exec %s "$@"\n' "$2" "$VB" > $W/$1 && chmod +x $W/$1; }
wrap vb_v5 VERBATIM_ATTN_RING_VARIANT=5
wrap vb_v6 VERBATIM_ATTN_RING_VARIANT=6
MAIN=$VB_BIN/verbatim_main
bits_06
# gen_same compares with $VB's own run: make the reference main's binary.
VB_P=$VB
VB=$MAIN
for d in m06 m8; do
  [ $d = m8 ] && { wait_for $W/m8 150 || break; }
  gen_same p_$d $VB_P $W/$d
  gen_same v5_$d $W/vb_v5 $W/$d
  gen_same v6_$d $W/vb_v6 $W/$d
done
VB=$VB_P
export EB_MIN_LEFT=30 EB_PREFILL=0
EB_BATCHES=1 ab_bins b1_8 $W/m8 2 main=$MAIN patched=$VB
EB_BATCHES=1 ab_bins b1_06 $W/m06 2 main=$MAIN patched=$VB
EB_BATCHES=8,16,32,64 ab_bins sw8 $W/m8 2 main=$MAIN patched=$VB "v5=$VB VERBATIM_ATTN_RING_VARIANT=5" \
  "v6=$VB VERBATIM_ATTN_RING_VARIANT=6"
for v in 2 5 6; do
  [ "$(left)" -gt 40 ] && NCU_HEAD=4 ncu_kernel ring_v$v $VB $W/m8 16,32,64 attention_ring VERBATIM_ATTN_RING_VARIANT=$v
done
call_finish
