#!/usr/bin/env bash
# Session 47, call b (one GPU): the stats kernel with less work per thread (one argmax when the row
# bans nothing, the cluster's max read by one thread, no exps past the chunk's last round), against
# main's build carried as verbatim_base: the sampler re-check (op tests, 0.6B digests, --logprobs
# 20), engine-bench 0.6B at 1 and 8 sequences alternated 3 rounds, the same with --logprobs 20 (the
# top-logprobs kernel: only the pick's thread scans again) 2 rounds, the stats kernel's ncu profile.
# Pack: verbatim + cuda_ops_test + cuda_invariance_test + /tmp/base47/verbatim=verbatim_base.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start_06 s47_b 300
sampler_recheck_06
EB_PREFILL=0 EB_MIN_LEFT=30 EB_BATCHES=1,8 ab_eb "$VB_BIN/verbatim_base" main b06 $W/m06 3
EB_PREFILL=0 EB_MIN_LEFT=30 EB_BATCHES=1,8 EB_ARGS="--logprobs 20" ab_eb "$VB_BIN/verbatim_base" main lp06 $W/m06 2
ncu_prof stats06 'stats_kernel' 2 $W/m06 --batches 1 --context 1024 --steps 2 --prefill 0 --no-context-prefill
call_finish
