#!/usr/bin/env bash
# Session 4, call 8 (one H200, ~100 s): the 8B matrix on the init-std-0.02 folder with 8 tokens per
# request base, as session 3's final call ran it (digest 4b0669fc01b41792 then): does main give
# that folder the same bits after the attention slot-map change?
# Pack: pack.sh build-cuda verbatim tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-200}
call_setup s4_inv8
say "gpu: $(gpu_facts | tr '\n' ';')"
mk qwen3-8b $W/m8 0.02
inv 8_bf16_std002_t8 $W/m8 bfloat16 VERBATIM_TEST_MAX_TOKENS=8
call_finish
