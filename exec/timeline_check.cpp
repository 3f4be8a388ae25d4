#include "exec/timeline_check.h"

#include <map>
#include <tuple>

namespace shardline::exec {

std::vector<std::string> check_timeline(const Program& program, const Timeline& timeline, double slack_us) {
  std::vector<std::string> errors;
  const int nops = static_cast<int>(program.ops.size());
  auto where = [&](int op, int rank, int it) {
    const std::string name = op >= 0 && op < nops ? program.name(program.ops[op]) : "?";
    return "op " + std::to_string(op) + " \"" + name + "\" rank " + std::to_string(rank) + " iteration " +
           std::to_string(it);
  };
  if (static_cast<int>(timeline.ops.size()) != nops)
    errors.push_back("timeline has " + std::to_string(timeline.ops.size()) + " ops, the program " + std::to_string(nops));
  std::map<std::tuple<int, int, int>, const OpInterval*> seen;  // (rank, iteration, op)
  for (const auto& iv : timeline.intervals) {
    if (iv.op < 0 || iv.op >= nops || iv.rank < 0 || iv.rank >= timeline.ranks || iv.iteration < 0 ||
        iv.iteration >= timeline.iterations) {
      errors.push_back("interval out of range: " + where(iv.op, iv.rank, iv.iteration));
      continue;
    }
    if (!seen.emplace(std::make_tuple(iv.rank, iv.iteration, iv.op), &iv).second)
      errors.push_back("appears twice: " + where(iv.op, iv.rank, iv.iteration));
    if (iv.end_us < iv.start_us - slack_us) errors.push_back("ends before it starts: " + where(iv.op, iv.rank, iv.iteration));
    if (iv.start_us < iv.issue_us - slack_us)
      errors.push_back("starts before it was issued: " + where(iv.op, iv.rank, iv.iteration));
  }
  for (int r = 0; r < timeline.ranks; ++r) {
    for (int it = 0; it < timeline.iterations; ++it) {
      std::map<int, const OpInterval*> last_on_stream;
      for (int i = 0; i < nops; ++i) {
        auto f = seen.find({r, it, i});
        if (f == seen.end()) {
          errors.push_back("missing: " + where(i, r, it));
          continue;
        }
        const OpInterval& iv = *f->second;
        const Op& op = program.ops[i];
        const int s = static_cast<int>(op.stream);
        auto prev = last_on_stream.find(s);
        if (prev != last_on_stream.end() && iv.start_us < prev->second->end_us - slack_us)
          errors.push_back("stream " + std::string(stream_name(op.stream)) + " not FIFO: " + where(i, r, it) +
                           " started before op " + std::to_string(prev->second->op) + " ended");
        last_on_stream[s] = &iv;
        for (int d : program.deps(op)) {
          auto df = seen.find({r, it, d});
          if (df != seen.end() && iv.start_us < df->second->end_us - slack_us)
            errors.push_back("dependency broken: " + where(i, r, it) + " started before op " + std::to_string(d) +
                             " ended");
        }
      }
    }
  }
  return errors;
}

}  // namespace shardline::exec
