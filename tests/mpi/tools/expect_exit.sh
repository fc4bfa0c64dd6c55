#!/usr/bin/env bash
# Runs a command (an mpirun job) and checks how it ends: exit status zero or non-zero, within a wall-time
# bound, with stderr matching an extended regex ('-': no check). Never hangs: the command is killed at
# bound + 15 s.
# usage: expect_exit.sh zero|nonzero MAX_SECONDS STDERR_REGEX -- COMMAND...
set -u
want=$1 max_seconds=$2 pattern=$3
shift 3
[[ ${1:-} == -- ]] && shift
err=$(mktemp)
trap 'rm -f "$err"' EXIT
start_ns=$(date +%s%N)
timeout --kill-after=5 $((max_seconds + 15)) "$@" 2>"$err"
rc=$?
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
fail() {
  echo "FAIL: $1 (exit status $rc after $elapsed_ms ms)"
  echo "---- stderr ----"
  cat "$err"
  exit 1
}
if [[ $want == zero && $rc -ne 0 ]]; then fail "expected exit status 0"; fi
if [[ $want == nonzero && $rc -eq 0 ]]; then fail "expected a non-zero exit status"; fi
if ((elapsed_ms > max_seconds * 1000)); then fail "took longer than $max_seconds s"; fi
if [[ $pattern != - ]] && ! grep -Eq -- "$pattern" "$err"; then fail "stderr does not match /$pattern/"; fi
echo "ok: exit status $rc after $elapsed_ms ms, stderr matches /$pattern/"
