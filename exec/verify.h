// The executor's data check: after each op of a verification pass (ops run one at a time in
// program order), reads back what the op produced and compares it with the values the
// (rank, parameter, element) scheme predicts (exec/payload.h): copy-in buffers hold this
// rank's slices, gathered parameters equal the global tensor, reduced gradients equal the sum
// (or average) over the group's ranks, HSDP all-reduces the sum of the replicas' shards.
// It follows which collectives wrote each gradient-shard range, so it stays generic.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "exec/backend.h"
#include "exec/plan.h"

namespace shardline::exec {

class Verifier {
 public:
  explicit Verifier(const Plan& plan);
  // Checks what `op` produced. Empty string when right, else one message naming the rank,
  // the op (id, name, kind, stream), the parameter and element, expected and actual values.
  std::string check(int op, Backend& backend);
  int64_t elements_checked() const { return elements_checked_; }

 private:
  struct Segment {
    int64_t end = 0;
    std::vector<int> writers;  // collectives whose output landed here, in order
  };
  using Terms = std::map<std::pair<int, int64_t>, double>;  // (rank, global base) -> coefficient

  Terms eval(int rank, const std::vector<int>& writers, size_t k, int param) const;
  // Expected gradient-shard values of [e0, e0 + count) of `param`, with `extra` applied on top.
  std::vector<double> expected_grad(int param, int64_t e0, int64_t count, int extra) const;
  void record_write(int param, int64_t begin, int64_t end, int writer);
  std::string compare(int op, const void* base, int64_t element, const std::vector<double>& expected, int width,
                      int param, int block, int64_t local0, Backend& backend);

  const Plan& plan_;
  std::vector<std::map<int64_t, Segment>> history_;  // per param
  int64_t elements_checked_ = 0;
};

}  // namespace shardline::exec
