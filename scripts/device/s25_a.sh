#!/usr/bin/env bash
# Session 25 wrote this (one H200, BUDGET s, default 560): where the ring attention kernel's time
# goes, step by step, and a first remedy.
# 1. The timeline: cuda_ops_test_trace (docs/patches/s25-ring-trace.patch) writes clock64() at each
#    step of each role of every CTA (8B attention shape, decode at position 1023, 16 / 32 / 64
#    sequences, auto shape; 32 and 64 also with 4 x 5 forced); ring_trace_summary.py medians.
# 2. Block ids two tiles ahead (docs/patches/s25-ring-lookahead.patch, verbatim_la and
#    cuda_ops_test_la): the attention op tests (bits), ncu of the ring kernel main / lookahead at 16
#    / 32 / 64 sequences, 8B decode main / lookahead alternated.
# 3. The folder's and consumers' state slot as float4s (docs/patches/s25-ring-folder-float4.patch,
#    verbatim_f4 and cuda_ops_test_f4): the same three checks.
# 4. Main's exp / silu sweep test (rewritten in ced35c0, not yet run on a GPU).
# Build: scripts/device/build_patched.sh docs/patches/s25-ring-trace.patch trace, and
#   ... s25-ring-lookahead.patch la, ... s25-ring-folder-float4.patch f4; pack:
#   PACK_XZ=1 scripts/device/pack.sh build-cuda verbatim tests/cuda_ops_test \
#     /tmp/vb_patched/la/verbatim=verbatim_la /tmp/vb_patched/la/cuda_ops_test=cuda_ops_test_la \
#     /tmp/vb_patched/f4/verbatim=verbatim_f4 /tmp/vb_patched/f4/cuda_ops_test=cuda_ops_test_f4 \
#     /tmp/vb_patched/trace/cuda_ops_test=cuda_ops_test_trace
#   then scripts/device/slim.sh hide; run with carry [".carry"]; slim.sh restore.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s25_a 560
MHZ=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader,nounits | head -1)
VB_TRACE_OUT=$OUT/trace VB_TRACE_SEQS=16,32,64 VB_TRACE_VARIANTS=-1,1 timeout 120 \
  $VB_BIN/cuda_ops_test_trace --gtest_filter='CudaRingTrace*' > $OUT/trace.log 2>&1
say "trace rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/trace.log | tr '\n' ' ')"
for f in $OUT/trace_*.csv; do
  n=$(basename $f .csv)
  python3 scripts/device/ring_trace_summary.py $f --mhz "${MHZ:-1980}" --json $OUT/${n}_summary.json > $OUT/${n}_summary.txt 2>&1
  say "$n"; cat $OUT/${n}_summary.txt | tee -a $LOG
  xz -9 $f
done
for p in la f4; do
  timeout 60 "$VB_BIN/cuda_ops_test_$p" --gtest_filter='*Attention*' > $OUT/ops_attn_$p.log 2>&1
  say "$p attention op tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/ops_attn_$p.log | tr '\n' ' ')"
  grep -E "FAILED|Failure|differs" $OUT/ops_attn_$p.log | head -10 | tee -a $LOG
done
wait_for $W/m8 100
ncu_kernel ring_main $VB $W/m8 16,32,64 attention_ring
ncu_kernel ring_la $VB_BIN/verbatim_la $W/m8 16,32,64 attention_ring
ncu_kernel ring_f4 $VB_BIN/verbatim_f4 $W/m8 16,32,64 attention_ring
export EB_MIN_LEFT=60 EB_PREFILL=0 EB_BATCHES=8,32,64
ab_bins ring_8 $W/m8 2 main=$VB la=$VB_BIN/verbatim_la f4=$VB_BIN/verbatim_f4
if [ "$(left)" -gt 60 ]; then
  timeout 60 $VB_BIN/cuda_ops_test --gtest_filter='CudaExp*' > $OUT/ops_exp.log 2>&1
  say "exp / silu sweep rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/ops_exp.log | tr '\n' ' ')"
  grep -E "FAILED|Failure" $OUT/ops_exp.log | head -5 | tee -a $LOG
fi
call_finish
