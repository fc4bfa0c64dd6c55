#!/usr/bin/env bash
# Scale benchmarks of issue 14: wall time and peak memory of 1,024- to 8,192-GPU what-ifs on this
# machine, against the issue's targets. Each case runs the spsim binary as a user would:
#   allreduce-1024    spsim collective: ring all-reduce of 1 GiB over 128 dgx-h100 nodes, flow model
#   allreduce-8192    the same over 1,024 nodes
#   zigzag-1024       spsim simulate bench/scale/zigzag-1024.json (llama3-8b attention, 4M tokens, fwd+bwd)
#   allgather-kv-1024 spsim simulate bench/scale/allgather-kv-1024.json (the same workload)
#   usp-8192          spsim simulate bench/scale/usp-8192.json (32M tokens on 1,024 nodes)
# usage: [REPEAT=N] bench/scale.sh [BUILD_DIR] [TIMEOUT_S per run, default 900] [CASE ...]
# A case past the timeout prints "timeout"; one that spsim refuses (the trace-memory guard) prints its
# exit code and first error line. This machine's speed can move by more than two times within the hour
# for memory-bound work such as the replay: REPEAT=N runs each case N times in a row and prints the
# median wall time with the range (min-max) and the largest peak; a run that fails ends its case, and
# its own time and error are printed.
set -uo pipefail
build=${1:-build} limit=${2:-900} repeat=${REPEAT:-1}
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] ||
  { echo "bench/scale.sh: REPEAT='$repeat' is not a whole number >= 1" >&2; exit 2; }
shift $(($# > 2 ? 2 : $#))
root=$(cd "$(dirname "$0")/.." && pwd)
spsim="$build/spsim"
[[ -x "$spsim" ]] || { echo "bench/scale.sh: no spsim binary at $spsim (build first)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bench/scale.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
cases=("$@")
((${#cases[@]})) || cases=(allreduce-1024 allreduce-8192 zigzag-1024 allgather-kv-1024 usp-8192)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-18s %-16s %22s %10s  %s\n' case target wall_s peak_MB result
for c in "${cases[@]}"; do
  case "$c" in
    allreduce-1024) target="1 s, 300 MB" cmd=(collective --cluster dgx-h100 --nodes 128 --op all_reduce --algo ring --min-bytes 1G --max-bytes 1G) ;;
    allreduce-8192) target="10 s" cmd=(collective --cluster dgx-h100 --nodes 1024 --op all_reduce --algo ring --min-bytes 1G --max-bytes 1G) ;;
    zigzag-1024) target="5 s, 1 GB" cmd=(simulate "$root/bench/scale/zigzag-1024.json") ;;
    allgather-kv-1024) target="5 s, 1 GB" cmd=(simulate "$root/bench/scale/allgather-kv-1024.json") ;;
    usp-8192) target="60 s" cmd=(simulate "$root/bench/scale/usp-8192.json") ;;
    *) echo "bench/scale.sh: unknown case '$c' (allreduce-1024, allreduce-8192, zigzag-1024, allgather-kv-1024, usp-8192)" >&2; exit 2 ;;
  esac
  walls=() kb=0
  for ((k = 0; k < repeat; ++k)); do
    rc=0
    /usr/bin/time -f '%e %M' -o "$out/time" timeout "$limit" "$spsim" "${cmd[@]}" >"$out/stdout" 2>"$out/stderr" || rc=$?
    read -r w m < <(tail -1 "$out/time")
    ((m > kb)) && kb=$m
    ((rc != 0)) && break  # a failed run's time goes into no median: it alone is printed
    walls+=("$w")
  done
  if ((rc != 0)); then
    wall=$w
  else
    wall=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR] = $1} END {
      m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
      if (NR == 1) print a[1]; else printf "%s (%s-%s)", m, a[1], a[NR]}')
  fi
  run=""
  ((repeat > 1)) && run=" (run $((k + 1)) of $repeat)"
  if ((rc == 124)); then
    result="timeout after $limit s$run"
  elif ((rc != 0)); then
    result="exit $rc$run: $(grep -m1 'error' "$out/stderr" | cut -c1-110)"
  elif [[ "${cmd[0]}" == collective ]]; then
    result="busbw $(awk 'NF >= 9 && $1 ~ /^[0-9]+$/ {print $NF " GB/s"}' "$out/stdout" | tail -1)"
  else
    result="$(grep -m1 'step time' "$out/stdout" | awk '{print "step " $3 " " $4}')"
  fi
  printf '%-18s %-16s %22s %10s  %s\n' "$c" "$target" "$wall" "$((kb / 1024))" "$result"
done
