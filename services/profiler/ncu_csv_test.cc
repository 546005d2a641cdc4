#include "services/profiler/ncu_csv.h"

#include <catch2/catch.hpp>
#include <string>

#include "kernel_model/gpu_spec.h"
#include "kernel_model/hardware_metrics.h"
#include "kernel_model/launch_limits.h"
#include "kernel_model/metric_names.h"
#include "services/profiler/testing/fake_runner.h"

namespace kagent {
namespace {

using ::kagent::testing::ReadFixture;

double Value(const kagent::v1::KernelMetrics& kernel, const std::string& name) {
  auto it = kernel.values().find(name);
  INFO(name);
  REQUIRE(it != kernel.values().end());
  return it->second;
}

TEST_CASE("Parses a one-kernel Triton profile recorded on the H200", "[ncu_csv]") {
  std::string text = ReadFixture("h200_triton_matvec.csv");
  REQUIRE_FALSE(text.empty());
  absl::StatusOr<NcuCsvReport> report = ParseNcuCsv(text);
  REQUIRE(report.ok());
  REQUIRE(report->kernels.size() == 1);
  const auto& kernel = report->kernels[0];
  CHECK(kernel.kernel_name() == "_matvec_row_kernel");
  CHECK(kernel.invocation() == 0);
  CHECK(kernel.duration_ns() == Approx(34336));
  CHECK(std::vector<int64_t>(kernel.grid().begin(), kernel.grid().end()) ==
        std::vector<int64_t>{8192, 1, 1});
  CHECK(std::vector<int64_t>(kernel.block().begin(), kernel.block().end()) ==
        std::vector<int64_t>{128, 1, 1});
  CHECK(Value(kernel, "dram__bytes_read.sum") == Approx(134242304));
  CHECK(Value(kernel, "sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(42.67));
  CHECK(Value(kernel, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed") ==
        Approx(82.80));
  CHECK(Value(kernel, "launch__registers_per_thread") == Approx(28));
  // Machine and profiler columns are left out; ncu's log lines are kept.
  CHECK(kernel.values().count("device__attribute_clock_rate") == 0);
  CHECK(kernel.values().count("profiler__replayer_passes") == 0);
  CHECK(report->log_lines.size() == 3);
  CHECK(report->log_lines[1].rfind("==PROF== Connected", 0) == 0);
  CHECK_FALSE(report->no_kernels_profiled);
}

TEST_CASE("Parses every kernel of a multi-kernel range, with NVTX columns", "[ncu_csv]") {
  absl::StatusOr<NcuCsvReport> report = ParseNcuCsv(ReadFixture("h200_multi.csv"));
  REQUIRE(report.ok());
  REQUIRE(report->kernels.size() == 3);
  CHECK(report->kernels[0].kernel_name() == "_add_kernel");
  CHECK(report->kernels[1].kernel_name().rfind("void at::vectorized_elementwise_kernel", 0) == 0);
  CHECK(report->kernels[2].kernel_name().rfind("void at::reduce_kernel<512, 1,", 0) == 0);
  CHECK(report->kernels[2].invocation() == 2);
  CHECK(report->kernels[0].duration_ns() == Approx(12768));
  CHECK(report->kernels[1].duration_ns() == Approx(9760));
  CHECK(report->kernels[2].duration_ns() == Approx(10048));
  // Thousands separators and hertz.
  CHECK(Value(report->kernels[0], "launch__grid_size") == Approx(4096));
  CHECK(Value(report->kernels[0], "sm__cycles_elapsed.avg.per_second") ==
        Approx(1960561916.15));
  CHECK(Value(report->kernels[2], "dram__bytes_read.sum") == Approx(16839936));
  // Non-numeric launch attributes are skipped.
  CHECK(report->kernels[0].values().count("launch__cluster_scheduling_policy") == 0);
  CHECK(report->kernels[2].grid(1) == 512);
}

TEST_CASE("Parses a profile taken through the real harness", "[ncu_csv]") {
  absl::StatusOr<NcuCsvReport> report = ParseNcuCsv(ReadFixture("h200_harness_relu_add.csv"));
  REQUIRE(report.ok());
  REQUIRE(report->kernels.size() == 1);
  CHECK(report->kernels[0].kernel_name() == "relu_add_kernel");
  CHECK(report->kernels[0].duration_ns() > 0);
  CHECK(report->kernels[0].values().count(
            "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio") == 1);
  CHECK(report->kernels[0].values().count(
            "smsp__average_warps_issue_stalled_memory_throttle_per_issue_active.ratio") == 0);
}

TEST_CASE("Automatic and base units parse to the same values", "[ncu_csv]") {
  absl::StatusOr<NcuCsvReport> base = ParseNcuCsv(ReadFixture("h200_multi.csv"));
  absl::StatusOr<NcuCsvReport> automatic = ParseNcuCsv(ReadFixture("h200_multi.auto_units.csv"));
  REQUIRE(base.ok());
  REQUIRE(automatic.ok());
  REQUIRE(automatic->kernels.size() == 3);
  CHECK(automatic->metric_columns == base->metric_columns);
}

TEST_CASE("Finds the CSV after the program's own output on stdout", "[ncu_csv]") {
  absl::StatusOr<NcuCsvReport> report = ParseNcuCsv(ReadFixture("h200_multi_stdout_mode.txt"));
  REQUIRE(report.ok());
  CHECK(report->kernels.size() == 3);
  CHECK(report->metric_columns.size() > 20);
}

TEST_CASE("An empty NVTX range parses to no kernels", "[ncu_csv]") {
  absl::StatusOr<NcuCsvReport> report = ParseNcuCsv(ReadFixture("h200_empty.csv"));
  REQUIRE(report.ok());
  CHECK(report->kernels.empty());
  CHECK(report->no_kernels_profiled);
  CHECK(ParseNcuCsv("").ok());
}

// Written from the format description: scaled units, n/a, quoted commas, CRLF.
constexpr char kSyntheticCsv[] =
    "==PROF== Connected to process 42 (/usr/bin/python3)\r\n"
    "==PROF== Profiling \"k\" - 0: 0%....50%....100% - 9 passes\r\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\","
    "\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"gpu__time_duration.sum\","
    "\"dram__bytes_read.sum\",\"dram__bytes_write.sum\",\"lts__t_bytes.sum\","
    "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\",\"dram__bytes.sum.per_second\","
    "\"launch__occupancy_limit_registers\"\r\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"usecond\",\"Mbyte\",\"Kbyte\","
    "\"Gbyte\",\"%\",\"Tbyte/second\",\"block\"\r\n"
    "\"0\",\"42\",\"python3\",\"127.0.0.1\",\"void gemm<float, 128>(float const*, int)\","
    "\"1\",\"7\",\"(256, 1, 1)\",\"(1024, 2, 1)\",\"0\",\"9.0\",\"1,234.5\",\"2.5\",\"n/a\","
    "\"1.5\",\"37.25\",\"3.2\",\"4\"\r\n"
    "\"1\",\"42\",\"python3\",\"127.0.0.1\",\"k2\",\"1\",\"7\",\"(32, 1, 1)\",\"(8, 1, 1)\","
    "\"0\",\"9.0\",\"0.5\",\"0\",\"1\",\"0\",\"\",\"0\",\"16\"\r\n";

TEST_CASE("Converts units and tolerates n/a and quoted commas", "[ncu_csv]") {
  absl::StatusOr<NcuCsvReport> report = ParseNcuCsv(kSyntheticCsv);
  REQUIRE(report.ok());
  REQUIRE(report->kernels.size() == 2);
  const auto& k0 = report->kernels[0];
  CHECK(k0.kernel_name() == "void gemm<float, 128>(float const*, int)");
  CHECK(k0.duration_ns() == Approx(1234500));  // usecond -> ns
  CHECK(Value(k0, "dram__bytes_read.sum") == Approx(2.5e6));
  CHECK(k0.values().count("dram__bytes_write.sum") == 0);  // n/a
  CHECK(Value(k0, "lts__t_bytes.sum") == Approx(1.5e9));
  CHECK(Value(k0, "sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(37.25));
  CHECK(Value(k0, "dram__bytes.sum.per_second") == Approx(3.2e12));
  CHECK(Value(k0, "launch__occupancy_limit_registers") == Approx(4));
  CHECK(k0.grid(0) == 1024);
  CHECK(k0.grid(1) == 2);
  const auto& k1 = report->kernels[1];
  CHECK(Value(k1, "dram__bytes_write.sum") == Approx(1000));
  CHECK(k1.values().count("sm__throughput.avg.pct_of_peak_sustained_elapsed") == 0);  // empty
}

TEST_CASE("Rejects a data row with the wrong number of fields", "[ncu_csv]") {
  absl::StatusOr<NcuCsvReport> report =
      ParseNcuCsv("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"ns\"\n"
                  "\"0\",\"k\"\n");
  REQUIRE_FALSE(report.ok());
  CHECK(report.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseNcuCsv("\"ID\",\"Name\"\n").status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Unit conversions", "[ncu_csv]") {
  CHECK(ConvertNcuUnit("nsecond").factor == 1);
  CHECK(ConvertNcuUnit("usecond").factor == 1e3);
  CHECK(ConvertNcuUnit("msecond").factor == 1e6);
  CHECK(ConvertNcuUnit("ms").base_unit == "ns");
  CHECK(ConvertNcuUnit("second").factor == 1e9);
  CHECK(ConvertNcuUnit("byte").base_unit == "bytes");
  CHECK(ConvertNcuUnit("Kbyte").factor == 1e3);
  CHECK(ConvertNcuUnit("Mbyte").factor == 1e6);
  CHECK(ConvertNcuUnit("Gbyte").factor == 1e9);
  CHECK(ConvertNcuUnit("Kibyte").factor == 1024);
  CHECK(ConvertNcuUnit("MiB").factor == 1048576);
  CHECK(ConvertNcuUnit("%").factor == 1);
  CHECK(ConvertNcuUnit("%").base_unit == "%");
  CHECK(ConvertNcuUnit("hz").base_unit == "Hz");
  CHECK(ConvertNcuUnit("Ghz").factor == 1e9);
  CHECK(ConvertNcuUnit("cycle/nsecond").factor == 1e9);
  CHECK(ConvertNcuUnit("cycle/nsecond").base_unit == "cycle/s");
  CHECK(ConvertNcuUnit("Gbyte/second").factor == 1e9);
  CHECK(ConvertNcuUnit("Gbyte/second").base_unit == "bytes/s");
  CHECK(ConvertNcuUnit("byte/block").base_unit == "bytes/block");
  CHECK(ConvertNcuUnit("register/thread").factor == 1);
  CHECK(ConvertNcuUnit("Minst").factor == 1e6);
  CHECK(ConvertNcuUnit("inst").factor == 1);
  CHECK(ConvertNcuUnit("SM").factor == 1);
  CHECK(ConvertNcuUnit("").factor == 1);
}

TEST_CASE("Numbers, dims and CSV quoting", "[ncu_csv]") {
  double v = 0;
  CHECK(ParseNcuNumber("1,962,024,147.73", &v));
  CHECK(v == Approx(1962024147.73));
  CHECK(ParseNcuNumber("-0.5", &v));
  CHECK(v == -0.5);
  CHECK(ParseNcuNumber("1e3", &v));
  CHECK_FALSE(ParseNcuNumber("n/a", &v));
  CHECK_FALSE(ParseNcuNumber("", &v));
  CHECK_FALSE(ParseNcuNumber("PolicySpread", &v));
  CHECK_FALSE(ParseNcuNumber("inf", &v));
  CHECK_FALSE(ParseNcuNumber("0x10", &v));

  std::vector<int64_t> dims;
  CHECK(ParseDim3("(128, 1, 1)", &dims));
  CHECK(dims == std::vector<int64_t>{128, 1, 1});
  CHECK(ParseDim3("(7)", &dims));
  CHECK(dims == std::vector<int64_t>{7, 1, 1});
  CHECK_FALSE(ParseDim3("128, 1, 1", &dims));
  CHECK_FALSE(ParseDim3("(a, 1, 1)", &dims));

  auto records = SplitCsv("\"a,b\",\"say \"\"hi\"\"\",c\n\"multi\nline\",2\n\n");
  REQUIRE(records.size() == 2);
  CHECK(records[0] == std::vector<std::string>{"a,b", "say \"hi\"", "c"});
  CHECK(records[1] == std::vector<std::string>{"multi\nline", "2"});
}

// From the recorded CSVs to HardwareMetrics (kernel_model/hardware_metrics.h).
TEST_CASE("Builds SOL and roofline figures from the recorded multi-kernel profile",
          "[hardware_metrics]") {
  absl::StatusOr<NcuCsvReport> report =
      ParseNcuCsv(::kagent::testing::ReadFixture("h200_multi.csv"));
  REQUIRE(report.ok());
  absl::StatusOr<kagent::v1::HardwareMetrics> metrics =
      BuildHardwareMetrics(report->kernels, "ncu", nullptr, nullptr);
  REQUIRE(metrics.ok());
  CHECK(metrics->backend() == "ncu");
  CHECK(metrics->kernels_size() == 3);
  const double total = 12768 + 9760 + 10048;
  CHECK(metrics->aggregate().duration_ns() == Approx(total));
  CHECK(metrics->compute_sol_pct() ==
        Approx((12768 * 5.27 + 9760 * 17.48 + 10048 * 24.07) / total));
  CHECK(metrics->memory_sol_pct() ==
        Approx((12768 * 58.76 + 9760 * 40.63 + 10048 * 35.00) / total));
  CHECK(metrics->roofline_efficiency_pct() == metrics->memory_sol_pct());
  CHECK(metrics->aggregate().values().at("dram__bytes_read.sum") ==
        Approx(33560832.0 + 16786432 + 16839936));
  CHECK(metrics->arithmetic_intensity() == 0);  // no signature
}

TEST_CASE("Applies the arithmetic-intensity roofline against the GPU spec",
          "[hardware_metrics]") {
  absl::StatusOr<NcuCsvReport> report =
      ParseNcuCsv(::kagent::testing::ReadFixture("h200_triton_matvec.csv"));
  REQUIRE(report.ok());
  absl::StatusOr<kagent::v1::GpuSpec> spec = LookupGpuSpec("NVIDIA H200", 0);
  REQUIRE(spec.ok());
  kagent::v1::OpSignature signature;
  const double n = 8192;
  signature.set_flops(2 * n * n);
  signature.set_min_bytes(2 * n * n + 2 * n + 2 * n);
  auto* op = signature.add_ops();
  op->set_op("aten::mv");
  op->add_inputs()->set_dtype("bfloat16");
  absl::StatusOr<kagent::v1::HardwareMetrics> metrics =
      BuildHardwareMetrics(report->kernels, "ncu", &signature, &*spec);
  REQUIRE(metrics.ok());
  const double seconds = 34336e-9;
  CHECK(metrics->arithmetic_intensity() == Approx(signature.flops() / signature.min_bytes()));
  CHECK(metrics->achieved_flops() == Approx(signature.flops() / seconds));
  CHECK(metrics->achieved_bytes_per_second() == Approx(signature.min_bytes() / seconds));
  // Bandwidth-bound: attainable = intensity x 4.8 TB/s, so the bound is achieved / peak BW.
  CHECK(metrics->roofline_bound_pct() ==
        Approx(100.0 * signature.min_bytes() / seconds / 4.8e12));
  CHECK(metrics->roofline_bound_pct() > 50);
  CHECK(metrics->roofline_bound_pct() < 100);
}

TEST_CASE("Launch limits computed from the configuration match ncu's on every H200 fixture") {
  // What the CUPTI backend adds (launch_limits.h), checked on each launch ncu profiled.
  absl::StatusOr<kagent::v1::GpuSpec> h200 = LookupGpuSpec("NVIDIA H200", 0);
  REQUIRE(h200.ok());
  int checked = 0;
  for (const char* fixture :
       {"h200_triton_add.csv", "h200_harness_relu_add.csv", "h200_torch_mm_bf16.csv",
        "h200_multi.csv", "h200_judge_tiny_add.csv", "h200_judge_grid_underfilled.csv",
        "h200_judge_register_limited.csv", "h200_judge_many_tiny.csv",
        "h200_triton_matvec.csv", "h200_triton_matmul_square.csv"}) {
    absl::StatusOr<NcuCsvReport> report = ParseNcuCsv(ReadFixture(fixture));
    REQUIRE(report.ok());
    for (const kagent::v1::KernelMetrics& measured : report->kernels) {
      INFO(fixture << " " << measured.kernel_name());
      kagent::v1::KernelMetrics computed = measured;
      auto& values = *computed.mutable_values();
      for (const char* name : {metric::kLimitRegisters, metric::kLimitSharedMem,
                               metric::kLimitWarps, metric::kLimitBlocks, metric::kWaves}) {
        values.erase(name);
      }
      REQUIRE(AddLaunchLimits(*h200, &computed));
      for (const char* name : {metric::kLimitRegisters, metric::kLimitSharedMem,
                               metric::kLimitWarps, metric::kLimitBlocks}) {
        INFO(name);
        CHECK(values.at(name) == Value(measured, name));
      }
      CHECK(values.at(metric::kWaves) ==
            Approx(Value(measured, metric::kWaves)).margin(0.006).epsilon(0.002));
      ++checked;
    }
  }
  CHECK(checked >= 12);
}

}  // namespace
}  // namespace kagent
