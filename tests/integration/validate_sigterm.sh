#!/bin/bash
# `shardline validate` runs calibrate and exec under an mpirun it starts and waits for: a SIGTERM
# sent to validate alone must reach that mpirun, so stopping validate stops its ranks too
# (before, validate died and left mpirun and its ranks running).
# usage: validate_sigterm.sh SHARDLINE SCENARIO WORKDIR
set -u
shardline=$1 scenario=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
# Many repetitions keep calibrate (the first step) running for a minute: orphaned ranks would
# still be there when checked.
"$shardline" validate "$scenario" --np 2 --repetitions 2000 --out "$work/out" >"$work/stdout" 2>"$work/stderr" &
pid=$!
mpirun=""
for _ in $(seq 300); do
  mpirun=$(pgrep -P "$pid" | head -1)
  [ -n "$mpirun" ] && [ "$(pgrep -P "$mpirun" | wc -l)" -ge 2 ] && break
  sleep 0.1
done
[ -n "$mpirun" ] || { echo "FAIL: validate started no mpirun"; cat "$work/stderr"; kill -KILL "$pid"; exit 1; }
ranks=$(pgrep -P "$mpirun" | tr '\n' ' ')
kill -TERM "$pid"
wait "$pid"
echo "validate exit $?"
cat "$work/stderr"
alive() { for p in "$mpirun" $ranks; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
for _ in $(seq 20); do
  alive || break
  sleep 0.1
done
if alive; then
  echo "FAIL: mpirun $mpirun or its ranks ($ranks) outlived validate"
  kill -KILL "$mpirun" $ranks 2>/dev/null
  exit 1
fi
echo PASS
