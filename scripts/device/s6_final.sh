#!/usr/bin/env bash
# Session 6, final call (one H200, BUDGET s, default 540): the wgmma prefill GEMM with its W loads
# coalesced (16-byte loads into registers, words stored to their core matrices) checked, then the
# figures of record with it (VERBATIM_GEMM_WGMMA=1 for every run when cuda_ops_test's bit test
# passes; otherwise 0, the mma.sync path, and the log says so). Decode steps (M <= 64) never run
# the wgmma kernel: only prefill figures depend on it.
# The two W-store depths are tried on the 0.6B prefill first; the faster runs the rest.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-540}
call_setup s6_final
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8 0.02; mk qwen3-8b $W/m8r 0.005 ) &
export VERBATIM_GEMM_WGMMA=1
run_test cuda_ops_test 100
# A wgmma entry that differs from v1 turns the kernel off for this call (depth 2 alone: depth 1 only).
if grep -E "differs from v1" $OUT/cuda_ops_test.log | grep "wgmma" | grep -qv "2 stages" || ! grep -q "PASSED" $OUT/cuda_ops_test.log; then
  export VERBATIM_GEMM_WGMMA=0
elif grep -E "differs from v1" $OUT/cuda_ops_test.log | grep -q "2 stages"; then
  export VERBATIM_GEMM_WGMMA_DEPTH=1 NO_DEPTH2=1
fi
timeout 100 "$VB" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 2048 --kernels tiled:mma,tiled:wgmma,tiled:wgdepth2,cublas \
  --json $OUT/gemm_2048.json > $OUT/gemm_2048.log 2>&1
say "gemm-bench 2048 rc=$?"
grep -E "qkv|gate_up|down|lm_head| o " $OUT/gemm_2048.log | awk '{print $1,$2,$6,$7,$10,$11,$12,$13,$14,$15}' | tee -a $LOG
# W stored 1 or 2 stages after its load (same bits): the faster 0.6B prefill runs the rest.
prefill_ms() { grep -oE 'prefill 2048 tokens: median [0-9.]+' $OUT/eb_$1.log | awk '{print $NF}'; }
if [ "$VERBATIM_GEMM_WGMMA" = 1 ] && [ -z "${NO_DEPTH2:-}" ]; then
  EB_BATCHES=1 EB_STEPS=2 eb 06_depth1 $W/m06 contract VERBATIM_GEMM_WGMMA_DEPTH=1
  EB_BATCHES=1 EB_STEPS=2 eb 06_depth2 $W/m06 contract VERBATIM_GEMM_WGMMA_DEPTH=2
  d1=$(prefill_ms 06_depth1); d2=$(prefill_ms 06_depth2)
  export VERBATIM_GEMM_WGMMA_DEPTH=$(python3 -c "print(2 if float('${d2:-1e9}') < float('${d1:-1e9}') else 1)")
fi
say "VERBATIM_GEMM_WGMMA=$VERBATIM_GEMM_WGMMA VERBATIM_GEMM_WGMMA_DEPTH=${VERBATIM_GEMM_WGMMA_DEPTH:-1} for the rest of this call"
inv_of_record $W/m06
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
wait_for $W/m17 200 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
wait_for $W/m8 200 && {
  eb 8_contract $W/m8 contract
  eb 8_fast $W/m8 fast
  EB_BATCHES=1 EB_STEPS=4 eb 8_mma_prefill $W/m8 contract VERBATIM_GEMM_WGMMA=0
}
EB_BATCHES=1 EB_STEPS=4 eb 06_mma_prefill $W/m06 contract VERBATIM_GEMM_WGMMA=0
hf_peer 06 $W/m06 6 90
[ "$(left)" -gt 330 ] && hf_peer 8 $W/m8 4 140
[ "$(left)" -gt 150 ] && wait_for $W/m8r 100 && \
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
[ "$(left)" -gt 120 ] && http_check $W/m06
if [ "$(left)" -gt 90 ]; then
  run_test cuda_model_test $(( $(left) - 15 ))
  grep -E "\[cuda parity" $OUT/cuda_model_test.log | head -8 | tee -a $LOG
fi
call_finish
