#!/usr/bin/env bash
# Session 3, final call (x2 machine, BUDGET s, default 480): the figures of record for the README.
# GPU 0, timed work only: engine-bench contract and fast for the 0.6B, 1.7B and 8B shapes (decode
# at batch 1/8/32/64 over ~1k context, 2,048-token prefill, memory), spec-bench 0.6B (init std
# 0.02) and 8B (init std 0.005: the random 8B shape that repeats itself), ncu sections of the 8B
# batch-32 attention kernel, then two servers (default; 48 KV blocks with 64-token steps:
# preemption and chunked prefill) each checked by `verbatim check` with 64 users, compared.
# GPU 1: the HF transformers peer (0.6B, 8B), cuda_ops_test, cuda_model_test, the invariance
# matrix (0.6B bf16 and fp16, 8B bf16). Every step checks the time left.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-480}
call_setup s3_final
say "gpu: $(gpu_facts | tr '\n' ';')"
COMMIT=${COMMIT:-unknown}
say "commit $COMMIT"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-1.7b $W/m17 0.02 &
( mk qwen3-8b $W/m8 0.02; mk qwen3-8b $W/m8r 0.005 ) &
wait_for() { while [ ! -f "$1.done" ] && [ "$(left)" -gt "$2" ]; do sleep 2; done; [ -f "$1.done" ]; }

lane1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 90 python3 bench/hf_peer.py --model $W/m06 --batches 1,8,32,64 --context 1024 --steps 6 --prefill 2048 \
    --out $OUT/hf_06.json > $OUT/hf_06.log 2>&1
  say "GPU1 HF 0.6B rc=$?: $(grep -E '^HF' $OUT/hf_06.log | tr '\n' ' ')"
  for t in cuda_ops_test cuda_model_test; do
    timeout 100 "$VB_BIN/$t" > $OUT/$t.log 2>&1
    say "GPU1 $t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/$t.log | tr '\n' ' ')"
  done
  for dt in bfloat16 float16; do
    VERBATIM_TEST_MODEL_DIR=$W/m06 VERBATIM_TEST_DTYPE=$dt timeout 100 "$VB_BIN/cuda_invariance_test" \
      --gtest_filter="$([ $dt = float16 ] && echo F16 || echo BF16)/*" > $OUT/inv_06_$dt.log 2>&1
    say "GPU1 invariance 0.6B $dt rc=$? $(grep -E '^\[  (PASSED|FAILED) |digest' $OUT/inv_06_$dt.log | tr '\n' ' ')"
  done
  if wait_for $W/m8 200; then
    timeout 140 python3 bench/hf_peer.py --model $W/m8 --batches 1,8,32,64 --context 1024 --steps 4 --prefill 2048 \
      --out $OUT/hf_8.json > $OUT/hf_8.log 2>&1
    say "GPU1 HF 8B rc=$?: $(grep -E '^HF' $OUT/hf_8.log | tr '\n' ' ')"
  fi
  if [ "$(left)" -gt 130 ]; then
    VERBATIM_TEST_MODEL_DIR=$W/m8 VERBATIM_TEST_DTYPE=bfloat16 VERBATIM_TEST_MAX_TOKENS=8 timeout $(( $(left) - 20 )) \
      "$VB_BIN/cuda_invariance_test" --gtest_filter='BF16/*' > $OUT/inv_8_bf16.log 2>&1
    say "GPU1 invariance 8B bf16 rc=$? $(grep -E '^\[  (PASSED|FAILED) |digest|drafts' $OUT/inv_8_bf16.log | tr '\n' ' ')"
  fi
}
lane1 &

export CUDA_VISIBLE_DEVICES=0
eb() {  # tag dir mode
  [ "$(left)" -lt 60 ] && { say "skip eb $1: $(left) s left"; return; }
  timeout 60 "$VB" engine-bench --model "$2" --device cuda --mode "$3" --batches 1,8,32,64 --context 1024 --steps 32 \
    --prefill 2048 --json $OUT/eb_$1.json > $OUT/eb_$1.log 2>&1
  say "eb $1 rc=$?: $(grep -E 'decode|prefill [0-9]' $OUT/eb_$1.log | sed -E 's/.*batch +([0-9]+): median +([0-9.]+) ms.*/b\1 \2/; s/prefill 2048 tokens: median ([0-9.]+) ms, ([0-9.]+) TFLOP.*/prefill \1 ms \2 TF/' | tr '\n' ' ')"
  grep memory $OUT/eb_$1.log | tee -a $LOG
}
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
wait_for $W/m17 100 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
wait_for $W/m8 100 && { eb 8_contract $W/m8 contract; eb 8_fast $W/m8 fast; }
spec() {  # tag dir ks
  [ "$(left)" -lt 90 ] && { say "skip spec $1: $(left) s left"; return; }
  timeout 80 "$VB" spec-bench --model "$2" --device cuda --batches 1,8 --workloads repetitive,random \
    --num-speculative-tokens "$3" --reps 3 --max-tokens 64 --json $OUT/spec_$1.json > $OUT/spec_$1.log 2>&1
  say "spec $1 rc=$?"
  grep -E "^K " $OUT/spec_$1.log | tee -a $LOG
}
spec 06 $W/m06 3,5
wait_for $W/m8r 100 && spec 8r $W/m8r 3
if [ "$(left)" -gt 100 ]; then
  timeout 40 "$NCU" --clock-control none --kernel-name regex:attention_part --launch-skip 36 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    "$VB" engine-bench --model $W/m8 --device cuda --batches 32 --context 1024 --steps 1 --prefill 0 --no-context-prefill \
    > $OUT/ncu_attn_8_b32.txt 2>&1
  say "ncu attention sections rc=$?"
fi
[ "$(left)" -gt 120 ] && http_check $W/m06
wait
call_finish
