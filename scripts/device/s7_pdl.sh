#!/usr/bin/env bash
# Session 7, call 6 (one H200, ~200 s): programmatic dependent launch for larger decode steps now
# that the attention kernels do their address setup before griddepcontrol.wait. Session 3 (call 5)
# found PDL on the attention kernels of large steps cost ~4 ms per 8B step at batch 32, so PDL is
# on for steps of <= 4 rows (VERBATIM_PDL_MAX_ROWS). Engine-bench decode of 8B and 0.6B with the
# limit at 4 (default), 8, 16 and 64, two rounds, same binary; the 0.6B bf16 digest of record with
# the limit at 64 (PDL is scheduling only: the bits must not move).
# Pack: pack.sh build-cuda verbatim tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-260}
call_setup s7_pdl
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
inv 06_bf16_pdl64 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_PDL_MAX_ROWS=64
wait_for $W/m8 120
export EB_PREFILL=0 EB_STEPS=24 EB_MIN_LEFT=20
for round in 1 2; do
  for rows in 4 8 16 64; do eb 8_rows${rows}_r$round $W/m8 contract VERBATIM_PDL_MAX_ROWS=$rows; done
done
for rows in 4 8 16 64; do eb 06_rows${rows} $W/m06 contract VERBATIM_PDL_MAX_ROWS=$rows; done
call_finish
