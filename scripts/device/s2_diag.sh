#!/usr/bin/env bash
# Session 2, diagnosis of the final call's failures: cuda_invariance_test's chunked-prefill case
# (token budget 16: some first tokens differ on 0.6B; illegal address on 8B; and a serve with
# --max-num-batched-tokens 64 --num-kv-blocks 48). Runs the case under each switch
# (programmatic dependent launch off, multi-row graphs off) and under compute-sanitizer memcheck.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
T="$VB_BIN/cuda_invariance_test"
"$VB_BIN/verbatim" make-model --arch qwen3-0.6b --seed 1 --init-std 0.02 --dtype bfloat16 --out /tmp/m06 > /dev/null 2>&1
export VERBATIM_TEST_MODEL_DIR=/tmp/m06 VERBATIM_TEST_DTYPE=bfloat16 VERBATIM_TEST_MAX_TOKENS=${MAXT:-14}
F='BF16/*Chunked*'
case_run() {  # label env...
  local label=$1; shift
  env "$@" timeout 60 "$T" --gtest_filter="$F" > "$OUT/$label.log" 2>&1
  echo "$label: rc=$? $(grep -E 'Which is|token budget|illegal|PASSED|FAILED  \]' "$OUT/$label.log" | head -4 | tr '\n' ' ')"
}
for i in 1 2; do case_run default$i X=1; done
case_run small1_a VERBATIM_ATTN_SMALL_WARPS=1
case_run small1_b VERBATIM_ATTN_SMALL_WARPS=1
case_run small4 VERBATIM_ATTN_SMALL_WARPS=4
for x in ${EXTRA:-}; do case_run "extra_$x" "$x"; done
san() {  # tool seconds
  VERBATIM_TEST_MAX_TOKENS=6 timeout "$2" compute-sanitizer --tool "$1" --print-limit 6 "$T" --gtest_filter="$F" > /tmp/san_$1.log 2>&1
  echo "$1 rc=$? $(grep -c '=========' /tmp/san_$1.log) sanitizer lines"; grep -E "=====" /tmp/san_$1.log | head -24
  grep -E "=====" /tmp/san_$1.log | head -200 > "$OUT/san_$1.log"; grep -E "Which is|OK \]|FAILED  \]" /tmp/san_$1.log | head -3
}
san racecheck ${RC:-110}
san initcheck ${IC:-70}
san memcheck ${MC:-50}
echo "total $SECONDS s"
