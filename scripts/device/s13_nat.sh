#!/usr/bin/env bash
# Session 13, call 2 (one H200, ~400 s). Branch s13-natural-sets: every contract GEMM's k16 steps
# take 16 consecutive k (v1 loads 8 bytes a lane per step; the wgmma kernel reads x and W from
# shared memory as four tensor copies per chunk lay them out, no staging). Same bits between the
# kernels only if a step's sum depends on its set of k alone: (1) mma_probe's second question
# answers that directly; (2) cuda_ops_test (GemmKernelsAreV1BitForBit: wgmma against v1) checks it
# on every shape. New digests: the 0.6B and 8B matrices without expectations (they print theirs).
# Speed: gemm-bench at 2,048 rows; engine-bench decode 1/8/32/64 and prefill for three binaries
# alternated (verbatim_prev: call 1's, with call 1's best prefill path switched on; verbatim_main:
# main 5e0166c, fold mode 3 and selected exps everywhere; verbatim: the branch), two rounds on 8B,
# one on 0.6B; the branch's per-kernel durations of one 8B prefill.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test mma_probe,
# plus verbatim_prev (call 1) and verbatim_main (main 5e0166c) in .carry/bin.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s13_nat 400
mk qwen3-8b $W/m8r 0.005 &
timeout 60 "$VB_BIN/mma_probe" --json $OUT/mma_probe.json > $OUT/mma_probe.log 2>&1
say "mma_probe rc=$?"
python3 - $OUT/mma_probe.json <<'PY' | tee -a $LOG
import collections, json, sys
d, n = collections.Counter(), collections.Counter()
for c in json.load(open(sys.argv[1]))["slot_maps"]:
    d[c["map"]] += c["differ_from_natural"]
    n[c["map"]] += 1
for k in sorted(d): print(f"  {k:26s} outputs differing from the natural map: {d[k]} (over {n[k]} cases of 512)")
PY
run_test cuda_ops_test 100
inv 06_bf16 $W/m06 bfloat16
inv 06_fp16 $W/m06 float16
gemm_2048 "" tiled,cublas
wait_for $W/m8 120
export EB_STEPS=16 EB_MIN_LEFT=40
NEW=$VB
for r in 1 2; do
  VB=$VB_BIN/verbatim_prev eb 8_prev_r$r $W/m8 contract VERBATIM_ATTN_FOLD_PV=4 VERBATIM_QKV_POST_BLOCKS_PER_SM=0
  VB=$VB_BIN/verbatim_main eb 8_main_r$r $W/m8 contract
  VB=$NEW eb 8_nat_r$r $W/m8 contract
done
VB=$VB_BIN/verbatim_prev eb 06_prev $W/m06 contract VERBATIM_ATTN_FOLD_PV=4 VERBATIM_QKV_POST_BLOCKS_PER_SM=0
VB=$VB_BIN/verbatim_main eb 06_main $W/m06 contract
VB=$NEW eb 06_nat $W/m06 contract
wait_for $W/m8r 90 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8
}
ncu_prefill $W/m8
call_finish
