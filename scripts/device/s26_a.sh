#!/usr/bin/env bash
# Session 26 wrote this (one H200, BUDGET s, default 150): would a persistent decode kernel reach the
# batch-1 targets? bench/persistent_probe.cu times a decode layer's nine phases at batch 1 as nine
# PDL launches in a CUDA graph (the engine's way) and inside one persistent kernel with grid
# barriers, with and without L2 prefetch of the next GEMV's weights during glue phases, on the
# 0.6B / 1.7B / 8B shapes (~1k context); the same work both ways (it compares the step's bits).
# Beside it, main's engine-bench at batch 1 on the 0.6B and 8B (the calibration: how the probe's
# `launch` mode compares with the engine's real step).
# Pack: PACK_XZ=1 scripts/device/pack.sh build-cuda verbatim persistent_probe [...]
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s26_a 150
timeout 150 "$VB_BIN/persistent_probe" --json $OUT/probe.json --steps 50 --pf-mb 8,24,40 > $OUT/probe.log 2>&1
say "probe rc=$?"
cat $OUT/probe.log | tee -a $LOG
export EB_BATCHES=1 EB_PREFILL=0 EB_MIN_LEFT=20
eb cal06 $W/m06 contract
wait_for $W/m8 20 && eb cal8 $W/m8 contract
call_finish
