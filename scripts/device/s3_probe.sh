#!/usr/bin/env bash
# Session 3, call 3 (x2 machine, ~540 s): where the 8B decode step goes at batch 32, which GEMM
# knobs help, and the serving matrix at tensor-parallel size 2 (issue 7).
# GPU 0 (timed work only): cuda_ops_test (every GEMM knob == v1 bit for bit), gemm-bench 8B
# layers with the knobs, engine-bench 8B: default, knobs, folded decode attention from batch 32.
# GPU 1: ncu per-kernel times of one decode step (8B batch 32, 8B batch 1, 0.6B batch 1), the
# invariance matrix on 0.6B at TP=1 (its outputs digest).
# Then both GPUs: the invariance matrix on 0.6B at TP=2 (digest must equal TP=1's), cuda_tp_test.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test tests/cuda_tp_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-540}
call_setup s3_probe
say "gpu: $(gpu_facts | tr '\n' ';')"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
MK8=$!

lane1() {
  export CUDA_VISIBLE_DEVICES=1
  VERBATIM_TEST_MODEL_DIR=$W/m06 VERBATIM_TEST_DTYPE=bfloat16 timeout 120 "$VB_BIN/cuda_invariance_test" \
    --gtest_filter='BF16/*' > $OUT/inv_06_tp1.log 2>&1
  say "GPU1 invariance 0.6B TP=1 rc=$? $(grep -E '^\[  (PASSED|FAILED) |digest' $OUT/inv_06_tp1.log | tr '\n' ' ')"
  ncu_steps 06_b1 $W/m06 1
  while [ ! -f $W/m8.done ] && [ "$(left)" -gt 200 ]; do sleep 2; done  # (a sibling's child: no wait)
  ncu_steps 8_b32 $W/m8 32
  ncu_steps 8_b1 $W/m8 1
  ncu_steps 8_b64 $W/m8 64
}
lane1 &
L1=$!

export CUDA_VISIBLE_DEVICES=0
timeout 200 "$VB_BIN/cuda_ops_test" > $OUT/cuda_ops_test.log 2>&1
say "GPU0 cuda_ops_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_ops_test.log | tr '\n' ' ')"
grep -E "FAILED|Failure|differs" $OUT/cuda_ops_test.log | head -20 | tee -a $LOG
timeout 120 "$VB" gemm-bench --archs qwen3-8b --m 32,64,128,2048 \
  --kernels v1,v1:m32x2,v1:m64n32,tiled,tiled:nocombine,tiled:wide,cublas --json $OUT/gemm_bench.json \
  > $OUT/gemm_bench.log 2>&1
say "gemm-bench rc=$?"
grep -E "^sum" $OUT/gemm_bench.log | tee -a $LOG
wait $MK8
eb() {  # tag dir mode [env...]
  local tag=$1 dir=$2 mode=$3
  shift 3
  [ "$(left)" -lt 150 ] && { say "skip eb $tag: $(left) s left"; return; }
  env "$@" timeout 100 "$VB" engine-bench --model "$dir" --device cuda --mode "$mode" --batches 1,8,32,64 \
    --context 1024 --steps 32 --prefill 2048 --json $OUT/eb_$tag.json > $OUT/eb_$tag.log 2>&1
  say "eb $tag rc=$? ($*)"
  grep -E "decode|prefill [0-9]|memory" $OUT/eb_$tag.log | sed "s/^/  $tag: /" | tee -a $LOG
}
eb 8_default $W/m8 contract
eb 8_knobs $W/m8 contract VERBATIM_GEMM_V1_M64=2 VERBATIM_GEMM_TILED_COMBINE=0 VERBATIM_GEMM_TILED_WIDE=1
eb 8_fold32 $W/m8 contract VERBATIM_DECODE_FOLD_MIN_BATCH=32 VERBATIM_GEMM_V1_M64=2
wait $L1
unset CUDA_VISIBLE_DEVICES
if [ "$(left)" -gt 60 ]; then
  VERBATIM_TEST_TP=2 VERBATIM_TEST_MODEL_DIR=$W/m06 VERBATIM_TEST_DTYPE=bfloat16 timeout $(( $(left) - 50 )) \
    "$VB_BIN/cuda_invariance_test" --gtest_filter='BF16/*' > $OUT/inv_06_tp2.log 2>&1
  say "invariance 0.6B TP=2 rc=$? $(grep -E '^\[  (PASSED|FAILED) |digest' $OUT/inv_06_tp2.log | tr '\n' ' ')"
  grep -E "Failure|differ" $OUT/inv_06_tp2.log | head -10 | tee -a $LOG
fi
if [ "$(left)" -gt 45 ]; then
  timeout $(( $(left) - 15 )) "$VB_BIN/cuda_tp_test" > $OUT/cuda_tp_test.log 2>&1
  say "cuda_tp_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_tp_test.log | tr '\n' ' ')"
fi
gzip -c $W/ncu_8_b32.csv > $OUT/ncu_8_b32.csv.gz 2> /dev/null
call_finish
