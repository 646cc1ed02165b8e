#!/usr/bin/env bash
# Session 36, call a (one GPU, BUDGET s, default 570): every figure and check of record on main
# (as s35_a), the CUPTI timelines of batch 1 and 32 (0.6B, 8B), and the A/B of the stream GEMM's
# ring depth at 17..32 rows (VERBATIM_GEMM_STREAM_STAGES32 3 against 4, the depth main had; same
# bits: cuda_ops_test's stream entries at 17 and 32 rows). Last, if time is left, ncu's stall
# samples of the 8B batch-1 attention part kernel (where its ~6.5 us after qkv_post go).
# Pack: PACK_XZ=1 scripts/device/pack.sh build verbatim tests/cuda_ops_test tests/cuda_model_test
#   tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s36_a 570
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
inv_of_record $W/m06
wait_for $W/m8 150
export EB_MIN_LEFT=30 EB_PREFILL=0
record_speed
EB_BATCHES=24,32 ab_many s32 $W/m8 2 "s4" "s3 VERBATIM_GEMM_STREAM_STAGES32=3"
EB_BATCHES=24,32 ab_many s32_06 $W/m06 2 "s4" "s3 VERBATIM_GEMM_STREAM_STAGES32=3"
trace_decode 06_b1 $W/m06 1
trace_decode 8_b1 $W/m8 1
trace_decode 8_b32 $W/m8 32
wait_for $W/m8r 60 && inv_8_of_record $W/m8r
[ "$(left)" -gt 60 ] && http_check $W/m06
wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
model_parity 75
[ "$(left)" -gt 150 ] && hf_peer 8 $W/m8 4 100
[ "$(left)" -gt 80 ] && run_test cuda_ops_test $(( $(left) - 10 ))
[ "$(left)" -gt 120 ] && ncu_prof ncu_attn_8_b1 attention_part_kernel 40 $W/m8 --batches 1 --context 1024 --steps 4 --prefill 0
call_finish
