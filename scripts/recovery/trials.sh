#!/usr/bin/env bash
# Issue 26's recovery trials on one example, as PROCESSES x 1 on this machine, with a
# checkpoint after every call (STRADS_CHECKPOINT_SECONDS=0):
#   1. the uninterrupted run (its output and wall time);
#   2. TRIALS runs where a worker gets SIGKILL at a random moment: each must end with
#      status 0 and the uninterrupted output (timings aside), and leave no process;
#   3. the driver killed at 70% of the uninterrupted time, then the same command with
#      STRADS_RESUME=1: the same output, and its time against the uninterrupted run's;
#   4. a damaged file of the newest checkpoint: the run falls back or stops naming it.
#
# usage: scripts/recovery/trials.sh BINARY [ARGS...]
#   (env: PROCESSES=3, TRIALS=3, OUT=/tmp/strads-trials)
set -u
bin=$1
shift
procs=${PROCESSES:-3}
trials=${TRIALS:-3}
out=${OUT:-/tmp/strads-trials}
mkdir -p "$out"
# Timings differ between runs; everything else must not.
norm() { sed -E 's/[a-z_]*seconds=[0-9.]+//g; s/words_per_second=[0-9.]+//g' "$1"; }
run_env=(STRADS_PROCESSES="$procs" STRADS_THREADS=1 STRADS_CHECKPOINT_SECONDS=0)
now() { date +%s.%N; }
children() { for t in /proc/"$1"/task/*; do cat "$t/children" 2>/dev/null; done; }
descendants() {
  local todo=("$1") p
  while ((${#todo[@]})); do
    p=${todo[0]}
    todo=("${todo[@]:1}")
    for c in $(children "$p"); do
      echo "$c"
      todo+=("$c")
    done
  done
}
alive() { [[ -r /proc/$1/stat ]] && ! awk '{print $3}' /proc/"$1"/stat | grep -q Z; }

# 1. Uninterrupted.
rm -rf "$out/d0"
t0=$(now)
env "${run_env[@]}" STRADS_CHECKPOINT="$out/d0" "$bin" "$@" >"$out/plain.out" 2>"$out/plain.err"
code=$?
t1=$(now)
plain=$(echo "$t1 - $t0" | bc)
echo "uninterrupted: status $code, ${plain} s"
norm "$out/plain.out" >"$out/plain.norm"

# 2. A worker killed at a random moment.
ok=0
for trial in $(seq 1 "$trials"); do
  d="$out/d$trial"
  rm -rf "$d"
  env "${run_env[@]}" STRADS_CHECKPOINT="$d" "$bin" "$@" >"$out/t$trial.out" 2>"$out/t$trial.err" &
  driver=$!
  at=$(echo "scale=3; $plain * (0.2 + 0.6 * $RANDOM / 32767)" | bc)
  sleep "$at"
  seen=$(descendants "$driver")
  victim=$(children "$driver" | tr ' ' '\n' | grep . | shuf -n1)
  kill -KILL "$victim" 2>/dev/null
  wait "$driver"
  code=$?
  sleep 0.3
  left=""
  for p in $seen $(descendants "$driver"); do alive "$p" && left="$left $p"; done
  if [[ $code == 0 ]] && cmp -s <(norm "$out/t$trial.out") "$out/plain.norm" && [[ -z $left ]]; then
    ok=$((ok + 1))
    verdict=same
  else
    verdict="DIFFERS (status $code, left:$left)"
  fi
  restarted=$(grep -c "restarting every rank" "$out/t$trial.err")
  echo "worker killed at ${at} s (pid $victim): status $code, restarts $restarted, output $verdict"
done
echo "worker trials: $ok of $trials finish with status 0 and the uninterrupted output"

# 3. The driver killed at 70%, then resumed.
d="$out/dk"
rm -rf "$d"
env "${run_env[@]}" STRADS_CHECKPOINT="$d" "$bin" "$@" >"$out/k.out" 2>"$out/k.err" &
driver=$!
sleep "$(echo "scale=3; $plain * 0.7" | bc)"
seen=$(descendants "$driver")
kill -KILL "$driver"
wait "$driver" 2>/dev/null
sleep 0.5
left=""
for p in $seen; do alive "$p" && left="$left $p"; done
t0=$(now)
env "${run_env[@]}" STRADS_CHECKPOINT="$d" STRADS_RESUME=1 "$bin" "$@" >"$out/r.out" 2>"$out/r.err"
code=$?
t1=$(now)
resumed=$(echo "$t1 - $t0" | bc)
same=DIFFERS
cmp -s <(norm "$out/r.out") "$out/plain.norm" && same=same
echo "driver killed at 70%: workers left:${left:- none}; resumed: status $code, ${resumed} s = $(echo "scale=3; $resumed / $plain" | bc) of the uninterrupted time, output $same"
grep "strads: resumed" "$out/r.err"

# 4. A damaged file of the newest checkpoint.
newest=$(ls "$d"/manifest-*.json | tail -1)
file=$(grep -o '"file": "[^"]*"' "$newest" | tail -1 | cut -d'"' -f4)
printf '\x00\x01' | dd of="$d/$file" bs=1 seek=8 conv=notrunc status=none
env "${run_env[@]}" STRADS_CHECKPOINT="$d" STRADS_RESUME=1 "$bin" "$@" >"$out/c.out" 2>"$out/c.err"
code=$?
same=DIFFERS
cmp -s <(norm "$out/c.out") "$out/plain.norm" && same=same
echo "damaged $file: status $code, output $same"
grep -E "fails its checksum|no complete checkpoint" "$out/c.err"
