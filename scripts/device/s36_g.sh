#!/usr/bin/env bash
# Session 36, call g (one GPU, BUDGET s, default 200): a short record on an H200 only, for a
# session's last ~300 s of device time: the 0.6B digests of record, main's speed rows (0.6B and 8B,
# contract and fast, the 8B prefill) and the 8B bf16 digest. Elsewhere only the GPU line.
# Pack: as s36_a.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if ! is_h200; then
  echo "not an H200: $(gpu_facts)"
  exit 0
fi
call_start s36_g 200
short_record
call_finish
