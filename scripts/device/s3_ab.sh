#!/usr/bin/env bash
# Session 3, call 4 (x2 machine, ~300 s): decode attention and launch A/B at 8B and 0.6B.
# GPU 0 (timed only): engine-bench decode (batches 1, 8, 32, 64; prefill 2,048 on the default)
# for each of: default; VERBATIM_DECODE_FOLD_MIN_BATCH=8 (decode rows' tiles folded in one CTA,
# no parts/merge: same bits); VERBATIM_PDL=0; both. Then ncu of one 8B batch-32 step with the fold.
# GPU 1: cuda_ops_test (the GEMM knobs incl. the new default), spec-bench on an 8B folder made with
# --init-std 0.05 (does it repeat itself enough to accept drafts?), batch 1 and 8, K 3.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-300}
call_setup s3_ab
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
mk qwen3-8b $W/m8s 0.05 &
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 100 "$VB_BIN/cuda_ops_test" > $OUT/cuda_ops_test.log 2>&1
  say "GPU1 cuda_ops_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_ops_test.log | tr '\n' ' ')"
  while [ ! -f $W/m8s.done ] && [ "$(left)" -gt 120 ]; do sleep 2; done
  timeout $(( $(left) - 20 )) "$VB" spec-bench --model $W/m8s --device cuda --batches 1,8 --workloads repetitive,random \
    --num-speculative-tokens 3 --reps 2 --max-tokens 48 --json $OUT/spec_8_std005.json > $OUT/spec_8_std005.log 2>&1
  say "GPU1 spec-bench 8B std 0.05 rc=$?"
  grep -E "^K |spec-bench" $OUT/spec_8_std005.log | tee -a $LOG
}
lane1 &
export CUDA_VISIBLE_DEVICES=0
eb() {  # tag dir prefill [env...]
  local tag=$1 dir=$2 pf=$3
  shift 3
  env "$@" timeout 60 "$VB" engine-bench --model "$dir" --device cuda --batches 1,8,32,64 --context 1024 --steps 32 \
    --prefill "$pf" --json $OUT/eb_$tag.json > $OUT/eb_$tag.log 2>&1
  say "eb $tag rc=$? ($*): $(grep -E 'decode|prefill [0-9]' $OUT/eb_$tag.log | sed -E 's/.*batch +([0-9]+): median +([0-9.]+) ms.*/b\1 \2/; s/prefill 2048 tokens: median ([0-9.]+) ms, ([0-9.]+) TFLOP.*/prefill \1 ms \2 TF/' | tr '\n' ' ')"
}
eb 06_default $W/m06 2048
eb 06_fold $W/m06 0 VERBATIM_DECODE_FOLD_MIN_BATCH=8
eb 06_nopdl $W/m06 0 VERBATIM_PDL=0
eb 06_fold_nopdl $W/m06 0 VERBATIM_DECODE_FOLD_MIN_BATCH=8 VERBATIM_PDL=0
while [ ! -f $W/m8.done ] && [ "$(left)" -gt 100 ]; do sleep 2; done
eb 8_default $W/m8 2048
eb 8_fold $W/m8 0 VERBATIM_DECODE_FOLD_MIN_BATCH=8
eb 8_nopdl $W/m8 0 VERBATIM_PDL=0
eb 8_fold_nopdl $W/m8 0 VERBATIM_DECODE_FOLD_MIN_BATCH=8 VERBATIM_PDL=0
if [ "$(left)" -gt 70 ]; then
  VERBATIM_DECODE_FOLD_MIN_BATCH=8 timeout 60 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv \
    --print-units base --launch-count 4000 "$VB" engine-bench --model $W/m8 --device cuda --batches 32 --context 1024 \
    --steps 2 --prefill 0 --no-context-prefill > $W/ncu_8_b32_fold.csv 2> /dev/null
  python3 scripts/device/ncu_summary.py $W/ncu_8_b32_fold.csv $OUT/ncu_8_b32_fold.txt > /dev/null
  head -12 $OUT/ncu_8_b32_fold.txt | tee -a $LOG
fi
wait
call_finish
