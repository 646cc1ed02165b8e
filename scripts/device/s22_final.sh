#!/usr/bin/env bash
# Session 22, final call (one H200, BUDGET s, default 520). Main with the stream GEMM as the
# default up to 64 rows (Auto; 3 ring stages at <= 16 rows), its W preload before the PDL wait for
# weights <= 16 MiB, its SiLU epilogue in registers, PDL to 64 rows. Re-measures every figure of record:
# op tests, 0.6B digests, gemm-bench at decode rows (v1, auto = stream, cuBLAS) and at 2,048,
# engine-bench contract / fast for 0.6B / 8B / 1.7B (decode 1 / 8 / 32 / 64 and a 2,048-token
# prefill), then record_checks (8B digests, HF peer, 64-user HTTP check, model tests, ncu prefill).
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s22_final 520
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
bits_06
timeout 100 "$VB" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 1,8,32,64 --kernels v1,auto,cublas \
  --json $OUT/gemm_decode.json > $OUT/gemm_decode.log 2>&1
say "gemm-bench decode rc=$?"
grep -E "^sum" $OUT/gemm_decode.log | tee -a $LOG
gemm_2048 "" "tiled,cublas"
wait_for $W/m8 200
export EB_MIN_LEFT=30
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
eb 8_contract_r2 $W/m8 contract
EB_PREFILL=0 eb 8_v1 $W/m8 contract VERBATIM_GEMM=v1
EB_PREFILL=0 eb 06_nopreload $W/m06 contract VERBATIM_GEMM_STREAM_PRELOAD=0
wait_for $W/m17 100 && {
  eb 17_contract $W/m17 contract
  eb 17_fast $W/m17 fast
}
record_checks
call_finish
