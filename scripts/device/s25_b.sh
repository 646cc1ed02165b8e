#!/usr/bin/env bash
# Session 25 wrote this (one H200, BUDGET s, default 240): the sampler's stats kernel with its loads
# issued ahead (docs/patches/s25-sampler-loads-ahead.patch: eight ids' logits loaded before they are
# folded, and the max and greedy passes merged; every fold in the same order, so the same bits). The
# kernel took 20 us a step at batch 1 and 47 at 32 under ncu (s22_g, s23_g): ~19 dependent L2 round
# trips a thread a pass. Bits: the sampler op tests of the patched build, gen_same. Speed: ncu of
# stats_kernel main / patched at 1 / 8 / 32 / 64 rows, then 0.6B decode main / patched alternated
# (where a step is shortest, so the sampler's share is largest).
# Build: scripts/device/build_patched.sh docs/patches/s25-sampler-loads-ahead.patch smp; pack:
#   PACK_XZ=1 scripts/device/pack.sh build-cuda verbatim /tmp/vb_patched/smp/verbatim=verbatim_smp \
#     /tmp/vb_patched/smp/cuda_ops_test=cuda_ops_test_smp
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s25_b 240
timeout 60 "$VB_BIN/cuda_ops_test_smp" --gtest_filter='CudaSampler*' > $OUT/ops_sampler_smp.log 2>&1
say "patched sampler op tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/ops_sampler_smp.log | tr '\n' ' ')"
grep -E "FAILED|Failure" $OUT/ops_sampler_smp.log | head -10 | tee -a $LOG
gen_same smp $VB_BIN/verbatim_smp $W/m06  # every token and logprob of 48 prompts against main's
ncu_kernel stats_main $VB $W/m06 1,8,32,64 stats_kernel
ncu_kernel stats_smp $VB_BIN/verbatim_smp $W/m06 1,8,32,64 stats_kernel
export EB_MIN_LEFT=40 EB_PREFILL=0
ab_bins smp_06 $W/m06 2 main=$VB smp=$VB_BIN/verbatim_smp
call_finish
