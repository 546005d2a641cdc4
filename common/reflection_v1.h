// gRPC server reflection v1 (grpc.reflection.v1.ServerReflection), served next to the
// v1alpha service that grpc++'s reflection plugin provides (Debian's grpc++ 1.51 ships
// only v1alpha). Both answer from the same place: the process's generated descriptor
// pool (google::protobuf::DescriptorPool::generated_pool()).
//
// list_services answers `services` as given; file_by_filename, file_containing_symbol
// and file_containing_extension answer the file with its transitive dependencies, each
// file once per response (as grpc++'s v1alpha does); all_extension_numbers_of_type lists the pool's
// known extensions. Unknown names are NOT_FOUND error responses on the stream.
//
// Thread-safe (read-only after construction).
#ifndef KAGENT_COMMON_REFLECTION_V1_H_
#define KAGENT_COMMON_REFLECTION_V1_H_

#include <string>
#include <vector>

#include "grpc/reflection/v1/reflection.grpc.pb.h"

namespace kagent {

class ReflectionV1Service final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // `services`: the full names list_services reports.
  explicit ReflectionV1Service(std::vector<std::string> services)
      : services_(std::move(services)) {}

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse,
                               grpc::reflection::v1::ServerReflectionRequest>* stream) override;

 private:
  std::vector<std::string> services_;
};

}  // namespace kagent

#endif  // KAGENT_COMMON_REFLECTION_V1_H_
