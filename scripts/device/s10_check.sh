#!/usr/bin/env bash
# Session 10, call 6 (one H200, ~150 s): the committed binary after a host-only refactor of the GEMM's
# row slicing (gemm.cu) since call 5: cuda_ops_test, the 0.6B bf16 digest of record, the 8B bf16
# one, one 8B 2,048-token prefill.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-150}
call_setup s10_check
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-8b $W/m8r 0.005 &
mk qwen3-0.6b $W/m06 0.02
run_test cuda_ops_test 100
inv 06_bf16 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb
wait_for $W/m8r 40 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
  EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=5 eb 8r_prefill $W/m8r contract
}
call_finish
