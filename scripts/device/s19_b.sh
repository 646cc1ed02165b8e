#!/usr/bin/env bash
# Session 19, call 3 (one H200, BUDGET s, default 300). Two more loads-first changes: SiLU-mul's
# gate and up partials in one batch of loads (gemm_value4_pair; the 0.6B and 1.7B split gate_up),
# and the sampler's stats kernel reading a thread's logits once into registers for its three
# passes (same order each pass). Bits: cuda_ops_test (the sampler against the CPU at vocab 151,936
# and 200,000), the 0.6B digests of record, the 8B bf16 digest of record. Speed: engine-bench
# contract of the binary before (verbatim_base, 9dc2645) against the new one, alternated on 0.6B
# (three rounds) and 8B (two rounds); the per-kernel durations of two 0.6B decode steps at batch 1.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus the base
# binary as .carry/bin/verbatim_base. (The sampler change gave nothing and was dropped after this call;
# the SiLU-mul change is on main, 3240337.)
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s19_b 300
mk qwen3-8b $W/m8r 0.005 &
bits_06
export EB_MIN_LEFT=60 EB_STEPS=24
ab_eb $VB_BIN/verbatim_base base 06 $W/m06 3
ncu_steps 06_b1 $W/m06 1
wait_for $W/m8 100
ab_eb $VB_BIN/verbatim_base base 8 $W/m8 2
wait_for $W/m8r 50 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
