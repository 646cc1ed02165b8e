#!/usr/bin/env bash
# The tests again under sanitizers (CUDA off), zero reports required:
#   build-asan: AddressSanitizer + UndefinedBehaviorSanitizer (-DVERBATIM_SANITIZE=address,undefined)
#               on the unit, tokenizer-oracle, fuzz-replay and server tests (the server tests start
#               the ASan-built `verbatim serve`, so the server process is checked too);
#   build-tsan: ThreadSanitizer (-DVERBATIM_SANITIZE=thread) on the engine, async engine,
#               scheduler and block manager tests, and the server tests that drive the engine
#               thread through HTTP threads.
# Tests are chosen by executable: the script lists each built executable's gtest suites and runs
# them through ctest with a regex of those suites (plus the plain ctest entries named here).
#   SANITIZE_ONLY=asan|tsan   run one half only
#   VERBATIM_BUILD_PREFIX=P   build folders P{asan,tsan} (default build-)
# httplib under TSan: scripts/tsan-suppressions.txt says why interceptor calls from that prebuilt library are ignored.
# OpenMP under TSan: libgomp is not built with TSan, so its barriers look like races to TSan
# (false reports). The TSan run uses OMP_NUM_THREADS=1, which keeps every OpenMP region on the
# calling thread; the engine's own threads (engine loop, HTTP workers) are still all checked.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${JOBS:-2}
PREFIX=${VERBATIM_BUILD_PREFIX:-build-}

# Halt on the first report, and write every report to a file (log_path): a server or CLI child
# process whose exit status no test reads (LeakSanitizer runs at exit) still fails the run.
san_env() {
  local reports=$1
  rm -rf "$reports" && mkdir -p "$reports"
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:log_path=$reports/asan"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:log_path=$reports/tsan:suppressions=$ROOT/scripts/tsan-suppressions.txt"
}

# ASan+UBSan: every CPU test executable (the cuda_* ones skip without a GPU and are left out).
ASAN_TESTS=(tokenizer_test stream_decoder_test chat_template_test tokenize_cli_test model_test sampler_test
  block_manager_test scheduler_test engine_test async_engine_test fingerprint_test cpu_ops_test parity_test
  invariance_cpu_test tp_sim_test spec_decode_test
  oracle_tokenizer_test oracle_chat_template_test server_api_test server_protocol_test server_lifecycle_test
  server_invariance_test spec_decode_server_test generate_test client_openai_test check_test bench_test
  reliability_load_test reliability_security_test connection_pool_test access_log_test)
ASAN_PLAIN=(replay_safetensors replay_model_dir replay_checkpoint_index replay_tokenizer_encode
  replay_tokenizer_decode replay_chat_template replay_protocol replay_generation_config)
# TSan: the engine and scheduler tests, the server tests whose engine thread runs beside the
# HTTP threads (with and without speculative decoding), and the HTTP connection pool.
TSAN_TESTS=(block_manager_test scheduler_test engine_test async_engine_test spec_decode_test server_lifecycle_test
  spec_decode_server_test connection_pool_test)

# Keeps only the names whose source exists (the list names tests that may land later).
existing() {
  local n
  for n in "$@"; do
    if [ -f "tests/$n.cpp" ] || [[ $n == replay_* && -f "fuzz/fuzz_${n#replay_}.cpp" ]]; then echo "$n"; fi
  done
}

# run_half NAME BUILD_DIR SANITIZE TESTS... -- PLAIN...
run_half() {
  local name=$1 dir=$2 san=$3; shift 3
  local tests=() plain=() t0 t1 t2
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do tests+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  plain=("$@")
  t0=$(date +%s)
  # -O1 -g1: the usual sanitizer build (stacks with file:line; -g1 compiles and links faster than -g). GCC 12 misfires
  # -Wmaybe-uninitialized inside <regex>/<functional> when ASan instruments them: a warning, not an error, here.
  cmake -S . -B "$dir" -DVERBATIM_CUDA=OFF -DVERBATIM_SANITIZE="$san" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS="-Wno-error=maybe-uninitialized" >/dev/null
  local exes=() p
  for p in "${plain[@]}"; do [[ $p == replay_* ]] && exes+=("$p"); done  # the others are scripts
  cmake --build "$dir" -j"$JOBS" --target verbatim "${tests[@]}" "${exes[@]}" >"$dir/sanitize-build.log" 2>&1 ||
    { tail -40 "$dir/sanitize-build.log"; echo "ci-sanitize: $name build failed"; return 1; }
  t1=$(date +%s)
  local suites=() exe
  for exe in "${tests[@]}"; do
    while read -r s; do suites+=("$s"); done < <("$dir/tests/$exe" --gtest_list_tests | sed -n 's/^\([A-Za-z0-9_/]*\)\.$/\1/p')
  done
  local regex="^(($(IFS='|'; echo "${suites[*]}"))\\.|($(IFS='|'; echo "${plain[*]:-none}"))\$)"
  echo "ci-sanitize: $name: ${#tests[@]} test executables (${#suites[@]} suites) + ${#plain[@]} plain tests"
  local rc=0 reports="$dir/sanitizer-reports"
  san_env "$reports"
  local exclude=()
  [ -n "${SKIP_REGEX:-}" ] && exclude=(-E "$SKIP_REGEX")
  (cd "$dir" && ctest --output-on-failure -j"$JOBS" --timeout 1200 -R "$regex" "${exclude[@]}") || rc=$?
  t2=$(date +%s)
  if [ -n "$(ls -A "$reports")" ]; then
    echo "ci-sanitize: $name: sanitizer reports (from tests or the processes they started):"
    for f in "$reports"/*; do echo "---- $f"; head -60 "$f"; done
    rc=1
  fi
  echo "ci-sanitize: $name: build $((t1 - t0))s, tests $((t2 - t1))s, exit $rc"
  return $rc
}

# The spec_decode_test and invariance_cpu_test cases on make-model-tiny (the real 151,936-token
# vocabulary) repeat the tiny fixtures' checks through the same code with a larger lm_head: the
# plain suite runs them; under ASan they cost 5.5 CPU-minutes, under TSan 10, for no new code path.
BIG_VOCAB_CASES='^Models/(SpecDecode|InvarianceCpu)\..*/make_model_tiny'

status=0
ONLY=${SANITIZE_ONLY:-both}
if [ "$ONLY" != tsan ]; then
  mapfile -t a < <(existing "${ASAN_TESTS[@]}")
  mapfile -t p < <(existing "${ASAN_PLAIN[@]}")
  SKIP_REGEX="$BIG_VOCAB_CASES" run_half asan "$ROOT/${PREFIX}asan" address,undefined "${a[@]}" -- "${p[@]}" oracle_cli_tokenize || status=1
fi
if [ "$ONLY" != asan ]; then
  mapfile -t a < <(existing "${TSAN_TESTS[@]}")
  SKIP_REGEX="$BIG_VOCAB_CASES" OMP_NUM_THREADS=1 run_half tsan "$ROOT/${PREFIX}tsan" thread "${a[@]}" -- || status=1
fi
exit $status
