#!/usr/bin/env bash
# Sourced ON THE DEVICE by the other scripts: environment, the fixtures path the tests were built
# with (/work/main), GPU facts, helpers.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
# The tests find tests/fixtures at the path they were built in (/work/main): point it here.
if [ ! -d /work/main/tests/fixtures ]; then mkdir -p /work && ln -sfn "$VB_ROOT" /work/main; fi
export PYTHONUNBUFFERED=1
# is_h200: whether this machine's GPU is an H200 (the card issue 4's checks are asked on).
is_h200() { nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; }
gpu_facts() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,memory.total,power.limit \
    --format=csv,noheader
}
make_model() {  # arch out_dir
  [ -f "$2/config.json" ] || "$VB_BIN/verbatim" make-model --arch "$1" --seed 1 --dtype bfloat16 --out "$2" --tokenizer /nonexistent 2>&1 | tail -2 ||
    "$VB_BIN/verbatim" make-model --arch "$1" --seed 1 --dtype bfloat16 --out "$2" 2>&1 | tail -2
}
random_prompts() {  # out.json vocab lengths...
  python3 - "$@" <<'PY'
import json, random, sys
out, vocab, lens = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3:]]
r = random.Random(5)
json.dump([[r.randrange(vocab) for _ in range(n)] for n in lens], open(out, "w"))
PY
}

# Session-3 call scaffolding. call_setup NAME: a fresh work dir W=/tmp/NAME whose out/ becomes
# $OUT (archived by call_finish as $FINAL/NAME.tgz: a call returns at most 8 files), the log
# $FINAL/NAME.log, say/left against BUDGET (seconds), VB the carried verbatim.
call_setup() {
  CALL=$1
  W=/tmp/$CALL && rm -rf "$W" && mkdir -p "$W/out"
  FINAL=$OUT
  OUT=$W/out
  LOG=$FINAL/$CALL.log
  : > "$LOG"
  VB=$VB_BIN/verbatim
  NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  export NCCL_NVLS_ENABLE=0
}
say() { echo "[$SECONDS s] $*" | tee -a "$LOG"; }
left() { echo $((${BUDGET:-300} - SECONDS)); }
mk() {  # arch dir init_std: a make-model folder, marked dir.done once whole
  "$VB" make-model --arch "$1" --seed 1 --init-std "$3" --dtype bfloat16 --out "$2" > "$2.log" 2>&1 &&
    [ -f "$2/config.json" ] && touch "$2.done"
}
call_finish() { say "done"; tar czf "$FINAL/$CALL.tgz" -C "$OUT" .; }
# call_start NAME DEFAULT_BUDGET: call_setup, BUDGET (the environment's, else the default) and the
# GPU line; then the 0.6B folder (init std 0.02) at $W/m06 and, in the background, the 8B at $W/m8.
call_start() {
  call_start_06 "$1" "$2"
  mk qwen3-8b $W/m8 0.02 &
}
# call_start_06 NAME DEFAULT_BUDGET: call_start without the 8B folder (calls on the 0.6B only).
call_start_06() {
  BUDGET=${BUDGET:-$2}
  call_setup "$1"
  say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
  mk qwen3-0.6b $W/m06 0.02
}
# bits_06: the op tests and the 0.6B digests of record.
bits_06() {
  run_test cuda_ops_test 150  # ~70 s in s23_f, + the exhaustive exp / silu sweep (session 24)
  inv_of_record $W/m06
}
# wait_for DIR MIN_LEFT: until mk has marked DIR whole, or only MIN_LEFT seconds are left; true if whole.
wait_for() { while [ ! -f "$1.done" ] && [ "$(left)" -gt "$2" ]; do sleep 2; done; [ -f "$1.done" ]; }
# hf_peer TAG DIR STEPS TIMEOUT: the HF transformers peer (bench/hf_peer.py) on DIR, decode at batch
# 1/8/32/64 (context 1024) and a 2,048-token prefill, JSON to $OUT/hf_TAG.json, its verdict to the log.
hf_peer() {
  timeout "$4" python3 bench/hf_peer.py --model "$2" --batches 1,8,32,64 --context 1024 --steps "$3" --prefill 2048 \
    --out $OUT/hf_$1.json > $OUT/hf_$1.log 2>&1
  say "HF $1 rc=$?: $(grep -E '^HF' $OUT/hf_$1.log | tr '\n' ' ')"
}
# ncu_prof TAG REGEX SKIP DIR [engine-bench args...]: ncu's full set of one launch of the kernel
# matching REGEX (after SKIP) in engine-bench on DIR: the details page and the stall samples per
# SASS instruction (sass_top.py) to $OUT, their heads to the log.
ncu_prof() {
  local tag=$1 re=$2 skip=$3 dir=$4
  shift 4
  timeout 110 "$NCU" --clock-control none --set full --import-source yes -k regex:"$re" --launch-skip $skip \
    --launch-count 1 -o $W/$tag "$VB" engine-bench --model "$dir" --device cuda "$@" > $W/$tag.out 2>&1
  say "ncu $tag rc=$?"
  "$NCU" -i $W/$tag.ncu-rep --page details > $OUT/${tag}_details.txt 2>&1
  "$NCU" -i $W/$tag.ncu-rep --page source --csv --print-source sass > $W/${tag}_sass.csv 2> /dev/null
  python3 scripts/device/sass_top.py $W/${tag}_sass.csv 40 > $OUT/${tag}_sass_top.txt
  head -3 $OUT/${tag}_sass_top.txt | tee -a $LOG
  grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Compute \(SM\) Throughput|DRAM Throughput|L1/TEX Cache Throughput" \
    $OUT/${tag}_details.txt | head -10 | tee -a $LOG
}
# eb TAG DIR MODE [VAR=value...]: engine-bench decode at batch 1/8/32/64 (context 1024) and a
# 2,048-token prefill, JSON to $OUT/eb_TAG.json, a one-line summary to the log. EB_ARGS (more
# engine-bench options, e.g. --tensor-parallel-size 2), EB_BATCHES,
# EB_STEPS, EB_PREFILL (0: none) and EB_MIN_LEFT override the defaults.
eb() {
  local tag=$1 dir=$2 mode=$3
  shift 3
  [ "$(left)" -lt "${EB_MIN_LEFT:-90}" ] && { say "skip eb $tag: $(left) s left"; return; }
  env "$@" timeout 100 "$VB" engine-bench --model "$dir" --device cuda --mode "$mode" ${EB_ARGS:-} --batches "${EB_BATCHES:-1,8,32,64}" \
    --context 1024 --steps "${EB_STEPS:-32}" --prefill "${EB_PREFILL:-2048}" --json $OUT/eb_$tag.json > $OUT/eb_$tag.log 2>&1
  say "eb $tag rc=$? $*: $(grep -E 'decode|prefill [0-9]' $OUT/eb_$tag.log | sed -E 's/.*batch +([0-9]+): median +([0-9.]+) ms.*/b\1 \2/; s/prefill 2048 tokens: median ([0-9.]+) ms, ([0-9.]+) TFLOP[^(]*(\(reps [0-9. ]+ ms\))?(, SM clock ([0-9]+) MHz)?.*/prefill \1 ms \2 TF \3 sm_mhz=\5/' | tr '\n' ' ')"
  grep memory $OUT/eb_$tag.log | tee -a $LOG
}
# ab_eb OLD_BIN OLD_NAME TAG DIR ROUNDS [VAR=value...]: engine-bench contract of OLD_BIN (the
# binary before a change, carried beside $VB) and of $VB, alternated ROUNDS times on DIR in one
# call: eb_TAG_OLD_NAME[_rN] and eb_TAG_new[_rN] (the _rN suffix only when ROUNDS > 1): ab_bins
# with two binaries and the same switches.
ab_eb() {
  local old=$1 oname=$2 tag=$3 dir=$4 rounds=$5
  shift 5
  ab_bins "$tag" "$dir" "$rounds" "$oname=$old $*" "new=$VB $*"
}
# ab_many TAG DIR ROUNDS "NAME [VAR=value...]"...: engine-bench contract of $VB under each variant
# (a name, then its switches), the variants alternated ROUNDS times on DIR in one call:
# eb_TAG_NAME[_rN] (the _rN suffix only when ROUNDS > 1): ab_bins with $VB for every variant.
ab_many() {
  local tag=$1 dir=$2 rounds=$3 v w entries=()
  shift 3
  for v in "$@"; do
    w=($v)
    entries+=("${w[0]}=$VB ${w[*]:1}")
  done
  ab_bins "$tag" "$dir" "$rounds" "${entries[@]}"
}
# ab_bins TAG DIR ROUNDS "NAME=BIN [VAR=value...]"...: engine-bench contract of each binary (with
# its switches), alternated ROUNDS times on DIR in one call: eb_TAG_NAME[_rN] (the _rN suffix only
# when ROUNDS > 1). VB=BIN holds for that one eb call only.
ab_bins() {
  local tag=$1 dir=$2 rounds=$3 r sfx v
  shift 3
  for r in $(seq "$rounds"); do
    sfx=$([ "$rounds" -gt 1 ] && echo "_r$r")
    for v in "$@"; do
      local words=($v)
      VB=${words[0]#*=} eb ${tag}_${words[0]%%=*}$sfx $dir contract "${words[@]:1}"
    done
  done
}
# ab_vars TAG DIR ROUNDS A_NAME "A_VARS" B_NAME "B_VARS": ab_many with two variants.
ab_vars() { ab_many "$1" "$2" "$3" "$4 $5" "$6 $7"; }
# ncu_kernel TAG BIN DIR BATCHES REGEX [VAR=value...]: durations of the kernels matching REGEX in two
# decode steps of BIN's engine-bench on DIR at each of BATCHES (comma list; zeroed cache, context
# 1024), ncu serialized; per (kernel, grid) sums to $OUT/ncu_TAG.txt (the first NCU_HEAD lines, default
# 6, to the log) and every launch in order to $OUT/ncu_TAG_seq.txt. NCU_TIMEOUT: default 120 s.
ncu_kernel() {
  local tag=$1 bin=$2 dir=$3 batches=$4 re=$5
  shift 5
  env "$@" timeout "${NCU_TIMEOUT:-120}" "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv \
    --print-units base -k regex:"$re" --launch-count 4000 "$bin" engine-bench --model "$dir" --device cuda \
    --batches "$batches" --context 1024 --steps 2 --prefill 0 --no-context-prefill > $W/ncu_$tag.csv 2> $W/ncu_$tag.err
  say "ncu $tag rc=$? $(wc -l < $W/ncu_$tag.csv) lines $*"
  python3 scripts/device/ncu_summary.py $W/ncu_$tag.csv $OUT/ncu_$tag.txt $OUT/ncu_${tag}_seq.txt > /dev/null
  head -"${NCU_HEAD:-6}" $OUT/ncu_$tag.txt | tee -a $LOG
}
# ncu_steps TAG DIR BATCH: per-kernel durations of two decode steps over the zeroed cache (every
# kernel of $VB).
ncu_steps() { NCU_TIMEOUT=100 NCU_HEAD=16 ncu_kernel "$1" "$VB" "$2" "$3" '.'; }
# http_check DIR: two `verbatim serve --device cuda` on DIR (A: default KV at 0.3 of the GPU; B: 48
# KV blocks and 64-token steps, so preemption and chunked prefill), `verbatim check` with 64
# users greedy A vs B, then seeded on B; JSON and logs to $OUT.
http_check() {  # model_dir
  local dir=$1
  python3 - $W/prompts.jsonl << 'PY'
import json, random, sys
r = random.Random(11)
prefix = [r.randrange(100, 150000) for _ in range(120)]
with open(sys.argv[1], "w") as f:
    for i in range(64):
        tail = [r.randrange(100, 150000) for _ in range(1 + (i * 37) % 100)]
        f.write(json.dumps(prefix + tail if i % 4 else tail + prefix[:40]) + "\n")
PY
  "$VB" serve $dir --device cuda --host 127.0.0.1 --port 18431 --gpu-memory-utilization 0.3 > $OUT/serve_a.log 2>&1 &
  local pa=$!
  "$VB" serve $dir --device cuda --host 127.0.0.1 --port 18432 --num-kv-blocks 48 --max-num-batched-tokens 64 \
    > $OUT/serve_b.log 2>&1 &
  local pb=$!
  local ok=0
  for i in $(seq 60); do
    curl -sf http://127.0.0.1:18431/health > /dev/null && curl -sf http://127.0.0.1:18432/health > /dev/null && { ok=1; break; }
    sleep 1
  done
  if [ $ok = 1 ]; then
    timeout 90 "$VB" check --url http://127.0.0.1:18431 --compare-url http://127.0.0.1:18432 --prompts $W/prompts.jsonl \
      --max-tokens 24 --users 64 --timeout 60 --quiet --json $OUT/check_ab.json > $OUT/check_ab.log 2>&1
    say "check A vs B (64 users) rc=$?"
    tail -14 $OUT/check_ab.log | tee -a $LOG
    timeout 60 "$VB" check --url http://127.0.0.1:18432 --prompts $W/prompts.jsonl --max-tokens 24 --users 64 \
      --temperature 0.8 --seed 7 --timeout 50 --quiet --json $OUT/check_b_seeded.json > $OUT/check_b_seeded.log 2>&1
    say "check B seeded rc=$?"
    tail -8 $OUT/check_b_seeded.log | tee -a $LOG
    curl -s http://127.0.0.1:18432/metrics > $OUT/metrics_b.txt
    say "server B: $(grep -E '^verbatim:num_preemptions_total' $OUT/metrics_b.txt | head -1)"
  else
    say "servers not ready"; tail -3 $OUT/serve_a.log $OUT/serve_b.log | tee -a $LOG
  fi
  kill $pa $pb 2> /dev/null; wait $pa $pb 2> /dev/null
}
# serve_bg TAG PORT ENV [SERVE ARGS...]: `serve` on the 0.6B ($W/m06, --device ${DEVICE:-cuda}) with
# ENV (VAR=value) set, in the background, log $OUT/serve_TAG.log, its pid in SERVE_PID; true once
# /health answers (60 s), else it says so, stops the server and is false.
serve_bg() {
  local tag=$1 port=$2 env=$3
  shift 3
  env $env "$VB" serve $W/m06 --device ${DEVICE:-cuda} --host 127.0.0.1 --port $port \
    $([ "${DEVICE:-cuda}" = cuda ] && echo --gpu-memory-utilization 0.3) "$@" > $OUT/serve_$tag.log 2>&1 &
  SERVE_PID=$!
  for i in $(seq 60); do curl -sf http://127.0.0.1:$port/health > /dev/null && return 0; sleep 1; done
  say "$tag server not ready"; tail -3 $OUT/serve_$tag.log | tee -a $LOG; kill $SERVE_PID; return 1
}
# server_exit TAG: waits up to 30 s for serve_bg's server to exit on its own (then kills it, saying
# so); its exit status in SERVE_RC.
server_exit() {
  for i in $(seq 30); do kill -0 $SERVE_PID 2> /dev/null || break; sleep 1; done
  kill -0 $SERVE_PID 2> /dev/null && { say "$1: server still up 30 s on: killed"; kill -9 $SERVE_PID; }
  wait $SERVE_PID
  SERVE_RC=$?
}
# injected_check TAG PORT ENV [SERVE ARGS...]: serve_bg with ENV set, one request of 30 tokens;
# says its HTTP status and body, what /health and a second request then get, the server's exit
# status and seconds to exit, and its last lines (session 43; 44 added the rest).
injected_check() {
  local tag=$1 code code2 health t0
  serve_bg "$@" || return
  code=$(curl -s -m 60 -o $OUT/${tag}_answer.json -w '%{http_code}' http://127.0.0.1:$2/v1/completions \
    -H 'Content-Type: application/json' -d '{"prompt": [1, 2, 3, 4], "max_tokens": 30}')
  t0=$SECONDS
  health=$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:$2/health)
  code2=$(curl -s -m 5 -o $OUT/${tag}_answer2.json -w '%{http_code}' http://127.0.0.1:$2/v1/completions \
    -H 'Content-Type: application/json' -d '{"prompt": [5, 6], "max_tokens": 4}')
  server_exit $tag
  say "$tag check: answer $code $(head -c 200 $OUT/${tag}_answer.json); then /health $health, a new request $code2 $(head -c 120 $OUT/${tag}_answer2.json); server exit $SERVE_RC within $((SECONDS - t0)) s"
  tail -4 $OUT/serve_$tag.log | tee -a $LOG
}
# gen_same TAG BIN DIR: `verbatim generate` of 48 prompts (random ids, 40-1,200 long, so decode
# steps of 8-48 sequences run the ring attention kernel) greedy with logprobs, 24 tokens, by $VB and
# by BIN on DIR; says whether every choice (token ids, text, logprobs) is the same. A bits check of a
# patched binary without its op tests (those cost ~7 MB of carry each). $VB's run is made once per
# DIR. Outputs to $OUT/gen_*.
gen_same() {
  local tag=$1 bin=$2 dir=$3 main=$OUT/gen_main_$(basename $3).jsonl ra=0
  [ -f $W/gen_prompts.jsonl ] || python3 - $W/gen_prompts.jsonl << 'PY'
import json, random, sys
r = random.Random(25)
with open(sys.argv[1], "w") as f:
    for i in range(48):
        n = 40 + (i * 397) % 1160
        f.write(json.dumps({"prompt": [r.randrange(100, 150000) for _ in range(n)], "max_tokens": 24,
                            "temperature": 0, "logprobs": 1}) + "\n")
PY
  if [ ! -s $main ]; then
    timeout 100 "$VB" generate --model $dir --device cuda < $W/gen_prompts.jsonl > $main 2> ${main%.jsonl}.log
    ra=$?
  fi
  timeout 100 "$bin" generate --model $dir --device cuda < $W/gen_prompts.jsonl > $OUT/gen_$tag.jsonl 2> $OUT/gen_$tag.log
  local rb=$?
  say "generate $tag rc=$ra/$rb: $(python3 - $main $OUT/gen_$tag.jsonl << 'PY'
import json, sys
a = [json.loads(l).get("choices") for l in open(sys.argv[1])]
b = [json.loads(l).get("choices") for l in open(sys.argv[2])]
diff = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
print(f"{len(a)} / {len(b)} outputs, {diff} differ" + (" (SAME)" if diff == 0 and a and None not in a else ""))
PY
)"
}
# run_test NAME [TIMEOUT]: a carried gtest binary, its log to $OUT, the verdict and any failure lines.
run_test() {
  timeout "${2:-150}" "$VB_BIN/$1" > $OUT/$1.log 2>&1
  say "$1 rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/$1.log | tr '\n' ' ')"
  grep -E "FAILED|Failure|differs" $OUT/$1.log | head -10 | tee -a $LOG
}
# ops_attention: the attention op tests alone (~7 s; every kernel and variant against the merge
# path), log $OUT/ops_attn.log.
ops_attention() {
  timeout 60 "$VB_BIN/cuda_ops_test" --gtest_filter='*Attention*' > $OUT/ops_attn.log 2>&1
  say "attention op tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/ops_attn.log | tr '\n' ' ')"
  grep -E "FAILED|Failure|differs" $OUT/ops_attn.log | head -10 | tee -a $LOG
}
# sampler_recheck_06: session 46's re-check of the landed sampler form (ChunkValues) on $W/m06: the
# attention and sampler op tests, the 0.6B digests of record, engine-bench with --logprobs 20 at 1
# and 8 sequences.
sampler_recheck_06() {
  ops_attention
  timeout 60 "$VB_BIN/cuda_ops_test" --gtest_filter='CudaSampler*' > $OUT/ops_sampler.log 2>&1
  say "sampler op tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/ops_sampler.log | tr '\n' ' ')"
  inv_of_record $W/m06
  EB_PREFILL=0 EB_MIN_LEFT=30 EB_BATCHES=1,8 EB_ARGS="--logprobs 20" eb lp20_06 $W/m06 contract
}
# inv TAG DIR DTYPE [VAR=value...]: the invariance matrix on DIR in one dtype, log $OUT/inv_TAG.log.
inv() {
  local tag=$1 dir=$2 dt=$3
  shift 3
  env VERBATIM_TEST_MODEL_DIR=$dir VERBATIM_TEST_DTYPE=$dt "$@" timeout 150 "$VB_BIN/cuda_invariance_test" \
    --gtest_filter="$([ $dt = float16 ] && echo F16 || echo BF16)/*" > $OUT/inv_$tag.log 2>&1
  say "invariance $tag rc=$? $(grep -E '^\[  (PASSED|FAILED) |digest|record' $OUT/inv_$tag.log | tr '\n' ' ')"
  grep -E "Failure|differ|drafts" $OUT/inv_$tag.log | head -10 | tee -a $LOG
}
# inv_of_record DIR: the matrix on a 0.6B folder (make-model --seed 1 --init-std 0.02) in bf16 and
# fp16, each asserted against its outputs digest of record (session 14: the GEMMs' natural k sets;
# sessions 3-13: 02fdf9975bf8eafb, 9ca352b0e004b7b3).
inv_of_record() {
  inv 06_bf16 $1 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55
  inv 06_fp16 $1 float16 VERBATIM_TEST_EXPECT_DIGEST=d4981a65b9914c52
}
# gemm_2048 TAG KERNELS [BIN]: gemm-bench at 2,048 rows on the 8B and 0.6B layers (KERNELS: its
# --kernels list) with BIN (default $VB), JSON to $OUT/gemm_2048TAG.json, the table to the log.
gemm_2048() {
  local tag=$1 kernels=$2 bin=${3:-$VB}
  timeout 100 "$bin" gemm-bench --archs qwen3-8b,qwen3-0.6b --m 2048 --kernels "$kernels" \
    --json $OUT/gemm_2048$tag.json > $OUT/gemm_2048$tag.log 2>&1
  say "gemm-bench 2048$tag rc=$?"
  cat $OUT/gemm_2048$tag.log | tee -a $LOG
}
# ncu_prefill DIR: per-kernel durations of one 2,048-token prefill on DIR (an 8B folder) within the
# budget left, to $OUT/ncu_prefill_8.txt; its head to the log.
ncu_prefill() {
  [ "$(left)" -gt 45 ] || { say "skip ncu prefill: $(left) s left"; return; }
  timeout $(( $(left) - 5 )) "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    "$VB" engine-bench --model "$1" --device cuda --batches 1 --context 64 --steps 1 --prefill 2048 \
    --no-context-prefill > $W/ncu_prefill.csv 2> $W/ncu_prefill.err
  say "ncu prefill rc=$?"
  python3 scripts/device/ncu_summary.py $W/ncu_prefill.csv $OUT/ncu_prefill_8.txt > /dev/null
  head -14 $OUT/ncu_prefill_8.txt | tee -a $LOG
}
# inv_8_of_record DIR: the 8B digests of record on DIR (make-model --seed 1 --init-std 0.005), bf16
# and fp16, 8 tokens (session 14's; until session 13: 9ceba3474cbf6abf, 7e58f529cd75d598).
inv_8_of_record() {
  inv 8r_bf16 $1 bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
  inv 8r_fp16 $1 float16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=eba874a3a0dbd45c
}
# model_parity MIN_LEFT: cuda_model_test (HF parity on ../shared/reference) if more than MIN_LEFT
# seconds of BUDGET are left, its parity lines to the log.
model_parity() {
  [ "$(left)" -gt "$1" ] || return 0
  run_test cuda_model_test $(( $(left) - 15 ))
  grep -E "\[cuda parity" $OUT/cuda_model_test.log | head -8 | tee -a $LOG
}
# record_speed: engine-bench contract and fast on the 0.6B ($W/m06) and, once call_start's 8B
# folder is whole (the 0.6B rows run while it is made), on the 8B ($W/m8, with its 2,048-token
# prefill), as EB_* set them otherwise.
record_speed() {
  eb 06_contract $W/m06 contract
  eb 06_fast $W/m06 fast
  wait_for $W/m8 150 || return 0
  EB_PREFILL=2048 eb 8_contract $W/m8 contract
  EB_PREFILL=2048 eb 8_fast $W/m8 fast
}
# record_checks: the figures-of-record call's closing checks, each as the budget allows: the 8B
# digests of record (bf16 and fp16, the init-std-0.005 folder $W/m8r, 8 tokens), the HF peer on
# $W/m8, the 64-user HTTP check on $W/m06, the model tests, the per-kernel durations of one 8B prefill.
record_checks() {
  wait_for $W/m8r 100 && inv_8_of_record $W/m8r
  [ "$(left)" -gt 150 ] && hf_peer 8 $W/m8 4 100
  [ "$(left)" -gt 100 ] && http_check $W/m06
  model_parity 75
  ncu_prefill $W/m8
}
# trace_decode TAG DIR BATCH [VAR=value...]: the GPU timeline of engine-bench decode steps at BATCH
# on DIR (kernel_trace.cpp's CUPTI tracer, graph nodes one by one; built here on first use),
# summarised per kernel by trace_steps.py into $OUT/trace_TAG.txt (the raw CSV's tail beside it).
trace_decode() {
  local tag=$1 dir=$2 b=$3 lib=/tmp/libkernel_trace.so
  shift 3
  [ -f $lib ] || g++ -shared -fPIC -O2 -I/usr/local/cuda/include scripts/device/kernel_trace.cpp \
    -L/usr/local/cuda/lib64 -lcupti -o $lib >> $LOG 2>&1 || { say "kernel_trace build failed"; return; }
  [ "$(left)" -gt 40 ] || { say "skip trace $tag: $(left) s left"; return; }
  env "$@" CUDA_INJECTION64_PATH=$lib VB_TRACE_OUT=$W/trace_$tag.csv timeout 60 "$VB" engine-bench --model "$dir" \
    --device cuda --batches "$b" --context 1024 --steps 16 --prefill 0 > $W/trace_$tag.out 2>&1
  say "trace $tag rc=$? $*: $(grep -E 'decode batch' $W/trace_$tag.out | sed -E 's/.*median +([0-9.]+) ms.*/\1 ms a step under the tracer/')"
  python3 scripts/device/trace_steps.py $W/trace_$tag.csv $OUT/trace_$tag.txt 12 > /dev/null 2>> $LOG
  { head -1 $W/trace_$tag.csv; tail -n 2500 $W/trace_$tag.csv; } > $OUT/trace_${tag}_tail.csv
  head -24 $OUT/trace_$tag.txt | tee -a $LOG
}
# record_suite: every check and figure of record on main (issue 4's list), as s35_a / s36_a ran
# them, in ~370-470 s on one GPU; call after call_start NAME 560 (it makes $W/m06 and $W/m8).
record_suite() {
  local EB_MIN_LEFT=30 EB_PREFILL=0  # record_speed gives the 8B rows their prefill itself
  ( mk qwen3-8b $W/m8r 0.005; mk qwen3-1.7b $W/m17 0.02 ) &
  inv_of_record $W/m06
  record_speed
  trace_decode 06_b1 $W/m06 1
  trace_decode 8_b1 $W/m8 1
  trace_decode 8_b32 $W/m8 32
  wait_for $W/m8r 60 && inv_8_of_record $W/m8r
  [ "$(left)" -gt 60 ] && http_check $W/m06
  wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
  model_parity 75
  [ "$(left)" -gt 150 ] && hf_peer 8 $W/m8 4 100
  [ "$(left)" -gt 80 ] && run_test cuda_ops_test $(( $(left) - 10 ))
}
# attention_regs: registers, stack and local memory of the split and per-part attention kernels in
# $VB (cuobjdump, on the device only), to $OUT/regs.txt; the bf16 head-dim-128 ones to the log.
attention_regs() {
  local cuobj
  cuobj=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  "$cuobj" --dump-resource-usage "$VB" 2> /dev/null | grep -A1 -E "attention_split_kernel|attention_part_kernel" |
    grep -oE "Function [^:]*|REG:[0-9]+|STACK:[0-9]+|LOCAL:[0-9]+" | paste -sd' ' | sed 's/Function /\n/g' > $OUT/regs.txt
  say "registers: $(c++filt < $OUT/regs.txt 2> /dev/null | grep -E 'bf16, 128|__nv_bfloat16, 128' | cut -c1-160 | tr '\n' ';')"
}
# h200_short_record_call NAME: a whole call taking the owed H200 record (call_start NAME 420, then
# short_record); on any other card it prints the GPU and exits at once, before any work.
h200_short_record_call() {
  is_h200 || { echo "not an H200: $(gpu_facts)"; exit 0; }
  call_start "$1" 420
  short_record
  call_finish
}
# short_record: after call_start, the short record for a session's last device time (s36_g): the
# 0.6B digests of record, the speed rows (0.6B and 8B, contract and fast, the 8B prefill) and the
# 8B bf16 digest (its init-std-0.005 folder made in the background).
short_record() {
  mk qwen3-8b $W/m8r 0.005 &
  inv_of_record $W/m06
  wait_for $W/m8 60
  EB_MIN_LEFT=30 EB_PREFILL=0 record_speed
  wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
}
