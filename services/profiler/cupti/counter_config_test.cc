// The range profiler's configuration through CUPTI's real host API, which needs no GPU:
// built only where libkagent_cupti.so is (the CUDA toolkit's CUPTI), for the H100/H200 chip.
#include "services/profiler/cupti/counter_config.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "services/profiler/cupti_backend.h"

namespace kagent::cupti {
namespace {

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST_CASE("The Hopper set is configured with only the unknown names left out", "[cupti_config]") {
  CounterConfig config;
  const std::vector<std::string> asked = CuptiCounterMetrics(90);
  REQUIRE(config.Build("GH100", {}, asked) == "");
  CHECK(config.metrics().size() + config.missing().size() == asked.size());
  CHECK(config.metric_names().size() == config.metrics().size());
  CHECK(Has(config.metrics(), "sm__throughput.avg.pct_of_peak_sustained_elapsed"));
  CHECK(Has(config.metrics(), "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"));
  CHECK(Has(config.metrics(), "dram__bytes_read.sum"));
  CHECK(Has(config.metrics(), "lts__t_sector_hit_rate.pct"));
  // ncu's launch-derived percentage is no CUPTI metric.
  CHECK(Has(config.missing(), "sm__maximum_warps_per_active_cycle_pct"));
  CHECK(config.passes() > 1);
  CHECK_FALSE(config.image().empty());
  CHECK(config.host() != nullptr);
}

TEST_CASE("The names share passes: the set needs fewer than its names one by one",
          "[cupti_config]") {
  const std::vector<std::string> asked = CuptiCounterMetrics(90);
  CounterConfig all;
  REQUIRE(all.Build("GH100", {}, asked) == "");
  int one_by_one = 0;
  for (const std::string& name : all.metrics()) {
    CounterConfig one;
    REQUIRE(one.Build("GH100", {}, {name}) == "");
    one_by_one += one.passes();
  }
  // CUDA 13's host API, GH100: 12 passes together, 41 added one call each (the compute
  // SOL alone needs 8 of them).
  CHECK(all.passes() < one_by_one);
  CHECK(all.passes() <= 16);
  // Two counters of one unit fit one pass.
  CounterConfig dram;
  REQUIRE(dram.Build("GH100", {}, {"dram__bytes_read.sum", "dram__bytes_write.sum"}) == "");
  CHECK(dram.passes() == 1);
}

TEST_CASE("A name CUPTI refuses does not spoil the names after it", "[cupti_config]") {
  CounterConfig config;
  // The base exists, the rollup does not: CUPTI itself refuses it.
  REQUIRE(config.Build("GH100", {}, {"dram__bytes_read.no_such_rollup", "dram__bytes_read.sum",
                                     "no_such_unit__metric.sum", "lts__t_sector_hit_rate.pct"}) ==
          "");
  CHECK(config.metrics() ==
        std::vector<std::string>{"dram__bytes_read.sum", "lts__t_sector_hit_rate.pct"});
  CHECK(config.missing() == std::vector<std::string>{"dram__bytes_read.no_such_rollup",
                                                     "no_such_unit__metric.sum"});
  CHECK(config.passes() >= 1);
}

TEST_CASE("No usable name or an unknown chip is an error", "[cupti_config]") {
  CounterConfig config;
  CHECK(config.Build("GH100", {}, {"no_such_unit__metric.sum"}) ==
        "the chip GH100 has none of the requested metrics");
  CHECK(config.Build("NO_SUCH_CHIP", {}, {"dram__bytes_read.sum"})
            .rfind("cuptiProfilerHostInitialize failed: ", 0) == 0);
}

}  // namespace
}  // namespace kagent::cupti
