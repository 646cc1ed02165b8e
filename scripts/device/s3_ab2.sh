#!/usr/bin/env bash
# Session 3, call 5 (x2 machine, ~300 s): which launches keep PDL, and 8 chunks per round for the
# small-M GEMM. GPU 0 (timed only): gemm-bench v1 / v1:u8 / cuBLAS at M 1, 8, 16 (0.6B, 8B layers);
# engine-bench decode at 8B and 0.6B for: PDL everywhere; PDL off for attention; PDL for steps of
# <= 4 rows only; PDL off; u8 with PDL for <= 4 rows. GPU 1: cuda_ops_test, cuda_model_test,
# spec-bench on 8B folders made with --init-std 0.01 and 0.005 (does either repeat itself?).
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-300}
call_setup s3_ab2
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 100 "$VB_BIN/cuda_ops_test" > $OUT/cuda_ops_test.log 2>&1
  say "GPU1 cuda_ops_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_ops_test.log | tr '\n' ' ')"
  grep -E "Failure|differs" $OUT/cuda_ops_test.log | head | tee -a $LOG
  timeout 100 "$VB_BIN/cuda_model_test" > $OUT/cuda_model_test.log 2>&1
  say "GPU1 cuda_model_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda_model_test.log | tr '\n' ' ')"
  for std in 0.01 0.005; do
    [ "$(left)" -lt 90 ] && break
    mk qwen3-8b $W/m8s$std $std
    timeout $(( $(left) - 20 )) "$VB" spec-bench --model $W/m8s$std --device cuda --batches 1 --workloads repetitive \
      --num-speculative-tokens 3 --reps 1 --max-tokens 48 --json $OUT/spec_8_std$std.json > $OUT/spec_8_std$std.log 2>&1
    say "GPU1 spec-bench 8B std $std rc=$?: $(grep -E '^K ' $OUT/spec_8_std$std.log | tr '\n' ' ')"
    rm -rf $W/m8s$std
  done
}
lane1 &
export CUDA_VISIBLE_DEVICES=0
timeout 60 "$VB" gemm-bench --archs qwen3-0.6b,qwen3-8b --m 1,8,16 --kernels v1,v1:u8,cublas \
  --json $OUT/gemm_bench_u8.json > $OUT/gemm_bench_u8.log 2>&1
say "gemm-bench rc=$?"
grep -E "^sum" $OUT/gemm_bench_u8.log | tee -a $LOG
eb() {  # tag dir [env...]
  local tag=$1 dir=$2
  shift 2
  env "$@" timeout 60 "$VB" engine-bench --model "$dir" --device cuda --batches 1,8,32,64 --context 1024 --steps 32 \
    --prefill 0 --json $OUT/eb_$tag.json > $OUT/eb_$tag.log 2>&1
  say "eb $tag rc=$? ($*): $(grep -E 'decode' $OUT/eb_$tag.log | sed -E 's/.*batch +([0-9]+): median +([0-9.]+) ms.*/b\1 \2/' | tr '\n' ' ')"
}
variants() {  # prefix dir
  eb $1_pdl_all $2 VERBATIM_PDL_MAX_ROWS=0
  eb $1_pdl_noattn $2 VERBATIM_PDL_MAX_ROWS=0 VERBATIM_PDL_ATTN=0
  eb $1_pdl_le4 $2 VERBATIM_PDL_MAX_ROWS=4
  eb $1_pdl_le8 $2 VERBATIM_PDL_MAX_ROWS=8
  eb $1_pdl_off $2 VERBATIM_PDL=0
  eb $1_u8_le4 $2 VERBATIM_PDL_MAX_ROWS=4 VERBATIM_GEMM_V1_UNROLL16=8
}
variants 06 $W/m06
while [ ! -f $W/m8.done ] && [ "$(left)" -gt 100 ]; do sleep 2; done
variants 8 $W/m8
wait
call_finish
