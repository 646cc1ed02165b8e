#!/usr/bin/env bash
# Session 42, call a (one GPU): record_suite on whatever card came (an H100 when no H200 comes:
# main's final code, every bit check and the speed rows). Pack: verbatim + the three CUDA tests.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s42_a 540
record_suite
call_finish
