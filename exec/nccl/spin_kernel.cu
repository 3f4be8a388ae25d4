// The GPU compute stand-in: one thread that spins for a number of SM clock cycles.
#include <cuda_runtime.h>

namespace {

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

namespace shardline::exec {

cudaError_t launch_spin_kernel(long long cycles, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(cycles);
  return cudaGetLastError();
}

}  // namespace shardline::exec
