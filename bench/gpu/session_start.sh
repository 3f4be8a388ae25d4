# Sourced by the device session scripts (bench/gpu/*_session.sh) with their arguments: goes to the
# repository root, sets `out` to the output folder (the first argument, else $OUT, else
# /tmp/shardline-gpu) and creates it, makes Python print as it goes, and records nvidia-smi there.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-/tmp/shardline-gpu}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi >"$out/smi.txt" 2>&1
