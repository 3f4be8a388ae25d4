// Parsing and printing quantities with units: sizes ("25MiB", "1.5GB"), rates ("400Gbps",
// "450GB/s"), times ("2.5us", "3ms"), plain counts ("8B" params is not a size: use numbers).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace shardline {

// Each throws InputError(where, ...) naming the value and the accepted forms.
int64_t parse_bytes(std::string_view text, const std::string& where);           // "64MiB" -> 67108864
double parse_rate_bytes_per_s(std::string_view text, const std::string& where); // "400Gbps" -> 5e10
double parse_time_us(std::string_view text, const std::string& where);          // "2.5ms" -> 2500
double parse_flops(std::string_view text, const std::string& where);            // "1.2T" / "3e12"

std::string format_bytes(int64_t bytes);   // "64.0 MiB"
std::string format_time_us(double time_us); // "1.23 ms"
std::string format_rate(double bytes_per_s); // "450.0 GB/s"
std::string number_text(double v);           // a plain number for a message, printf %g: "0.5", "1e+300"

}  // namespace shardline
