#!/usr/bin/env bash
# Session 24 wrote this for the next session with a GPU (one H200, BUDGET s, default 240): where the
# ring attention kernel's time goes.
# Probe builds of attention.cu (not on main: -DVB_RING_PROBE=N on a copy with three switches) each
# drop one role's work but keep every barrier handshake: 1 consumers compute nothing, 2 producers
# copy nothing, 4 the folder folds nothing, 5 = 1 + 4 (only the copies). ncu durations of the ring
# kernel at 8B 16 / 32 / 64 sequences for main's build and each probe, and main's with 4 x 5
# forced; then the 8B 2,048-token prefill three times.
# Build the probes with scripts/device/build_ring_probes.sh, then
# pack: PACK_XZ=1 pack.sh build-cuda verbatim /tmp/vb_patched/p1/verbatim=verbatim_p1 ... (p2, p4, p5);
# scripts/device/slim.sh hide before the call (five binaries are ~38 MB packed).
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s24_a 280
wait_for $W/m8 100
ncu_kernel base $VB $W/m8 16,32,64 attention_ring
for p in 1 2 4 5; do
  [ -x $VB_BIN/verbatim_p$p ] && [ "$(left)" -gt 40 ] && ncu_kernel p$p $VB_BIN/verbatim_p$p $W/m8 16,32,64 attention_ring
done
[ "$(left)" -gt 40 ] && ncu_kernel v1 $VB $W/m8 32,64 attention_ring VERBATIM_ATTN_RING_VARIANT=1
# The 8B prefill again (s24_final's single median, 77.84 ms, sat below s24_b's 73.5-74.3): three runs.
for r in 1 2 3; do EB_MIN_LEFT=20 EB_BATCHES=1 EB_STEPS=4 eb prefill_8_r$r $W/m8 contract; done
call_finish
