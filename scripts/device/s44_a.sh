#!/usr/bin/env bash
# Session 44, call a (one GPU). Every card: the server's failure path met with REAL device faults
# (VERBATIM_DEVICE_FAULT_AFTER_FORWARDS: a kernel storing to an unmapped address, sticky for the
# context; VERBATIM_DEVICE_HANG_AFTER_FORWARDS: a kernel that never returns), alone and under 64
# users, which session 43 had met only with a host-side throw. On an H200 first: the owed record
# of main's kernels (short_record). Elsewhere: the 0.6B digests of record and the 64-user check.
# Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
device_fault_check() { injected_check devfault 18435 VERBATIM_DEVICE_FAULT_AFTER_FORWARDS=8; }
device_hang_check() { injected_check devhang 18436 VERBATIM_DEVICE_HANG_AFTER_FORWARDS=8 --engine-step-timeout 3; }
# under_load TAG ENV [SERVE ARGS]: 64 users of `verbatim check` against a server whose device faults
# (or hangs) mid-run: every request must end (an answer or an error), none may hang, and the server
# must exit 1 on its own.
under_load() {
  local tag=$1 crc t0
  python3 - $W/load_prompts.jsonl << 'PY'
import json, random, sys
r = random.Random(3)
with open(sys.argv[1], "w") as f:
    for i in range(64):
        f.write(json.dumps([r.randrange(100, 150000) for _ in range(20 + 7 * i)]) + "\n")
PY
  serve_bg $tag 18437 "${@:2}" || return
  t0=$SECONDS
  timeout 90 "$VB" check --url http://127.0.0.1:18437 --prompts $W/load_prompts.jsonl --max-tokens 64 --users 64 \
    --timeout 60 --json $OUT/check_$tag.json > $OUT/check_$tag.log 2>&1
  crc=$?
  server_exit $tag
  say "$tag under 64 users: check rc=$crc after $((SECONDS - t0)) s, server exit $SERVE_RC"
  tail -6 $OUT/check_$tag.log | tee -a $LOG
  grep -E "error|exit" $OUT/serve_$tag.log | tail -4 | tee -a $LOG
}
if is_h200; then
  call_start s44_a 560
  short_record
else
  call_start_06 s44_a 300
fi
device_fault_check
device_hang_check
under_load load_fault VERBATIM_DEVICE_FAULT_AFTER_FORWARDS=40
under_load load_hang VERBATIM_DEVICE_HANG_AFTER_FORWARDS=40 --engine-step-timeout 3
if ! is_h200; then
  inv_of_record $W/m06
  [ "$(left)" -gt 60 ] && http_check $W/m06
fi
call_finish
