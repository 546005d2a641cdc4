#include "common/reflection_v1.h"

#include <set>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include "absl/strings/str_cat.h"

namespace kagent {
namespace {

namespace pb = google::protobuf;
namespace rv1 = grpc::reflection::v1;

// Adds `file` and the dependencies not yet `sent` (dependencies first).
void AddFile(const pb::FileDescriptor* file, std::set<std::string>* sent,
             rv1::FileDescriptorResponse* out) {
  if (!sent->insert(file->name()).second) return;
  for (int i = 0; i < file->dependency_count(); ++i) AddFile(file->dependency(i), sent, out);
  pb::FileDescriptorProto proto;
  file->CopyTo(&proto);
  proto.SerializeToString(out->add_file_descriptor_proto());
}

void SetError(rv1::ServerReflectionResponse* response, grpc::StatusCode code,
              const std::string& message) {
  response->mutable_error_response()->set_error_code(code);
  response->mutable_error_response()->set_error_message(message);
}

// Fills the response to one request.
void Answer(const rv1::ServerReflectionRequest& request, const std::vector<std::string>& services,
            rv1::ServerReflectionResponse* response) {
  std::set<std::string> seen;  // each file once per response
  std::set<std::string>* sent = &seen;
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  response->set_valid_host(request.host());
  *response->mutable_original_request() = request;
  switch (request.message_request_case()) {
    case rv1::ServerReflectionRequest::kListServices:
      for (const std::string& name : services) {
        response->mutable_list_services_response()->add_service()->set_name(name);
      }
      return;
    case rv1::ServerReflectionRequest::kFileByFilename: {
      const pb::FileDescriptor* f = pool->FindFileByName(request.file_by_filename());
      if (f == nullptr) {
        return SetError(response, grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("file not found: ", request.file_by_filename()));
      }
      return AddFile(f, sent, response->mutable_file_descriptor_response());
    }
    case rv1::ServerReflectionRequest::kFileContainingSymbol: {
      const pb::FileDescriptor* f = pool->FindFileContainingSymbol(request.file_containing_symbol());
      if (f == nullptr) {
        return SetError(response, grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("symbol not found: ", request.file_containing_symbol()));
      }
      return AddFile(f, sent, response->mutable_file_descriptor_response());
    }
    case rv1::ServerReflectionRequest::kFileContainingExtension: {
      const rv1::ExtensionRequest& e = request.file_containing_extension();
      const pb::Descriptor* type = pool->FindMessageTypeByName(e.containing_type());
      const pb::FieldDescriptor* ext =
          type ? pool->FindExtensionByNumber(type, e.extension_number()) : nullptr;
      if (ext == nullptr) {
        return SetError(response, grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("extension not found: ", e.containing_type(), " ",
                                     e.extension_number()));
      }
      return AddFile(ext->file(), sent, response->mutable_file_descriptor_response());
    }
    case rv1::ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const pb::Descriptor* type = pool->FindMessageTypeByName(request.all_extension_numbers_of_type());
      if (type == nullptr) {
        return SetError(response, grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("type not found: ", request.all_extension_numbers_of_type()));
      }
      std::vector<const pb::FieldDescriptor*> exts;
      pool->FindAllExtensions(type, &exts);
      auto* out = response->mutable_all_extension_numbers_response();
      out->set_base_type_name(type->full_name());
      for (const pb::FieldDescriptor* f : exts) out->add_extension_number(f->number());
      return;
    }
    case rv1::ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      break;
  }
  SetError(response, grpc::StatusCode::UNIMPLEMENTED, "the request sets no message_request");
}

}  // namespace

grpc::Status ReflectionV1Service::ServerReflectionInfo(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<rv1::ServerReflectionResponse, rv1::ServerReflectionRequest>* stream) {
  rv1::ServerReflectionRequest request;
  while (!context->IsCancelled() && stream->Read(&request)) {
    rv1::ServerReflectionResponse response;
    Answer(request, services_, &response);
    if (!stream->Write(response)) break;
  }
  return grpc::Status::OK;
}

}  // namespace kagent
