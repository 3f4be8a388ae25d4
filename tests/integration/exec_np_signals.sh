#!/bin/bash
# `shardline exec --np` waits for the mpirun it launched: a SIGTERM sent to it alone is passed on
# to mpirun, and Ctrl-C (SIGINT to the whole process group) is left to mpirun and the ranks. Either
# way the ranks say where they were, and the launcher outlives them, says it was stopped and exits
# 128 + the signal (not 1, which means a failed data check).
# usage: exec_np_signals.sh PYTHON3 SHARDLINE SCENARIO WORKDIR
set -u
python=$1 shardline=$2 scenario=$3 work=$4

# Starts the stalled run (rank 1 never reaches its first collective) as the leader of a process
# group of its own, with Ctrl-C's default action (a background job's SIGINT is ignored), and
# waits until mpirun has both ranks running; sets `pid`, the launcher's.
start() {
  rm -rf "$work/$1" && mkdir -p "$work/$1"
  "$python" -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.setpgid(0, 0); os.execv(sys.argv[1], sys.argv[1:])' \
    "$shardline" exec "$scenario" --np 2 --stall-rank 1 --timeout 60 --out "$work/$1/out" \
    >"$work/$1/stdout" 2>"$work/$1/stderr" &
  pid=$!
  local mpirun=""
  for _ in $(seq 300); do
    mpirun=$(pgrep -P "$pid" | head -1)
    [ -n "$mpirun" ] && [ "$(pgrep -P "$mpirun" | wc -l)" -ge 2 ] && break
    sleep 0.1
  done
  sleep 2  # the ranks reach the stall
}

# Waits for the launcher; fails unless it outlived the signal and the ranks reported it.
check() {
  local name=$1 signal_code=$2 started=$SECONDS rc
  wait "$pid"
  rc=$?
  echo "== $name: exit $rc after $((SECONDS - started)) s"
  cat "$work/$name/stderr"
  if [ "$rc" -ne "$signal_code" ]; then echo "FAIL: $name: exit $rc, expected $signal_code (128 + the signal)"; exit 1; fi
  # Only a launcher that outlived the signal prints this, after mpirun ended.
  grep -q "stopped by SIG" "$work/$name/stderr" ||
    { echo "FAIL: $name: the launcher was ended by the signal (it did not say it was stopped)"; exit 1; }
  if [ $((SECONDS - started)) -ge 50 ]; then echo "FAIL: $name: the run went on until --timeout"; exit 1; fi
  grep -q "was ended by SIGTERM" "$work/$name/stderr" ||
    { echo "FAIL: $name: no rank said where it was"; exit 1; }
}

start sigterm
kill -TERM "$pid"
check sigterm 143

start sigint
kill -INT -- "-$pid"  # what Ctrl-C does: every process of the group gets it
check sigint 130
echo PASS
