#!/usr/bin/env bash
# Session 22, call 2 (one H200, BUDGET s, default 200). The stream kernel's SiLU epilogue in
# registers (each warp 8 gate + the same 8 up columns: no shared-memory exchange, no barrier) and
# the preload on by default for weights <= 16 MiB. Bits: op tests, the 0.6B digests of record.
# Speed: gemm-bench at 1 / 8 / 32 rows on the 8B layers (gate_up_silu against gate_up); the ring
# depth at <= 16 rows (3 / 4 / 5) with the preload on the 0.6B, 2 rounds; the 8B decode once.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s22_b 200
run_test cuda_ops_test 100
timeout 60 "$VB" gemm-bench --archs qwen3-8b --m 1,8,32 --kernels auto --json $OUT/gemm_decode.json \
  > $OUT/gemm_decode.log 2>&1
say "gemm-bench decode rc=$?"
grep -E "gate_up|^sum" $OUT/gemm_decode.log | tee -a $LOG
inv_of_record $W/m06
export EB_MIN_LEFT=20 EB_PREFILL=0
ab_many st_06 $W/m06 2 "s3 VERBATIM_GEMM_STREAM_STAGES=3" "s4 VERBATIM_GEMM_STREAM_STAGES=4" \
  "s5 VERBATIM_GEMM_STREAM_STAGES=5"
wait_for $W/m8 30 && eb 8_contract $W/m8 contract
call_finish
