#!/usr/bin/env bash
# Device (nvidia-h200-x2), session 2: tensor parallelism over NCCL (issue 7, docs/tensor-parallel.md).
#   bash scripts/device/s2_tp.sh [BUDGET_S]     the whole TP call (default budget 280 s)
#   source scripts/device/s2_tp.sh --lib; tp_section BUDGET_S   a compact section for another call
# Everything under $OUT: tp_test.log (cuda_tp_test: TP=2 == TP=1 bits, batch invariance, controls),
# tp_cost.json (all-gather vs all-reduce of the row-parallel partials), eb_<arch>_tp<N>_<reduce>.json
# (engine-bench decode + prefill), dump_<arch>_tp<N>.safetensors compared with cmp (CLI end to end).
# NVLink SHARP (in-switch reductions) stays off: NCCL_NVLS_ENABLE=0, always.
export NCCL_NVLS_ENABLE=0
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

left() { echo $(( ${BUDGET:-280} - SECONDS )); }  # seconds of this call's budget still free

tp_bench() {  # arch tp reduce batches prefill [timeout]
  local d=/tmp/m-$1 t=${6:-90}
  [ "$(left)" -lt $((t / 2)) ] && { echo "skip bench $1 tp$2 $3 (budget)"; return; }
  [ "$(left)" -lt "$t" ] && t=$(left)
  local s=$SECONDS
  timeout "$t" "$VB_BIN/verbatim" engine-bench --model "$d" --device cuda --tensor-parallel-size "$2" --tp-reduce "$3" \
    --batches "$4" --context 1024 --steps 24 --prefill "$5" --json "$OUT/eb_$1_tp$2_$3.json" 2>&1 |
    grep -E "decode|prefill|rror" | sed "s/^/$1 tp$2 $3: /"
  echo "  ($1 tp$2 $3: rc ${PIPESTATUS[0]}, $((SECONDS - s)) s)"
}

tp_dump_cmp() {  # arch: dump-logits at TP 1 and 2 through the CLI, byte-compared
  local d=/tmp/m-$1
  random_prompts /tmp/tp_p.json 151936 5 40 300
  for n in 1 2; do
    timeout 60 "$VB_BIN/verbatim" dump-logits --model "$d" --device cuda --tensor-parallel-size $n --prompts /tmp/tp_p.json \
      --greedy 8 --out "/tmp/dump_$1_tp$n.safetensors" 2>&1 | tail -1
  done
  cmp "/tmp/dump_$1_tp1.safetensors" "/tmp/dump_$1_tp2.safetensors" && echo "dump-logits $1: TP=1 and TP=2 files identical" |
    tee "$OUT/dump_$1_cmp.txt" || echo "dump-logits $1: TP=1 and TP=2 DIFFER" | tee "$OUT/dump_$1_cmp.txt"
}

# The compact section (for a final call): the equality test on the 0.6B shape and one 8B TP=2 bench.
tp_section() {
  local BUDGET=$(( SECONDS + ${1:-120} ))
  VB_TP_BENCH_JSON="$OUT/tp_cost.json" timeout $(( BUDGET - SECONDS > 100 ? 100 : BUDGET - SECONDS )) \
    "$VB_BIN/cuda_tp_test" --gtest_filter='*Tp2GivesTheBitsOfTp1*:*AllReduceControl*' 2>&1 | tail -15 | tee "$OUT/tp_section.log"
  make_model qwen3-8b /tmp/m-qwen3-8b > /dev/null
  tp_bench qwen3-8b 2 allgather 1,32 2048 $(( BUDGET - SECONDS ))
}

[ "${1:-}" = "--lib" ] && return 0 2>/dev/null

BUDGET=${1:-280}
echo "gpu: $(gpu_facts | tr '\n' ';')"
nvidia-smi topo -m 2>&1 | head -3
s=$SECONDS
VB_TP_BENCH_JSON="$OUT/tp_cost.json" timeout 150 "$VB_BIN/cuda_tp_test" 2>&1 > "$OUT/tp_test.log"
echo "cuda_tp_test rc $? ($((SECONDS - s)) s)"
grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|^\[tp|Failure|differ|error" "$OUT/tp_test.log" | head -40
s=$SECONDS; make_model qwen3-8b /tmp/m-qwen3-8b > /dev/null; echo "make-model 8b: $((SECONDS - s)) s"
tp_bench qwen3-8b 1 allgather 1,8,32,64 2048
tp_bench qwen3-8b 2 allgather 1,8,32,64 2048
tp_bench qwen3-8b 2 allreduce 1,8,32,64 2048
[ "$(left)" -gt 40 ] && tp_dump_cmp qwen3-8b
echo "total $SECONDS s"
