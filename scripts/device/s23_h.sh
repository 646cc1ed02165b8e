#!/usr/bin/env bash
# Session 23, call 9 (one H200, BUDGET s, default 150): the ring kernel where its waves are partial
# (40 / 48 / 56 sequences: 320 / 384 / 448 CTAs), each shape forced (4 x 5 at 1 CTA per SM: 3 / 3 / 4
# waves of 132; 2 x 2 at 2 per SM: 2 / 2 / 2 waves of 264) against the per-tile kernels; 8B decode.
# (VERBATIM_ATTN_RING_WAVE_RULE=0 turned off the wave rule of c120f10, since replaced by the
# choice of shape by waves that this call measured.)
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s23_h 150
wait_for $W/m8 100
export EB_MIN_LEFT=20 EB_PREFILL=0 EB_BATCHES=40,48,56
W0=VERBATIM_ATTN_RING_WAVE_RULE=0
ab_many partial_8 $W/m8 1 "off VERBATIM_ATTN_RING_MIN_BATCH=0" "v1 $W0 VERBATIM_ATTN_RING_VARIANT=1" \
  "v2 $W0 VERBATIM_ATTN_RING_VARIANT=2" "v0 $W0 VERBATIM_ATTN_RING_VARIANT=0"
call_finish
