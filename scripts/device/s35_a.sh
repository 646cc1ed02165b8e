#!/usr/bin/env bash
# Session 35, call a (one GPU, BUDGET s, default 570): every figure and check of record on main as
# it is (078f7d5's kernels: session 34's final code, which ran only on H100s), as s30_b did for the
# README table, plus CUPTI timelines of the batch-1 decode steps (0.6B, 8B; trace_decode): per
# kernel, its share of the step under PDL. (As run in call a, these two steps called an nsys helper
# that found no usable nsys; call e ran them as written here.) Pack: PACK_XZ=1 scripts/device/pack.sh build verbatim tests/cuda_ops_test
#   tests/cuda_model_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s35_a 570
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
inv_of_record $W/m06
wait_for $W/m8 150
export EB_MIN_LEFT=30 EB_PREFILL=0
record_speed
trace_decode 06_b1 $W/m06 1
trace_decode 8_b1 $W/m8 1
wait_for $W/m8r 60 && inv_8_of_record $W/m8r
[ "$(left)" -gt 60 ] && http_check $W/m06
wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
model_parity 75
[ "$(left)" -gt 150 ] && hf_peer 8 $W/m8 4 100
[ "$(left)" -gt 80 ] && run_test cuda_ops_test $(( $(left) - 10 ))
call_finish
