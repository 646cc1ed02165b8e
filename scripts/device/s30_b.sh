#!/usr/bin/env bash
# Session 30 (one GPU, BUDGET s, default 560): every figure and check of record on main as it is
# (s30_a ran s29_c on an H100: main's bits held there; the s27 patch was slower at batch 1 and stays
# off main). Bits: the 0.6B digests of record, the 8B bf16 and fp16 digests, the 64-user HTTP check,
# cuda_model_test (HF parity), cuda_ops_test last. Speed: engine-bench contract / fast for 0.6B, 8B
# (with its 2,048-token prefill) and 1.7B, and the HF transformers peer on the 8B.
# Pack: PACK_XZ=1 scripts/device/pack.sh build verbatim tests/cuda_ops_test tests/cuda_model_test \
#   tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s30_b 560
( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
inv_of_record $W/m06
wait_for $W/m8 150
export EB_MIN_LEFT=30 EB_PREFILL=0
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
EB_PREFILL=2048 eb 8_contract $W/m8 contract
EB_PREFILL=2048 eb 8_fast $W/m8 fast
wait_for $W/m8r 60 && inv_8_of_record $W/m8r
wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
[ "$(left)" -gt 150 ] && hf_peer 8 $W/m8 4 100
[ "$(left)" -gt 60 ] && http_check $W/m06
model_parity 75
[ "$(left)" -gt 80 ] && run_test cuda_ops_test $(( $(left) - 10 ))
call_finish
