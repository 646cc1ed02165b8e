#!/usr/bin/env bash
# Session 47, call d (one GPU, run inline on the machine s47_c found warm): the 8B bf16 digest of
# record (init std 0.005, 8 tokens) and the 8B contract rows at 1 / 8 / 32 / 64 sequences with
# session 47's sampler. Pack: verbatim + cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start_06 s47_d 200
mk qwen3-8b $W/m8r 0.005 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
EB_PREFILL=0 EB_MIN_LEFT=20 EB_BATCHES=1,8,32,64 eb 8_contract $W/m8r contract
call_finish
