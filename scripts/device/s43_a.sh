#!/usr/bin/env bash
# Session 43, call a (one GPU). On an H200: the owed record of main's kernels (short_record, then
# the 1.7B rows), then the fault check. Elsewhere (an H100): the 0.6B digests of record, the
# 64-user HTTP check and the fault check, on main's code after session 43's engine changes.
# fault_check: `serve --device cuda` with VERBATIM_FAULT_AFTER_FORWARDS=8 must answer the request
# the fault hits with a 500 naming it and exit 1 (with the CUDA context alive at teardown).
# Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
fault_check() { injected_check fault 18433 VERBATIM_FAULT_AFTER_FORWARDS=8; }
# hang_check: a forward call that never returns trips --engine-step-timeout 2: a 500 naming it, exit 1.
hang_check() { injected_check hang 18434 VERBATIM_HANG_AFTER_FORWARDS=8 --engine-step-timeout 2; }
if is_h200; then
  call_start s43_a 480
  mk qwen3-1.7b $W/m17 0.02 &
  short_record
  fault_check
  hang_check
  export EB_MIN_LEFT=30 EB_PREFILL=0
  wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
else
  call_start_06 s43_a 300
  inv_of_record $W/m06
  fault_check
  hang_check
  [ "$(left)" -gt 60 ] && http_check $W/m06
fi
call_finish
