#!/usr/bin/env bash
# Session 13, call 2 (one H200, ~330 s): (1) mma_probe's second question: does an mma.sync k16 step
# depend on which slot each k takes, or only on the step's set of k (slot maps that keep the sets
# against maps that change them)? (2) The committed candidate (fold mode 3 = interleaved halves by
# default; every attention kernel's exps selected, not branched around) against call 1's binary,
# carried as verbatim_prev and run with call 1's best prefill path (VERBATIM_ATTN_FOLD_PV=4, the
# qkv_post grid cap off), so the pair differs only in the decode kernels' exps: engine-bench decode
# at batch 1/8/32/64 and the prefill, alternated, two rounds on 8B, one on 0.6B. Bits:
# cuda_ops_test, the 0.6B digests, the 8B bf16 and fp16 digests. ncu per-kernel durations of an 8B
# decode step at batch 32; qkv_post's 32-bit item index (the candidate also has it) in the per-kernel
# durations of one 8B prefill.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test mma_probe,
# plus call 1's verbatim as .carry/bin/verbatim_prev.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s13_ab 330
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
bits_06
wait_for $W/m8 150
export EB_STEPS=16 EB_MIN_LEFT=40
ab_eb $VB_BIN/verbatim_prev prev 8 $W/m8 2 VERBATIM_ATTN_FOLD_PV=4 VERBATIM_QKV_POST_BLOCKS_PER_SM=0
ab_eb $VB_BIN/verbatim_prev prev 06 $W/m06 1 VERBATIM_ATTN_FOLD_PV=4 VERBATIM_QKV_POST_BLOCKS_PER_SM=0
wait_for $W/m8r 100 && {
  inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
  inv 8r_fp16 $W/m8r float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=7e58f529cd75d598
}
[ "$(left)" -gt 60 ] && ncu_steps 8_b32 $W/m8 32
ncu_prefill $W/m8
call_finish
