#!/usr/bin/env bash
# Session 43, call b (one GPU): s43_a.sh's H200 branch only (the owed record of main's kernels);
# on any other card it prints the GPU and stops, so an H100 that comes costs seconds.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
is_h200 || { echo "not an H200: $(gpu_facts)"; exit 0; }
exec bash scripts/device/s43_a.sh
