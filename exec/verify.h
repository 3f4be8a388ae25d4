// The executor's data check: after each op of a verification pass (ops run one at a time in
// program order), reads back what the op produced and compares it with the values the
// Program's buffer table and the collectives' semantics predict (exec/payload.h values):
// copy-ins hold this rank's slices of their source, an all-gather's output holds every
// member's source block, a reduction's output the sum (or average) over its group of what the
// members held. It follows which collectives wrote each range of a reduced buffer, so chained
// reductions (a reduce-scatter, then an all-reduce over another group) are checked too.
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

  Terms eval(int rank, int store, const std::vector<int>& writers, size_t k, int param) const;
  // Expected values of [e0, e0 + count) of `param` in a reduced store, with `extra` applied on top.
  std::vector<double> expected_reduced(int store, int param, int64_t e0, int64_t count, int extra) const;
  void record_write(int store, int param, int64_t begin, int64_t end, int writer);
  std::string compare(int op, const void* base, int64_t element, const std::vector<double>& expected, int width,
                      int param, int block, int64_t local0, Backend& backend);

  const Plan& plan_;
  std::vector<std::vector<std::map<int64_t, Segment>>> history_;  // per reduced store, per param
  std::vector<int> gathered_from_;  // per store: the store its all-gathers read, or -1
  int64_t elements_checked_ = 0;
};

}  // namespace shardline::exec
