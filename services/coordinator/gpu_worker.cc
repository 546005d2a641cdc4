#include "services/coordinator/gpu_worker.h"

#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent {

namespace {

class GrpcGpuWorker : public GpuWorker {
 public:
  GrpcGpuWorker(std::shared_ptr<grpc::Channel> channel, std::string token)
      : bench_(v1::BenchmarkService::NewStub(channel)),
        prof_(v1::ProfilerService::NewStub(channel)),
        token_(std::move(token)) {}

  absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& request,
                                              absl::Duration timeout,
                                              CancelToken* cancel) override {
    v1::MeasureResponse response;
    KAGENT_RETURN_IF_ERROR(Call(timeout, cancel, [&](grpc::ClientContext* ctx) {
      return bench_->Measure(ctx, request, &response);
    }));
    return response;
  }

  absl::StatusOr<v1::ProfileResponse> Profile(const v1::ProfileRequest& request,
                                              absl::Duration timeout,
                                              CancelToken* cancel) override {
    v1::ProfileResponse response;
    KAGENT_RETURN_IF_ERROR(Call(timeout, cancel, [&](grpc::ClientContext* ctx) {
      return prof_->Profile(ctx, request, &response);
    }));
    return response;
  }

  absl::StatusOr<v1::ScreenResponse> Screen(const v1::ScreenRequest& request,
                                            absl::Duration timeout,
                                            CancelToken* cancel) override {
    v1::ScreenResponse response;
    KAGENT_RETURN_IF_ERROR(Call(timeout, cancel, [&](grpc::ClientContext* ctx) {
      return bench_->Screen(ctx, request, &response);
    }));
    return response;
  }

  absl::StatusOr<v1::ReleaseJobResponse> ReleaseJob(const v1::ReleaseJobRequest& request,
                                                    absl::Duration timeout) override {
    v1::ReleaseJobResponse response;
    KAGENT_RETURN_IF_ERROR(Call(timeout, nullptr, [&](grpc::ClientContext* ctx) {
      return bench_->ReleaseJob(ctx, request, &response);
    }));
    return response;
  }

  absl::StatusOr<v1::DescribeWorkerResponse> Describe(absl::Duration timeout) override {
    v1::DescribeWorkerResponse response;
    KAGENT_RETURN_IF_ERROR(Call(timeout, nullptr, [&](grpc::ClientContext* ctx) {
      return bench_->DescribeWorker(ctx, v1::DescribeWorkerRequest(), &response);
    }));
    return response;
  }

 private:
  template <typename F>
  absl::Status Call(absl::Duration timeout, CancelToken* cancel, F rpc) {
    CallOptions opts;
    opts.timeout = timeout;
    opts.token = token_;
    opts.request_id = CurrentLogContext().request_id;
    auto ctx = MakeClientContext(opts);
    if (cancel != nullptr && !cancel->Register(ctx.get())) {
      return absl::CancelledError("job cancelled");
    }
    grpc::Status s = rpc(ctx.get());
    if (cancel != nullptr) cancel->Unregister(ctx.get());
    return FromGrpcStatus(s);
  }

  std::unique_ptr<v1::BenchmarkService::Stub> bench_;
  std::unique_ptr<v1::ProfilerService::Stub> prof_;
  std::string token_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GpuWorker>> GrpcGpuWorkerFactory::Connect(
    const std::string& address) {
  KAGENT_ASSIGN_OR_RETURN(auto channel, MakeChannel(address, channel_options_));
  return std::unique_ptr<GpuWorker>(new GrpcGpuWorker(std::move(channel), token_));
}

}  // namespace kagent
