#include "services/coordinator/loop_services.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/llm/usage_status.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent {

absl::StatusOr<std::unique_ptr<GrpcLoopServices>> GrpcLoopServices::Create(
    const LoopServiceAddresses& a, const ChannelOptions& channel_options,
    std::string internal_token, absl::Duration timeout, absl::Duration generate_timeout) {
  std::unique_ptr<GrpcLoopServices> s(new GrpcLoopServices());
  KAGENT_ASSIGN_OR_RETURN(auto judge, MakeChannel(a.judge, channel_options));
  KAGENT_ASSIGN_OR_RETURN(auto analyzer, MakeChannel(a.analyzer, channel_options));
  KAGENT_ASSIGN_OR_RETURN(auto orch, MakeChannel(a.orchestrator, channel_options));
  KAGENT_ASSIGN_OR_RETURN(auto mgr, MakeChannel(a.optimization_manager, channel_options));
  s->judge_ = v1::JudgeService::NewStub(judge);
  s->analyzer_ = v1::AnalyzerService::NewStub(analyzer);
  s->orchestrator_ = v1::OrchestratorService::NewStub(orch);
  s->manager_ = v1::OptimizationManagerService::NewStub(mgr);
  s->token_ = std::move(internal_token);
  s->timeout_ = timeout;
  s->generate_timeout_ = generate_timeout;
  return s;
}

template <typename F>
absl::Status GrpcLoopServices::Call(const char* what, absl::Duration timeout,
                                    CancelToken* cancel, F rpc) {
  CallOptions opts;
  opts.timeout = timeout;
  opts.token = token_;
  opts.tenant = CurrentLogContext().tenant;
  opts.request_id = CurrentLogContext().request_id;
  opts.wait_for_ready = true;  // ride out a service restarting within the deadline
  auto ctx = MakeClientContext(opts);
  if (cancel != nullptr && !cancel->Register(ctx.get())) {
    return absl::CancelledError("job cancelled");
  }
  grpc::Status s = rpc(ctx.get());
  if (cancel != nullptr) cancel->Unregister(ctx.get());
  absl::Status st = FromGrpcStatus(s);
  if (!st.ok()) return absl::Status(st.code(), absl::StrCat(what, ": ", st.message()));
  return st;
}

absl::StatusOr<v1::DiagnoseResponse> GrpcLoopServices::Diagnose(const v1::DiagnoseRequest& r,
                                                                CancelToken* cancel) {
  v1::DiagnoseResponse out;
  KAGENT_RETURN_IF_ERROR(Call("judge", timeout_, cancel, [&](grpc::ClientContext* c) {
    return judge_->Diagnose(c, r, &out);
  }));
  return out;
}

absl::StatusOr<v1::PrescribeResponse> GrpcLoopServices::Prescribe(const v1::PrescribeRequest& r,
                                                                  CancelToken* cancel) {
  v1::PrescribeResponse out;
  KAGENT_RETURN_IF_ERROR(Call("analyzer", timeout_, cancel, [&](grpc::ClientContext* c) {
    return analyzer_->Prescribe(c, r, &out);
  }));
  return out;
}

absl::StatusOr<v1::PlanRoundResponse> GrpcLoopServices::PlanRound(const v1::PlanRoundRequest& r,
                                                                  CancelToken* cancel) {
  v1::PlanRoundResponse out;
  KAGENT_RETURN_IF_ERROR(Call("orchestrator", timeout_, cancel, [&](grpc::ClientContext* c) {
    return orchestrator_->PlanRound(c, r, &out);
  }));
  return out;
}

absl::StatusOr<v1::ReflectResponse> GrpcLoopServices::Reflect(const v1::ReflectRequest& r,
                                                              CancelToken* cancel) {
  v1::ReflectResponse out;
  KAGENT_RETURN_IF_ERROR(Call("orchestrator", timeout_, cancel, [&](grpc::ClientContext* c) {
    return orchestrator_->Reflect(c, r, &out);
  }));
  return out;
}

absl::StatusOr<v1::GenerateResponse> GrpcLoopServices::Generate(const v1::GenerateRequest& r,
                                                                CancelToken* cancel) {
  v1::GenerateResponse out;
  // A failed Generate (RESOURCE_EXHAUSTED when the LLM budget ran out) has no response;
  // the LLM usage it had comes in a trailer and is attached to the returned status.
  std::optional<v1::LlmUsage> usage;
  absl::Status s = Call("optimization manager", generate_timeout_, cancel,
                        [&](grpc::ClientContext* c) {
                          grpc::Status g = manager_->Generate(c, r, &out);
                          usage = llm::LlmUsageOf(
                              llm::AttachLlmUsageFromTrailer(*c, FromGrpcStatus(g)));
                          return g;
                        });
  if (!s.ok()) {
    if (usage.has_value()) llm::AttachLlmUsage(*usage, &s);
    return s;
  }
  return out;
}

}  // namespace kagent
