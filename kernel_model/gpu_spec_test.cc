#include "kernel_model/gpu_spec.h"

#include <catch2/catch.hpp>

#include "kernel_model/testing/gpu_info.h"

namespace kagent {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

TEST_CASE("Known GPUs map to their datasheet entries", "[gpu_spec]") {
  struct Case {
    const char* device_name;
    int64_t memory;
    const char* entry;
    double dram;
    double bf16;
  };
  for (const Case& c : {
           Case{"NVIDIA A100-SXM4-80GB", 80 * kGiB, "NVIDIA A100-SXM4-80GB", 2039e9, 312e12},
           Case{"NVIDIA A100-SXM4-40GB", 40 * kGiB, "NVIDIA A100-SXM4-40GB", 1555e9, 312e12},
           Case{"NVIDIA A100-PCIE-40GB", 40 * kGiB, "NVIDIA A100-PCIE-40GB", 1555e9, 312e12},
           Case{"NVIDIA A100 80GB PCIe", 80 * kGiB, "NVIDIA A100 80GB PCIe", 1935e9, 312e12},
           Case{"NVIDIA H100 80GB HBM3", 80 * kGiB, "NVIDIA H100 SXM5", 3.35e12, 989.5e12},
           Case{"NVIDIA H100 PCIe", 80 * kGiB, "NVIDIA H100 PCIe", 2.0e12, 756e12},
           Case{"NVIDIA H100 NVL", 94 * kGiB, "NVIDIA H100 NVL", 3.9e12, 835.5e12},
           Case{"NVIDIA H200", 141 * kGiB, "NVIDIA H200", 4.8e12, 989.5e12},
           Case{"NVIDIA H200 NVL", 141 * kGiB, "NVIDIA H200 NVL", 4.8e12, 835.5e12},
           Case{"NVIDIA B200", 180 * kGiB, "NVIDIA B200", 8.0e12, 2250e12},
           Case{"NVIDIA L40S", 48 * kGiB, "NVIDIA L40S", 864e9, 362.05e12},
       }) {
    INFO(c.device_name);
    absl::StatusOr<kagent::v1::GpuSpec> spec = LookupGpuSpec(c.device_name, c.memory);
    REQUIRE(spec.ok());
    CHECK(spec->name() == c.entry);
    CHECK(spec->peak_dram_bytes_per_second() == Approx(c.dram));
    CHECK(spec->peak_flops().at("bf16") == Approx(c.bf16));
    CHECK(spec->peak_flops().count("fp32") == 1);
    CHECK(spec->max_threads_per_sm() > 0);
    CHECK(spec->max_blocks_per_sm() > 0);
    CHECK(spec->registers_per_sm() == 65536);
    CHECK(spec->shared_memory_per_sm_bytes() > 0);
    CHECK_FALSE(spec->measured());
  }
  CHECK(LookupGpuSpec("NVIDIA H200", 0)->arch() == "sm_90");
  CHECK(LookupGpuSpec("NVIDIA H200", 0)->peak_flops().at("fp8") == Approx(1979e12));
  CHECK(LookupGpuSpec("NVIDIA A100-SXM4-80GB", 0)->peak_flops().count("fp8") == 0);
  CHECK(LookupGpuSpec("Tesla T4", 0).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("The detected figures override the nominal ones", "[gpu_spec]") {
  absl::StatusOr<GpuInfo> info = ParseGpuInfoJson(::kagent::testing::kH200GpuInfo);
  REQUIRE(info.ok());
  CHECK(info->name == "NVIDIA H200");
  CHECK(info->major == 9);
  CHECK(info->minor == 0);
  absl::StatusOr<kagent::v1::GpuSpec> spec = GpuSpecFor(*info);
  REQUIRE(spec.ok());
  CHECK(spec->name() == "NVIDIA H200");
  CHECK(spec->memory_bytes() == 150754820096);
  CHECK(spec->sm_clock_mhz() == 1980);
  CHECK(spec->mem_clock_mhz() == 3201);
  CHECK(spec->sm_count() == 132);
  CHECK(spec->peak_dram_bytes_per_second() == Approx(4.8e12));
}

TEST_CASE("The brief's gpuinfo spelling (kHz, total_memory_bytes, major/minor) parses",
          "[gpu_spec]") {
  absl::StatusOr<GpuInfo> info = ParseGpuInfoJson(
      R"({"name":"NVIDIA L40S","sm_count":142,"total_memory_bytes":48000000000,)"
      R"("l2_bytes":100663296,"sm_clock_khz":2520000,"mem_clock_khz":9001000,)"
      R"("major":8,"minor":9})");
  REQUIRE(info.ok());
  CHECK(info->memory_bytes == 48000000000);
  CHECK(info->sm_clock_mhz == Approx(2520));
  CHECK(info->major * 10 + info->minor == 89);
  CHECK(GpuSpecFor(*info)->arch() == "sm_89");
}

TEST_CASE("An unknown GPU uses measured ceilings, never a guess", "[gpu_spec]") {
  absl::StatusOr<GpuInfo> info = ParseGpuInfoJson(
      R"({"name":"NVIDIA RTX 9999","arch":"sm_120","sm_count":10,"memory_bytes":1000})");
  REQUIRE(info.ok());
  absl::StatusOr<kagent::v1::GpuSpec> unmeasured = GpuSpecFor(*info);
  REQUIRE_FALSE(unmeasured.ok());
  CHECK(unmeasured.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(unmeasured.status().message().find("--measure-ceilings") != absl::string_view::npos);

  info = ParseGpuInfoJson(
      R"({"name":"NVIDIA RTX 9999","arch":"sm_120","sm_count":10,"memory_bytes":1000,)"
      R"("measured":true,"peak_dram_bytes_per_second":1.5e12,"peak_flops":{"bf16":2e14}})");
  REQUIRE(info.ok());
  absl::StatusOr<kagent::v1::GpuSpec> measured = GpuSpecFor(*info);
  REQUIRE(measured.ok());
  CHECK(measured->measured());
  CHECK(measured->arch() == "sm_120");
  CHECK(measured->peak_dram_bytes_per_second() == 1.5e12);
  CHECK(measured->peak_flops().at("bf16") == 2e14);
  CHECK(measured->sm_count() == 10);
}

TEST_CASE("Bad gpuinfo output is rejected", "[gpu_spec]") {
  CHECK(ParseGpuInfoJson("not json").status().code() == absl::StatusCode::kInvalidArgument);
  absl::Status no_gpu =
      ParseGpuInfoJson(R"({"ok":false,"reason":"no CUDA device visible","name":""})").status();
  CHECK(no_gpu.code() == absl::StatusCode::kInvalidArgument);
  CHECK(no_gpu.message().find("no CUDA device visible") != absl::string_view::npos);
}

}  // namespace
}  // namespace kagent
