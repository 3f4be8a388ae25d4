// Test driver for the executor under mpirun: builds a hand-made FSDP/HSDP Program
// (tests/unit/exec/test_programs.h), runs it with exec::execute, and on rank 0 checks the
// measured timeline (every op once per rank and iteration, FIFO streams, events honoured).
// Exit codes: 0 ok; 1 data check failed (or did not fail when --expect-verify-failure);
// 2 bad input; 4 timeline inconsistent.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include <mpi.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/timeline.h"
#include "exec/exec.h"
#include "exec/timeline_check.h"
#include "tests/unit/exec/test_programs.h"

using namespace shardline;

int main(int argc, char** argv) {
  testing::TestProgramSpec spec;
  exec::ExecOptions opt;
  std::string backend = "mpi", partial_dir;
  bool expect_verify_failure = false;
  int corrupt_first_kind = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "missing value for " << a << "\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--shard") spec.shard = std::stoi(next());
    else if (a == "--replicate") spec.replicate = std::stoi(next());
    else if (a == "--units") spec.units = std::stoi(next());
    else if (a == "--params") spec.params_per_unit = std::stoi(next());
    else if (a == "--numel") spec.numel = std::stol(next());
    else if (a == "--unfused") spec.fused = false;
    else if (a == "--zero-copy") spec.zero_copy = true;
    else if (a == "--split") spec.split = true;
    else if (a == "--reshard") spec.reshard = std::stoi(next());
    else if (a == "--sum") spec.average = false;
    else if (a == "--param-fp32") spec.param_dtype = DType::fp32;
    else if (a == "--reduce-bf16") spec.reduce_dtype = DType::bf16;
    else if (a == "--compute-us") spec.compute_us = std::stod(next());
    else if (a == "--backend") backend = next();
    else if (a == "--iterations") opt.iterations = std::stoi(next());
    else if (a == "--warmup") opt.warmup = std::stoi(next());
    else if (a == "--scale") opt.scale = std::stol(next());
    else if (a == "--timeout") opt.timeout_s = std::stod(next());
    else if (a == "--spin") opt.compute = exec::ComputeMode::Spin;
    else if (a == "--kernel") opt.compute = exec::ComputeMode::Kernel;
    else if (a == "--stall-rank") opt.stall_rank = std::stoi(next());
    else if (a == "--stall-op") opt.stall_op = std::stoi(next());
    else if (a == "--corrupt-op") opt.corrupt_op = std::stoi(next());
    else if (a == "--corrupt-first") corrupt_first_kind = std::stoi(next());  // an OpKind value
    else if (a == "--expect-verify-failure") expect_verify_failure = true;
    else if (a == "--partial-dir") partial_dir = next();
    else if (a == "--skip-without-gpu") {
      if (!exec::have_nccl_backend() || !exec::have_gpu()) {
        std::cout << "no NCCL backend or no GPU: skipped\n";
        return 77;
      }
    } else {
      std::cerr << "unknown flag " << a << "\n";
      return 2;
    }
  }
  try {
    const Program program = testing::make_test_program(spec);
    if (corrupt_first_kind >= 0)
      for (const auto& op : program.ops)
        if (static_cast<int>(op.kind) == corrupt_first_kind) {
          opt.corrupt_op = program.id_of(op);
          break;
        }
    if (!partial_dir.empty())
      opt.on_failure = [&](const Timeline& partial, const std::string& message) {
        const std::string path = partial_dir + "/timeline.partial.rank" + std::to_string(partial.intervals.empty() ? -1 : partial.intervals.front().rank) + ".json";
        std::ofstream(partial_dir + "/error.rank" + std::to_string(exec::mpi_rank()) + ".txt") << message << "\n";
        std::ofstream(partial_dir + "/timeline.partial.rank" + std::to_string(exec::mpi_rank()) + ".json")
            << timeline_to_json(partial).dump(1) << "\n";
        (void)path;
      };
    exec::ExecResult r = exec::execute(program, backend, opt);
    int rc = 0;
    if (r.rank == 0) {
      std::cout << "ranks " << r.world << ", ops " << program.ops.size() << ", bytes/rank " << r.bytes_per_rank
                << ", clock error " << r.clock_error_us << " us, elements checked " << r.elements_checked << "\n";
      for (const auto& f : r.verify_failures) std::cout << "FAILURE: " << f << "\n";
      if (expect_verify_failure) {
        const Op& bad = program.ops[opt.corrupt_op];
        const std::string needle = "op " + std::to_string(opt.corrupt_op) + " \"" + program.name(bad) + "\"";
        bool named = false;
        for (const auto& f : r.verify_failures) named = named || f.find(needle) != std::string::npos;
        if (!r.verify_failed || !named) {
          std::cout << "expected a data check failure naming " << needle << "\n";
          rc = 1;
        } else {
          std::cout << "data check failed as expected, naming " << needle << "\n";
        }
      } else if (r.verify_failed || (opt.verify && !r.verified)) {
        rc = 1;
      } else {
        const auto errors = exec::check_timeline(program, r.timeline);
        for (const auto& e : errors) std::cout << "TIMELINE: " << e << "\n";
        if (!errors.empty()) rc = 4;
        std::cout << "timeline: " << r.timeline.intervals.size() << " intervals, " << errors.size()
                  << " violations; steps (us):";
        for (double s : r.step_times_us) std::cout << " " << s;
        std::cout << "; reported iteration " << r.timeline.reported_iteration << "\n";
      }
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    exec::finalize_mpi();
    return rc;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    exec::finalize_mpi();
    return 2;
  }
}
