#!/usr/bin/env bash
# Session 7, final call (one H200, BUDGET s, default 560): the figures of record with this
# session's attention changes (bulk-copied V, K in registers, the softmax skip of inactive rows,
# step inputs read before griddepcontrol.wait, graphs' parts per row from 2^k and 3·2^(k-1)).
# As s6_final: the op tests, the 0.6B digests of record, engine-bench contract and fast for 0.6B /
# 1.7B / 8B, the HF peer, the 8B digests (bf16 and fp16, init std 0.005), the 64-user HTTP check,
# the model tests; then ncu of the batch-32 tile kernel and per-kernel times of an 8B batch-1 step.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-560}
call_setup s7_final
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
( mk qwen3-8b $W/m8 0.02; mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8r 0.005 ) &
run_test cuda_ops_test 100
inv_of_record $W/m06
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
wait_for $W/m8 200
eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
wait_for $W/m17 200 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
hf_peer 06 $W/m06 6 90
[ "$(left)" -gt 330 ] && hf_peer 8 $W/m8 4 140
[ "$(left)" -gt 150 ] && wait_for $W/m8r 100 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=7e58f529cd75d598
}
[ "$(left)" -gt 110 ] && http_check $W/m06
if [ "$(left)" -gt 150 ]; then
  run_test cuda_model_test 120
  grep -E "\[cuda parity" $OUT/cuda_model_test.log | head -8 | tee -a $LOG
fi
[ "$(left)" -gt 40 ] && ncu_prof attn_b32 'attention_tile' 10 $W/m8 --batches 32 --context 1024 --steps 2 --prefill 0 --no-context-prefill
[ "$(left)" -gt 40 ] && ncu_steps 8_b1 $W/m8 1
call_finish
