#!/usr/bin/env bash
# Measured vs predicted on this machine (issue 5): calibrate a P-rank CPU cluster, then run the RSA
# reduce_scatter and allreduce_slice variants (configs/runs/) at sequence lengths 2048, 4096, 8192 and
# print the measured median step time next to the simulator's prediction on the calibrated cluster.
#
# The two variants differ only in the dK/dV reduction, by a few milliseconds in seconds-long steps, so
# their measured order is easily decided by drift in the machine's speed. The runs are therefore
# interleaved (reduce_scatter, allreduce_slice, reduce_scatter, ... ROUNDS times each), and the order is
# judged on the paired differences: the second table gives, per length, the median over rounds of
# (allreduce_slice − reduce_scatter) step time, how many rounds had reduce_scatter faster, and the same
# difference predicted by the simulator; the third, the time a rank blocks in the reduction itself, as
# run and, from a second run of each with --sync-collectives, without the wait for the other rank.
# usage: bench/run_vs_predicted.sh [BUILD_DIR] [RANKS] [ITERS] [ROUNDS] [SEQ_LENS (quoted list)]
set -euo pipefail
build=${1:-build} ranks=${2:-2} iters=${3:-5} rounds=${4:-3} seqs=${5:-2048 4096 8192}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# A waiting rank yields its core instead of spinning (matters when ranks share cores with other work).
export OMPI_MCA_mpi_yield_when_idle=1
echo "load before calibration: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
mpirun --oversubscribe -np "$ranks" "$build/spsim" calibrate --backend mpi --window 0.05 --out "$out/cpu.json" >&2
for seq in $seqs; do
  for round in $(seq 1 "$rounds"); do
    for variant in reduce-scatter allreduce-slice; do
      echo "seq $seq round $round $variant (load $(cut -d' ' -f1 /proc/loadavg))" >&2
      mpirun --oversubscribe -np "$ranks" "$build/spsim" run "$root/configs/runs/rsa-cpu-$variant-$seq.json" \
        --iters "$iters" --warmup 1 --cluster "$out/cpu.json" --json >"$out/$variant-$seq-$round.json"
      # Again with a barrier before each collective: the reduction's own cost, without the skew.
      mpirun --oversubscribe -np "$ranks" "$build/spsim" run "$root/configs/runs/rsa-cpu-$variant-$seq.json" \
        --iters "$iters" --warmup 1 --sync-collectives --json >"$out/$variant-$seq-$round-sync.json"
    done
  done
done
python3 - "$out" "$rounds" $seqs <<'PY'
import json, os, statistics, sys
out, rounds, seqs = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3:]]
def load(variant, seq, r):
    d = json.load(open(os.path.join(out, "%s-%d-%d.json" % (variant, seq, r))))
    step = next(p for p in d["phases"] if p["name"] == "step")
    pred = next(p for p in d["prediction"]["phases"] if p["name"].startswith("step"))
    return step["median_s"], pred["predicted_s"]
ms = lambda s: "%.1f" % (s * 1e3)
variants = ["reduce-scatter", "allreduce-slice"]
print("| variant | seq_len | measured median per round (ms) | predicted (ms) | measured/predicted (median round) |")
print("|---|---:|---|---:|---:|")
for v in variants:
    for seq in seqs:
        runs = [load(v, seq, r) for r in range(1, rounds + 1)]
        meas = [m for m, _ in runs]
        pred = statistics.median(p for _, p in runs)
        print("| %s | %d | %s | %s | %.2f |" % (v.replace("-", "_"), seq, ", ".join(ms(m) for m in meas), ms(pred),
                                               statistics.median(meas) / pred))
print()
print("| seq_len | measured allreduce_slice − reduce_scatter: median of rounds | mean ± standard error | rounds with reduce_scatter faster | predicted difference |")
print("|---:|---:|---:|---:|---:|")
for seq in seqs:
    diffs, preds = [], []
    for r in range(1, rounds + 1):
        (rs, prs), (ar, par) = load("reduce-scatter", seq, r), load("allreduce-slice", seq, r)
        diffs.append(ar - rs)
        preds.append(par - prs)
    se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
    print("| %d | %+.2f ms | %+.2f ± %.2f ms | %d of %d | %+.3f ms |" % (
        seq, statistics.median(diffs) * 1e3, statistics.mean(diffs) * 1e3, se * 1e3,
        sum(d > 0 for d in diffs), rounds, statistics.median(preds) * 1e3))
# The reduction itself: the time a rank blocks in the dK/dV collective per iteration (median of runs),
# as run (with the wait for the other rank) and with --sync-collectives (its own cost).
def blocked(variant, seq, kind, suffix=""):
    vals = []
    for r in range(1, rounds + 1):
        d = json.load(open(os.path.join(out, "%s-%d-%d%s.json" % (variant, seq, r, suffix))))
        vals.append(next(p["median_s"] for p in d["phases"] if p["name"] == "comm:" + kind))
    return vals
def paired(seq, suffix):
    rs, ar = blocked("reduce-scatter", seq, "reduce_scatter", suffix), blocked("allreduce-slice", seq, "all_reduce", suffix)
    return statistics.median(rs), statistics.median(ar), sum(a > b for b, a in zip(rs, ar))
print()
print("| seq_len | reduce_scatter blocked (ms/iter) | all_reduce blocked (ms/iter) | own cost (--sync-collectives): reduce_scatter | all_reduce | rounds with reduce_scatter cheaper |")
print("|---:|---:|---:|---:|---:|---:|")
for seq in seqs:
    rs, ar, _ = paired(seq, "")
    rs_s, ar_s, n = paired(seq, "-sync")
    print("| %d | %.2f | %.2f | %.2f | %.2f | %d of %d |" % (seq, rs * 1e3, ar * 1e3, rs_s * 1e3, ar_s * 1e3, n, rounds))
PY
