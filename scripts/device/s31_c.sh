#!/usr/bin/env bash
# Session 31: on an H200, s31_a's quiet rows (BUDGET 170, no ncu) with the binary that measures
# the SM clock after each timed section (72658e9 and later); on any other card only that the clock fields
# work: engine-bench 0.6B at batch 1 and 8 with a 2,048-token prefill. Pack as s30_b.sh (from 72658e9).
cd "$(dirname "$0")/../.."
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  BUDGET=${BUDGET:-170} exec bash scripts/device/s31_a.sh
fi
source scripts/device/common.sh
call_setup s31_c
BUDGET=${BUDGET:-60}
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
EB_PREFILL=2048 EB_BATCHES=1,8 EB_STEPS=16 eb 06_clock $W/m06 contract
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d.get(k) for k in ('commit','gpu','environment')}); print([r['sm_clock_mhz_after'] for r in d['decode']], d['prefill']['sm_clock_mhz_after'], d['prefill']['times_ms'])" $OUT/eb_06_clock.json | tee -a $LOG
call_finish
