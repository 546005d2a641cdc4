#include "engines/heuristic/rules/sizing.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

int SmVersion(const GpuSpec* gpu) {
  if (gpu == nullptr) return 0;
  absl::string_view arch = gpu->arch();
  if (!absl::ConsumePrefix(&arch, "sm_")) return 0;
  int v = 0;
  size_t i = 0;
  for (; i < arch.size() && i < 4 && absl::ascii_isdigit(arch[i]); ++i) v = v * 10 + (arch[i] - '0');
  return i >= 2 ? v : 0;
}

absl::Status Precondition(const TemplateInfo& t, const std::string& why) {
  return absl::FailedPreconditionError(absl::StrCat("template ", t.id, ": ", why));
}

RowView ViewOf(const RecognizedOp& op) {
  RowView v;
  int rank = op.input_shape.size();
  int d0 = op.dim < 0 ? op.dim + rank : op.dim;
  d0 = Clamp(d0, 0, std::max(0, rank - 1));
  int d1 = std::min(rank, d0 + std::max(1, op.num_dims));
  v.outer = Prod(op.input_shape, 0, d0);
  v.r = Prod(op.input_shape, d0, d1);
  v.inner = Prod(op.input_shape, d1, rank);
  return v;
}

void RowTiles(const RowView& v, int64_t max_r, std::map<std::string, std::string>* p) {
  int64_t bi = v.inner == 1 ? 1 : Clamp(NextPow2(v.inner), 1, 64);
  int64_t br = Clamp(NextPow2(v.r), 1, std::max<int64_t>(1, max_r / bi));
  int64_t tile = br * bi;
  int64_t warps = Clamp(tile / 512, 1, 16);
  warps = NextPow2(warps);
  (*p)["BLOCK_R"] = std::to_string(br);
  (*p)["BLOCK_I"] = std::to_string(bi);
  (*p)["num_warps"] = std::to_string(std::max<int64_t>(warps, v.inner == 1 ? 4 : 2));
}

void SplitRows(const RowView& v, int64_t sms, std::map<std::string, std::string>* p) {
  int64_t br = std::stoll((*p)["BLOCK_R"]), bi = std::stoll((*p)["BLOCK_I"]);
  int64_t programs = v.outer * CeilDiv(v.inner, bi);
  int64_t split = 1;
  if (programs < 2LL * sms) {
    split = Clamp(CeilDiv(4LL * sms, programs), 1, std::max<int64_t>(1, CeilDiv(v.r, 4 * br)));
  }
  (*p)["SPLIT_R"] = std::to_string(std::min<int64_t>(split, 1024));
}

}  // namespace kagent::rules
