// Simulator speed: time to schedule and simulate each shipped scenario (scenarios/*.json), the
// engine's events per second, and the cost of one sweep point (parse + --set override +
// schedule + simulate + metrics). Single process; Google Benchmark picks the iteration counts.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "core/metrics.h"
#include "core/scenario_parse.h"
#include "core/schedule.h"
#include "sim/simulator.h"

namespace {

using namespace shardline;

std::string scenario_dir() {
  const char* env = std::getenv("SHARDLINE_SCENARIO_DIR");
  return env != nullptr ? env : SHARDLINE_SCENARIO_DIR;
}

// simulate() alone on a scheduled Program: the number the "405B under 50 ms" goal is about.
void simulate_scenario(benchmark::State& state, const std::string& path, const std::vector<std::string>& overrides) {
  const Scenario scenario = load_scenario(path, overrides);
  const Program program = schedule(scenario);
  uint64_t events = 0;
  double loop_seconds = 0, loop_seconds_total = 0;
  SimOptions options;
  options.events_processed = &events;
  options.event_loop_seconds = &loop_seconds;
  size_t intervals = 0;
  for (auto _ : state) {
    Timeline t = simulate(scenario, program, options);
    loop_seconds_total += loop_seconds;
    intervals = t.intervals.size();
    benchmark::DoNotOptimize(t);
  }
  state.counters["ops"] = static_cast<double>(program.ops.size());
  state.counters["intervals"] = static_cast<double>(intervals);
  state.counters["events"] = static_cast<double>(events);
  // Events per second of the whole simulate() call (it checks the Program, sets up the ranks'
  // state and copies the ops into the Timeline), and of its event loop alone (the engine).
  state.counters["events_per_second"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
  if (loop_seconds_total > 0)
    state.counters["engine_events_per_second"] =
        static_cast<double>(events) * static_cast<double>(state.iterations()) / loop_seconds_total;
}

// schedule() alone: the shared scheduler's cost for the same scenario.
void schedule_scenario(benchmark::State& state, const std::string& path, const std::vector<std::string>& overrides) {
  const Scenario scenario = load_scenario(path, overrides);
  size_t ops = 0;
  for (auto _ : state) {
    Program p = schedule(scenario);
    ops = p.ops.size();
    benchmark::DoNotOptimize(p);
  }
  state.counters["ops"] = static_cast<double>(ops);
}

// load_scenario() alone: file read + JSON parse + validation (+ cluster preset).
void parse_scenario_file(benchmark::State& state, const std::string& path, const std::vector<std::string>& overrides) {
  for (auto _ : state) {
    Scenario s = load_scenario(path, overrides);
    benchmark::DoNotOptimize(s);
  }
}

// compute_metrics() alone on the predicted timeline.
void metrics_of_timeline(benchmark::State& state, const std::string& path, const std::vector<std::string>& overrides) {
  const Scenario scenario = load_scenario(path, overrides);
  const Timeline t = simulate(scenario, schedule(scenario));
  for (auto _ : state) {
    Metrics m = compute_metrics(t);
    benchmark::DoNotOptimize(m);
  }
}

// One sweep point as `shardline sweep` runs it: load + override + parse, schedule, simulate, metrics.
void sweep_point(benchmark::State& state, const std::string& path, const std::string& override_text) {
  for (auto _ : state) {
    const Scenario scenario = load_scenario(path, {override_text});
    const Program program = schedule(scenario);
    Metrics m = simulate_metrics(scenario, program);  // as sweep_run.cpp runs it
    benchmark::DoNotOptimize(m);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir = scenario_dir();
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << "shardline_bench_sim: no scenarios/*.json under " << dir << " (set SHARDLINE_SCENARIO_DIR)\n";
    return 2;
  }
  const std::vector<std::string> no_overrides;
  for (const auto& f : files) {
    const std::string name = f.stem().string();
    benchmark::RegisterBenchmark(("sim/simulate/" + name).c_str(), simulate_scenario, f.string(), no_overrides)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("sim/schedule/" + name).c_str(), schedule_scenario, f.string(), no_overrides)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("sim/parse/" + name).c_str(), parse_scenario_file, f.string(), no_overrides)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("sim/metrics/" + name).c_str(), metrics_of_timeline, f.string(), no_overrides)
        ->Unit(benchmark::kMillisecond);
  }
  // The sweep point, and its schedule / simulate / metrics parts under the same override: 64 MiB
  // buckets (a typical sweep point) and 4 MiB buckets (1.9 M ops: the small-bucket Program the
  // per-op targets of docs/benchmarks.md are measured on).
  const std::filesystem::path seventy = dir / "llama3-70b-hsdp-h100x64.json";
  for (const std::string sweep_override : {"policy.bucket_bytes=64MiB", "policy.bucket_bytes=4MiB", "policy.bucket_bytes=1MiB"}) {
    if (!std::filesystem::exists(seventy)) break;
    const std::string label = "llama3-70b-hsdp-h100x64/" + sweep_override;
    const std::vector<std::string> overrides{sweep_override};
    benchmark::RegisterBenchmark(("sim/sweep_point/" + label).c_str(), sweep_point, seventy.string(), sweep_override)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("sim/schedule/" + label).c_str(), schedule_scenario, seventy.string(), overrides)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("sim/simulate/" + label).c_str(), simulate_scenario, seventy.string(), overrides)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("sim/parse/" + label).c_str(), parse_scenario_file, seventy.string(), overrides)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("sim/metrics/" + label).c_str(), metrics_of_timeline, seventy.string(), overrides)
        ->Unit(benchmark::kMillisecond);
  }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
