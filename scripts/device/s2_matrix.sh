#!/usr/bin/env bash
# Session 2, GPU correctness (run by the lead in the final device call, on the x2 machine):
#  (a) tests/cuda_invariance_test (the serving invariance matrix through the Engine: batches
#      2..64, budgets/block sizes, prefix cache, preemption, speculation on == off, controls)
#      on the Qwen3-0.6B shape in bf16 and fp16 and on the 8B shape in bf16;
#  (b) HTTP: `verbatim serve --device cuda` (0.6B) + `verbatim check` with 64 concurrent clients,
#      and a second server with a tiny KV cache and token budget (preemption, chunked prefill);
#      the two servers' outputs compared with each other; the new flags (--mode,
#      --gpu-memory-utilization) through `verbatim generate`;
#  (c) spec-bench on CUDA: 0.6B and 8B, batch 1 and 8, repetitive and random workloads,
#      speculation off vs on (time per output token, acceptance, bit check), and the 0.6B one
#      again with verification on the eager path (VERBATIM_GRAPH_MULTI_ROW=0) for comparison.
# Two lanes run at once, one per GPU (lane A: 0.6B bf16 test, then 8B test; lane B: HTTP, flags,
# spec 0.6B, 0.6B fp16 test, spec 8B, eager spec). The model folders (random weights, init std
# 0.02 so greedy continuations of repeated text loop and drafts get accepted) are made first,
# the 8B one in the background. Every step checks the time left and is skipped (and says so)
# when its estimate no longer fits BUDGET; running steps are cut by `timeout` before BUDGET.
# Needs in .carry/bin: verbatim and cuda_invariance_test
#   (scripts/device/pack.sh BUILD verbatim tests/cuda_invariance_test [others...]).
# Files back in $OUT (3): s2_matrix.log, s2_matrix.json (merged results), s2_matrix_raw.tgz.
# Env: BUDGET (s, default 300), WORK (default /tmp/s2m), COMMIT (recorded; default git HEAD).
# Rehearsal on a machine without a GPU: DEVICE=cpu SMALL=tiny BIG=tiny (same steps on the CPU
# backend; the test then runs with VERBATIM_TEST_DEVICE=cpu, --mode fast steps are skipped).
source "$(dirname "$0")/common.sh"
export NCCL_NVLS_ENABLE=0
BUDGET=${BUDGET:-300}
DEVICE=${DEVICE:-cuda}
SMALL=${SMALL:-qwen3-0.6b}
BIG=${BIG:-qwen3-8b}
[ "$DEVICE" = cpu ] && export VERBATIM_TEST_DEVICE=cpu
WORK=${WORK:-/tmp/s2m}
RAW="$WORK/raw"
RESERVE=12  # seconds kept for stopping what runs, merging and packing
VB="$VB_BIN/verbatim"
TEST="$VB_BIN/cuda_invariance_test"
HERE="$(cd "$(dirname "$0")" && pwd)"
COMMIT=${COMMIT:-$(git -C "$HERE" rev-parse HEAD 2> /dev/null || echo unknown)}
rm -rf "$WORK" && mkdir -p "$RAW"
LOG="$OUT/s2_matrix.log"
: > "$LOG"
T0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - T0))); }
say() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$LOG"; }
: > "$WORK/pids"
: > "$WORK/steps.jsonl"
: > "$WORK/skipped"

# step NAME EST_S CAP_S LOGFILE CMD...: runs CMD under timeout (at most CAP_S, and never past
# BUDGET - RESERVE); skipped when fewer than EST_S + RESERVE seconds are left.
step() {
  local name=$1 est=$2 cap=$3 log=$4
  shift 4
  local l lim s rc d
  l=$(left)
  if [ "$l" -lt $((est + RESERVE)) ]; then
    say "SKIPPED $name: needs ~${est} s, ${l} s left"
    echo "$name: needs ~${est} s, ${l} s left" >> "$WORK/skipped"
    return 99
  fi
  lim=$((l - RESERVE))
  [ "$lim" -gt "$cap" ] && lim=$cap
  s=$(date +%s)
  say "START $name (limit ${lim} s)"
  timeout -k 5 "$lim" "$@" > "$log" 2>&1
  rc=$?
  d=$(($(date +%s) - s))
  say "END $name rc=$rc ${d} s$([ "$rc" = 124 ] && echo ' (TIMED OUT)')"
  echo "{\"step\": \"$name\", \"rc\": $rc, \"seconds\": $d, \"limit\": $lim, \"estimate\": $est}" >> "$WORK/steps.jsonl"
  return $rc
}

# wait_done FILE NEED_S: waits for FILE while at least NEED_S + RESERVE seconds are left.
wait_done() {
  while [ ! -f "$1" ]; do
    [ "$(left)" -lt $(($2 + RESERVE)) ] && return 1
    [ -f "$1.failed" ] && return 1
    sleep 2
  done
}

make_folder() {  # arch out
  local std=0.02
  [ "$1" = tiny ] && std=0.05  # the tiny shape's greedy loops at 0.05 (docs/speculative.md)
  "$VB" make-model --arch "$1" --seed 1 --init-std $std --dtype bfloat16 --out "$2" > "$2.log" 2>&1 &
  local p=$!
  echo "$p" >> "$WORK/pids"  # stopped at the end if still running (the next script needs the CPU)
  if wait "$p" && [ -f "$2/config.json" ]; then touch "$2.done"; else touch "$2.done.failed"; fi
}

http_get() {  # URL: prints the status, then the body
  python3 - "$1" << 'PY'
import sys, urllib.request
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=3)
    print(r.status)
    sys.stdout.write(r.read().decode())
except Exception as e:
    print(getattr(e, "code", 0))
PY
}

wait_ready() {  # port pid seconds
  local until=$(($(date +%s) + $3))
  while [ "$(date +%s)" -lt "$until" ]; do
    kill -0 "$2" 2> /dev/null || return 1
    [ "$(http_get "http://127.0.0.1:$1/health" | head -1)" = 200 ] && return 0
    sleep 1
  done
  return 1
}

inv() {  # tag model_dir dtype max_tokens est cap
  if [ ! -x "$TEST" ]; then
    say "SKIPPED inv_$1: $TEST was not carried (pack it with scripts/device/pack.sh)"
    echo "inv_$1: binary not carried" >> "$WORK/skipped"
    return
  fi
  step "inv_$1" "$5" "$6" "$RAW/inv_$1.log" env VERBATIM_TEST_MODEL_DIR="$2" VERBATIM_TEST_DTYPE="$3" \
    VERBATIM_TEST_MAX_TOKENS="$4" "$TEST" --gtest_filter="$([ "$3" = float16 ] && echo F16 || echo BF16)/*" \
    --gtest_output=json:"$RAW/inv_$1.json"
  grep -sE "^\[engine|^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|Failure|differ|Expected|Which is" "$RAW/inv_$1.log" |
    head -60 | sed "s/^/  inv_$1: /" | tee -a "$LOG"
}

spec() {  # tag model_dir batches ks est cap [env...]
  local tag=$1 dir=$2 batches=$3 ks=$4 est=$5 cap=$6
  shift 6
  step "spec_$tag" "$est" "$cap" "$RAW/spec_$tag.log" env "$@" "$VB" spec-bench --model "$dir" --device "$DEVICE" \
    --batches "$batches" --workloads repetitive,random --num-speculative-tokens "$ks" --reps 3 --max-tokens 64 \
    --json "$RAW/spec_$tag.json"
  grep -sE "^K |spec-bench" "$RAW/spec_$tag.log" | sed "s/^/  spec_$tag: /" | tee -a "$LOG"
}

http_checks() {
  python3 - "$WORK/prompts.jsonl" << 'PY'
import json, random, sys
r = random.Random(11)
prefix = [r.randrange(100, 150000) for _ in range(120)]  # shared by 3 of 4 prompts: cache hits
with open(sys.argv[1], "w") as f:
    for i in range(64):
        tail = [r.randrange(100, 150000) for _ in range(1 + (i * 37) % 100)]
        f.write(json.dumps(prefix + tail if i % 4 else tail + prefix[:40]) + "\n")
PY
  local m=$WORK/m06
  "$VB" serve "$m" --device "$DEVICE" --host 127.0.0.1 --port 18431 --gpu-memory-utilization 0.3 > "$RAW/serve_a.log" 2>&1 &
  local pa=$!
  # B: a KV cache of 48 blocks (3 of the longest requests) and 64-token steps: 64 users preempt
  # each other and every prompt is prefilled in chunks.
  "$VB" serve "$m" --device "$DEVICE" --host 127.0.0.1 --port 18432 --num-kv-blocks 48 --max-num-batched-tokens 64 \
    > "$RAW/serve_b.log" 2>&1 &
  local pb=$!
  echo "$pa $pb" >> "$WORK/pids"
  if wait_ready 18431 "$pa" 90 && wait_ready 18432 "$pb" 60; then
    say "servers ready: $(grep -h 'KV capacity' "$RAW/serve_a.log" "$RAW/serve_b.log" | sed 's/.*KV capacity/KV capacity/' | cut -c1-60 | tr '\n' ';')"
    step check_a 35 120 "$RAW/check_a.log" "$VB" check --url http://127.0.0.1:18431 --prompts "$WORK/prompts.jsonl" \
      --max-tokens 24 --users 64 --timeout 60 --quiet --json "$RAW/check_a.json" &
    local ca=$!
    step check_b 35 120 "$RAW/check_b.log" "$VB" check --url http://127.0.0.1:18432 --prompts "$WORK/prompts.jsonl" \
      --max-tokens 24 --users 64 --timeout 60 --quiet --json "$RAW/check_b.json"
    wait $ca
    for f in check_a check_b; do sed "s/^/  $f: /" "$RAW/$f.log" | tail -14 | tee -a "$LOG"; done
    http_get http://127.0.0.1:18431/metrics > "$RAW/metrics_a.txt"
    http_get http://127.0.0.1:18432/metrics > "$RAW/metrics_b.txt"
    say "server B preemptions: $(grep -E '^verbatim:num_preemptions_total' "$RAW/metrics_b.txt" | head -1)"
    # Seeded sampling over HTTP, 64 users (lower priority).
    step check_a_seeded 35 100 "$RAW/check_a_seeded.log" "$VB" check --url http://127.0.0.1:18431 \
      --prompts "$WORK/prompts.jsonl" --max-tokens 24 --users 64 --temperature 0.8 --seed 7 --timeout 60 --quiet \
      --json "$RAW/check_a_seeded.json"
    [ -f "$RAW/check_a_seeded.log" ] && sed "s/^/  check_a_seeded: /" "$RAW/check_a_seeded.log" | tail -8 | tee -a "$LOG"
  else
    say "FAILED: a server did not become ready"
    tail -5 "$RAW/serve_a.log" "$RAW/serve_b.log" | tee -a "$LOG"
  fi
  kill "$pa" "$pb" 2> /dev/null
  wait "$pa" "$pb" 2> /dev/null
}

flags() {  # --mode and --gpu-memory-utilization through `verbatim generate` on the GPU
  local in=$WORK/gen.jsonl
  for i in 1 2 3 4; do echo "{\"prompt\": [$((i * 11)), $((i * 13)), 5, 7, $((i * 17))], \"max_tokens\": 8, \"temperature\": 0, \"logprobs\": 1}"; done > "$in"
  local args
  for args in "contract 0.2" "contract 0.4" "fast 0.4"; do
    set -- $args
    [ "$DEVICE" = cpu ] && [ "$1" = fast ] && continue  # refused on the CPU (checked below)
    step "generate_$1_$2" 8 40 "$RAW/generate_$1_$2.err" bash -c \
      "'$VB' generate --model '$WORK/m06' --device $DEVICE --mode $1 --gpu-memory-utilization $2 < '$in' > '$RAW/generate_$1_$2.jsonl'"
    say "  generate --mode $1 --gpu-memory-utilization $2: $(grep -o 'KV capacity [0-9]* blocks' "$RAW/generate_$1_$2.err"), $(grep -o 'fingerprint fp_[0-9a-f]*' "$RAW/generate_$1_$2.err")"
  done
  step generate_fast_cpu_refused 1 20 "$RAW/generate_fast_cpu.err" bash -c \
    "'$VB' generate --model '$WORK/m06' --device cpu --mode fast < '$in'; test \$? = 1"
  say "  generate --device cpu --mode fast: $(tail -1 "$RAW/generate_fast_cpu.err")"
}

lane_a() {
  export CUDA_VISIBLE_DEVICES=$GPU_A
  inv 06_bf16 "$WORK/m06" bfloat16 14 40 150
  if wait_done "$WORK/m8b.done" 90; then
    inv 8b_bf16 "$WORK/m8b" bfloat16 8 90 220
  else
    say "SKIPPED inv_8b_bf16: the 8B folder is not ready, or too little time is left ($(left) s)"
    echo "inv_8b_bf16: 8B folder not ready or $(left) s left" >> "$WORK/skipped"
  fi
}

lane_b() {
  export CUDA_VISIBLE_DEVICES=$GPU_B
  http_checks
  flags
  spec 06 "$WORK/m06" 1,8 3,5 25 90
  inv 06_f16 "$WORK/m06" float16 14 45 150
  if wait_done "$WORK/m8b.done" 45; then
    spec 8b "$WORK/m8b" 1,8 3 45 120
  else
    say "SKIPPED spec_8b: the 8B folder is not ready, or too little time is left ($(left) s)"
    echo "spec_8b: 8B folder not ready or $(left) s left" >> "$WORK/skipped"
  fi
  spec 06_eager_verify "$WORK/m06" 1,8 3 15 60 VERBATIM_GRAPH_MULTI_ROW=0
}

say "s2_matrix: budget ${BUDGET} s, commit $COMMIT"
say "gpu: $(gpu_facts 2> /dev/null | tr '\n' ';')"
NG=$(nvidia-smi -L 2> /dev/null | wc -l)
GPU_A=${GPU_A:-0}
GPU_B=${GPU_B:-$([ "$NG" -gt 1 ] && echo 1 || echo 0)}
say "lanes: A on GPU $GPU_A, B on GPU $GPU_B ($NG visible)"
for b in "$VB" "$TEST"; do [ -x "$b" ] || say "missing: $b"; done

s=$(date +%s)
make_folder "$SMALL" "$WORK/m06"
say "0.6B folder: $([ -f "$WORK/m06.done" ] && echo made || echo FAILED) in $(($(date +%s) - s)) s"
(
  renice -n 10 -p $BASHPID > /dev/null 2>&1
  s=$(date +%s)
  make_folder "$BIG" "$WORK/m8b"
  say "8B folder: $([ -f "$WORK/m8b.done" ] && echo made || echo FAILED) in $(($(date +%s) - s)) s"
) &
MK=$!
echo "$MK" >> "$WORK/pids"

if [ -f "$WORK/m06.done" ]; then
  lane_a &
  LA=$!
  lane_b &
  LB=$!
  while kill -0 "$LA" 2> /dev/null || kill -0 "$LB" 2> /dev/null; do
    if [ "$(left)" -le 4 ]; then
      say "budget reached: stopping the lanes"
      break
    fi
    sleep 2
  done
  # Whatever is still running (steps are cut by their own timeouts before this): stop it.
  # (Steps end on their own timeouts, at BUDGET - RESERVE at the latest.)
  for p in $LA $LB $(cat "$WORK/pids"); do kill "$p" 2> /dev/null; done
  sleep 1
else
  say "FAILED: no 0.6B folder ($(tail -3 "$WORK/m06.log"))"
  kill "$MK" 2> /dev/null
fi

say "skipped: $(wc -l < "$WORK/skipped") step(s)"
sed 's/^/  skipped: /' "$WORK/skipped" | tee -a "$LOG"
python3 "$HERE/s2_matrix_merge.py" "$WORK" "$OUT/s2_matrix.json" "$COMMIT" "$BUDGET" "$(gpu_facts 2> /dev/null | head -2 | tr '\n' ';')" 2>&1 |
  tee -a "$LOG"
(cd "$WORK" && tar czf "$OUT/s2_matrix_raw.tgz" raw steps.jsonl skipped prompts.jsonl m06.log m8b.log 2> /dev/null)
say "done: $(ls -la "$OUT"/s2_matrix* | awk '{print $5, $9}' | tr '\n' ' ')"
exit 0
