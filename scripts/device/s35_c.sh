#!/usr/bin/env bash
# Session 35, call c (one GPU, BUDGET s, default 200): where a decode step's wall time goes
# (VERBATIM_STEP_TIMING=1, step_timing.h): host work before queueing, the queueing calls, the
# sampler's setup, the wait, and the GPU's span; per batch size, 0.6B at 1 / 8 / 32 / 64 and 8B at
# 1 / 32; and the engine-bench figure without the timing beside each. Pack: PACK_XZ=1
#   scripts/device/pack.sh build verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-200}
call_setup s35_c
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
mk qwen3-8b $W/m8 0.02 &
timing() {  # tag dir batch
  VERBATIM_STEP_TIMING=1 timeout 60 "$VB" engine-bench --model "$2" --device cuda --batches "$3" --context 1024 \
    --steps 64 --prefill 0 > $OUT/timing_$1.log 2>&1
  say "timing $1 rc=$?: $(grep -E 'decode batch|step timing' $OUT/timing_$1.log | sed -E 's/.*median +([0-9.]+) ms.*/\1 ms a step;/' | tr '\n' ' ')"
}
for b in 1 8 32 64; do timing 06_b$b $W/m06 $b; done
wait_for $W/m8 60
for b in 1 32; do timing 8_b$b $W/m8 $b; done
EB_MIN_LEFT=20 EB_PREFILL=0 EB_BATCHES=1,32 eb 8_plain $W/m8 contract
EB_MIN_LEFT=20 EB_PREFILL=0 eb 06_plain $W/m06 contract
call_finish
