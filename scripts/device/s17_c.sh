#!/usr/bin/env bash
# Session 17, call 4 (one H200, BUDGET s, default 190): main with the v1 GEMM's new defaults at
# 17-64 rows (8 chunks a round at 17..32 rows, 64 x 16 tiles with 4 chunks a round at 33..64; s17_b
# measured them as knobs). Bits: cuda_ops_test (each form against the plain v1), the 0.6B digests
# of record; then engine-bench contract and fast for 0.6B and 8B, and the 64-user HTTP check.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s17_c 190
bits_06
wait_for $W/m8 60
export EB_MIN_LEFT=20
eb 8_contract $W/m8 contract
eb 8_fast $W/m8 fast
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
[ "$(left)" -gt 55 ] && http_check $W/m06
call_finish
