#!/usr/bin/env bash
# Session 35, call b (one GPU, BUDGET s, default 240): CUPTI timelines (kernel_trace.cpp) of decode steps (graph nodes
# traced one by one) on main, per kernel its share of the step: 0.6B and 8B at batch 1, 8B at 32.
# Reuses s35_a's folders when the machine is still warm. Pack: as s35_a.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-240}
call_setup s35_b
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
for m in m06:qwen3-0.6b m8:qwen3-8b; do
  d=/tmp/s35_a/${m%%:*}
  if [ -f $d.done ]; then ln -sfn $d $W/${m%%:*}; touch $W/${m%%:*}.done; else mk ${m#*:} $W/${m%%:*} 0.02; fi
done
trace_decode 06_b1 $W/m06 1
trace_decode 8_b1 $W/m8 1
trace_decode 8_b32 $W/m8 32
trace_decode 06_b32 $W/m06 32
trace_decode 8_b1_nopdl $W/m8 1 VERBATIM_PDL=0
call_finish
