#!/usr/bin/env bash
# Session 31 (BUDGET s, default 200): does host load slow the 8B prefill? The H200's checks call
# (s30_b.sh) gave a contract prefill of 78.2 ms (fast 74.0) while two make-model jobs ran in the
# background, as s24_final's 77.8; alone it has been 73.5-74.3. Here: the 8B prefill (batch 1
# decode, 8 steps) contract / fast alternated twice alone, then twice while two make-model jobs
# (an 8B and a 1.7B, ~20 GB of random weights) run and are killed after. Pack as s30_b.sh.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s31_b 200
wait_for $W/m8 90
export EB_MIN_LEFT=15 EB_PREFILL=2048 EB_BATCHES=1 EB_STEPS=8
for r in 1 2; do eb alone_contract_r$r $W/m8 contract; eb alone_fast_r$r $W/m8 fast; done
( while true; do rm -rf $W/bg8 $W/bg17; mk qwen3-8b $W/bg8 0.005 & mk qwen3-1.7b $W/bg17 0.02; wait; done ) &
LOAD=$!
sleep 5
say "load: $(uptime)"
for r in 1 2; do eb load_contract_r$r $W/m8 contract; eb load_fast_r$r $W/m8 fast; done
say "load: $(uptime)"
pkill -P $LOAD; kill $LOAD; pkill -f "make-model" ; wait 2>/dev/null
call_finish
