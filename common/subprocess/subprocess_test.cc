#include "common/subprocess/subprocess.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace kagent {
namespace {

constexpr char kHelper[] = KAGENT_SUBPROCESS_HELPER;

SubprocessOptions HelperOptions(std::vector<std::string> args) {
  SubprocessOptions options;
  options.argv.push_back(kHelper);
  for (std::string& arg : args) options.argv.push_back(std::move(arg));
  options.timeout = absl::Seconds(30);
  return options;
}

SubprocessResult MustRun(const SubprocessOptions& options) {
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  return *std::move(result);
}

// True while `pid` exists and is not a zombie.
bool ProcessAlive(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat) return false;
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  return line[paren + 2] != 'Z' && line[paren + 2] != 'X';
}

TEST_CASE("Subprocess reports exit codes", "[subprocess]") {
  SubprocessResult ok = MustRun(HelperOptions({"exit", "0"}));
  CHECK(ok.exited);
  CHECK(ok.exit_code == 0);
  CHECK(ok.ok());
  CHECK(ok.term_signal == 0);
  CHECK(ok.Describe().rfind("exit 0", 0) == 0);

  SubprocessResult seven = MustRun(HelperOptions({"exit", "7"}));
  CHECK(seven.exited);
  CHECK(seven.exit_code == 7);
  CHECK_FALSE(seven.ok());
  CHECK_FALSE(seven.timed_out);
}

TEST_CASE("Subprocess reports a missing program as NOT_FOUND", "[subprocess]") {
  SubprocessOptions options;
  options.argv = {"kagent-no-such-program-xyz"};
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == absl::StatusCode::kNotFound);

  options.argv = {"/nonexistent/dir/program"};
  result = RunSubprocess(options);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == absl::StatusCode::kNotFound);

  options.argv.clear();
  CHECK(RunSubprocess(options).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Subprocess finds programs on the child's PATH", "[subprocess]") {
  SubprocessOptions options;
  options.argv = {"sh", "-c", "exit 4"};
  options.env["PATH"] = "/usr/bin:/bin";
  SubprocessResult result = MustRun(options);
  CHECK(result.exit_code == 4);
}

TEST_CASE("Subprocess kills a hang at the timeout, grandchildren included", "[subprocess]") {
  auto dir = ScopedTempDir::Create("kagent-test-");
  REQUIRE(dir.ok());
  std::string pid_file = (*dir)->path() + "/grandchild.pid";
  SubprocessOptions options = HelperOptions({"grandchild", pid_file});
  options.timeout = absl::Milliseconds(500);
  SubprocessResult result = MustRun(options);
  CHECK(result.timed_out);
  CHECK_FALSE(result.cancelled);
  CHECK_FALSE(result.exited);
  CHECK(result.term_signal == SIGTERM);
  CHECK(result.wall_seconds >= 0.45);
  CHECK(result.wall_seconds < 5);

  std::ifstream file(pid_file);
  pid_t grandchild = 0;
  file >> grandchild;
  REQUIRE(grandchild > 0);
  // Reparented to init, which reaps it; it must be gone (or a zombie) within 2 s.
  absl::Time limit = absl::Now() + absl::Seconds(2);
  while (ProcessAlive(grandchild) && absl::Now() < limit) absl::SleepFor(absl::Milliseconds(10));
  CHECK_FALSE(ProcessAlive(grandchild));
}

TEST_CASE("Subprocess children die with the process that started them", "[subprocess]") {
  auto dir = ScopedTempDir::Create("kagent-test-");
  REQUIRE(dir.ok());
  const std::string pid_file = (*dir)->path() + "/child.pid";
  // A runner process (as a worker) starts a long child, then is SIGKILLed.
  const pid_t runner = fork();
  REQUIRE(runner >= 0);
  if (runner == 0) {
    SubprocessOptions options;
    options.argv = {"/bin/sh", "-c", "echo $$ > " + pid_file + ".tmp && mv " + pid_file +
                                         ".tmp " + pid_file + " && exec sleep 60"};
    options.inherit_env = true;
    (void)RunSubprocess(options);
    _exit(0);
  }
  pid_t child = 0;
  absl::Time limit = absl::Now() + absl::Seconds(10);
  while (child == 0 && absl::Now() < limit) {
    std::ifstream file(pid_file);
    if (!(file >> child)) child = 0;
    if (child == 0) absl::SleepFor(absl::Milliseconds(10));
  }
  REQUIRE(child > 0);
  CHECK(ProcessAlive(child));
  kill(runner, SIGKILL);
  int status = 0;
  waitpid(runner, &status, 0);
  limit = absl::Now() + absl::Seconds(5);
  while (ProcessAlive(child) && absl::Now() < limit) absl::SleepFor(absl::Milliseconds(10));
  CHECK_FALSE(ProcessAlive(child));
}

TEST_CASE("Subprocess escalates to SIGKILL when SIGTERM is ignored", "[subprocess]") {
  SubprocessOptions options = HelperOptions({"ignore_term"});
  options.timeout = absl::Milliseconds(300);
  options.kill_grace = absl::Milliseconds(300);
  SubprocessResult result = MustRun(options);
  CHECK(result.timed_out);
  CHECK(result.term_signal == SIGKILL);
  CHECK(result.stdout_data == "ready\n");
  CHECK(result.wall_seconds >= 0.55);
}

TEST_CASE("Subprocess reports a segfault as signal 11", "[subprocess]") {
  SubprocessResult result = MustRun(HelperOptions({"segv"}));
  CHECK_FALSE(result.exited);
  CHECK(result.term_signal == SIGSEGV);
  CHECK(result.term_signal == 11);
  CHECK_FALSE(result.timed_out);
  CHECK(result.Describe().find("signal 11") != std::string::npos);
}

TEST_CASE("Subprocess applies the address-space limit", "[subprocess]") {
  SubprocessOptions options = HelperOptions({"alloc", "1024"});
  options.rlimit_as_bytes = int64_t{256} << 20;
  SubprocessResult limited = MustRun(options);
  CHECK(limited.exited);
  CHECK(limited.exit_code == 3);
  CHECK(limited.stderr_data == "malloc failed\n");

  SubprocessResult unlimited = MustRun(HelperOptions({"alloc", "64"}));
  CHECK(unlimited.ok());
  CHECK(unlimited.peak_rss_bytes >= (int64_t{64} << 20));
}

TEST_CASE("Subprocess applies the CPU-time limit", "[subprocess]") {
  SubprocessOptions options = HelperOptions({"spin"});
  options.rlimit_cpu_seconds = 1;
  SubprocessResult result = MustRun(options);
  CHECK_FALSE(result.timed_out);
  CHECK((result.term_signal == SIGXCPU || result.term_signal == SIGKILL));
  // RLIMIT_CPU counts user and system time together. The rusage figures are sampled from
  // scheduler ticks and under-count on a loaded machine (0.87 s seen with both cores
  // busy), so the bound only shows that the child spun until a limit, not that it was
  // stopped at start.
  CHECK(result.user_cpu_seconds + result.system_cpu_seconds >= 0.5);
  CHECK(result.user_cpu_seconds + result.system_cpu_seconds < 5);
}

TEST_CASE("Subprocess applies the descriptor limit", "[subprocess]") {
  SubprocessOptions options = HelperOptions({"nofile"});
  options.rlimit_nofile = 64;
  CHECK(MustRun(options).stdout_data == "64");
}

TEST_CASE("Subprocess keeps only the last bytes of a large output", "[subprocess]") {
  SubprocessOptions options = HelperOptions({"spew", std::to_string(20 << 20)});
  options.max_output_bytes = 1 << 20;
  SubprocessResult result = MustRun(options);
  CHECK(result.ok());
  CHECK(result.stdout_data.size() == (1u << 20));
  CHECK(result.stdout_total_bytes == (20 << 20));
  CHECK(result.stdout_truncated());
  CHECK(result.stdout_data.find_first_not_of('x') == std::string::npos);
  CHECK(result.stderr_data == "END");
  CHECK_FALSE(result.stderr_truncated());
}

TEST_CASE("Subprocess streams stdin while reading stdout", "[subprocess]") {
  std::string data;
  for (int i = 0; i < (4 << 20); ++i) data.push_back(static_cast<char>('a' + i % 26));
  SubprocessOptions options = HelperOptions({"cat"});
  options.stdin_data = data;
  options.max_output_bytes = 8 << 20;
  SubprocessResult result = MustRun(options);
  CHECK(result.ok());
  CHECK(result.stdout_data == data);

  // A child that never reads its stdin still finishes.
  SubprocessOptions ignoring = HelperOptions({"exit", "0"});
  ignoring.stdin_data = data;
  CHECK(MustRun(ignoring).ok());
}

TEST_CASE("Subprocess is cancelled from another thread", "[subprocess]") {
  CancelToken token;
  SubprocessOptions options = HelperOptions({"hang"});
  options.cancel = &token;
  std::thread canceller([&token] {
    absl::SleepFor(absl::Milliseconds(200));
    token.Cancel();
  });
  SubprocessResult result = MustRun(options);
  canceller.join();
  CHECK(result.cancelled);
  CHECK_FALSE(result.timed_out);
  CHECK(result.term_signal == SIGTERM);
  CHECK(result.wall_seconds < 5);

  // A token cancelled before the run stops the child at once.
  SubprocessResult again = MustRun(options);
  CHECK(again.cancelled);
  CHECK(again.wall_seconds < 5);
}

TEST_CASE("Subprocess sets the environment, temp dir and working dir", "[subprocess]") {
  SubprocessOptions options = HelperOptions({"env", "KAGENT_TEST_VAR"});
  options.env["KAGENT_TEST_VAR"] = "hello world";
  CHECK(MustRun(options).stdout_data == "hello world");

  // Without inherit_env the parent's variables are absent.
  setenv("KAGENT_PARENT_ONLY", "1", 1);
  CHECK(MustRun(HelperOptions({"env", "KAGENT_PARENT_ONLY"})).stdout_data == "<unset>");
  SubprocessOptions inherit = HelperOptions({"env", "KAGENT_PARENT_ONLY"});
  inherit.inherit_env = true;
  CHECK(MustRun(inherit).stdout_data == "1");
  inherit.unset_env = {"KAGENT_PARENT_ONLY"};
  CHECK(MustRun(inherit).stdout_data == "<unset>");

  // The private temp dir is TMPDIR and the working directory, and is removed afterwards.
  SubprocessResult tmpdir = MustRun(HelperOptions({"env", "TMPDIR"}));
  SubprocessResult pwd = MustRun(HelperOptions({"pwd"}));
  CHECK(pwd.stdout_data.find("kagent-sub-") != std::string::npos);
  CHECK(tmpdir.stdout_data.find("kagent-sub-") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmpdir.stdout_data));
  CHECK_FALSE(std::filesystem::exists(pwd.stdout_data));

  SubprocessOptions explicit_dir = HelperOptions({"pwd"});
  explicit_dir.working_dir = "/";
  CHECK(MustRun(explicit_dir).stdout_data == "/");
}

TEST_CASE("Subprocess leaks no descriptors into the child", "[subprocess]") {
  CancelToken token;  // holds a pipe open in this process
  SubprocessOptions options = HelperOptions({"fds"});
  options.cancel = &token;
  SubprocessResult result = MustRun(options);
  CHECK(result.ok());
  CHECK(result.stdout_data.empty());
}

TEST_CASE("Subprocess isolates the network when permitted", "[subprocess]") {
  SubprocessOptions options = HelperOptions({"netifs"});
  options.isolate_network = true;
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  REQUIRE(result.ok());
  CHECK(result->ok());
  if (result->network_isolated) {
    CHECK(result->stdout_data == "lo\n");
  } else {
    WARN("network namespaces are not permitted here; isolation not applied");
  }
  SubprocessOptions plain = HelperOptions({"netifs"});
  CHECK_FALSE(MustRun(plain).network_isolated);

  options.require_network_isolation = true;
  absl::StatusOr<SubprocessResult> required = RunSubprocess(options);
  if (required.ok()) {
    CHECK(required->network_isolated);
  } else {
    CHECK(required.status().code() == absl::StatusCode::kFailedPrecondition);
  }
}

TEST_CASE("Subprocess runs many children concurrently", "[subprocess]") {
  constexpr int kThreads = 8;
  std::vector<std::string> outputs(kThreads);
  // Not std::vector<bool>: its elements share words, so threads writing
  // neighbouring elements race (CI once lost one thread's `true`).
  std::vector<char> ok(kThreads, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([i, &outputs, &ok] {
      SubprocessOptions options = HelperOptions({"cat"});
      options.stdin_data = std::string(100000 + i, static_cast<char>('A' + i));
      absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
      ok[i] = result.ok() && result->ok() ? 1 : 0;
      if (result.ok()) outputs[i] = result->stdout_data;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) {
    CHECK(ok[i] == 1);
    CHECK(outputs[i] == std::string(100000 + i, static_cast<char>('A' + i)));
  }
}

}  // namespace
}  // namespace kagent
