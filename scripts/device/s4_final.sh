#!/usr/bin/env bash
# Session 4, final call (one H200, BUDGET s, default 540): the figures of record and the checks of
# main, one GPU so everything runs in turn: wgmma vs mma.sync bits (mma_probe), the invariance
# matrix 0.6B bf16 / fp16 against the digests of record, engine-bench contract and fast for the
# 0.6B, 1.7B and 8B shapes, the HF transformers peer (0.6B, 8B), cuda_ops_test, cuda_model_test,
# the matrix on an 8B folder at init std 0.005 (so speculation's drafts are accepted), two
# servers checked by `verbatim check` with 64 users and compared.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test mma_probe
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-540}
call_setup s4_final
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
( mk qwen3-1.7b $W/m17 0.02; mk qwen3-8b $W/m8 0.02; mk qwen3-8b $W/m8r 0.005 ) &
timeout 30 "$VB_BIN/mma_probe" --json $OUT/mma_probe.json > $OUT/mma_probe.log 2>&1
say "mma_probe rc=$?"
grep -E "K=1024" $OUT/mma_probe.log | tee -a $LOG
inv_of_record $W/m06
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
wait_for $W/m17 200 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
wait_for $W/m8 200 && { eb 8_contract $W/m8 contract; eb 8_fast $W/m8 fast; }
hf_peer 06 $W/m06 6 90
[ "$(left)" -gt 300 ] && hf_peer 8 $W/m8 4 140
run_test cuda_ops_test 100
[ "$(left)" -gt 150 ] && wait_for $W/m8r 100 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8
[ "$(left)" -gt 150 ] && http_check $W/m06
if [ "$(left)" -gt 130 ]; then  # where an 8B 2,048-token prefill goes (per kernel, summed over its 5 timed prefills)
  timeout 90 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base --launch-count 4000 \
    "$VB" engine-bench --model $W/m8 --device cuda --batches 1 --context 64 --steps 1 --prefill 2048 \
    --no-context-prefill > $W/ncu_prefill.csv 2> $W/ncu_prefill.err
  say "ncu 8B prefill rc=$?"
  python3 scripts/device/ncu_summary.py $W/ncu_prefill.csv $OUT/ncu_8_prefill.txt > /dev/null
  head -14 $OUT/ncu_8_prefill.txt | tee -a $LOG
fi
if [ "$(left)" -gt 90 ]; then
  timeout $(( $(left) - 20 )) "$VB_BIN/cuda_model_test" > $OUT/cuda_model_test.log 2>&1
  say "cuda_model_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_model_test.log | tr '\n' ' ')"
  grep -E "FAILED|Failure|\[cuda parity" $OUT/cuda_model_test.log | head -12 | tee -a $LOG
fi
call_finish
