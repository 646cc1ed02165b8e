#!/usr/bin/env bash
# Session 35, call g (one GPU, BUDGET s, default 200): the speed figures of record on main
# (engine-bench contract / fast for 0.6B, 8B with its 2,048-token prefill, and 1.7B), for the README
# table on whichever card comes (the table's H200 run is session 31's). Pack: PACK_XZ=1
#   scripts/device/pack.sh build verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s35_g 200
mk qwen3-1.7b $W/m17 0.02 &
wait_for $W/m8 120
export EB_MIN_LEFT=20 EB_PREFILL=0
record_speed
wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
call_finish
