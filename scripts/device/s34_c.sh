#!/usr/bin/env bash
# Session 34, call c (one GPU, BUDGET s, default 540): the figures and checks of record on main
# with the exp candidate (s34_b ran its op tests and the 0.6B / 8B bf16 digests): engine-bench
# contract / fast for 0.6B, 8B (with its 2,048-token prefill) and 1.7B; the 8B bf16 and fp16
# digests of record; the 64-user HTTP check; cuda_model_test (HF parity). s30_b without the HF
# peer and the op tests. Pack: PACK_XZ=1 scripts/device/pack.sh build verbatim tests/cuda_model_test
#   tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s34_c 540
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
wait_for $W/m8 150
export EB_MIN_LEFT=30 EB_PREFILL=0
record_speed
[ "$(left)" -gt 60 ] && http_check $W/m06
wait_for $W/m8r 60 && inv_8_of_record $W/m8r
wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
model_parity 60
call_finish
