#include "exec/payload.h"
#include "core/invariant.h"

#include <cmath>
#include <cstring>

namespace shardline::exec {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint16_t float_to_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

float bf16_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

double param_value(int param, int64_t global_index) {
  const uint64_t h = mix((static_cast<uint64_t>(param) << 40) ^ static_cast<uint64_t>(global_index) ^ 0x5eedULL);
  return static_cast<double>(static_cast<int>(h % 17) - 8);
}

double grad_value(int rank, int param, int64_t global_index) {
  const uint64_t h = mix(mix(static_cast<uint64_t>(rank) * 1000003ULL + static_cast<uint64_t>(param)) ^
                         static_cast<uint64_t>(global_index));
  return static_cast<double>(static_cast<int>(h % 9) - 4);
}

void encode_value(void* p, int width, double value) {
  switch (width) {
    case 4: {
      const float f = static_cast<float>(value);
      std::memcpy(p, &f, 4);
      return;
    }
    case 2: {
      const uint16_t h = float_to_bf16(static_cast<float>(value));
      std::memcpy(p, &h, 2);
      return;
    }
    case 1: {
      const int8_t i = static_cast<int8_t>(std::lround(value));
      std::memcpy(p, &i, 1);
      return;
    }
  }
  SHARDLINE_UNREACHABLE("payload width must be 1, 2 or 4");
}

double decode_value(const void* p, int width) {
  switch (width) {
    case 4: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case 2: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return bf16_to_float(h);
    }
    case 1: {
      int8_t i;
      std::memcpy(&i, p, 1);
      return i;
    }
  }
  SHARDLINE_UNREACHABLE("payload width must be 1, 2 or 4");
}

void add_values(void* inout, const void* in, int64_t count, int width) {
  auto* a = static_cast<unsigned char*>(inout);
  const auto* b = static_cast<const unsigned char*>(in);
  if (width == 4) {
    float* fa = reinterpret_cast<float*>(a);
    const float* fb = reinterpret_cast<const float*>(b);
    for (int64_t i = 0; i < count; ++i) fa[i] += fb[i];
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    encode_value(a + i * width, width, decode_value(a + i * width, width) + decode_value(b + i * width, width));
}

void scale_values(void* inout, int64_t count, int width, double factor) {
  auto* a = static_cast<unsigned char*>(inout);
  if (width == 4) {
    float* fa = reinterpret_cast<float*>(a);
    const float f = static_cast<float>(factor);
    for (int64_t i = 0; i < count; ++i) fa[i] *= f;
    return;
  }
  for (int64_t i = 0; i < count; ++i) encode_value(a + i * width, width, decode_value(a + i * width, width) * factor);
}

double value_tolerance(int width, double expected) {
  const double rel = width == 4 ? 1e-5 : width == 2 ? 1.0 / 64 : 0.5;
  return rel * std::fabs(expected) + (width == 4 ? 1e-6 : 1e-3);
}

}  // namespace shardline::exec
