#!/usr/bin/env bash
# Session 2, call 1 (~5 min): where a decode step's time goes, and what the x2 machine offers NCCL.
#  1. GPU facts, topology, where libnccl lives (toolkit, pip wheel), torch's NCCL version.
#  2. engine-bench 0.6B contract/fast at batch 1,8,32 (reference ms/step for this machine).
#  3. ncu: per-kernel GPU time of 0.6B decode steps at batch 1 and 32 (contract), and 8B batch 1
#     if time allows, summed per kernel name -> $OUT/ncu_*.csv; the sum against ms/step gives the
#     host/launch overhead.
source "$(dirname "$0")/common.sh"
echo "gpu: $(gpu_facts)"
nvidia-smi topo -m 2>&1 | head -8
echo "nccl libs:"; (ls /usr/local/cuda/lib64/libnccl* 2>/dev/null; find / -xdev -name 'libnccl.so*' 2>/dev/null) | sort -u | head
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
make_model qwen3-0.6b /tmp/m06 > /dev/null
for mode in contract fast; do
  timeout 60 "$VB_BIN/verbatim" engine-bench --model /tmp/m06 --device cuda --mode $mode --batches 1,8,32 --context 1024 \
    --steps 32 --prefill 0 --json "$OUT/eb06_$mode.json" 2>&1 | grep -E "decode" | sed "s/^/06 $mode: /"
done
prof() {  # label model batch steps
  timeout 150 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base --launch-count 6000 \
    "$VB_BIN/verbatim" engine-bench --model "$2" --device cuda --batches "$3" --context 1024 --steps "$4" --prefill 0 \
    > /tmp/ncu_$1.csv 2> /tmp/ncu_$1.err
  echo "ncu $1 rc=$? $(wc -l < /tmp/ncu_$1.csv) lines"; tail -3 /tmp/ncu_$1.err
  python3 - /tmp/ncu_$1.csv "$OUT/ncu_$1.txt" "$4" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; rows = rows[1:]
ki, vi, idi = hdr.index("Kernel Name"), hdr.index("Metric Value"), hdr.index("ID")
names = [(int(r[idi]), r[ki], float(r[vi])) for r in rows if r[vi].replace('.', '').isdigit()]
steps = int(sys.argv[3])
# The timed decode steps are the last launches: find one step's kernel count from the tail's period.
tot = collections.OrderedDict()
n = len(names)
# per-step: assume the last `steps` steps are identical; find period p so names[-p:] repeats
best = None
for p in range(20, 3000):
    if n < 2 * p: break
    if [x[1] for x in names[-p:]] == [x[1] for x in names[-2*p:-p]]:
        best = p; break
with open(sys.argv[2], "w") as f:
    if not best:
        f.write("no period found; n=%d\n" % n); print("no period"); sys.exit()
    step = names[-best:]
    for _, k, v in step:
        short = k.split("(")[0][:70]
        c, t = tot.get(short, (0, 0.0)); tot[short] = (c + 1, t + v)
    total = sum(v for _, _, v in step)
    f.write("kernels per step %d, GPU time per step %.1f us\n" % (best, total / 1e3))
    for k, (c, t) in sorted(tot.items(), key=lambda x: -x[1][1]):
        f.write("%8.1f us %5d x  %s\n" % (t / 1e3, c, k))
print(open(sys.argv[2]).read()[:1500])
PY
}
prof 06_b1 /tmp/m06 1 3
prof 06_b32 /tmp/m06 32 3
echo "total $SECONDS s"
