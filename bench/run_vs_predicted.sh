#!/usr/bin/env bash
# Measured vs predicted on this machine (issue 5): calibrate a P-rank CPU cluster, then run the RSA
# reduce_scatter and allreduce_slice variants (configs/runs/) at sequence lengths 2048, 4096, 8192 and
# print the measured median step time next to the simulator's prediction on the calibrated cluster.
# usage: bench/run_vs_predicted.sh [BUILD_DIR] [RANKS] [ITERS]
set -euo pipefail
build=${1:-build} ranks=${2:-2} iters=${3:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# A waiting rank yields its core instead of spinning (matters when ranks share cores with other work).
export OMPI_MCA_mpi_yield_when_idle=1
mpirun --oversubscribe -np "$ranks" "$build/spsim" calibrate --backend mpi --window 0.05 --out "$out/cpu.json" >&2
printf '| variant | seq_len | measured median (min-max) | predicted | measured/predicted |\n|---|---:|---:|---:|---:|\n'
for variant in reduce-scatter allreduce-slice; do
  for seq in 2048 4096 8192; do
    mpirun --oversubscribe -np "$ranks" "$build/spsim" run "$root/configs/runs/rsa-cpu-$variant-$seq.json" \
      --iters "$iters" --warmup 1 --cluster "$out/cpu.json" --json >"$out/run.json"
    python3 - "$out/run.json" "$variant" "$seq" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
step = next(p for p in d["phases"] if p["name"] == "step")
pred = next((p for p in d["prediction"].get("phases", []) if p["name"].startswith("step")), None)
ms = lambda s: "%.1f ms" % (s * 1e3)
p = ms(pred["predicted_s"]) if pred else "-"
r = "%.2f" % (step["median_s"] / pred["predicted_s"]) if pred else "-"
print("| %s | %s | %s (%s-%s) | %s | %s |" % (sys.argv[2], sys.argv[3], ms(step["median_s"]), ms(step["min_s"]), ms(step["max_s"]), p, r))
PY
  done
done
