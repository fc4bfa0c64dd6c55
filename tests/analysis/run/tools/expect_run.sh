#!/usr/bin/env bash
# Runs a command (an mpirun job of spsim) and checks how it ends: its exit status (a number, or 'nonzero'),
# a wall-time bound, a pattern its output (stdout + stderr) must match, and optionally a pattern that must
# match exactly one line (a message printed once, by one rank). Never hangs: the command is killed at
# bound + 15 s.
# usage: expect_run.sh STATUS MAX_SECONDS PATTERN ONCE_PATTERN|- -- COMMAND...
set -u
want=$1 max_seconds=$2 pattern=$3 once=$4
shift 4
[[ ${1:-} == -- ]] && shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start_ns=$(date +%s%N)
timeout --kill-after=5 $((max_seconds + 15)) "$@" >"$out" 2>&1
rc=$?
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
fail() {
  echo "FAIL: $1 (exit status $rc after $elapsed_ms ms)"
  echo "---- output ----"
  cat "$out"
  exit 1
}
if [[ $want == nonzero ]]; then
  [[ $rc -ne 0 ]] || fail "expected a non-zero exit status"
elif [[ $rc -ne $want ]]; then
  fail "expected exit status $want"
fi
((elapsed_ms <= max_seconds * 1000)) || fail "took longer than $max_seconds s"
grep -Eq -- "$pattern" "$out" || fail "output does not match /$pattern/"
if [[ $once != - ]]; then
  n=$(grep -Ec -- "$once" "$out")
  [[ $n -eq 1 ]] || fail "expected exactly one line matching /$once/, found $n"
fi
echo "ok: exit status $rc after $elapsed_ms ms"
cat "$out"
