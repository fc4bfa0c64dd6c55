#!/usr/bin/env bash
# The config fuzzer (tests/fuzz/fuzz_configs.py) for longer than ctest's 60 s: SECONDS of mutated configs
# and arguments fed to check, simulate, compare and collective, with a fresh seed unless one is given.
# Failing cases land in OUT_DIR with a replayable command each; the last lines are the summary.
# usage: bench/fuzz.sh [BUILD_DIR] [SECONDS] [SEED] [JOBS] [OUT_DIR]   (defaults: build 1800 random 2 fuzz-out)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build} seconds=${2:-1800} seed=${3:-$RANDOM} jobs=${4:-2} out=${5:-fuzz-out}
echo "fuzz: $seconds s, seed $seed, $jobs jobs, out $out"
exec python3 "$root/tests/fuzz/fuzz_configs.py" --spsim "$build/spsim" --source-dir "$root" \
  --seconds "$seconds" --seed "$seed" --jobs "$jobs" --out "$out"
