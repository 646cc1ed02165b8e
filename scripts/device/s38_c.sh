#!/usr/bin/env bash
# Session 38, call c (one GPU), adaptive, on the s38 build (s37-tidy + the attention launch tally;
# same kernels and bits as main's split-kernel code). On an H200 (BUDGET 575): record_suite, the
# H200 figures of record owed since session 35. Elsewhere (BUDGET 200): what the H100 record of
# session 37 lacked: the HF eager peer on the 8B in the same call as our 8B rows, and the 1.7B rows.
# Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if is_h200; then
  call_start s38_c 575
  ops_attention
  record_suite
else
  call_start s38_c 200
  mk qwen3-1.7b $W/m17 0.02
  eb 17_contract $W/m17 contract
  eb 17_fast $W/m17 fast
  wait_for $W/m8 60
  EB_PREFILL=2048 eb 8_contract $W/m8 contract
  hf_peer 8 $W/m8 4 100
fi
call_finish
