#!/usr/bin/env bash
# Session 2, final device call (x2 machine, ~560 s): binaries carried as .carry/bin.tar.xz
# (five CUDA binaries are ~75 MB, over the 64 MiB a call carries; xz makes them 11 MB).
#  1. tensor parallel: cuda_tp_test (TP=2 == TP=1 bits, batch invariance, controls) and the
#     dump-logits TP=1/TP=2 byte comparison (both GPUs, ~110 s);
#  2. then at once: s2_bench.sh on GPU 0 alone (timed: decode/prefill, contract/fast, HF peer; its
#     cuda_ops_test first, cuda_model_test on GPU 1) and s2_matrix.sh with both lanes on GPU 1
#     (invariance matrix 0.6B bf16/fp16 + 8B, HTTP with 64 clients and preemption, spec-bench:
#     its timings share GPU 1 with the tests, so its speed-ups are indicative only).
# Results: $OUT/s2_final.tgz (every log and JSON) + the main logs beside it.
cd "$(dirname "$0")/../.."
VB_ROOT=$(pwd) source scripts/device/env.sh > /dev/null  # unpacks .carry/bin.tar.xz
export NCCL_NVLS_ENABLE=0
FINAL=$OUT
R=/tmp/res && mkdir -p $R/tp $R/bench $R/matrix
T=${TOTAL:-560}
( export OUT=$R/tp; source scripts/device/s2_tp.sh --lib; tp_section 110 ) > $R/tp/tp_section.log 2>&1
echo "tp section done at $SECONDS s"; cat $R/tp/tp_section.log | head -60
B=$(( T - SECONDS - 20 ))
( export OUT=$R/bench CUDA_VISIBLE_DEVICES=0 BUDGET=$B; bash scripts/device/s2_bench.sh ) > $R/bench/stdout.log 2>&1 &
PB=$!
( export OUT=$R/matrix GPU_A=1 GPU_B=1 BUDGET=$B; bash scripts/device/s2_matrix.sh ) > $R/matrix/stdout.log 2>&1 &
PM=$!
wait $PB $PM
echo "all done at $SECONDS s"
tar czf "$FINAL/s2_final.tgz" -C $R .
cp $R/bench/s2_bench.log $R/matrix/s2_matrix.log $R/tp/tp_section.log "$FINAL/" 2>/dev/null
cp $R/bench/s2_bench.json "$FINAL/" 2>/dev/null; cp $R/matrix/s2_matrix.json "$FINAL/" 2>/dev/null
tail -40 $R/bench/s2_bench.log; tail -40 $R/matrix/s2_matrix.log
