#!/usr/bin/env bash
# On a one-GPU machine, with the bundle of bench/gpu/nccl_bundle.sh carried as DIR (default
# .devbundle): runs the NCCL backend as one-rank Open MPI singleton jobs against the machine's
# NCCL (PyTorch's wheel) and CUDA runtime: the exec driver's data and timeline checks (fused, then
# split with sums), a corrupted copy-in that the data check must name, and `shardline exec` of the
# host-tiny-fsdp scenario on one GPU with its data check. About 20 s.
#   bash bench/gpu/nccl_session.sh [DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
b=$(cd "${1:-.devbundle}" && pwd)
nccl=$(dirname "$(find / -name libnccl.so.2 -path '*packages*' 2>/dev/null | head -1)")
cudart=$(dirname "$(find /usr/local/cuda* -name libcudart.so.13 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$b/usr/lib/x86_64-linux-gnu:$b/usr/lib/x86_64-linux-gnu/openmpi/lib:$nccl:$cudart
export OPAL_PREFIX=$b/usr PMIX_INSTALL_PREFIX=$b/usr/lib/x86_64-linux-gnu/pmix2 PATH=$b/usr/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PMIX_MCA_pcompress_base_silence_warning=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi,psm,psm2 OMPI_MCA_osc=^ucx  # no network stacks
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "NCCL from $nccl, CUDA runtime from $cudart"
quiet() { grep -v -i -E 'pmix|dlopen|Perhaps a missing|^ *$'; }
echo "== exec driver, fused, spin kernels"
timeout 90 "$b/bin/shardline_exec_driver" --backend nccl --shard 1 --kernel --iterations 3 2>&1 | quiet | tail -3
echo "== exec driver, split, sums"
timeout 90 "$b/bin/shardline_exec_driver" --backend nccl --shard 1 --kernel --iterations 3 --split --sum 2>&1 | quiet | tail -3
echo "== a corrupted copy-in must fail the data check"
timeout 90 "$b/bin/shardline_exec_driver" --backend nccl --shard 1 --kernel --iterations 2 --corrupt-first 1 --expect-verify-failure 2>&1 | quiet | tail -3
echo "== shardline exec, host-tiny-fsdp on one GPU"
timeout 150 "$b/bin/shardline" exec scenarios/host-tiny-fsdp.json --backend nccl --set mesh.shard=1 --set cluster.gpus_per_node=1 \
  --iterations 5 --out /tmp/shardline-nccl-exec 2>&1 | quiet | grep -E 'step times|data check|step time'
