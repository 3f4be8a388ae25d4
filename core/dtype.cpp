#include "core/dtype.h"

#include "core/error.h"
#include "core/suggest.h"
#include "core/invariant.h"

namespace shardline {

int dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::fp32: return 4;
    case DType::bf16: return 2;
    case DType::fp16: return 2;
    case DType::fp8: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp8: return "fp8";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

DType parse_dtype(std::string_view name, const std::string& where) {
  for (DType d : {DType::fp32, DType::bf16, DType::fp16, DType::fp8}) {
    if (name == dtype_name(d)) return d;
  }
  if (name == "float32") return DType::fp32;
  if (name == "bfloat16") return DType::bf16;
  if (name == "float16") return DType::fp16;
  throw InputError(where, "unknown dtype \"" + std::string(name) + "\";" + choice_tail(name, {"fp32", "bf16", "fp16", "fp8"}));
}

}  // namespace shardline
