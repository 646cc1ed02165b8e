#!/usr/bin/env bash
# Session 6, call 3 (one H200, ~150 s): what holds the wgmma prefill GEMM back (8B, 2,048 rows,
# VERBATIM_GEMM_WGMMA=1): ncu full set of one gate_up launch (grid 16 x 192) and one qkv launch:
# details and the stall summary per SASS instruction (sass_top.py).
# Pack: pack.sh build-cuda verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-200}
call_setup s6_prof
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-8b $W/m8 0.02
prof() {  # tag regex skip
  VERBATIM_GEMM_WGMMA=1 timeout 100 "$NCU" --clock-control none --set full --import-source yes -k regex:"$2" \
    --launch-skip $3 --launch-count 1 -o $W/$1 "$VB" engine-bench --model $W/m8 --device cuda --batches 1 --context 64 \
    --steps 1 --prefill 2048 --no-context-prefill > $W/$1.out 2>&1
  say "ncu $1 rc=$?"
  "$NCU" -i $W/$1.ncu-rep --page details > $OUT/$1_details.txt 2>&1
  "$NCU" -i $W/$1.ncu-rep --page source --csv --print-source sass > $W/$1_sass.csv 2> /dev/null
  python3 scripts/device/sass_top.py $W/$1_sass.csv 40 > $OUT/$1_sass_top.txt
  head -3 $OUT/$1_sass_top.txt | tee -a $LOG
  grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Cache Throughput|Shared" $OUT/$1_details.txt | head -12 | tee -a $LOG
}
# Launches per layer in a prefill: qkv, o, gate_up, down (the wgmma kernel); layer 2's gate_up is launch 10.
prof wg_gate_up 'gemm_wgmma' 10
call_finish
