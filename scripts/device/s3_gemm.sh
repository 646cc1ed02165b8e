#!/usr/bin/env bash
# Session 3, call 1 (x2 machine, ~560 s): the tiled GEMM (CTA tiles in shared memory, segments
# added in the kernel), measured against v1 and cuBLAS, and the engine with it.
# GPU 0 (timed work only): cuda_ops_test (tiled == v1 bit for bit), gemm-bench (0.6B and 8B
# layers, M 1..2048, v1 / tiled / cuBLAS), engine-bench 8B and 0.6B: contract with the default
# (auto: tiled above 64 rows), contract with tiled from 17 rows (VERBATIM_GEMM_TILED_MIN_M=16),
# fast; the 8B contract run also polls nvidia-smi for the process's peak memory.
# GPU 1: cuda_model_test, cuda_invariance_test on 0.6B bf16, spec-bench 0.6B (batch 1 and 8,
# K 3 and 5, repetitive and random) on a GPU no test shares.
# Pack: scripts/device/pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test
#       tests/cuda_invariance_test, then compress .carry/bin (docs/device.md).
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
export NCCL_NVLS_ENABLE=0
BUDGET=${BUDGET:-560}
W=/tmp/s3 && mkdir -p $W
# Everything lands in $W and comes back as one archive ($OUT/s3_gemm.tgz) plus the log: a call
# returns at most 8 files.
FINAL=$OUT
OUT=$W/out && mkdir -p $OUT
LOG=$FINAL/s3_gemm.log
: > $LOG
say() { echo "[$SECONDS s] $*" | tee -a $LOG; }
left() { echo $((BUDGET - SECONDS)); }
VB=$VB_BIN/verbatim
say "gpu: $(gpu_facts | tr '\n' ';')"

mk() {  # arch dir [std]
  "$VB" make-model --arch "$1" --seed 1 --init-std "${3:-0.02}" --dtype bfloat16 --out "$2" > "$2.log" 2>&1 &&
    [ -f "$2/config.json" ] && touch "$2.done"
}
mk qwen3-0.6b $W/m06
( nice -n 10 bash -c "$(declare -f mk); VB=$VB; mk qwen3-8b $W/m8" ) &

lane1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 150 "$VB_BIN/cuda_model_test" > $OUT/cuda_model_test.log 2>&1
  say "GPU1 cuda_model_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_model_test.log | tr '\n' ' ')"
  VERBATIM_TEST_MODEL_DIR=$W/m06 VERBATIM_TEST_DTYPE=bfloat16 timeout 200 "$VB_BIN/cuda_invariance_test" \
    --gtest_filter='BF16/*' > $OUT/inv_06_bf16.log 2>&1
  say "GPU1 invariance 0.6B bf16 rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/inv_06_bf16.log | tr '\n' ' ')"
  timeout 150 "$VB" spec-bench --model $W/m06 --device cuda --batches 1,8 --workloads repetitive,random \
    --num-speculative-tokens 3,5 --reps 5 --max-tokens 64 --json $OUT/spec_06_quiet.json > $OUT/spec_06_quiet.log 2>&1
  say "GPU1 spec-bench 0.6B rc=$?"
  grep -E "^K |spec-bench" $OUT/spec_06_quiet.log | tee -a $LOG
}
if [ "${LANE1:-1}" = 1 ]; then lane1 & fi


export CUDA_VISIBLE_DEVICES=0
timeout 200 "$VB_BIN/cuda_ops_test" > $OUT/cuda_ops_test.log 2>&1
say "GPU0 cuda_ops_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_ops_test.log | tr '\n' ' ')"
grep -E "FAILED|Failure|differs" $OUT/cuda_ops_test.log | head -20 | tee -a $LOG
timeout 150 "$VB" gemm-bench --archs qwen3-0.6b,qwen3-8b --m 1,8,16,32,64,128,512,2048 --kernels v1,tiled,cublas \
  --json $OUT/gemm_bench.json > $OUT/gemm_bench.log 2>&1
say "gemm-bench rc=$?"
grep -E "^sum|M 2048|2048 " $OUT/gemm_bench.log | head -60 | tee -a $LOG

eb() {  # tag dir mode [env...]
  local tag=$1 dir=$2 mode=$3
  shift 3
  [ "$(left)" -lt 60 ] && { say "skip eb $tag: $(left) s left"; return; }
  local lim=$(( $(left) - 15 )); [ $lim -gt 150 ] && lim=150
  env "$@" timeout $lim "$VB" engine-bench --model "$dir" --device cuda --mode "$mode" --batches 1,8,32,64 \
    --context 1024 --steps 32 --prefill 2048 --json $OUT/eb_$tag.json > $W/eb_$tag.log 2>&1
  say "eb $tag rc=$?"
  grep -E "decode|prefill [0-9]|memory" $W/eb_$tag.log | sed "s/^/  $tag: /" | tee -a $LOG
}
if [ "${RUN06:-1}" = 1 ]; then
  eb 06_auto $W/m06 contract
  eb 06_min16 $W/m06 contract VERBATIM_GEMM_TILED_MIN_M=16
  eb 06_fast $W/m06 fast
fi
while [ ! -f $W/m8.done ] && [ "$(left)" -gt 100 ]; do sleep 2; done
say "8B folder: $(ls $W/m8 2> /dev/null | tr '\n' ' ') $(tail -2 $W/m8.log)"
nvidia-smi -i 0 --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 200 > $W/smi_8b.csv 2>&1 &
SMI=$!
eb 8_auto $W/m8 contract
kill $SMI 2> /dev/null
say "8B contract: peak process memory by nvidia-smi $(awk -F, '{if ($2 + 0 > m) m = $2 + 0} END {print m}' $W/smi_8b.csv) MiB"
eb 8_min16 $W/m8 contract VERBATIM_GEMM_TILED_MIN_M=16
eb 8_fast $W/m8 fast
wait
cp $W/eb_*.log $W/smi_8b.csv $W/m8.log $OUT/ 2> /dev/null
say "done"
tar czf $FINAL/s3_gemm.tgz -C $OUT .
