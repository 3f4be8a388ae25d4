// Scaffolding shared by the CLI end-to-end tests: a scratch folder per test (removed after it)
// and `shardline ARGS` run inside it, exit code, stdout and stderr captured.
#pragma once
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace shardline::clitest {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A shipped scenario's path.
inline std::string scenario(const std::string& name) { return std::string(SHARDLINE_SOURCE_DIR) + "/scenarios/" + name; }

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("shardline_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
                                        std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `shardline ARGS` with the scratch folder as working directory; its output goes to
  // dir_/stdout and dir_/stderr, and into out_ / err_ as well as the result.
  Result run(const std::string& args) { return run_limited("", args); }

  // The same, with the shell's `ulimit -v KIB` first, and 8 MiB thread stacks (`ulimit -s`:
  // what a thread costs of that space), unless KIB is empty. Sanitizer builds
  // reserve terabytes of address space: `limited()` is false there and no limit is set.
  static bool limited() {
#if defined(__SANITIZE_ADDRESS__)
    return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return false;
#else
    return true;
#endif
#else
    return true;
#endif
  }
  Result run_limited(const std::string& address_space_kib, const std::string& args) {
    const std::string limit = address_space_kib.empty() || !limited() ? "" : "ulimit -s 8192 && ulimit -v " + address_space_kib + " && ";
    const std::string cmd = "cd " + dir_.string() + " && " + limit + SHARDLINE_BINARY + " " + args + " >" +
                            (dir_ / "stdout").string() + " 2>" + (dir_ / "stderr").string();
    const int status = std::system(cmd.c_str());
    out_ = slurp(dir_ / "stdout");
    err_ = slurp(dir_ / "stderr");
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out_, err_};
  }

  // Writes `text` to dir_/rel, creating the folders on the way.
  void write_text(const std::string& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text;
  }

  fs::path dir_;
  std::string out_, err_;
};

}  // namespace shardline::clitest
