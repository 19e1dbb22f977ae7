#!/usr/bin/env bash
# Memory per rank of a cluster job launched by hand, as `srun` would launch it (issue 25):
# every rank is the same binary with STRADS_RANK, STRADS_SIZE, STRADS_COORDINATOR and a
# job secret file; optionally each rank runs in a memory cgroup (v1) of its own, capped at
# LIMIT_MIB. Prints each rank's output line count, its peak resident set (the memory line
# of STRADS_EXPLAIN, the kernel's VmHWM) and its exit status; the driver's output goes to
# $OUT/rank0.out, every rank's stderr to $OUT/rankR.err.
#
#   scripts/ranks/by_hand.sh RANKS LIMIT_MIB BINARY [ARGS...]
#   scripts/ranks/by_hand.sh 4 0 target/release/examples/sgd_mf --ratings 1000000 ...
#
# LIMIT_MIB = 0: no cgroup. Needs root for the cgroups (/sys/fs/cgroup/memory). Talks only
# to 127.0.0.1. Every rank is stopped by its pid if the job outlives 600 s.
set -euo pipefail
ranks=$1
limit=$2
shift 2
out=${OUT:-$(mktemp -d /tmp/strads-ranks.XXXXXX)}
mkdir -p "$out"
secret="$out/secret"
head -c 32 /dev/urandom >"$secret"
chmod 600 "$secret"
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cg=/sys/fs/cgroup/memory
pids=()
for ((r = 0; r < ranks; r++)); do
  (
    if [ "$limit" != 0 ]; then
      group="$cg/strads-rank-$$-$r"
      mkdir -p "$group"
      echo $((limit * 1024 * 1024)) >"$group/memory.limit_in_bytes"
      echo $BASHPID >"$group/cgroup.procs"
    fi
    exec env STRADS_RANK=$r STRADS_SIZE=$ranks STRADS_COORDINATOR=127.0.0.1:$port \
      STRADS_JOB_SECRET_FILE="$secret" STRADS_THREADS=1 STRADS_EXPLAIN=1 \
      "$@" >"$out/rank$r.out" 2>"$out/rank$r.err"
  ) &
  pids+=($!)
done
deadline=$((SECONDS + 600))
status=()
for ((r = 0; r < ranks; r++)); do
  while kill -0 "${pids[$r]}" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  if kill -0 "${pids[$r]}" 2>/dev/null; then kill "${pids[$r]}" || true; fi
  set +e
  wait "${pids[$r]}"
  status+=($?)
  set -e
done
for ((r = 0; r < ranks; r++)); do
  peak=$(grep -o "strads memory rank $r: peak resident [0-9.]* MiB" "$out/rank$r.err" | grep -o "[0-9.]* MiB" || echo "unknown")
  failcnt=""
  if [ "$limit" != 0 ]; then
    group="$cg/strads-rank-$$-$r"
    failcnt=" cgroup_max=$(( $(cat "$group/memory.max_usage_in_bytes") / 1048576 )) MiB"
    rmdir "$group" 2>/dev/null || true
  fi
  echo "rank $r: exit=${status[$r]} peak=${peak}${failcnt} output_lines=$(wc -l <"$out/rank$r.out")"
done
echo "outputs in $out"
