#include "cli/mpirun_launch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "core/error.h"

namespace shardline::cli {
namespace {

std::string self_path() {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) throw InputError("--np", "cannot find the shardline executable to launch under mpirun");
  self[n] = 0;
  return self;
}

std::string joined(const std::vector<std::string>& cmd) {
  std::string line;
  for (const auto& c : cmd) line += (line.empty() ? "" : " ") + c;
  return line;
}

int spawn(std::vector<std::string> cmd) {
  std::cerr << "shardline: running: " << joined(cmd) << std::endl;
  std::vector<char*> argv;
  for (auto& c : cmd) argv.push_back(c.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw InputError("--np", std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    execvp(argv[0], argv.data());
    std::cerr << "shardline: could not run " << cmd[0] << ": " << std::strerror(errno) << std::endl;
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw InputError("--np", std::string("waitpid failed: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

std::vector<std::string> mpirun_command(int np, const std::string& subcommand, const std::vector<std::string>& args) {
  const char* env = std::getenv("SHARDLINE_MPIEXEC");
  std::vector<std::string> cmd{env && *env ? env : "mpirun"};
  if (geteuid() == 0) cmd.push_back("--allow-run-as-root");
  cmd.insert(cmd.end(), {"--oversubscribe", "--bind-to", "none", "-n", std::to_string(np), self_path(), subcommand});
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

void exec_under_mpirun(int np, const std::string& subcommand, const std::vector<std::string>& args) {
  std::vector<std::string> cmd = mpirun_command(np, subcommand, args);
  std::cerr << "shardline " << subcommand << ": launching: " << joined(cmd) << std::endl;
  std::vector<char*> argv;
  for (auto& c : cmd) argv.push_back(c.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  throw InputError("--np", "could not run " + cmd[0] + " (" + std::strerror(errno) +
                               "); install Open MPI or set SHARDLINE_MPIEXEC");
}

int run_under_mpirun(int np, const std::string& subcommand, const std::vector<std::string>& args) {
  return spawn(mpirun_command(np, subcommand, args));
}

int run_self(const std::string& subcommand, const std::vector<std::string>& args) {
  std::vector<std::string> cmd{self_path(), subcommand};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return spawn(cmd);
}

}  // namespace shardline::cli
