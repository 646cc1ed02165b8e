#!/usr/bin/env bash
# Session 44, call e (one GPU): the owed H200 record of main's kernels (session 44's preload
# included): short_record (0.6B digests, 0.6B and 8B speed rows contract and fast with the 8B
# prefill, the 8B bf16 digest). On any other card it prints the GPU and stops at once.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
h200_short_record_call s44_e
