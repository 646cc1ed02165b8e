#!/usr/bin/env bash
# Session 25 wrote this (one H200, BUDGET s, default 580): where the ring attention kernel's time
# goes, step by step, and three candidate remedies, each a patch of attention.cu (bits unchanged by
# construction):
#   la  block ids two tiles ahead (docs/patches/s25-ring-lookahead.patch)
#   f4  the state slot as float4s (s25-ring-folder-float4.patch)
#   kv  a stage's K and V freed and refilled apart (s25-ring-kv-release.patch)
#   all the three together (s25-ring-all.patch)
# 1. The timeline: cuda_ops_test_trace (s25-ring-trace.patch) writes clock64() at each step of each
#    role of every CTA (8B attention shape, decode at position 1023, 16 / 32 / 64 sequences, auto
#    shape and 4 x 5 forced); ring_trace_summary.py gives the medians.
# 2. Bits: la's attention op tests (and main's exp / silu sweep, which that binary carries
#    unchanged); for each candidate, `verbatim generate` of 48 prompts on the 0.6B against main's
#    (gen_same: the carry has no room for more op-test binaries; run their op tests before
#    landing one).
# 3. Speed: ncu of the ring kernel at 16 / 32 / 64 sequences, main and each; 8B decode at 8 / 32 / 64,
#    main and each alternated (a second round as the budget allows).
# Build (~10 minutes): for p in trace:s25-ring-trace la:s25-ring-lookahead f4:s25-ring-folder-float4 \
#   kv:s25-ring-kv-release all:s25-ring-all; do
#   scripts/device/build_patched.sh docs/patches/${p#*:}.patch ${p%%:*}; done
# Pack (~52 MB): PACK_XZ=1 scripts/device/pack.sh build-cuda verbatim \
#   /tmp/vb_patched/la/verbatim=verbatim_la /tmp/vb_patched/f4/verbatim=verbatim_f4 \
#   /tmp/vb_patched/kv/verbatim=verbatim_kv /tmp/vb_patched/all/verbatim=verbatim_all \
#   /tmp/vb_patched/la/cuda_ops_test=cuda_ops_test_la \
#   /tmp/vb_patched/trace/cuda_ops_test=cuda_ops_test_trace
# then scripts/device/slim.sh hide; run with carry [".carry"]; slim.sh restore.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s25_a 580
MHZ=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader,nounits | head -1)
VB_TRACE_OUT=$OUT/trace VB_TRACE_SEQS=16,32,64 VB_TRACE_VARIANTS=-1,1 timeout 120 \
  $VB_BIN/cuda_ops_test_trace --gtest_filter='CudaRingTrace*' > $OUT/trace.log 2>&1
say "trace rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/trace.log | tr '\n' ' ')"
for f in $OUT/trace_*.csv; do
  [ -f "$f" ] || continue
  n=$(basename $f .csv)
  python3 scripts/device/ring_trace_summary.py $f --mhz "${MHZ:-1980}" --json $OUT/${n}_summary.json > $OUT/${n}_summary.txt 2>&1
  say "$n"; cat $OUT/${n}_summary.txt | tee -a $LOG
  xz -9 $f
done
timeout 90 "$VB_BIN/cuda_ops_test_la" --gtest_filter='*Attention*:CudaExp*' > $OUT/ops_la.log 2>&1
say "la attention op tests + exp sweep rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/ops_la.log | tr '\n' ' ')"
grep -E "FAILED|Failure|differs" $OUT/ops_la.log | head -10 | tee -a $LOG
for p in la f4 kv all; do gen_same $p $VB_BIN/verbatim_$p $W/m06; done
wait_for $W/m8 100
ncu_kernel ring_main $VB $W/m8 16,32,64 attention_ring
for p in la f4 kv all; do ncu_kernel ring_$p $VB_BIN/verbatim_$p $W/m8 16,32,64 attention_ring; done
export EB_MIN_LEFT=40 EB_PREFILL=0 EB_BATCHES=8,32,64
ab_bins ring_8 $W/m8 2 main=$VB la=$VB_BIN/verbatim_la f4=$VB_BIN/verbatim_f4 kv=$VB_BIN/verbatim_kv \
  all=$VB_BIN/verbatim_all
call_finish
