#!/usr/bin/env bash
# Here, on the CPU machine: gathers what the NCCL backend needs on a GPU machine whose image has no
# Open MPI or Boost (this workplace's CUDA image) into DIR (default .devbundle, which
# .git/info/exclude should ignore): the release build's shardline and shardline_exec_driver (built
# with SHARDLINE_CUDA, sm_90), Debian's Open MPI runtime laid out under DIR/usr (its plugins, help
# files, orted, PMIx) and every library they load except glibc, the C++ runtime, CUDA and NCCL,
# which the GPU machine has (NCCL from PyTorch's wheel). About 36 MB; carry it with the device call
# and run bench/gpu/nccl_session.sh DIR there.
#   bash bench/gpu/nccl_bundle.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.devbundle}
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/usr/bin" "$dir/usr/lib/x86_64-linux-gnu" "$dir/usr/share"
cp build/release/cli/shardline build/release/tests/integration/shardline_exec_driver "$dir/bin/"
cp -a /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 "$dir/usr/lib/x86_64-linux-gnu/"
cp -a /usr/share/openmpi "$dir/usr/share/"
cp -a /usr/share/pmix "$dir/usr/share/" 2>/dev/null || true
cp -L /usr/bin/orted "$dir/usr/bin/"
for f in "$dir"/bin/* "$dir/usr/bin/orted" $(find "$dir/usr/lib/x86_64-linux-gnu" -name '*.so*' -type f); do
  ldd "$f" 2>/dev/null | awk '/=>/ {print $3}'
done | sort -u | grep -v -E 'libc\.so|libm\.so|libstdc|libgcc_s|libdl|libpthread|librt|ld-linux|libcudart|libnccl|libcuda\.so|/usr/local/cuda|openmpi/lib|^not$' |
  while read -r lib; do cp -L "$lib" "$dir/usr/lib/x86_64-linux-gnu/"; done
du -sh "$dir"
