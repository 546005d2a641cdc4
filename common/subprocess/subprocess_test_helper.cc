// The child program of subprocess_test: one mode per behaviour under test.
//
//   helper exit N            exits with status N
//   helper hang              sleeps forever
//   helper spin              burns CPU forever
//   helper ignore_term       ignores SIGTERM, then sleeps forever
//   helper grandchild FILE   forks a child that writes its pid to FILE and sleeps
//                            forever; the parent sleeps forever too
//   helper segv              dereferences null
//   helper alloc MIB         allocates and touches MIB MiB; exits 3 if malloc fails
//   helper spew BYTES        writes BYTES bytes of 'x' to stdout, then "END" to stderr
//   helper cat               copies stdin to stdout
//   helper env NAME          prints $NAME (or "<unset>")
//   helper pwd               prints the working directory
//   helper netifs            prints the network interface names, one a line
//   helper nofile            prints the RLIMIT_NOFILE soft limit
//   helper fds               prints the open descriptors above 2, one a line
#include <dirent.h>
#include <net/if.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void SleepForever() {
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 100;
  std::string mode = argv[1];
  if (mode == "exit" && argc > 2) return std::atoi(argv[2]);
  if (mode == "hang") SleepForever();
  if (mode == "spin") {
    volatile unsigned long counter = 0;
    for (;;) counter = counter + 1;
  }
  if (mode == "ignore_term") {
    signal(SIGTERM, SIG_IGN);
    std::printf("ready\n");
    std::fflush(stdout);
    SleepForever();
  }
  if (mode == "grandchild" && argc > 2) {
    pid_t child = fork();
    if (child == 0) {
      FILE* file = std::fopen(argv[2], "w");
      if (file != nullptr) {
        std::fprintf(file, "%d\n", static_cast<int>(getpid()));
        std::fclose(file);
      }
      SleepForever();
    }
    SleepForever();
  }
  if (mode == "segv") {
    volatile int* null_pointer = nullptr;
    *null_pointer = 1;
    return 0;
  }
  if (mode == "alloc" && argc > 2) {
    size_t bytes = static_cast<size_t>(std::atoll(argv[2])) << 20;
    char* data = static_cast<char*>(std::malloc(bytes));
    if (data == nullptr) {
      std::fprintf(stderr, "malloc failed\n");
      return 3;
    }
    std::memset(data, 1, bytes);
    unsigned long sum = 0;
    for (size_t i = 0; i < bytes; i += 4096) sum += static_cast<unsigned char>(data[i]);
    std::printf("allocated %zu (%lu pages)\n", bytes, sum);
    std::free(data);
    return 0;
  }
  if (mode == "spew" && argc > 2) {
    long long remaining = std::atoll(argv[2]);
    std::string chunk(65536, 'x');
    while (remaining > 0) {
      size_t n = remaining < static_cast<long long>(chunk.size()) ? remaining : chunk.size();
      std::fwrite(chunk.data(), 1, n, stdout);
      remaining -= static_cast<long long>(n);
    }
    std::fflush(stdout);
    std::fprintf(stderr, "END");
    return 0;
  }
  if (mode == "cat") {
    char buffer[65536];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), stdin)) > 0) {
      std::fwrite(buffer, 1, n, stdout);
    }
    return 0;
  }
  if (mode == "env" && argc > 2) {
    const char* value = std::getenv(argv[2]);
    std::printf("%s", value != nullptr ? value : "<unset>");
    return 0;
  }
  if (mode == "pwd") {
    char buffer[4096];
    if (getcwd(buffer, sizeof(buffer)) == nullptr) return 1;
    std::printf("%s", buffer);
    return 0;
  }
  if (mode == "netifs") {
    struct if_nameindex* interfaces = if_nameindex();
    if (interfaces == nullptr) return 1;
    for (struct if_nameindex* it = interfaces; it->if_index != 0; ++it) {
      std::printf("%s\n", it->if_name);
    }
    if_freenameindex(interfaces);
    return 0;
  }
  if (mode == "nofile") {
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    std::printf("%llu", static_cast<unsigned long long>(limit.rlim_cur));
    return 0;
  }
  if (mode == "fds") {
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr) return 1;
    int self = dirfd(dir);
    while (struct dirent* entry = readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      int fd = std::atoi(entry->d_name);
      if (fd > 2 && fd != self) std::printf("%d\n", fd);
    }
    closedir(dir);
    return 0;
  }
  return 101;
}
