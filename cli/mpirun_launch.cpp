#include "cli/mpirun_launch.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "reports/outputs.h"

namespace shardline::cli {
namespace {

std::string self_path() {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) throw InputError("--np", "cannot find the shardline executable to launch under mpirun");
  self[n] = 0;
  return self;
}

std::vector<std::string> mpirun_command(int np, const std::string& subcommand, const std::vector<std::string>& args) {
  const char* env = std::getenv("SHARDLINE_MPIEXEC");
  std::vector<std::string> cmd{env && *env ? env : "mpirun"};
  if (geteuid() == 0) cmd.push_back("--allow-run-as-root");
  cmd.insert(cmd.end(), {"--oversubscribe", "--bind-to", mpirun_binding(np, usable_cores()), "-n", std::to_string(np), self_path(), subcommand});
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--np") {
      ++i;
      continue;
    }
    if (args[i].rfind("--np=", 0) == 0) continue;
    cmd.push_back(args[i]);
  }
  return cmd;
}

// One argument as a POSIX shell reads it back: plain when it holds only safe characters, else in
// single quotes (a ' written as '\''), so the echoed line can be pasted into a shell.
std::string shell_quoted(const std::string& arg) {
  const bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                            "_-+=/.,:@%") == std::string::npos;
  if (plain) return arg;
  std::string out = "'";
  for (const char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string joined(const std::vector<std::string>& cmd) {
  std::string line;
  for (const auto& c : cmd) {  // appended piece by piece: GCC 12 warns falsely (-Wrestrict) on const char* + string
    if (!line.empty()) line += ' ';
    line += shell_quoted(c);
  }
  return line;
}

void announce_launch(const std::string& subcommand, const std::vector<std::string>& cmd) {
  std::cerr << "shardline " << subcommand << ": launching: " << joined(cmd) << std::endl;
}

InputError could_not_run(const std::string& launcher, int error) {
  return InputError("--np", "could not run " + launcher + " (" + std::strerror(error) +
                                "); install Open MPI or set SHARDLINE_MPIEXEC");
}

volatile pid_t g_child = 0;
volatile sig_atomic_t g_signal = 0;  // the SIGINT or SIGTERM that reached this process while it waited
extern "C" void forward_to_child(int sig) {
  g_signal = sig;
  if (g_child > 0) ::kill(g_child, sig);
}
// Ctrl-C reaches the child directly (the same process group): only noted here.
extern "C" void note_interrupt(int sig) { g_signal = sig; }

// mpirun's stderr as the user sees it: its boxed notices (between lines of dashes) are held until
// their box closes and then written, except the two it adds after a rank's own error ("Primary
// job terminated normally, but 1 process returned a non-zero exit code ..." and "mpirun detected
// that one or more processes exited with non-zero status ..."): a rank's error is its one message
// (exit 2: printed once, by rank 0; other exits: shardline's own message says what failed). Its
// notice of a rank ended by a signal ("mpirun noticed that process rank 1 ... exited on signal 9")
// and everything outside the boxes (the ranks' own lines) pass as they come.
class MpirunStderrFilter {
 public:
  void feed(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      line_ += data[i];
      if (data[i] == '\n') take_line();
    }
  }
  void finish() {
    if (!line_.empty()) take_line();
    if (!box_.empty()) write(box_);
    box_.clear();
  }

 private:
  static bool separator(const std::string& line) {
    const size_t end = line.find_last_not_of("\r\n");
    return end != std::string::npos && end >= 9 && line.find_first_not_of('-') > end;
  }
  static void write(const std::string& text) {
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }
  void take_line() {
    if (separator(line_)) {
      if (box_.empty()) {
        box_ = line_;
      } else {
        box_ += line_;
        const bool routine = box_.find("Primary job  terminated normally") != std::string::npos ||
                             box_.find("Primary job terminated normally") != std::string::npos ||
                             box_.find("exited with non-zero status") != std::string::npos;
        if (!routine) write(box_);
        box_.clear();
      }
    } else if (!box_.empty()) {
      box_ += line_;
    } else {
      write(line_);
    }
    line_.clear();
  }
  std::string line_, box_;
};

// How a child launched by spawn_and_wait ended.
struct ChildEnd {
  int exit_code = 0;   // 128 + N when it ended by signal N
  int stopped_by = 0;  // SIGINT or SIGTERM: this process got it while waiting, and the child then failed
  int exec_errno = 0;  // not 0: the command could not be run at all (execvp's errno); exit_code is then meaningless
};

// Reads the child's stderr from `fd` through the filter until it closes, or until a moment after
// the child ended (a process it started may hold the pipe open longer); reaps the child into
// `status`. False when waiting failed (errno set).
bool pump_stderr_and_wait(pid_t child, int fd, int& status) {
  MpirunStderrFilter filter;
  char buffer[4096];
  bool reaped = false;
  int idle_after_end = 0;  // after the child ended: stop once the pipe has been quiet for 10 polls of 20 ms
  while (true) {
    if (!reaped) {
      const pid_t w = ::waitpid(child, &status, WNOHANG);
      if (w == child) reaped = true;
      else if (w < 0 && errno != EINTR) return false;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, reaped ? 20 : 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      if (reaped && ++idle_after_end >= 10) break;
      continue;
    }
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // every writer closed it
    filter.feed(buffer, static_cast<size_t>(n));
  }
  filter.finish();
  if (!reaped) {
    pid_t w;
    while ((w = ::waitpid(child, &status, 0)) < 0 && errno == EINTR) {
    }
    if (w < 0) return false;
  }
  return true;
}

// Runs `cmd` as a child process and waits for it, its stderr passed through MpirunStderrFilter.
// With `forward_signals`, this process survives
// Ctrl-C meanwhile (the child, in the same process group, gets it) and passes a SIGTERM on to
// the child; a child that then fails ends as 128 + that signal, as if it had ended by it (not a
// code of its own, such as 1, which means something else). Throws InputError("--np") when the
// child cannot be started or waited for.
ChildEnd spawn_and_wait(std::vector<std::string> cmd, bool forward_signals) {
  std::vector<char*> argv;
  for (auto& c : cmd) argv.push_back(c.data());
  argv.push_back(nullptr);
  // Closed by a successful exec; otherwise the child writes execvp's errno into it.
  int exec_errno_pipe[2];
  if (::pipe2(exec_errno_pipe, O_CLOEXEC) != 0)
    throw InputError("--np", "could not start " + cmd[0] + ": " + std::strerror(errno));
  int stderr_pipe[2];
  if (::pipe2(stderr_pipe, O_CLOEXEC) != 0)
    throw InputError("--np", "could not start " + cmd[0] + ": " + std::strerror(errno));
  struct sigaction ignore {}, forward {}, old_int {}, old_term {};
  if (forward_signals) {
    ignore.sa_handler = note_interrupt;
    sigemptyset(&ignore.sa_mask);
    forward.sa_handler = forward_to_child;
    sigemptyset(&forward.sa_mask);
    ::sigaction(SIGINT, &ignore, &old_int);
    ::sigaction(SIGTERM, &forward, &old_term);
  }
  const auto restore_signals = [&] {
    if (!forward_signals) return;
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
  };
  g_signal = 0;
  const pid_t child = ::fork();
  if (child == 0) {
    restore_signals();
    ::dup2(stderr_pipe[1], STDERR_FILENO);  // the duplicate stays open across exec
    execvp(argv[0], argv.data());
    const int error = errno;
    (void)!::write(exec_errno_pipe[1], &error, sizeof error);
    ::_exit(127);
  }
  const int fork_errno = errno;
  g_child = child;
  ::close(exec_errno_pipe[1]);
  ::close(stderr_pipe[1]);
  ChildEnd end;
  int wait_errno = 0;
  if (child > 0) {
    int error = 0;
    ssize_t n;
    while ((n = ::read(exec_errno_pipe[0], &error, sizeof error)) < 0 && errno == EINTR) {
    }
    if (n == static_cast<ssize_t>(sizeof error)) end.exec_errno = error;
    int status = 0;
    if (!pump_stderr_and_wait(child, stderr_pipe[0], status)) wait_errno = errno;
    else end.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (end.exit_code != 0 && g_signal != 0) {
      end.stopped_by = g_signal;
      end.exit_code = 128 + g_signal;
    }
  }
  g_child = 0;
  ::close(exec_errno_pipe[0]);
  ::close(stderr_pipe[0]);
  restore_signals();
  if (child < 0) throw InputError("--np", "could not start " + cmd[0] + ": " + std::strerror(fork_errno));
  if (wait_errno != 0) throw InputError("--np", "could not wait for " + cmd[0] + ": " + std::strerror(wait_errno));
  return end;
}

// After a failed run: names the ranks without a rank_report_file in `reports_dir` when others
// have one (when none has, the failure was not a rank's to report).
void name_silent_ranks(int np, const std::string& subcommand, const std::string& reports_dir) {
  namespace fs = std::filesystem;
  std::vector<int> silent, reported;
  for (int r = 0; r < np; ++r) (fs::exists(fs::path(reports_dir) / rank_report_file(r)) ? reported : silent).push_back(r);
  if (reported.empty() || silent.empty()) return;
  const auto list = [](const std::vector<int>& ranks) {
    std::string text;
    for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
    return text;
  };
  std::cerr << "shardline " << subcommand << ": error: rank" << (silent.size() > 1 ? "s " : " ") << list(silent)
            << " ended without a report (killed or crashed; mpirun's message says how); partial timelines of rank"
            << (reported.size() > 1 ? "s " : " ") << list(reported) << " are in " << reports_dir << "/" << std::endl;
}

}  // namespace

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

std::string mpirun_binding(int np, int cores) { return np <= cores ? "core" : "core:overload-allowed"; }

int relaunch_under_mpirun_and_wait(int np, const std::string& subcommand, const std::vector<std::string>& args,
                                   const std::string& reports_dir) {
  const std::vector<std::string> cmd = mpirun_command(np, subcommand, args);
  announce_launch(subcommand, cmd);
  const ChildEnd end = spawn_and_wait(cmd, /*forward_signals=*/true);
  if (end.exec_errno != 0) throw could_not_run(cmd[0], end.exec_errno);
  if (end.exit_code != 0 && end.exit_code != 2 && !reports_dir.empty()) name_silent_ranks(np, subcommand, reports_dir);
  if (end.stopped_by != 0)
    std::cerr << "shardline " << subcommand << ": stopped by " << (end.stopped_by == SIGINT ? "SIGINT" : "SIGTERM") << " (exit "
              << end.exit_code << ")" << std::endl;
  return end.exit_code;
}


int run_under_mpirun(int np, const std::string& subcommand, const std::vector<std::string>& args) {
  const std::vector<std::string> cmd = mpirun_command(np, subcommand, args);
  std::cerr << "shardline: running: " << joined(cmd) << std::endl;
  // A SIGTERM to validate alone must stop the step's mpirun and ranks too, not orphan them.
  const ChildEnd end = spawn_and_wait(cmd, /*forward_signals=*/true);
  if (end.exec_errno != 0) {
    std::cerr << "shardline: could not run " << cmd[0] << ": " << std::strerror(end.exec_errno) << std::endl;
    return 127;
  }
  return end.exit_code;
}

}  // namespace shardline::cli
