// The one error type for bad user input: carries where (a JSON path like "policy.bucket_bytes"
// or a flag like "--set") and a human sentence. The CLI turns it into exit code 2.
#pragma once
#include <stdexcept>
#include <string>

namespace shardline {

class InputError : public std::runtime_error {
 public:
  InputError(std::string where, const std::string& sentence)
      : std::runtime_error(where.empty() ? sentence : where + ": " + sentence), where_(std::move(where)) {}
  const std::string& where() const { return where_; }
  // The human sentence alone (what() is "where: sentence").
  std::string sentence() const { return where_.empty() ? std::string(what()) : std::string(what()).substr(where_.size() + 2); }

 private:
  std::string where_;
};

// A count a flag gives, in [lo, hi]; else InputError(flag, "must be in [lo, hi], got N").
inline void check_count_in(long long value, long long lo, long long hi, const std::string& flag) {
  if (value < lo || value > hi)
    throw InputError(flag, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(value));
}

}  // namespace shardline
