#include "services/profiler/cupti/trace_record.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/subprocess/subprocess.h"
#include "nlohmann/json.hpp"

namespace kagent::cupti {
namespace {

TEST_CASE("Kernel records are formatted exactly as the harness expects", "[cupti_record]") {
  KernelRecord record;
  record.name = "_add_kernel";
  record.start_ns = 1795965287427383198ULL;
  record.end_ns = 1795965287427396318ULL;
  record.stream = 7;
  record.device = 0;
  record.grid[0] = 4096;
  record.grid[1] = 1;
  record.grid[2] = 1;
  record.block[0] = 128;
  record.block[1] = 1;
  record.block[2] = 1;
  record.correlation = 12;
  // Byte for byte the line libkagent_cupti.so wrote on the H200.
  CHECK(FormatKernelRecord(record) ==
        "{\"type\":\"kernel\",\"name\":\"_add_kernel\",\"start_ns\":1795965287427383198,"
        "\"end_ns\":1795965287427396318,\"stream\":7,\"device\":0,\"grid\":[4096,1,1],"
        "\"block\":[128,1,1],\"correlation\":12}\n");
  CHECK(FormatMarkerRecord("candidate_begin", 1795965287427165262ULL) ==
        "{\"type\":\"marker\",\"name\":\"candidate_begin\",\"ts_ns\":1795965287427165262}\n");
}

TEST_CASE("Names are escaped into valid JSON", "[cupti_record]") {
  KernelRecord record;
  record.name = "void k<\"q\", '\\'>(int)\n\t\x01";
  nlohmann::json parsed = nlohmann::json::parse(FormatKernelRecord(record));
  CHECK(parsed["name"] == record.name);
  CHECK(parsed["type"] == "kernel");
  CHECK(parsed["grid"] == nlohmann::json::array({0, 0, 0}));
  nlohmann::json marker = nlohmann::json::parse(FormatMarkerRecord("a\"b\\c", 5));
  CHECK(marker["name"] == "a\"b\\c");
  CHECK(marker["ts_ns"] == 5);
}

TEST_CASE("Mangled names are demangled, others kept", "[cupti_record]") {
  CHECK(DemangleKernelName("_Z6kernelPfi") == "kernel(float*, int)");
  CHECK(DemangleKernelName("_add_kernel") == "_add_kernel");
  CHECK(DemangleKernelName("_Znot a symbol") == "_Znot a symbol");
  CHECK(DemangleKernelName(nullptr).empty());
}

TEST_CASE("The writer appends whole lines from many threads", "[cupti_record]") {
  auto dir = *kagent::ScopedTempDir::Create("kagent-trace-test-");
  const std::string path = dir->path() + "/trace.jsonl";
  {
    TraceWriter writer(path);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&writer, t] {
        for (int i = 0; i < 200; ++i) {
          CHECK(writer.Write(FormatMarkerRecord("thread" + std::to_string(t), i)));
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }
  std::ifstream file(path);
  int lines = 0;
  for (std::string line; std::getline(file, line); ++lines) {
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
    REQUIRE_FALSE(parsed.is_discarded());
  }
  CHECK(lines == 800);
  TraceWriter bad("/nonexistent/dir/trace.jsonl");
  CHECK_FALSE(bad.Write("x\n"));
}

}  // namespace
}  // namespace kagent::cupti
