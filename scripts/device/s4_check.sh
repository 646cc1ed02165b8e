#!/usr/bin/env bash
# Session 4, call 2 (one H200, ~330 s): the norm sum with its loads ahead of the add chain and the
# attention q.k slot map of 8-byte loads (both kernels-only changes): op tests, invariance 0.6B
# bf16 / fp16 and 8B bf16 (new digests: the slot map changed the attention bits), HF parity, the
# engine figures of 0.6B and 8B, ncu per kernel of an 8B step at batch 1 and 32.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-520}
call_setup ${CALL_NAME:-s4_check}
say "gpu: $(gpu_facts | tr '\n' ';')"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
MK8=$!
run_test cuda_ops_test
inv 06_bf16 $W/m06 bfloat16
inv 06_fp16 $W/m06 float16
eb 06_contract $W/m06 contract
wait $MK8
eb 8_contract $W/m8 contract
EB_PREFILL=0 eb 8_fast $W/m8 fast
ncu_steps 8_b1 $W/m8 1
ncu_steps 8_b32 $W/m8 32
[ "$(left)" -gt 170 ] && inv 8_bf16 $W/m8 bfloat16
if [ "$(left)" -gt 90 ]; then
  timeout $(( $(left) - 20 )) "$VB_BIN/cuda_model_test" > $OUT/cuda_model_test.log 2>&1
  say "cuda_model_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_model_test.log | tr '\n' ' ')"
  grep -E "FAILED|Failure|\[cuda" $OUT/cuda_model_test.log | head -16 | tee -a $LOG
fi
call_finish
