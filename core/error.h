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

}  // namespace shardline
