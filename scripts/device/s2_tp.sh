#!/usr/bin/env bash
# Device (nvidia-h200-x2), session 2: tensor parallelism over NCCL (issue 7, docs/tensor-parallel.md).
#   bash scripts/device/s2_tp.sh [BUDGET_S]     the whole TP call (default budget 280 s)
#   source scripts/device/s2_tp.sh --lib; tp_section BUDGET_S   the compact section for another call
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
  random_prompts /tmp/tp_p.json 151936 5 40 300 70
  for n in 1 2; do
    timeout 40 "$VB_BIN/verbatim" dump-logits --model "$d" --device cuda --tensor-parallel-size $n --prompts /tmp/tp_p.json \
      --greedy 8 --out "/tmp/dump_$1_tp$n.safetensors" 2>&1 | tail -1
  done
  cmp "/tmp/dump_$1_tp1.safetensors" "/tmp/dump_$1_tp2.safetensors" && echo "dump-logits $1: TP=1 and TP=2 files identical" |
    tee "$OUT/dump_$1_cmp.txt" || echo "dump-logits $1: TP=1 and TP=2 DIFFER" | tee "$OUT/dump_$1_cmp.txt"
}

# The compact section (for a final call; needs tests/cuda_tp_test and verbatim carried): the TP=2 vs
# TP=1 equality, batch invariance and controls (cuda_tp_test, the part the two TP calls of session 2
# could not pass: run 2 hit an illegal address in prefill steps, fixed blind after it), then the
# CLI dump-logits byte comparison on the 0.6B shape. BUDGET_S: seconds this section may take.
tp_section() {
  local BUDGET=$(( SECONDS + ${1:-120} ))
  local t=$(( BUDGET - SECONDS - 25 )); [ $t -gt 150 ] && t=150
  NCCL_DEBUG=WARN VB_TP_BENCH_JSON="$OUT/tp_cost.json" timeout $t "$VB_BIN/cuda_tp_test" > "$OUT/tp_test.log" 2>&1
  echo "cuda_tp_test rc $?"
  grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|^\[tp|Failure|differ|rror|NCCL WARN" "$OUT/tp_test.log" | head -40
  if [ $(( BUDGET - SECONDS )) -gt 20 ]; then
    make_model qwen3-0.6b /tmp/m-qwen3-0.6b > /dev/null
    tp_dump_cmp qwen3-0.6b
  fi
}

[ "${1:-}" = "--lib" ] && return 0 2>/dev/null

BUDGET=${1:-280}
echo "gpu: $(gpu_facts | tr '\n' ';')"
nvidia-smi topo -m 2>&1 | head -3
s=$SECONDS
VB_TP_BENCH_JSON="$OUT/tp_cost.json" timeout 150 "$VB_BIN/cuda_tp_test" > "$OUT/tp_test.log" 2>&1
echo "cuda_tp_test rc $? ($((SECONDS - s)) s)"
grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|^\[tp|Failure|differ|rror" "$OUT/tp_test.log" | head -40
make_model qwen3-0.6b /tmp/m-qwen3-0.6b > /dev/null
tp_dump_cmp qwen3-0.6b
# Issue 7's Qwen3-32B shape (65.5 GB of bf16 weights: fits one H200), while the budget lasts.
if [ "$(left)" -gt 150 ]; then
  s=$SECONDS; timeout $(( $(left) - 60 )) "$VB_BIN/verbatim" make-model --arch qwen3-32b --seed 1 --dtype bfloat16 \
    --out /tmp/m-qwen3-32b > /dev/null 2>&1; made=$?
  echo "make-model 32b: rc $made, $((SECONDS - s)) s"
  [ $made -eq 0 ] && for cfg in "2 allgather" "1 allgather" "2 allreduce"; do
    tp_bench qwen3-32b $cfg 1,8,32 1024 70
  done
fi
echo "total $SECONDS s"
