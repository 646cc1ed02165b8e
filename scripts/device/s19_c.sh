#!/usr/bin/env bash
# Session 19, call 4 (one H200, BUDGET s, default 150): main's code at 3240337 (partials loaded
# before their adds in every fused consumer, SiLU-mul's gate and up in one batch; the sampler as
# before): cuda_ops_test and the 0.6B digests of record, bf16 and fp16.
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start_06 s19_c 150
bits_06
call_finish
