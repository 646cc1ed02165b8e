#!/usr/bin/env bash
# Session 44, call b (one GPU). s44_a's "under load" runs hit the fault during `verbatim check`'s
# first one-user request, so one request was in flight. Here 64 requests (half streamed, half not,
# 2,000 tokens each) are in flight when a trigger file arms the REAL device fault (or hang): each must
# end with an answer (a 500, or a stream's error event), none may be lost (curl 000) or hang, and
# the server must exit 1 on its own. On an H200 first: the owed record of main's kernels.
# Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
# in_flight_fault TAG HOOK [SERVE ARGS]: the check above with HOOK=file:TRIGGER.
in_flight_fault() {
  local tag=$1 hook=$2 port=18438 d=$W/ul_$1 t0
  shift 2
  rm -rf $d && mkdir -p $d
  serve_bg $tag $port $hook=file:$d/trigger "$@" || return
  local pids=()
  for i in $(seq 0 63); do
    local stream=$([ $((i % 2)) = 0 ] && echo true || echo false)
    ( code=$(curl -s -m 90 -o $d/$i.out -w '%{http_code}' http://127.0.0.1:$port/v1/completions \
        -H 'Content-Type: application/json' \
        -d "{\"prompt\": [$((100 + i)), 7, 8, 9, $((200 + i))], \"max_tokens\": 2000, \"ignore_eos\": true, \"stream\": $stream}")
      echo "$code $stream" > $d/$i.code ) &
    pids+=($!)
  done
  sleep 1
  curl -s http://127.0.0.1:$port/metrics | grep -E '^verbatim:num_requests_running' | head -1 > $d/running.txt
  touch $d/trigger
  t0=$SECONDS
  wait "${pids[@]}"
  local answered=$((SECONDS - t0))
  server_exit $tag
  say "$tag: armed with $(cat $d/running.txt); the 64 answers came within $answered s of arming; server exit $SERVE_RC"
  python3 - $d << 'PY' | tee -a $LOG
import collections, glob, json, os, sys
d = sys.argv[1]
kinds = collections.Counter()
for f in sorted(glob.glob(os.path.join(d, "*.code"))):
    code, stream = open(f).read().split()
    body = open(f[:-5] + ".out", errors="replace").read()
    if stream == "true":
        events = [l[6:] for l in body.splitlines() if l.startswith("data: ")]
        last = events[-2] if len(events) >= 2 and events[-1] == "[DONE]" else (events[-1] if events else "")
        ended = "error event" if '"error"' in last else ("[DONE] without error" if events and events[-1] == "[DONE]" else "cut off")
        kinds[f"stream {code} {ended}"] += 1
    else:
        kinds[f"plain {code}" + (" error JSON" if '"error"' in body else "")] += 1
print("  " + "; ".join(f"{k}: {v}" for k, v in sorted(kinds.items())))
PY
  grep -E "error:|exited" $OUT/serve_$tag.log | head -3 | tee -a $LOG
}
if is_h200; then
  call_start s44_b 560
  short_record
else
  call_start s44_b 330
fi
in_flight_fault inflight_fault VERBATIM_DEVICE_FAULT_AFTER_FORWARDS
in_flight_fault inflight_hang VERBATIM_DEVICE_HANG_AFTER_FORWARDS --engine-step-timeout 3
if ! is_h200; then
  # Diagnosis for the next session (issue 4): the 8B batch-1 timeline with main's W preload (weights
  # <= 16 MiB) and with every weight's first ring stages issued before the PDL wait: does the qkv
  # GEMM's ~5 us over its bytes (session 35's table) come from its start?
  wait_for $W/m8 60 && {
    trace_decode 8_b1 $W/m8 1
    trace_decode 8_b1_pre2 $W/m8 1 VERBATIM_GEMM_STREAM_PRELOAD=2
    EB_BATCHES=1,8 EB_PREFILL=0 EB_MIN_LEFT=40 ab_vars pre $W/m8 2 p1 VERBATIM_GEMM_STREAM_PRELOAD=1 p2 VERBATIM_GEMM_STREAM_PRELOAD=2
  }
fi
call_finish
