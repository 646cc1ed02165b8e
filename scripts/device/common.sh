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
