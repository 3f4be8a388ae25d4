// Test driver for calibrate under mpirun: calibrates through the mpi backend wrapped in a
// recorder of every collective's input buffer, and checks on rank 0 that each point of the
// all-gather and reduce-scatter tables is measured the way a step runs a collective: on buffers
// that collective has already used (a step reuses its buffers every iteration), cycling over a
// bounded set of them. Exit codes: 0 ok; 1 the rule is broken (one line says where).
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "exec/backend_factory.h"
#include "exec/calibrate.h"
#include "exec/host_comm.h"

using namespace shardline;
using namespace shardline::exec;

namespace {

// One collective as calibrate issued it: its kind, its size S and the input it read.
struct Call {
  CollectiveKind kind;
  int64_t size_bytes;
  const void* in;
};

// The mpi backend, recording every collective it is asked to run.
class RecordingBackend final : public Backend {
 public:
  RecordingBackend(std::unique_ptr<Backend> inner, std::vector<Call>& calls) : inner_(std::move(inner)), calls_(calls) {}
  std::string name() const override { return inner_->name(); }
  int rank() const override { return inner_->rank(); }
  int world() const override { return inner_->world(); }
  int64_t available_bytes() override { return inner_->available_bytes(); }
  void* allocate(int64_t bytes) override { return inner_->allocate(bytes); }
  void release(void* ptr) override { inner_->release(ptr); }
  void upload(void* dst, const void* src, int64_t bytes) override { inner_->upload(dst, src, bytes); }
  void download(void* dst, const void* src, int64_t bytes) override { inner_->download(dst, src, bytes); }
  void create_streams(const std::vector<StreamInfo>& streams) override { inner_->create_streams(streams); }
  void create_communicator(int stream, int group, const GroupInfo& pattern) override {
    group_size_ = pattern.size;
    inner_->create_communicator(stream, group, pattern);
  }
  void begin_pass(int pass, int num_ops) override { inner_->begin_pass(pass, num_ops); }
  void wait_op(int stream, int op) override { inner_->wait_op(stream, op); }
  void begin_op(int stream, int op) override { inner_->begin_op(stream, op); }
  void end_op(int stream, int op) override { inner_->end_op(stream, op); }
  void copy(int stream, std::vector<CopySpan> spans) override { inner_->copy(stream, std::move(spans)); }
  void all_gather(int stream, int group, const CollectiveArgs& a) override {
    calls_.push_back({CollectiveKind::AllGather, a.count * a.width * group_size_, a.in});
    inner_->all_gather(stream, group, a);
  }
  void reduce_scatter(int stream, int group, const CollectiveArgs& a) override {
    calls_.push_back({CollectiveKind::ReduceScatter, a.count * a.width * group_size_, a.in});
    inner_->reduce_scatter(stream, group, a);
  }
  void all_reduce(int stream, int group, const CollectiveArgs& a) override {
    calls_.push_back({CollectiveKind::AllReduce, a.count * a.width, a.in});
    inner_->all_reduce(stream, group, a);
  }
  void compute(int stream, double us, ComputeMode mode) override { inner_->compute(stream, us, mode); }
  bool op_done(int op) override { return inner_->op_done(op); }
  void wait_op_host(int op) override { inner_->wait_op_host(op); }
  void synchronize() override { inner_->synchronize(); }
  OpTimes op_times(int op) override { return inner_->op_times(op); }
  double host_now_us() override { return inner_->host_now_us(); }

 private:
  std::unique_ptr<Backend> inner_;
  std::vector<Call>& calls_;
  int group_size_ = 1;
};

}  // namespace

int main() {
  init_mpi();
  int failures = 0;
  {
    const HostComm host = HostComm::duplicate_world();
    std::vector<Call> calls;
    CalibrateOptions opt;
    opt.min_bytes = 1024;
    opt.max_bytes = 256 << 10;
    opt.repetitions = 3;
    opt.warmup = 0;  // what calibrate adds on its own is under test
    const BackendMaker mpi = backend_maker("mpi");
    calibrate([&] { return std::make_unique<RecordingBackend>(mpi(), calls); }, host, opt);

    if (host.rank() == 0) {
      // The all-gather and reduce-scatter tables' calls, per point in the order they ran
      // (the all-reduce stream is also used by the slow-down measurements).
      std::map<std::pair<int, int64_t>, std::vector<const void*>> points;
      for (const Call& c : calls)
        if (c.kind != CollectiveKind::AllReduce) points[{static_cast<int>(c.kind), c.size_bytes}].push_back(c.in);
      if (points.size() < 2 * 9) {
        std::cerr << "expected every size of two tables, got " << points.size() << " points\n";
        ++failures;
      }
      for (const auto& [key, ins] : points) {
        const std::string where = std::string(collective_traits(static_cast<CollectiveKind>(key.first)).name) + " of " +
                                  std::to_string(key.second) + " bytes";
        if (ins.size() <= static_cast<size_t>(opt.repetitions)) {
          std::cerr << where << ": " << ins.size() << " calls, no unmeasured use before the " << opt.repetitions
                    << " measured ones\n";
          ++failures;
          continue;
        }
        const std::set<const void*> distinct(ins.begin(), ins.end());
        if (distinct.size() > 16) {
          std::cerr << where << ": " << distinct.size() << " distinct buffers, expected at most 16\n";
          ++failures;
        }
        // The measured repetitions are the last ones: each must reuse a buffer used before.
        const size_t first_measured = ins.size() - static_cast<size_t>(opt.repetitions);
        const std::set<const void*> used_before(ins.begin(), ins.begin() + static_cast<std::ptrdiff_t>(first_measured));
        for (size_t i = first_measured; i < ins.size(); ++i) {
          if (!used_before.count(ins[i])) {
            std::cerr << where << ": measured repetition " << i - first_measured
                      << " runs on a buffer no earlier repetition used\n";
            ++failures;
            break;
          }
        }
      }
      std::cout << (failures ? "FAILED" : "ok") << ": " << points.size() << " calibration points checked\n";
    }
    failures = static_cast<int>(host.max_over_ranks(static_cast<int64_t>(failures)));
  }
  finalize_mpi();
  return failures ? 1 : 0;
}
