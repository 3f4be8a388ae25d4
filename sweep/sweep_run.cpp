// Sweep execution on worker threads (see sweep/sweep_run.h).
#include "sweep/sweep_run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <new>
#include <string>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"
#include "core/schedule.h"
#include "core/scenario_parse.h"
#include "reports/every_rank.h"
#include "sim/simulator.h"

namespace shardline {

namespace {

// Applies path=value to a copy of the base JSON; apply_overrides speaks of --set, which the user did
// not give, so its refusal is said of --vary (its sentence names the path).
void try_vary_override(const nlohmann::json& base_json, const std::string& path, const std::string& value) {
  nlohmann::json copy = base_json;
  try {
    apply_overrides(copy, {path + "=" + value});
  } catch (const InputError& e) {
    throw InputError("--vary", e.where() == "--set" ? e.sentence() : path + ": " + e.what());
  }
}

}  // namespace

void check_vary_paths(const nlohmann::json& base_json, const std::vector<std::string>& paths) {
  // apply_overrides checks the path, not the value's type: any value stands in.
  for (const auto& path : paths) try_vary_override(base_json, path, "0");
}

void validate_vary_paths(const nlohmann::json& base_json, const std::vector<SweepAxis>& axes) {
  for (const auto& axis : axes)
    for (size_t p = 0; p < axis.paths.size(); ++p)
      for (const auto& tuple : axis.values) try_vary_override(base_json, axis.paths[p], tuple[p]);
}

void check_base_scenario(const nlohmann::json& base_json, const std::string& base_dir, const std::vector<SweepAxis>& axes,
                         size_t points) {
  if (points == 0) return;
  // The reason a grid point's scenario is refused, or nullopt when it parses.
  const auto refusal = [&](size_t index) -> std::optional<InputError> {
    nlohmann::json j = base_json;
    try {
      apply_overrides(j, grid_point(axes, index).overrides);
      parse_scenario(j, base_dir);
    } catch (const InputError& e) {
      return e;
    }
    return std::nullopt;
  };
  const std::optional<InputError> first = refusal(0);
  if (!first || first->where().empty()) return;
  const std::string& at = first->where();
  for (const auto& axis : axes)
    for (const auto& p : axis.paths)
      if (at == p || at.rfind(p + ".", 0) == 0 || at.rfind(p + "[", 0) == 0 || p.rfind(at + ".", 0) == 0) return;
  const std::optional<InputError> last = refusal(points - 1);
  if (!last || std::string(last->what()) != first->what()) return;
  throw InputError("SCENARIO", "every configuration of the sweep would be refused, for a reason no varied value changes: " +
                                   std::string(first->what()));
}

namespace {

// The every-rank points of one process share kMaxEveryRankBytes: a point takes its count
// (every_rank_bytes, at most the bound) before simulating and gives it back after, so the worker
// threads never hold more than one bound's worth of ranks at once (a review ran two 70B points of
// 5 GB each on two threads past 8.3 GB). Points over the bound are refused by simulate_every_rank.
class EveryRankBudget {
 public:
  // Holds `bytes` of the budget for its lifetime, waiting until other points give enough back.
  class Hold {
   public:
    Hold(EveryRankBudget* budget, int64_t bytes) : budget_(budget), bytes_(std::min(bytes, kMaxEveryRankBytes)) {
      if (!budget_) return;
      std::unique_lock<std::mutex> lock(budget_->mu_);
      budget_->cv_.wait(lock, [&] { return budget_->available_ >= bytes_; });
      budget_->available_ -= bytes_;
    }
    ~Hold() {
      if (!budget_) return;
      std::lock_guard<std::mutex> lock(budget_->mu_);
      budget_->available_ += bytes_;
      budget_->cv_.notify_all();
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    EveryRankBudget* budget_;
    int64_t bytes_;
  };

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t available_ = kMaxEveryRankBytes;
};

SweepRow evaluate_point(const nlohmann::json& base_json, const std::string& base_dir, const std::vector<SweepAxis>& axes,
                        size_t index, EveryRankBudget* budget) {
  const SweepPoint pt = grid_point(axes, index);
  SweepRow row;
  row.index = index;
  row.values.reserve(pt.overrides.size());
  for (const auto& ov : pt.overrides) row.values.push_back(ov.substr(ov.find('=') + 1));
  try {
    nlohmann::json j = base_json;
    apply_overrides(j, pt.overrides);
    const Scenario scenario = parse_scenario(j, base_dir);
    // A point with a variation (the scenario's, or a varied variation.* key) is simulated on every
    // rank: its step is the slowest rank's.
    Program program = schedule(scenario);
    if (scenario.variation.empty()) {
      // Only the metrics are needed: no Timeline is kept.
      row.metrics = simulate_metrics(scenario, program);
      // Where the sweep varies the variation, the point without any (cv 0, no straggler) is the
      // baseline of the column: its straggler cost is 1 by definition, not blank.
      const bool varies_variation = std::any_of(axes.begin(), axes.end(), [](const SweepAxis& a) {
        return std::any_of(a.paths.begin(), a.paths.end(), [](const std::string& p) { return p.rfind("variation.", 0) == 0; });
      });
      if (varies_variation) row.straggler_cost = 1.0;
    } else {
      const EveryRankBudget::Hold hold(budget, every_rank_bytes(program.world_size, static_cast<int64_t>(program.ops.size())));
      const EveryRankRun run = simulate_every_rank(scenario, program, {}, {}, false);
      row.metrics = compute_metrics(run.timeline);
      row.straggler_cost = run.summary.straggler_cost;
    }
    row.valid = true;
    row.collective_grouping = collective_grouping_of(scenario.policy);
    mark_memory_fit(row, scenario.run.memory_margin);
  } catch (const InputError& e) {
    row.valid = false;
    row.error = e.what();  // fits_memory and fits_with_margin stay false
  }
  return row;
}

}  // namespace

SweepRow evaluate_sweep_point(const nlohmann::json& base_json, const std::string& base_dir,
                              const std::vector<SweepAxis>& axes, size_t index) {
  return evaluate_point(base_json, base_dir, axes, index, nullptr);
}

std::vector<SweepRow> run_sweep_points(const nlohmann::json& base_json, const std::string& base_dir,
                                       const std::vector<SweepAxis>& axes, const std::vector<size_t>& indices,
                                       int jobs, const SweepProgressFn& progress) {
  const size_t total = indices.size();
  std::vector<SweepRow> rows(total);
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = static_cast<int>(std::min<size_t>(static_cast<size_t>(jobs), std::max<size_t>(total, 1)));

  EveryRankBudget budget;
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  std::condition_variable cv;
  int running = jobs;
  bool all_started = false;  // under mu: every worker thread exists, so points may be evaluated

  auto worker = [&] {
    // No point is evaluated before every thread exists: when the system refuses one (a thread or
    // memory limit), the started ones leave without having allocated anything, so the refusal is
    // reported cleanly rather than racing points that run out of memory mid-evaluation.
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return all_started || failed.load(); });
    }
    while (!failed.load(std::memory_order_relaxed)) {
      const size_t k = next.fetch_add(1, std::memory_order_relaxed);
      if (k >= total) break;
      try {
        rows[k] = evaluate_point(base_json, base_dir, axes, indices[k], &budget);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        failed = true;
        break;
      }
      done.fetch_add(1, std::memory_order_relaxed);
    }
    std::lock_guard<std::mutex> lock(mu);
    --running;
    cv.notify_all();
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(jobs));
  // Whatever leaves this function, the started threads are stopped and joined first: a joinable
  // std::thread destroyed while an exception unwinds would abort the process.
  const auto stop_workers = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      failed = true;
    }
    cv.notify_all();
  };
  struct JoinOnExit {
    std::vector<std::thread>& threads;
    const decltype(stop_workers)& stop;
    ~JoinOnExit() {
      if (std::none_of(threads.begin(), threads.end(), [](const std::thread& t) { return t.joinable(); })) return;
      stop();
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
  } join_on_exit{threads, stop_workers};
  for (int t = 0; t < jobs; ++t) {
    // Why the system refused, kept without allocating: memory may be what ran out.
    char refused[160] = "";
    try {
      threads.emplace_back(worker);
    } catch (const std::system_error& e) {
      std::snprintf(refused, sizeof refused, "%s", e.what());
    } catch (const std::bad_alloc&) {
      std::snprintf(refused, sizeof refused, "out of memory for its state");  // std::thread allocates before it creates the thread
    }
    // The system refused another thread (a process or memory limit): say which flag asks for
    // fewer; join_on_exit stops and joins the started ones, which have evaluated nothing.
    if (refused[0] != '\0')
      throw InputError("--jobs", "could start only " + std::to_string(t) + " of " + std::to_string(jobs) +
                                     " worker threads (" + refused + "); use fewer --jobs");
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    all_started = true;
  }
  cv.notify_all();
  {
    std::unique_lock<std::mutex> lock(mu);
    while (running > 0) {
      cv.wait_for(lock, std::chrono::milliseconds(100));
      if (progress && running > 0) {
        lock.unlock();
        progress(done.load(), total);
        lock.lock();
      }
    }
  }
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  if (progress) progress(total, total);
  return rows;
}

}  // namespace shardline
