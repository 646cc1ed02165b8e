#!/usr/bin/env bash
# Session 18, call 4 (one H200, BUDGET s, default 150). gemm.cu's v1 dispatch at <= 32 rows now
# goes through one launch_up_to_32<T, SILU> for gemm() and gemm_silu_mul() (the same
# instantiations under the same conditions): cuda_ops_test (every M and unroll depth, plain and
# SiLU, against v1 / the CPU) and the 0.6B digests of record, then 0.6B decode as a speed check.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s18_c 150
run_test cuda_ops_test 100
inv_of_record $W/m06
EB_PREFILL=0 eb 06_contract $W/m06 contract
call_finish
