// Running pipeprof's executables from tests: arguments, environment, output, exit code, process groups, polling.
//
//   const ProcessResult r = pipeprof("run --model mlp --json");         // waits; r.code, r.out, r.err, r.all
//   BackgroundProcess sweep({kPipeprof, "sweep", ...}, dir + "/out", dir + "/err");  // own process group
//   waitFor([&] { return contains(sweep.err(), "measuring ["); }, 60s);  // poll, never a fixed sleep
//   sweep.signalGroup(SIGINT);                                         // as a terminal's Ctrl-C
//   const std::optional<ProcessResult> ended = sweep.wait(30s);
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace pipeprof::test {

/// The executables of this build.
inline const std::string kPipeprof = PIPEPROF_BINARY_DIR "/cli/pipeprof";
inline const std::string kRankWorker = PIPEPROF_BINARY_DIR "/launch/pipeprof-rank";

/// Variables added to (or replacing) this process's environment for a child.
using Environment = std::map<std::string, std::string>;

struct ProcessResult {
  int code = -1;    ///< the exit code; -1 when a signal ended the process
  int signal = 0;   ///< the signal that ended it, or 0
  std::string out;  ///< stdout
  std::string err;  ///< stderr
  std::string all;  ///< stdout and stderr together, in the order they were read
};

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The whole file, or "" when it cannot be read.
inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Polls `condition` every `interval` until it holds (true) or `limit` passed (false).
inline bool waitFor(const std::function<bool()>& condition, std::chrono::milliseconds limit,
                    std::chrono::milliseconds interval = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
  return true;
}

namespace detail {

/// "NAME=value" entries: this process's environment with `extra` added or replaced.
inline std::vector<std::string> environmentWith(const Environment& extra) {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    if (extra.count(text.substr(0, text.find('='))) == 0) entries.push_back(text);
  }
  for (const auto& [name, value] : extra) entries.push_back(name + "=" + value);
  return entries;
}

inline std::vector<char*> pointers(std::vector<std::string>& texts) {
  std::vector<char*> result;
  for (std::string& text : texts) result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

/// In the child: stdin from /dev/null, stdout and stderr to the given descriptors, then exec.
[[noreturn]] inline void execChild(std::vector<std::string> argv, std::vector<std::string> environment, int out,
                                   int err) {
  const int null = open("/dev/null", O_RDONLY);
  dup2(null, STDIN_FILENO);
  dup2(out, STDOUT_FILENO);
  dup2(err, STDERR_FILENO);
  const std::vector<char*> args = pointers(argv);
  const std::vector<char*> envp = pointers(environment);
  execve(args[0], args.data(), envp.data());
  _exit(127);
}

inline void fillStatus(ProcessResult& result, int status) {
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

}  // namespace detail

/// Runs argv[0] (a path; no shell) with `argv`, stdin from /dev/null, and waits for it.
inline ProcessResult runProcess(const std::vector<std::string>& argv, const Environment& environment = {}) {
  std::array<int, 2> out{};
  std::array<int, 2> err{};
  if (pipe(out.data()) != 0 || pipe(err.data()) != 0) throw std::runtime_error("pipe failed");
  const std::vector<std::string> variables = detail::environmentWith(environment);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(out[0]);
    close(err[0]);
    detail::execChild(argv, variables, out[1], err[1]);
  }
  close(out[1]);
  close(err[1]);
  ProcessResult result;
  std::array<pollfd, 2> fds{{{out[0], POLLIN, 0}, {err[0], POLLIN, 0}}};
  std::array<std::string*, 2> streams{&result.out, &result.err};
  std::array<char, 4096> buffer{};
  int openStreams = 2;
  while (openStreams > 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].fd < 0 || (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = read(fds[k].fd, buffer.data(), buffer.size());
      if (n > 0) {
        streams[k]->append(buffer.data(), static_cast<std::size_t>(n));
        result.all.append(buffer.data(), static_cast<std::size_t>(n));
      } else {
        close(fds[k].fd);
        fds[k].fd = -1;
        --openStreams;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  detail::fillStatus(result, status);
  return result;
}

/// Runs a shell command line (/bin/sh -c), e.g. with variables or `&`.
inline ProcessResult shell(const std::string& commandLine, const Environment& environment = {}) {
  return runProcess({"/bin/sh", "-c", commandLine}, environment);
}

/// Runs `pipeprof <args>`; `args` are shell words (quote what needs it).
inline ProcessResult pipeprof(const std::string& args, const Environment& environment = {}) {
  return shell("exec '" + kPipeprof + "' " + args, environment);
}

/// A process started in the background in a process group of its own (as a shell starts a
/// job), stdout and stderr going to files. The destructor kills the group and reaps the
/// process if it still runs, so a failed test leaves nothing behind.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, std::string outPath, std::string errPath,
                    const Environment& environment = {})
      : outPath_(std::move(outPath)), errPath_(std::move(errPath)) {
    const int out = open(outPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err = open(errPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0 || err < 0) throw std::runtime_error("cannot write " + outPath_ + " or " + errPath_);
    const std::vector<std::string> variables = detail::environmentWith(environment);
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      setpgid(0, 0);
      detail::execChild(argv, variables, out, err);
    }
    setpgid(pid_, pid_);  // both sides: the group exists before either goes on
    close(out);
    close(err);
  }
  ~BackgroundProcess() {
    if (!reaped_) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  /// What it wrote so far.
  std::string out() const { return readFile(outPath_); }
  std::string err() const { return readFile(errPath_); }
  /// Sends `signal` to the process alone.
  void signal(int signal) const { kill(pid_, signal); }
  /// Sends `signal` to its whole process group, its children included (a terminal's Ctrl-C).
  void signalGroup(int signal) const { kill(-pid_, signal); }
  /// Its children now (/proc/<pid>/task/*/children).
  std::vector<pid_t> children() const {
    std::vector<pid_t> pids;
    std::ifstream file("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/children");
    for (pid_t child = 0; file >> child;) pids.push_back(child);
    return pids;
  }
  /// Whether any process of its group is alive (after wait(): what it left behind).
  bool groupAlive() const { return kill(-pid_, 0) == 0; }

  /// Waits at most `limit` for it to end: its result (out and err from the files), or nullopt
  /// when it still runs.
  std::optional<ProcessResult> wait(std::chrono::milliseconds limit) {
    if (!reaped_) {
      int status = 0;
      const bool ended = waitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, limit);
      if (!ended) return std::nullopt;
      reaped_ = true;
      detail::fillStatus(result_, status);
    }
    ProcessResult result = result_;
    result.out = out();
    result.err = err();
    result.all = result.out + result.err;
    return result;
  }

 private:
  std::string outPath_;
  std::string errPath_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  ProcessResult result_;
};

}  // namespace pipeprof::test
