#!/usr/bin/env bash
# Session 4, call 3 (one H200, ~200 s): where inside the slow kernels the warps wait. ncu's full
# set (source counters: stall reasons per SASS instruction, with CUDA lines from -lineinfo) of
# the batch-1 glue kernels of an 8B step and of the batch-32 attention tile kernel, exported as
# per-instruction CSV.
# Pack: pack.sh build-cuda verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-300}
call_setup s4_prof
say "gpu: $(gpu_facts | tr '\n' ';') ncu: $("$NCU" --version | tail -1)"
mk qwen3-8b $W/m8 0.02
prof() {  # tag regex batch skip count
  timeout 120 "$NCU" --clock-control none --set full --import-source yes -k regex:"$2" --launch-skip $4 --launch-count $5 \
    -o $W/$1 "$VB" engine-bench --model $W/m8 --device cuda --batches $3 --context 1024 --steps 2 --prefill 0 \
    --no-context-prefill > $W/$1.out 2>&1
  say "ncu $1 rc=$?"
  "$NCU" -i $W/$1.ncu-rep --page details > $OUT/$1_details.txt 2>&1
  "$NCU" -i $W/$1.ncu-rep --page source --csv --print-source sass > $OUT/$1_sass.csv 2> $OUT/$1_sass.err
  say "  sass csv: $(wc -l < $OUT/$1_sass.csv) lines $(head -c 300 $OUT/$1_sass.err)"
  "$NCU" -i $W/$1.ncu-rep --page source --csv --print-source cuda > $OUT/$1_cuda.csv 2> /dev/null
  say "  cuda csv: $(wc -l < $OUT/$1_cuda.csv) lines"
}
prof glue_b1 'add_rmsnorm_from|merge_kernel|qkv_post' 1 40 3
prof attn_b32 'attention_tile' 32 10 1
prof part_b1 'attention_part' 1 12 1
call_finish
