#!/usr/bin/env bash
# Session 31 (H200, BUDGET s, default 420): s30_c's decode / prefill table on main with nothing else
# running (s30_b, this session's first call, made the 8B and 1.7B folders in the background while
# the 8B row ran, and its contract prefill came out at 78.2 ms, 48% of 790), then the 8B prefill
# alone, contract and fast alternated three times; then, time left, s30_d's ncu of 8B decode steps at batch 1 and 32 on
# the H200 (s30_d's were an H100's). Pack as s30_b.sh.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s31_a 420
wait_for $W/m8 90
mk qwen3-1.7b $W/m17 0.02
export EB_MIN_LEFT=20 EB_PREFILL=0
eb 06_contract $W/m06 contract
eb 06_fast $W/m06 fast
EB_PREFILL=2048 eb 8_contract $W/m8 contract
EB_PREFILL=2048 eb 8_fast $W/m8 fast
eb 17_contract $W/m17 contract
eb 17_fast $W/m17 fast
for r in 1 2 3; do
  EB_PREFILL=2048 EB_BATCHES=1 EB_STEPS=8 eb pf8_contract_r$r $W/m8 contract
  EB_PREFILL=2048 EB_BATCHES=1 EB_STEPS=8 eb pf8_fast_r$r $W/m8 fast
done
[ "$(left)" -gt 110 ] && ncu_steps 8_b1 $W/m8 1
[ "$(left)" -gt 90 ] && ncu_steps 8_b32 $W/m8 32
call_finish
