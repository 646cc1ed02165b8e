#!/usr/bin/env bash
# Session 22, call 1 (one H200, BUDGET s, default 330). The stream GEMM's W copies before the PDL
# wait (VERBATIM_GEMM_STREAM_PRELOAD 0 off / 1 weights <= 16 MiB / 2 all; _L2: stages past the ring
# into L2). Bits: op tests (new entries with the preload), the 0.6B bf16 digest of record with
# preload 2 + 8 L2 stages. gemm-bench at 1 / 8 / 32 rows on the 8B layers with the new gate_up_silu
# row (the SiLU epilogue timed alone). Speed: the variants alternated 2 rounds, 0.6B and 8B, batch
# 1 / 8 / 32 / 64 (no prefill).
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s22_a 330
run_test cuda_ops_test 100
timeout 60 "$VB" gemm-bench --archs qwen3-8b --m 1,8,32 --kernels auto,v1 --json $OUT/gemm_decode.json \
  > $OUT/gemm_decode.log 2>&1
say "gemm-bench decode rc=$?"
grep -E "gate_up|^sum" $OUT/gemm_decode.log | tee -a $LOG
inv 06_bf16_pre2 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55 VERBATIM_GEMM_STREAM_PRELOAD=2 \
  VERBATIM_GEMM_STREAM_PRELOAD_L2=8
wait_for $W/m8 100
export EB_MIN_LEFT=20 EB_PREFILL=0
for m in 06 8; do
  ab_many pre_$m $W/m$m 2 "off VERBATIM_GEMM_STREAM_PRELOAD=0" "small VERBATIM_GEMM_STREAM_PRELOAD=1" \
    "all VERBATIM_GEMM_STREAM_PRELOAD=2" "allL2 VERBATIM_GEMM_STREAM_PRELOAD=2 VERBATIM_GEMM_STREAM_PRELOAD_L2=8"
done
call_finish
