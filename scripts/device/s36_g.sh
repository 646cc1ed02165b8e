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
mk qwen3-8b $W/m8r 0.005 &
inv_of_record $W/m06
wait_for $W/m8 60
EB_MIN_LEFT=30 EB_PREFILL=0 record_speed
wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
