#!/usr/bin/env bash
# Session 29 (one H200, BUDGET s, default 540): s24_final's figures of record on main's binaries and
# s27_c's test of the s27 patch, in one call (session 29 had 989 s of device time and a refused
# start costs ~90 s). Main's committed transposed ring tiles (session 27 landed them after a
# refactor no GPU had run) get their first GPU run here.
# 1. Main: cuda_ops_test, the 0.6B digests of record, the 64-user HTTP check, the figures of record
#    (contract / fast, 1 / 8 / 32 / 64; 8B with its 2,048-token prefill; 1.7B), the 8B bf16 digest.
# 2. The patch (docs/patches/s27-ring-swizzle-and-part-tr.patch): its attention op tests, its 0.6B
#    digests, `verbatim generate` of 48 prompts against main's (default, ring variant 5, 6) on the
#    0.6B and 8B, batch-1 A/B (8B, 0.6B) and 8B at 8 / 16 / 32 / 64 (main / patched / v5 / v6),
#    alternated twice.
# Pack (the patched build in /tmp/s27p/build-cuda, main's in build/):
#   PACK_XZ=1 scripts/device/pack.sh /tmp/s27p/build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test \
#     build/verbatim=verbatim_main build/tests/cuda_ops_test=cuda_ops_test_main \
#     build/tests/cuda_invariance_test=cuda_invariance_test_main
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
PB=$VB_BIN
MB=/tmp/vb_main_bin && rm -rf $MB && mkdir -p $MB
for b in verbatim cuda_ops_test cuda_invariance_test; do ln -s "$PB/${b}_main" $MB/$b; done
VB_BIN=$MB
call_start s29_c 540
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
MAIN=$MB/verbatim P=$PB/verbatim
# --- main: bits
bits_06
# --- the patch: bits
# ok N: at least N seconds of BUDGET are left (each step below is skipped, and says so, otherwise).
ok() { [ "$(left)" -gt "$1" ] || { say "skip: $(left) s left"; false; }; }
ok 60 && VB_BIN=$PB ops_attention
ok 60 && VB_BIN=$PB inv p06_bf16 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55
ok 60 && VB_BIN=$PB inv p06_fp16 $W/m06 float16 VERBATIM_TEST_EXPECT_DIGEST=d4981a65b9914c52
printf '#!/bin/sh\nVERBATIM_ATTN_RING_VARIANT=5 exec %s "$@"\n' "$P" > $W/vb_v5
printf '#!/bin/sh\nVERBATIM_ATTN_RING_VARIANT=6 exec %s "$@"\n' "$P" > $W/vb_v6
chmod +x $W/vb_v5 $W/vb_v6
for d in m06 m8; do
  [ $d = m8 ] && { wait_for $W/m8 150 || break; }
  ok 60 && gen_same p_$d $P $W/$d
  ok 90 && gen_same v5_$d $W/vb_v5 $W/$d
  ok 90 && gen_same v6_$d $W/vb_v6 $W/$d
done
# --- main: figures of record
export EB_MIN_LEFT=30 EB_PREFILL=0
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
EB_PREFILL=2048 eb 8_contract $W/m8 contract
EB_PREFILL=2048 eb 8_fast $W/m8 fast
wait_for $W/m8r 40 && ok 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
# --- the patch: speed, alternated with main
EB_BATCHES=1 ab_bins b1_8 $W/m8 2 main=$MAIN patched=$P
EB_BATCHES=1 ab_bins b1_06 $W/m06 2 main=$MAIN patched=$P
EB_BATCHES=8,16,32,64 ab_bins sw8 $W/m8 2 main=$MAIN patched=$P "v5=$P VERBATIM_ATTN_RING_VARIANT=5" \
  "v6=$P VERBATIM_ATTN_RING_VARIANT=6"
# --- main: the rest
ok 60 && http_check $W/m06
wait_for $W/m17 60 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
call_finish
