#!/usr/bin/env bash
# Session 36, call d (one GPU): record_suite on an H200 (BUDGET 560); on anything else only the GPU
# line (a cheap try for the H200 issue 4 asks its checks on). Pack: as s36_a.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if is_h200; then
  call_start s36_d 560
  record_suite
  call_finish
else
  echo "not an H200: $(gpu_facts)"
fi
