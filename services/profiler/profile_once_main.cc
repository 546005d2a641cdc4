// kagent_profile_once: runs one ProfileRequest through ProfilerServiceImpl on this
// machine's GPU (no server) and prints the ProfileResponse as JSON. For checking the
// real path (harness + ncu or CUPTI) on a GPU machine and recording fixtures.
//
//   kagent_profile_once --problem P.py --kernel K.py [--backend auto|ncu|cupti]
//       [--cupti-lib libkagent_cupti.so] [--pythonpath DIR] [--python PY] [--gpu N]
//       [--timeout SECONDS] [--raw-out FILE]
#include <cstdlib>
#include <iostream>
#include <string>


#include "common/file_io.h"
#include "common/proto_json.h"
#include "services/profiler/profiler_service.h"

int main(int argc, char** argv) {
  kagent::ProfilerServiceOptions options;
  kagent::v1::ProfileRequest request;
  std::string problem_path, kernel_path, raw_out;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    if (flag == "--problem") problem_path = value;
    else if (flag == "--kernel") kernel_path = value;
    else if (flag == "--cupti-lib") options.cupti_library = value;
    else if (flag == "--pythonpath") options.harness_pythonpath = value;
    else if (flag == "--python") options.python = value;
    else if (flag == "--ncu") options.ncu_path = value;
    else if (flag == "--gpu") options.gpu_index = std::atoi(value.c_str());
    else if (flag == "--timeout") request.set_timeout_seconds(std::atof(value.c_str()));
    else if (flag == "--raw-out") raw_out = value;
    else if (flag == "--backend") {
      absl::StatusOr<kagent::ProfilerServiceOptions::Backend> backend =
          kagent::ParseProfilerBackend(value);
      if (!backend.ok()) {
        std::cerr << "kagent_profile_once: " << backend.status().message() << "\n";
        return 2;
      }
      options.backend = *backend;
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (problem_path.empty() || kernel_path.empty()) {
    std::cerr << "usage: kagent_profile_once --problem P.py --kernel K.py [...]\n";
    return 2;
  }
  absl::StatusOr<std::string> problem = kagent::ReadFile(problem_path);
  absl::StatusOr<std::string> kernel = kagent::ReadFile(kernel_path);
  for (const auto* text : {&problem, &kernel}) {
    if (!text->ok()) {
      std::cerr << "kagent_profile_once: " << text->status().message() << "\n";
      return 2;
    }
  }
  request.mutable_problem()->set_name(problem_path);
  request.mutable_problem()->set_source(*problem);
  request.mutable_kernel()->set_language(kagent::v1::KERNEL_LANGUAGE_TRITON);
  request.mutable_kernel()->set_source(*kernel);
  absl::StatusOr<std::optional<kagent::NcuUser>> user = kagent::NcuUserForSandbox();
  if (!user.ok()) {
    std::cerr << "kagent_profile_once: " << user.status().message() << "\n";
    return 2;
  }
  options.ncu_user = *user;
  kagent::ProfilerServiceImpl service(options, nullptr);
  absl::StatusOr<kagent::v1::ProfileResponse> response = service.RunProfile(request, nullptr);
  if (!response.ok()) {
    std::cerr << response.status().ToString() << "\n";
    return 1;
  }
  if (!raw_out.empty()) {
    absl::Status written = kagent::WriteFileAtomically(raw_out, response->metrics().raw_csv());
    if (!written.ok()) {
      std::cerr << "kagent_profile_once: " << written.message() << "\n";
      return 1;
    }
  }
  response->mutable_metrics()->clear_raw_csv();
  std::cout << kagent::ToPrettyJson(*response);
  return 0;
}
