#!/usr/bin/env bash
# Session 16, call 4 (one H200, BUDGET s, default 130): the sampler's block reductions through one
# template (block_reduce; the same trees, one barrier more before each result is returned). Bits:
# cuda_ops_test (the sampler against the CPU's), the 0.6B digests of record, the 64-user HTTP check
# greedy and seeded; then the 8B decode at batch 1 and 8 with programmatic dependent launch on / off
# (VERBATIM_PDL=0), to size what launch overlap already hides.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s16_c 130
bits_06
http_check $W/m06
wait_for $W/m8 20
EB_MIN_LEFT=8 EB_PREFILL=0 EB_BATCHES=1,8 ab_many pdl8 $W/m8 1 "on" "off VERBATIM_PDL=0"
call_finish
