#!/usr/bin/env bash
# Session 2, perf calls (one call, ~300 s): the decode glue kernels rewritten (block-per-row
# RMSNorm / add+RMSNorm from partials, merge with loads ahead, one- or four-warp part kernel by
# CTA count, clustered sampler stats, opt-in folded decode attention). GPU 1, in the background
# from the start: cuda_model_test (invariance matrix), then again with the folded decode layout
# (VERBATIM_DECODE_FOLD_MIN_BATCH=2). GPU 0, in order: 1. cuda_ops_test, 2. 0.6B engine-bench
# contract, fast, and contract with folded decode attention (batches 1,8,32,64, prefill 2048),
# 3. ncu of 0.6B decode at batch 1 (raw CSV gzipped + per-kernel summary), 4. the same three
# engine-bench runs for 8B as time allows (its make-model also starts in the background).
source "$(dirname "$0")/common.sh"
BUDGET=${BUDGET:-300}
FOLD=${FOLD:-8}  # VERBATIM_DECODE_FOLD_MIN_BATCH of the folded runs
left() { echo $((BUDGET - SECONDS)); }
echo "gpu: $(gpu_facts)"
( nice -n 19 bash -c "set -o pipefail; $(declare -f make_model); VB_BIN=$VB_BIN make_model qwen3-8b /tmp/m8" \
    > /tmp/make8.log 2>&1 && touch /tmp/m8.done ) &
mk=$!
( export CUDA_VISIBLE_DEVICES=1
  timeout $((BUDGET - 25)) "$VB_BIN/cuda_model_test" > "$OUT/cuda_model_test.log" 2>&1
  echo "default layout rc=$? at $SECONDS s" > /tmp/model_test.rc
  lim=$((BUDGET - 15 - SECONDS))
  if [ $lim -gt 20 ]; then
    VERBATIM_DECODE_FOLD_MIN_BATCH=2 timeout $lim "$VB_BIN/cuda_model_test" > "$OUT/cuda_model_test_fold.log" 2>&1
    echo "folded decode layout rc=$? at $SECONDS s (limit $lim)" >> /tmp/model_test.rc
  fi ) &
mt=$!
export CUDA_VISIBLE_DEVICES=0
make_model qwen3-0.6b /tmp/m06 > /dev/null
s=$SECONDS
timeout 90 "$VB_BIN/cuda_ops_test" > "$OUT/cuda_ops_test.log" 2>&1
echo "cuda_ops_test rc=$? ($((SECONDS - s)) s)"
grep -E "^\[  (FAILED|PASSED) |Failure|Which is|Expected|row 0 changed" "$OUT/cuda_ops_test.log" | head -20
eb() {  # label model mode env...
  local label=$1 model=$2 mode=$3; shift 3
  [ "$(left)" -lt 30 ] && { echo "skip eb $label: out of time"; return; }
  local s=$SECONDS
  env "$@" timeout $(( $(left) - 10 < 120 ? $(left) - 10 : 120 )) "$VB_BIN/verbatim" engine-bench --model "$model" \
    --device cuda --mode "$mode" --batches 1,8,32,64 --context 1024 --steps 32 --prefill 2048 \
    --json "/tmp/eb_$label.json" 2>&1 | grep -E "decode|prefill [0-9]" | sed "s/^/$label: /"
  echo "  ($label: $((SECONDS - s)) s)"
}
eb 06_contract /tmp/m06 contract
eb 06_fast /tmp/m06 fast
eb 06_contract_fold /tmp/m06 contract VERBATIM_DECODE_FOLD_MIN_BATCH=$FOLD
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
s=$SECONDS
timeout 80 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base --launch-count 4000 \
  "$VB_BIN/verbatim" engine-bench --model /tmp/m06 --device cuda --batches 1 --context 1024 --steps 4 --prefill 0 \
  > /tmp/ncu_06_b1.csv 2> /tmp/ncu_06_b1.err
echo "ncu 06_b1 rc=$? ($((SECONDS - s)) s, $(wc -l < /tmp/ncu_06_b1.csv) lines)"
gzip -c /tmp/ncu_06_b1.csv > "$OUT/ncu_06_b1.csv.gz"
python3 "$(dirname "$0")/ncu_summary.py" /tmp/ncu_06_b1.csv "$OUT/ncu_06_b1.txt" | head -16
while [ ! -f /tmp/m8.done ] && kill -0 $mk 2> /dev/null && [ "$(left)" -gt 70 ]; do sleep 2; done
echo "8B make-model: $(tail -1 /tmp/make8.log) (done: $([ -f /tmp/m8.done ] && echo yes || echo no), at $SECONDS s)"
if [ -f /tmp/m8.done ]; then
  eb 8b_contract /tmp/m8 contract
  eb 8b_fast /tmp/m8 fast
  eb 8b_contract_fold /tmp/m8 contract VERBATIM_DECODE_FOLD_MIN_BATCH=$FOLD
fi
kill $mk 2> /dev/null
while kill -0 $mt 2> /dev/null && [ "$(left)" -gt 8 ]; do sleep 2; done
echo "cuda_model_test (GPU 1): $(cat /tmp/model_test.rc 2> /dev/null | tr '\n' ';' || echo still running)"
for f in "$OUT"/cuda_model_test*.log; do
  echo "$(basename "$f"):"; grep -E "^\[  (FAILED|PASSED) |^\[  FAILED|Failure|tests ran" "$f" | head -12
done
# At most 8 files come back: the engine-bench JSONs as one.
python3 - "$OUT/engine_bench.json" /tmp/eb_*.json <<'PY'
import json, os, sys
out = {os.path.basename(p)[3:-5]: json.load(open(p)) for p in sys.argv[2:] if os.path.getsize(p) > 0}
json.dump(out, open(sys.argv[1], "w"), indent=1)
print("engine_bench.json:", sorted(out))
PY
echo "total $SECONDS s"
