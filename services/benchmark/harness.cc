#include "services/benchmark/harness.h"

namespace kagent {

std::map<std::string, std::string> HarnessEnvironment(const std::string& harness_dir,
                                                      const std::string& device,
                                                      const std::string& cuda_visible_devices,
                                                      const std::string& cupti_lib) {
  std::map<std::string, std::string> env;
  if (!harness_dir.empty()) env["PYTHONPATH"] = harness_dir;
  env["PYTHONUNBUFFERED"] = "1";
  if (device == "cpu") env["TRITON_INTERPRET"] = "1";
  if (!cuda_visible_devices.empty()) env["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices;
  if (!cupti_lib.empty()) env["KAGENT_CUPTI_LIB"] = cupti_lib;
  return env;
}

}  // namespace kagent
