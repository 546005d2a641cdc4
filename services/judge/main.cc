// kagent-judge: roofline diagnosis of profiled kernels.
#include "common/service_main.h"
#include "services/judge/judge_setup.h"

int main(int argc, char** argv) {
  kagent::JudgeServerOptions options;
  return kagent::ServiceMain(
      argc, argv, "kagent-judge", [&](kagent::OptionSet& o) { options.Register(o); },
      [&](kagent::ServiceContext& ctx) { return kagent::SetUpJudge(options, ctx); });
}
