#!/usr/bin/env bash
# Session 30, H200 only (BUDGET s, default 200): the decode / prefill figures of record on main
# (s30_b ran every bit check and these figures on an H100): engine-bench contract / fast for
# 0.6B, 8B (with its 2,048-token prefill) and 1.7B. Pack as s30_b.sh.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s30_c 200
mk qwen3-1.7b $W/m17 0.02 &
export EB_MIN_LEFT=20 EB_PREFILL=0
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
wait_for $W/m8 60 && {
  EB_PREFILL=2048 eb 8_contract $W/m8 contract
  EB_PREFILL=2048 eb 8_fast $W/m8 fast
}
wait_for $W/m17 20 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
call_finish
