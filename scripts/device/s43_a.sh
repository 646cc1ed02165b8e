#!/usr/bin/env bash
# Session 43, call a (one GPU). On an H200: the owed record of main's kernels (short_record, then
# the 1.7B rows), then the fault check. Elsewhere (an H100): the 0.6B digests of record, the
# 64-user HTTP check and the fault check, on main's code after session 43's engine changes.
# fault_check: `serve --device cuda` with VERBATIM_FAULT_AFTER_FORWARDS=8 must answer the request
# the fault hits with a 500 naming it and exit 1 (with the CUDA context alive at teardown).
# Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
# injected_check TAG PORT ENV [SERVE ARGS...]: `serve --device cuda` on the 0.6B with ENV set, one
# request of 30 tokens; says its HTTP status and body, the server's exit status and its last lines.
injected_check() {
  local tag=$1 port=$2 env=$3 p ok=0 code rc
  shift 3
  env $env "$VB" serve $W/m06 --device cuda --host 127.0.0.1 --port $port --gpu-memory-utilization 0.3 "$@" \
    > $OUT/serve_$tag.log 2>&1 &
  p=$!
  for i in $(seq 60); do curl -sf http://127.0.0.1:$port/health > /dev/null && { ok=1; break; }; sleep 1; done
  [ $ok = 1 ] || { say "$tag server not ready"; tail -3 $OUT/serve_$tag.log | tee -a $LOG; kill $p; return; }
  code=$(curl -s -o $OUT/${tag}_answer.json -w '%{http_code}' http://127.0.0.1:$port/v1/completions \
    -H 'Content-Type: application/json' -d '{"prompt": [1, 2, 3, 4], "max_tokens": 30}')
  for i in $(seq 30); do kill -0 $p 2> /dev/null || break; sleep 1; done
  wait $p
  rc=$?
  say "$tag check: answer $code $(head -c 200 $OUT/${tag}_answer.json), server exit $rc"
  tail -3 $OUT/serve_$tag.log | tee -a $LOG
}
fault_check() { injected_check fault 18433 VERBATIM_FAULT_AFTER_FORWARDS=8; }
# hang_check: a forward call that never returns trips --engine-step-timeout 2: a 500 naming it, exit 1.
hang_check() { injected_check hang 18434 VERBATIM_HANG_AFTER_FORWARDS=8 --engine-step-timeout 2; }
if is_h200; then
  call_start s43_a 480
  mk qwen3-1.7b $W/m17 0.02 &
  short_record
  fault_check
  hang_check
  export EB_MIN_LEFT=30 EB_PREFILL=0
  wait_for $W/m17 30 && { eb 17_contract $W/m17 contract; eb 17_fast $W/m17 fast; }
else
  call_start_06 s43_a 300
  inv_of_record $W/m06
  fault_check
  hang_check
  [ "$(left)" -gt 60 ] && http_check $W/m06
fi
call_finish
