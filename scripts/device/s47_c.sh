#!/usr/bin/env bash
# Session 47, call c (one GPU): the owed H200 record of main's kernels (session 47's sampler
# included): short_record (0.6B digests, 0.6B and 8B speed rows contract and fast with the 8B
# prefill, the 8B bf16 digest). On any other card it prints the GPU and stops at once.
# Pack: verbatim + cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
h200_short_record_call s47_c
