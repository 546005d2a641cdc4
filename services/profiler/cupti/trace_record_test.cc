#include "services/profiler/cupti/trace_record.h"

#include <catch2/catch.hpp>
#include <cmath>
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
  record.registers = 16;
  record.static_smem = 0;
  record.dynamic_smem = 4096;
  // The line libkagent_cupti.so wrote on the H200, with the launch resources added after.
  CHECK(FormatKernelRecord(record) ==
        "{\"type\":\"kernel\",\"name\":\"_add_kernel\",\"start_ns\":1795965287427383198,"
        "\"end_ns\":1795965287427396318,\"stream\":7,\"device\":0,\"grid\":[4096,1,1],"
        "\"block\":[128,1,1],\"correlation\":12,\"registers\":16,\"static_smem\":0,"
        "\"dynamic_smem\":4096}\n");
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

TEST_CASE("Counters lines are valid JSON with non-finite values as null", "[cupti_record]") {
  CountersRecord record;
  record.range = 3;
  record.name = "0/\"k\"";
  record.values = {{"dram__bytes_read.sum", 1048576.0},
                   {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 12.5},
                   {"lts__t_sector_hit_rate.pct", std::nan("")}};
  nlohmann::json line = nlohmann::json::parse(FormatCountersRecord(record));
  CHECK(line["type"] == "counters");
  CHECK(line["range"] == 3);
  CHECK(line["name"] == "0/\"k\"");
  CHECK(line["values"]["dram__bytes_read.sum"] == 1048576.0);
  CHECK(line["values"]["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == 12.5);
  CHECK(line["values"]["lts__t_sector_hit_rate.pct"].is_null());

  CountersMeta meta{12, 4, 0, {"sm__maximum_warps_per_active_cycle_pct"}, "GH100"};
  nlohmann::json parsed = nlohmann::json::parse(FormatCountersMeta(meta));
  CHECK(parsed["type"] == "counters_meta");
  CHECK(parsed["passes"] == 12);
  CHECK(parsed["ranges"] == 4);
  CHECK(parsed["missing"] == nlohmann::json::array({"sm__maximum_warps_per_active_cycle_pct"}));
  CHECK(parsed["chip"] == "GH100");
}

TEST_CASE("Metric lists split on commas and are trimmed without empties or repeats", "[cupti_record]") {
  CHECK(SplitMetricList(nullptr).empty());
  CHECK(SplitMetricList("").empty());
  CHECK(SplitMetricList(" a.sum, b.pct ,,a.sum,c ") ==
        std::vector<std::string>{"a.sum", "b.pct", "c"});
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
