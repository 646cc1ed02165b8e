#!/usr/bin/env bash
# Session 34, call b (any one GPU, BUDGET s, default 570): n3 = main at 332db2a (n2, s34_a) + the
# softmax's probability from round_exp_candidate (common.cuh: 2^k · ex2.approx of the reduced
# argument, taken where a 2^-20 bracket around it rounds to one T value, the recipe elsewhere).
# 1. Bits (n3): cuda_ops_test (its exhaustive sweep of the candidate in bf16 and fp16 included),
#    the 0.6B digests of record, the 8B bf16 digest of record (init std 0.005, 8 tokens).
# 2. Speed: engine-bench of n2 (verbatim_n2) and n3 alternated, twice on the 8B and the 0.6B; then
#    ncu at the base clock (so the 8B prefill's power cap does not move it) of the prefill's fold
#    kernel (2 prefills, 8B) and the decode ring kernel (batch 32, 8B) in both builds.
# Pack (main's build at 332db2a in /tmp/n2_bin):
#   PACK_XZ=1 scripts/device/pack.sh build verbatim tests/cuda_ops_test tests/cuda_invariance_test \
#     /tmp/n2_bin/verbatim=verbatim_n2
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
N2=$VB_BIN/verbatim_n2
call_start s34_b 570
( sleep 20; mk qwen3-8b $W/m8r 0.005 ) &
run_test cuda_ops_test 240
grep -E "^\[exp candidate\]" $OUT/cuda_ops_test.log | tee -a $LOG
inv_of_record $W/m06
export EB_MIN_LEFT=40
wait_for $W/m8 60 && ab_bins 8 $W/m8 2 n2=$N2 n3=$VB
ab_bins 06 $W/m06 2 n2=$N2 n3=$VB
wait_for $W/m8r 40 && [ "$(left)" -gt 40 ] && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
# ncu_base TAG BIN REGEX COUNT [engine-bench args...]: durations at the base clock of COUNT launches
# of the kernels matching REGEX in BIN's engine-bench on the 8B.
ncu_base() {
  local tag=$1 bin=$2 re=$3 count=$4
  shift 4
  [ "$(left)" -gt 60 ] || { say "skip ncu $tag: $(left) s left"; return; }
  timeout 80 "$NCU" --clock-control base --metrics gpu__time_duration.sum --csv --print-units base -k regex:"$re" \
    --launch-count $count "$bin" engine-bench --model $W/m8 --device cuda --context 1024 "$@" > $W/ncu_$tag.csv 2> $W/ncu_$tag.err
  say "ncu $tag rc=$?"
  python3 scripts/device/ncu_summary.py $W/ncu_$tag.csv $OUT/ncu_$tag.txt > /dev/null
  head -3 $OUT/ncu_$tag.txt | tee -a $LOG
}
for b in n2 n3; do
  bin=$([ $b = n2 ] && echo $N2 || echo $VB)
  ncu_base fold_$b $bin attention_fold 72 --batches 1 --steps 1 --prefill 2048 --no-context-prefill
  ncu_base ring_$b $bin attention_ring 72 --batches 32 --steps 2 --prefill 0
done
call_finish
