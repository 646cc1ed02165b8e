#!/usr/bin/env bash
# Session 7, call 3 (one H200, ~300 s): tile_compute skips the softmax of a warp's rows gid + 8
# when none is active (decode: rows = the kv group, 2 or 4 on Qwen3), and the attention kernels
# read the step's inputs (items, positions, block ids) before griddepcontrol.wait.
# Bits: cuda_ops_test, the 0.6B digests of record, the 8B bf16 digest at init std 0.005.
# Speed: engine-bench decode and prefill, session 6's binary (verbatim_s6) against this one, two
# rounds for 8B, one for 0.6B, same call.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test, plus
# verbatim_s6 from session 6's bin.tar.xz.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-420}
call_setup s7_skip
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
( mk qwen3-8b $W/m8 0.02; mk qwen3-8b $W/m8r 0.005 ) &
run_test cuda_ops_test 120
inv_of_record $W/m06
wait_for $W/m8 150
ab_eb $VB_BIN/verbatim_s6 s6 8 $W/m8 2
ab_eb $VB_BIN/verbatim_s6 s6 06 $W/m06 1
wait_for $W/m8r 60 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf
call_finish
