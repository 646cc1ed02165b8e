#!/usr/bin/env bash
# Session 13, call 1 (one H200, ~330 s): the prefill attention's fold kernel with the two row halves'
# softmax interleaved (VERBATIM_ATTN_FOLD_PV=3) and, in addition, its exps selected instead of
# branched around (4), against 2; qkv_post's warps looping over items from a grid of 32 (or 8)
# blocks per SM against one item per warp (VERBATIM_QKV_POST_BLOCKS_PER_SM=0). Bits: cuda_ops_test
# (fold modes 0-4 against each other; qkv_post at grid caps 3 and 1 against the unfused kernels),
# the 0.6B digests under the defaults and under mode 4, the 8B bf16 digest under mode 4. Speed:
# engine-bench 2,048-token prefill per variant, alternated, two rounds on 8B, one on 0.6B; ncu
# stall samples of the mode-4 fold kernel; the fold kernels' branch counts in the SASS; the
# per-kernel durations of one 8B prefill under mode 4.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_model_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s13_attn 330
mk qwen3-8b $W/m8r 0.005 &
bits_06
inv 06_bf16_f4 $W/m06 bfloat16 VERBATIM_TEST_EXPECT_DIGEST=02fdf9975bf8eafb VERBATIM_ATTN_FOLD_PV=4
wait_for $W/m8 150
export EB_BATCHES=1 EB_STEPS=8 EB_MIN_LEFT=40
VARIANTS=("old VERBATIM_QKV_POST_BLOCKS_PER_SM=0" "q32" "q8 VERBATIM_QKV_POST_BLOCKS_PER_SM=8"
  "f3 VERBATIM_ATTN_FOLD_PV=3" "f4 VERBATIM_ATTN_FOLD_PV=4")
ab_many 8p $W/m8 2 "${VARIANTS[@]}"
ab_many 06p $W/m06 1 "${VARIANTS[@]}"
wait_for $W/m8r 100 && inv 8r_bf16_f4 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 \
  VERBATIM_TEST_EXPECT_DIGEST=9ceba3474cbf6abf VERBATIM_ATTN_FOLD_PV=4
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
"$CUOBJ" -sass "$VB" 2> /dev/null | python3 -c '
import re, sys
name, counts = None, {}
for line in sys.stdin:
    if "Function :" in line:
        name = line.split("Function :")[1].strip()
        name = name if "attention_fold_kernel" in name and "Li128ELi32ELb1E" in name else None
        if name: counts[name] = {"insts": 0, "BSSY": 0, "BRA": 0, "HMMA": 0}
    elif name and re.search(r"/\*[0-9a-f]{4}\*/", line):
        c = counts[name]
        c["insts"] += 1
        for k in ("BSSY", "BRA", "HMMA"):
            if re.search(r"\b" + k + r"\b", line): c[k] += 1
for n, c in counts.items(): print(n, c)
' > $OUT/fold_sass_counts.txt
cat $OUT/fold_sass_counts.txt | tee -a $LOG
export VERBATIM_ATTN_FOLD_PV=4
ncu_prof fold4 attention_fold 8 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
ncu_prefill $W/m8
call_finish
