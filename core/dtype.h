// Element types a model trains with, and their sizes in bytes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace shardline {

enum class DType : uint8_t { fp32, bf16, fp16, fp8 };

int dtype_bytes(DType dtype);
std::string_view dtype_name(DType dtype);
// Throws InputError(where, ...) for an unknown name.
DType parse_dtype(std::string_view name, const std::string& where);

}  // namespace shardline
