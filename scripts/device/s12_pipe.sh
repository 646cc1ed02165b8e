#!/usr/bin/env bash
# Session 12, call 1 (one H200, ~360 s): the pipelined wgmma prefill GEMM (per-buffer mbarriers, no
# CTA barrier in the K loop; GemmTuning::wgmma_pipe 1..4, VERBATIM_GEMM_WGMMA_PIPE) against the
# barrier kernel (0), and the fold attention with Q·K^T issued k step outermost
# (VERBATIM_ATTN_FOLD_PV=3) against 2, in one binary. Bits: cuda_ops_test (the pipe configurations
# and fold mode 3 against v1 / the other modes), the 0.6B digests under the defaults and under the
# new paths, the 8B bf16 digest under the new paths. Speed: gemm-bench at 2,048 rows (tiled,
# wgpipe1..4, cuBLAS), engine-bench 2,048-token prefill of every variant alternated two rounds on
# 8B, one on 0.6B; ncu stall samples of one pipelined gate_up launch; the SASS of the fold kernels.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s12_pipe 360
mk qwen3-8b $W/m8r 0.005 &
bits_06
inv 06_bf16_new $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_GEMM_WGMMA_PIPE=1 VERBATIM_ATTN_FOLD_PV=3
gemm_2048 "" tiled,tiled:wgpipe1,tiled:wgpipe2,tiled:wgpipe3,tiled:wgpipe4,cublas
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=30
for r in 1 2; do
  for v in "base" "p1 VERBATIM_GEMM_WGMMA_PIPE=1" "p2 VERBATIM_GEMM_WGMMA_PIPE=2" "p3 VERBATIM_GEMM_WGMMA_PIPE=3" \
      "p4 VERBATIM_GEMM_WGMMA_PIPE=4" "f3 VERBATIM_ATTN_FOLD_PV=3"; do
    set -- $v
    name=$1; shift
    eb 8p_${name}_r$r $W/m8 contract "$@"
  done
done
for v in "base" "p1 VERBATIM_GEMM_WGMMA_PIPE=1" "p3 VERBATIM_GEMM_WGMMA_PIPE=3" "f3 VERBATIM_ATTN_FOLD_PV=3"; do
  set -- $v
  name=$1; shift
  eb 06p_${name} $W/m06 contract "$@"
done
wait_for $W/m8r 100 && inv 8r_bf16_new $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf \
  VERBATIM_GEMM_WGMMA_PIPE=1 VERBATIM_ATTN_FOLD_PV=3
export VERBATIM_GEMM_WGMMA_PIPE=1
ncu_prof wg_pipe gemm_wgmma_pipe 2 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
unset VERBATIM_GEMM_WGMMA_PIPE
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
"$CUOBJ" -sass "$VB" 2> /dev/null | python3 -c '
import sys
keep = False
for line in sys.stdin:
    if "Function :" in line:
        keep = "attention_fold_kernel" in line and "Li32ELb1E" in line
    if keep:
        sys.stdout.write(line)
' > $OUT/fold_sass.txt
say "fold sass: $(wc -l < $OUT/fold_sass.txt) lines, $(grep -c 'Function :' $OUT/fold_sass.txt) functions"
call_finish
