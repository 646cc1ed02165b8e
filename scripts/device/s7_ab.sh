#!/usr/bin/env bash
# Session 7, call 4 (one H200, ~150 s): graphs' parts per row from 2^k and 3·2^(k-1) (fewer empty
# attention items), and the merge and qkv_post kernels reading step inputs, norm weights and RoPE
# entries before griddepcontrol.wait. Bits: cuda_ops_test (qkv_post at head_dim 64/128/256), the
# 0.6B digests of record. Speed: engine-bench decode, verbatim_prev (161ef8a, carried beside this
# binary) against this one, two rounds on 8B, one on 0.6B, same call.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus verbatim_prev.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-240}
call_setup s7_ab
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
run_test cuda_ops_test 100
inv_of_record $W/m06
wait_for $W/m8 100
export EB_PREFILL=0 EB_STEPS=24
ab_eb $VB_BIN/verbatim_prev prev 8 $W/m8 2
ab_eb $VB_BIN/verbatim_prev prev 06 $W/m06 1
call_finish
