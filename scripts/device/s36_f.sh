#!/usr/bin/env bash
# Session 36, call f (one GPU), adaptive: s36_e's probe (persistent_probe with the flow modes),
# then on an H200 record_suite (BUDGET 560 in all), elsewhere only the probe's calibration
# (engine-bench batch 1, 0.6B and 8B; BUDGET 200).
# Pack: PACK_XZ=1 scripts/device/pack.sh build verbatim tests/cuda_ops_test tests/cuda_model_test
#   tests/cuda_invariance_test persistent_probe
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
h200=$(is_h200 && echo 1 || echo 0)
if [ "$h200" -gt 0 ]; then call_start s36_f 560; else call_start s36_f 200; fi
timeout 90 "$VB_BIN/persistent_probe" --json $OUT/probe.json --models 0.6b,8b --steps 50 --pf-mb 8,24 \
  > $OUT/probe.log 2>&1
say "probe rc=$?"
cat $OUT/probe.log | tee -a $LOG
if [ "$h200" -gt 0 ]; then
  record_suite
else
  export EB_BATCHES=1 EB_PREFILL=0 EB_MIN_LEFT=20
  eb cal06 $W/m06 contract
  wait_for $W/m8 20 && eb cal8 $W/m8 contract
fi
call_finish
