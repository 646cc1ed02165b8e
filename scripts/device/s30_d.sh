#!/usr/bin/env bash
# Session 30: per-kernel durations (ncu, serialized) of two 8B decode steps at batch 1, then 32, on
# main (glue against GEMMs, for issue 4's batch-1 and 32-sequence targets). Pack as s30_b.sh.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s30_d 220
wait_for $W/m8 100
ncu_steps 8_b1 $W/m8 1
[ "$(left)" -gt 90 ] && ncu_steps 8_b32 $W/m8 32
call_finish
