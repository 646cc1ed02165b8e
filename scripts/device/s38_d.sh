#!/usr/bin/env bash
# Session 38, call d (one GPU): record_suite on the s38 build (main's kernels + the attention launch
# tally) on whatever card comes: on an H200 (BUDGET 575) the figures of record issue 4 asks for;
# elsewhere (BUDGET 480) every check of record and the speed rows of the final code on that card.
# Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
if is_h200; then call_start s38_d 575; else call_start s38_d 480; fi
ops_attention
record_suite
call_finish
