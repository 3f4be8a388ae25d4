// What the executor's buffers hold: payload elements of the op dtype's byte width, carrying
// small integers that every width represents exactly, so gathered parameters and summed
// gradients can be checked bit for bit. Width 4: float32; 2: bfloat16 (used for every 2-byte
// dtype, fp16 included); 1: int8 (all-gather only). Values are derived from (rank, param,
// element) by a hash, so a shifted offset or a lost byte shows up as a wrong value.
#pragma once
#include <cstdint>

namespace shardline::exec {

// Value of element `global_index` of the unsharded parameter `param` (the global tensor),
// an integer in [-8, 8].
double param_value(int param, int64_t global_index);
// Value of the gradient that rank `rank` computes for element `global_index` of `param`,
// an integer in [-4, 4]: sums over up to 64 ranks stay exact in bfloat16.
double grad_value(int rank, int param, int64_t global_index);

// Encode / decode one element of the given width at `p`.
void encode_value(void* p, int width, double value);
double decode_value(const void* p, int width);

// Elementwise in-place helpers on payload arrays (used by the CPU backend's reductions).
void add_values(void* inout, const void* in, int64_t count, int width);
void scale_values(void* inout, int64_t count, int width, double factor);

// Relative + absolute tolerance for comparing an expected value after reductions (exact for
// sums; averages over non power-of-two groups round).
double value_tolerance(int width, double expected);

}  // namespace shardline::exec
