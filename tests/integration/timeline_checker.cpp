// Reads DIR/program.json and DIR/timeline.json written by `shardline exec` and checks the
// measured timeline against the Program (exec/timeline_check.h): every op once per rank and
// iteration, FIFO streams, events honoured, ranks = the mesh's world, source "measured".
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/program_json.h"
#include "core/timeline.h"
#include "exec/timeline_check.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: timeline_checker DIR EXPECTED_RANKS\n";
    return 2;
  }
  const std::string dir = argv[1];
  const int ranks = std::stoi(argv[2]);
  std::ifstream pf(dir + "/program.json"), tf(dir + "/timeline.json");
  if (!pf || !tf) {
    std::cerr << "missing program.json or timeline.json in " << dir << "\n";
    return 1;
  }
  const shardline::Program program = shardline::program_from_json(nlohmann::json::parse(pf));
  const shardline::Timeline timeline = shardline::timeline_from_json(nlohmann::json::parse(tf));
  int bad = 0;
  if (timeline.source != "measured" || timeline.backend != "mpi") {
    std::cerr << "timeline source/backend is " << timeline.source << "/" << timeline.backend << "\n";
    ++bad;
  }
  if (timeline.ranks != ranks) {
    std::cerr << "timeline has " << timeline.ranks << " ranks, expected " << ranks << "\n";
    ++bad;
  }
  const auto errors = shardline::exec::check_timeline(program, timeline);
  for (const auto& e : errors) std::cerr << e << "\n";
  bad += static_cast<int>(errors.size());
  std::cout << timeline.intervals.size() << " intervals over " << timeline.ranks << " ranks x " << timeline.iterations
            << " iterations, " << program.ops.size() << " ops: " << bad << " problems\n";
  return bad == 0 ? 0 : 1;
}
