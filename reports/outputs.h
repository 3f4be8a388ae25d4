// The standard output folder of a run (simulate or exec): metrics.json, program.json,
// timeline.json, trace.json, report.html; and the summary table printed on the terminal.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/metrics.h"
#include "core/program.h"
#include "reports/rank_summary.h"
#include "core/scenario.h"
#include "core/timeline.h"

namespace shardline {

// Per-op files grow with the Program (about 4 KB per op over the three JSON files): --out is
// refused, naming the scenario key that made the ops, beyond kMaxOutputOps (about 1 GB).
inline constexpr int64_t kMaxOutputOps = 250'000;
inline constexpr double kOutputBytesPerOp = 4200;
// The op intervals (ranks or steps x ops) --out draws into timeline.json and trace.json: three
// times the one-rank limit (simulate --ranks all, import).
inline constexpr int64_t kMaxOutputIntervals = 3 * kMaxOutputOps;
void check_run_outputs_size(const Scenario& scenario, const Program& program);
// `schedule --json` builds program.json whole in memory (about 3.5 KB per op, measured at
// 976,661 ops: 3.4 GB): refused the same way beyond kMaxOutputOps (it had run out of memory at
// 23 GB); the text form streams.
inline constexpr double kProgramJsonBytesPerOp = 3500;
void check_program_json_size(const Scenario& scenario, const Program& program);

// What a sweep folder holds beside report.html, and what a run folder holds beside it: each
// writer removes the other's files from a folder it writes into (they would describe another
// run; report.html itself is replaced).
inline const std::vector<std::string> kSweepOnlyFiles = {"sweep.csv", "sweep.json"};
inline const std::vector<std::string> kRunOnlyFiles = {"metrics.json", "program.json", "timeline.json",
                                                       "trace.json",   "ranks.json",   "compare.json", "compare.html"};

// One file of an output folder: its name, and how to render it (called while writing).
struct OutputFile {
  std::string name;
  std::function<std::string()> render;
};

// Writes `files` (at most 8) into folder `dir` all at once, as below; errors name `flag`. One
// call at a time per process: the signal clean-up holds one temporary folder.
// Every command that writes a folder of outputs (simulate, exec, compare, sweep) uses it.
// `stale`: files an earlier run may have left there that this one does not write (ranks.json
// after an every-rank run): removed at the commit, with the same put-back on failure.
void write_output_folder(const std::string& dir, const std::vector<OutputFile>& files, const std::string& flag,
                         const std::vector<std::string>& stale = {});
// The folder `dir` names, checked as write_output_folder checks it before writing (so a command
// can refuse a bad --out before its work): InputError(flag) for "", the current folder or one
// above it however written (".", "..", "/", its absolute path), or an existing file.
std::filesystem::path checked_output_folder(const std::string& dir, const std::string& flag);

// The file `path` names, checked as write_file_atomically will need it, before the work that
// ends by writing it: InputError(flag) for a folder, a missing parent folder, or a parent folder
// this process cannot write in, or a file among `inputs` (the command's own input, which writing
// would destroy: `track --html` naming its --history). Creates nothing (an empty file left behind
// by a failed run would read as a malformed profile later).
void check_output_file(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs = {});

// One file written beside `path` and renamed over it: readers see the old file or the new one,
// never a half-written one. Errors name `flag`. `before_replacing`, when given, runs once the new
// file is written and before it replaces the old: if it throws, the old file stays as it was.
void write_file_atomically(const std::string& path, const std::string& text, const std::string& flag,
                           const std::function<void()>& before_replacing = {});

// What a failed exec leaves in its output folder, per rank (cli/exec.cpp): its partial timeline
// and its message. A later run's outputs replace them (write_run_outputs); compare notes them.
std::string partial_timeline_file(int rank);  // "timeline.partial.rank<R>.json"
std::string rank_report_file(int rank);       // "error.rank<R>.txt"
bool is_partial_timeline_file(const std::string& name);  // of any rank
bool is_rank_report_file(const std::string& name);       // of any rank
// Files of an earlier run in `dir` that a run's outputs would sit beside and that describe that
// other run: a failed exec's partial timelines and rank reports, and a compare's files.
std::vector<std::string> earlier_run_files_in(const std::string& dir);

// The run outputs, through write_output_folder. It writes every file into a temporary sibling
// folder first, then puts it in place all at once: a new DIR is the renamed folder; in an existing DIR the old versions of the five
// files are set aside and the new ones moved in, all put back on any failure (a ranks.json
// this run does not write, and a failed exec's partial timelines and rank reports, go too;
// other files there are left alone). Signals are held
// during that commit; SIGINT / SIGTERM / SIGHUP while
// the files are written remove the temporary folder before the process ends. So an error or a
// signal never leaves a partial or mixed output folder, nor a temporary one. Refuses "." and
// "..", which name no folder of the run's own.
// `ranks` (every-rank runs): also ranks.json, and the per-rank section of report.html.
// `drawn` (import of many profiler steps): the timeline trace.json and report.html draw, when
// not all of `timeline` (default: the same).
void write_run_outputs(const std::string& dir, const Scenario& scenario, const Program& program,
                       const Timeline& timeline, const Metrics& metrics, const RankSummary* ranks = nullptr,
                       const Timeline* drawn = nullptr);

// The human summary table (step time, forward/backward split, compute busy, comm busy and
// collectives, ops and bytes per kind, exposed comm, overlap efficiency, throughput: tokens/s
// global and per GPU, samples/s, model TFLOP/s per GPU, MFU, HFU, each "n/a" with the missing
// scenario key when unknown; peak memory allocated and reserved (estimate) against capacity).
std::string summary_table(const Scenario& scenario, const Timeline& timeline, const Metrics& metrics);

// One file or folder name made from free text such as a scenario name (validate's default
// output folder): every byte outside [A-Za-z0-9._-] becomes '_' (so '/' never survives and no
// path can be formed), at most the first 100 bytes are used, and "", "." and ".." become
// underscores. The result always names an entry inside the folder it is joined to.
std::string path_component(const std::string& text);

}  // namespace shardline
