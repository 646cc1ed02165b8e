#!/usr/bin/env bash
# Session 4, call 6 (one H200, ~150 s): the two kernels that hold the 8B prefill back, for the next
# session's work on them: the tiled GEMM (128 x 128, 2,048 rows; 77% of a prefill with the other
# GEMMs) and the fold attention kernel (693 us a layer). ncu full set of one launch each: the
# details page and the stall summary per SASS instruction (sass_top.py).
# Pack: pack.sh build-cuda verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-200}
call_setup s4_prof2
say "gpu: $(gpu_facts | tr '\n' ';')"
mk qwen3-8b $W/m8 0.02
prof() {  # tag regex skip
  timeout 100 "$NCU" --clock-control none --set full --import-source yes -k regex:"$2" --launch-skip $3 --launch-count 1 \
    -o $W/$1 "$VB" engine-bench --model $W/m8 --device cuda --batches 1 --context 64 --steps 1 --prefill 2048 \
    --no-context-prefill > $W/$1.out 2>&1
  say "ncu $1 rc=$?"
  "$NCU" -i $W/$1.ncu-rep --page details > $OUT/$1_details.txt 2>&1
  "$NCU" -i $W/$1.ncu-rep --page source --csv --print-source sass > $W/$1_sass.csv 2> /dev/null
  python3 scripts/device/sass_top.py $W/$1_sass.csv 40 > $OUT/$1_sass_top.txt
  head -3 $OUT/$1_sass_top.txt | tee -a $LOG
}
prof fold_prefill 'attention_fold' 20
prof tiled_prefill 'gemm_tiled_kernel' 30
call_finish
