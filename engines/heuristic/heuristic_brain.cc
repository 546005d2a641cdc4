#include "engines/heuristic/heuristic_brain.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/heuristic/blind_move.h"
#include "engines/heuristic/knob_tuner.h"
#include "engines/heuristic/template_rules.h"

namespace kagent {

using kagent::v1::BottleneckCategory;
using kagent::v1::GpuSpec;

namespace {

// What a choice knob's new value does (INPUT_PRECISION), or "value changed as prescribed".
std::string ChoiceEffect(const KnobEdit& e) {
  if (e.knob == "INPUT_PRECISION") {
    if (e.new_text == "tf32x3") {
      return "fp32 dots run as three TF32 tensor-core products (about fp32 accuracy)";
    }
    if (e.new_text == "tf32") {
      return "one TF32 product: ~1e-3 relative error, only where the tolerance allows";
    }
    if (e.new_text == "ieee") return "exact fp32 dots on the FMA units";
  }
  return "value changed as prescribed";
}

// An edit's values as "old -> new": the integers, or a choice knob's texts.
std::string EditArrow(const KnobEdit& e) {
  if (e.is_choice()) return absl::StrCat(e.knob, " ", e.old_text, " -> ", e.new_text);
  return absl::StrCat(e.knob, " ", e.old_value, " -> ", e.new_value);
}

// What a knob move should do, with numbers where the op tells them.
std::string KnobEffect(const KnobEdit& e, const RecognizedOp* op, const GpuSpec* gpu) {
  if (e.is_choice()) return absl::StrCat(EditArrow(e), ": ", ChoiceEffect(e));
  const int sms = SmCount(gpu);
  const bool up = e.new_value > e.old_value;
  const std::string arrow = absl::StrCat(EditArrow(e), ": ");
  if (e.knob == "BLOCK_M" && op != nullptr && op->m > 0) {
    int64_t before = CeilDiv(op->m, e.old_value), after = CeilDiv(op->m, e.new_value);
    return absl::StrCat(arrow, "row programs ", before, " -> ", after, " on ", sms, " SMs (",
                        absl::StrFormat("%.2f", double(after) / sms), " per SM); ",
                        up ? "fewer, fatter programs: more reuse of each x/B chunk, less parallelism"
                           : "more parallelism to fill the SMs, each program streams fewer rows");
  }
  if (e.knob == "BLOCK_N" && op != nullptr && op->n > 0) {
    return absl::StrCat(arrow, "column tiles ", CeilDiv(op->n, e.old_value), " -> ",
                        CeilDiv(op->n, e.new_value), up ? "; more A reuse per tile, more registers"
                                                         : "; more programs, less reuse");
  }
  if (absl::StartsWith(e.knob, "SPLIT")) {
    return absl::StrCat(arrow, "parallelism along the reduction x",
                        absl::StrFormat("%.2f", double(e.new_value) / e.old_value),
                        up ? "; fills idle SMs at the cost of a partial-sum pass"
                           : "; less partial-sum traffic, fewer programs");
  }
  if (absl::StartsWith(e.knob, "BLOCK")) {
    return absl::StrCat(arrow, up ? "wider loads and fewer loop iterations per program (registers x"
                                  : "fewer registers per program (x",
                        absl::StrFormat("%.2f", double(e.new_value) / e.old_value),
                        up ? "); better DRAM efficiency when loads were too narrow"
                           : "); relieves register pressure / raises occupancy");
  }
  if (e.knob == "num_warps") {
    return absl::StrCat(arrow, up ? "more warps per program: more loads in flight to hide memory latency"
                                  : "fewer warps: more registers per thread, less scheduling overhead");
  }
  if (e.knob == "num_stages") {
    return absl::StrCat(arrow, up ? "deeper software pipeline: next tiles' loads overlap the math (more shared memory)"
                                  : "shallower pipeline: less shared memory, higher occupancy");
  }
  if (e.knob == "GROUP_M") {
    return absl::StrCat(arrow, "row tiles per swizzle group; changes L2 reuse of shared B tiles");
  }
  return absl::StrCat(arrow, "value changed as prescribed");
}

std::string Effects(const std::vector<KnobEdit>& edits, const RecognizedOp* op,
                    const GpuSpec* gpu, std::vector<std::string>* moves) {
  std::vector<std::string> parts;
  for (const KnobEdit& e : edits) {
    parts.push_back(KnobEffect(e, op, gpu));
    moves->push_back(absl::StrCat(EditArrow(e), " (", e.where,
                                  e.note.empty() ? "" : "; " + e.note, ")"));
  }
  return absl::StrJoin(parts, ". ");
}

std::string WithPrescription(std::string effect, const kagent::v1::Prescription& p) {
  if (!p.expected_effect().empty()) absl::StrAppend(&effect, ". Prescribed: ", p.expected_effect());
  if (p.expected_speedup() > 0) {
    absl::StrAppend(&effect, absl::StrFormat(" (expected x%.2f)", p.expected_speedup()));
  }
  return effect;
}

std::string ResolveTemplateId(const TemplateLibrary& lib, const std::string& id) {
  if (lib.Find(id) != nullptr) return id;
  auto it = TemplateAliases().find(id);
  return it != TemplateAliases().end() ? it->second : id;
}

// Architecture names from the optimization database that mean "this op class's chunked,
// fused template" rather than one template: resolved per op by SelectTemplate, for the
// op classes listed.
const std::map<std::string, std::set<std::string>>& OpAwareAliases() {
  static const auto* m = new std::map<std::string, std::set<std::string>>{
      {"loss_fused_online", {"loss"}},
      {"row_chunked_loop", {"loss", "scan", "reduction", "softmax", "norm"}},
  };
  return *m;
}

// Expected speedups of the brain's own (derived) moves: modest priors, since a derived
// move is a step in the diagnosis's direction, not a prescription with a measured record.
constexpr double kKnobMovePrior = 1.10;
constexpr double kTemplateMovePrior = 1.25;

// Why a prescribed move could not be made, in a few words for the candidate's record.
std::string FallbackReason(const absl::Status& status) {
  absl::string_view msg = status.message();
  if (absl::IsNotFound(status) && absl::ConsumePrefix(&msg, "knob ")) {
    return absl::StrCat("the kernel has no ", msg.substr(0, msg.find(' ')), " knob");
  }
  if (absl::IsNotFound(status) && absl::ConsumePrefix(&msg, "no template ")) {
    return absl::StrCat("the library has no template ", msg.substr(0, msg.find(';')));
  }
  return std::string(status.message());
}

}  // namespace

HeuristicBrain::HeuristicBrain(std::shared_ptr<const TemplateLibrary> library,
                               HeuristicBrainOptions options)
    : library_(std::move(library)), options_(options) {
  KAGENT_CHECK(library_ != nullptr) << "HeuristicBrain needs a template library";
}

absl::StatusOr<BrainResult> HeuristicBrain::RenderFor(const std::string& id,
                                                      const kagent::v1::OpSignature& signature,
                                                      const GpuSpec* gpu) const {
  const TemplateInfo* t = library_->Find(ResolveTemplateId(*library_, id));
  auto op_aware = OpAwareAliases().find(id);
  if (t == nullptr && op_aware != OpAwareAliases().end()) {
    absl::StatusOr<RecognizedOp> op = RecognizeOp(signature);
    if (op.ok() && op_aware->second.count(op->op_class)) {
      absl::StatusOr<std::string> selected = SelectTemplate(*op, gpu);
      if (selected.ok()) t = library_->Find(*selected);
    }
  }
  if (t == nullptr) {
    return absl::NotFoundError(absl::StrCat("no template '", id, "'; known: ",
                                            absl::StrJoin(library_->Ids(), ", ")));
  }
  KAGENT_ASSIGN_OR_RETURN(RecognizedOp op, RecognizeOp(signature));
  KAGENT_ASSIGN_OR_RETURN(auto params, TemplateParamsFor(*t, op, gpu));
  KAGENT_ASSIGN_OR_RETURN(std::string source, library_->Render(t->id, params));
  BrainResult r;
  r.kernel.set_language(t->language == "cuda" ? kagent::v1::KERNEL_LANGUAGE_CUDA
                                               : kagent::v1::KERNEL_LANGUAGE_TRITON);
  r.kernel.set_source(std::move(source));
  r.kernel.set_origin(absl::StrCat("template:", t->id));
  std::vector<std::string> kv;
  for (const auto& [k, v] : params) kv.push_back(absl::StrCat(k, "=", v));
  r.moves.push_back(absl::StrCat("render ", t->id, " {", absl::StrJoin(kv, ", "), "}"));
  r.expected_effect = absl::StrCat(t->title, " for ", DescribeOp(op), ": ", t->architecture);
  return r;
}

absl::StatusOr<BrainResult> HeuristicBrain::FirstKernel(const FirstKernelRequest& request) {
  if (request.signature == nullptr) {
    return absl::InvalidArgumentError("FirstKernel needs the problem's op signature");
  }
  KAGENT_ASSIGN_OR_RETURN(RecognizedOp op, RecognizeOp(*request.signature));
  KAGENT_ASSIGN_OR_RETURN(std::string id, SelectTemplate(op, request.gpu));
  KLOG(INFO).With("template", id) << "first kernel for " << DescribeOp(op);
  KAGENT_ASSIGN_OR_RETURN(BrainResult r, RenderFor(id, *request.signature, request.gpu));
  AddVariants(nullptr, request.signature, request.gpu, &r);
  return r;
}

void HeuristicBrain::AddVariants(const kagent::v1::KernelSource* parent,
                                 const kagent::v1::OpSignature* signature, const GpuSpec* gpu,
                                 BrainResult* r) const {
  // Only the library's own text: a kernel that is not byte for byte one of its renders
  // (a user's kernel, edited or not) gets no variants.
  absl::StatusOr<RenderMatch> kernel = library_->MatchRender(r->kernel.source());
  if (!kernel.ok()) return;
  const TemplateInfo& t = *kernel->info;
  r->kernel.set_origin(absl::StrCat("template:", t.id));
  // The screen takes Triton kernels only (services/benchmark/validation.cc): a CUDA
  // template's renders would each need their own load_inline build.
  if (options_.max_variants <= 0 || t.language != "triton") return;
  // Where the move started: the parent when it renders the same template (a knob move),
  // else the rules' params for the op (a first kernel, or a switch and its knob changes),
  // whose tiles then vary too.
  std::optional<std::map<std::string, std::string>> from;
  bool tiles = true;
  if (parent != nullptr) {
    absl::StatusOr<RenderMatch> before = library_->MatchRender(parent->source());
    if (before.ok() && before->info == &t) {
      from = std::move(before->params);
      tiles = false;
    }
  }
  if (!from.has_value() && signature != nullptr && !signature->ops().empty()) {
    absl::StatusOr<RecognizedOp> op = RecognizeOp(*signature);
    if (op.ok()) {
      auto rules = TemplateParamsFor(t, *op, gpu);
      if (rules.ok()) from = *std::move(rules);
    }
  }
  std::vector<std::string> exclude;
  if (parent != nullptr) exclude.push_back(parent->source());
  for (TemplateVariant& v : TemplateVariants(*library_, t, kernel->params,
                                             from.has_value() ? &*from : nullptr, tiles,
                                             exclude, options_.max_variants)) {
    kagent::v1::KernelSource& k = r->variants.emplace_back();
    k.set_language(r->kernel.language());
    k.set_source(std::move(v.source));
    k.set_origin(r->kernel.origin());
  }
}

absl::StatusOr<BrainResult> HeuristicBrain::SwitchTemplate(const FixRequest& request,
                                                           const std::string& id) const {
  if (request.signature == nullptr || request.signature->ops().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("template switch to ", id, " needs the problem's op signature"));
  }
  KAGENT_ASSIGN_OR_RETURN(BrainResult r, RenderFor(id, *request.signature, request.gpu));
  const std::string resolved(absl::StripPrefix(r.kernel.origin(), "template:"));
  if (request.parent->origin() == absl::StrCat("template:", resolved) &&
      request.prescription->knob_changes().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the parent already is template ", resolved));
  }
  std::string effect = absl::StrCat("architecture switch ",
                                    request.parent->origin().empty() ? "parent" : request.parent->origin(),
                                    " -> ", resolved, ": ", r.expected_effect);
  // Knob changes that exist in the new kernel apply on top of its defaults.
  std::string source = r.kernel.source();
  for (const auto& [knob, change] : request.prescription->knob_changes()) {
    auto tuned = ApplyKnobChanges(source, {{knob, change}}, library_.get());
    if (!tuned.ok()) {
      r.moves.push_back(absl::StrCat("skip ", knob, " ", change, ": ", tuned.status().message()));
      continue;
    }
    source = tuned->source;
    absl::StrAppend(&effect, ". ", Effects(tuned->edits, nullptr, request.gpu, &r.moves));
  }
  r.kernel.set_source(source);
  r.expected_effect = WithPrescription(effect, *request.prescription);
  return r;
}

absl::StatusOr<BrainResult> HeuristicBrain::TuneKnobs(
    const FixRequest& request, const std::map<std::string, std::string>& changes,
    const std::string& why) const {
  KAGENT_ASSIGN_OR_RETURN(TuneResult tuned,
                          ApplyKnobChanges(request.parent->source(), changes, library_.get()));
  std::optional<RecognizedOp> op;
  if (request.signature != nullptr && !request.signature->ops().empty()) {
    auto r = RecognizeOp(*request.signature);
    if (r.ok()) op = *r;
  }
  BrainResult result;
  result.kernel.set_language(request.parent->language() == kagent::v1::KERNEL_LANGUAGE_UNSPECIFIED
                                 ? kagent::v1::KERNEL_LANGUAGE_TRITON
                                 : request.parent->language());
  result.kernel.set_source(tuned.source);
  result.kernel.set_origin(absl::StrCat("brain:heuristic"));
  std::string effect = Effects(tuned.edits, op ? &*op : nullptr, request.gpu, &result.moves);
  if (!why.empty()) effect = absl::StrCat(why, ": ", effect);
  result.expected_effect = WithPrescription(effect, *request.prescription);
  return result;
}

absl::StatusOr<BrainResult> HeuristicBrain::DerivedMove(const FixRequest& request,
                                                        int alternative, bool wrap) const {
  using C = BottleneckCategory;
  C category = request.report != nullptr ? request.report->primary()
                                         : kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED;
  std::string limiter = request.report != nullptr ? request.report->limiter() : "";
  std::optional<RecognizedOp> op;
  if (request.signature != nullptr && !request.signature->ops().empty()) {
    auto r = RecognizeOp(*request.signature);
    if (r.ok()) op = *r;
  }
  const std::string cls = op ? op->op_class : "";
  struct Move {
    std::map<std::string, std::string> knobs;
    std::string template_id;
    std::string why;
  };
  std::vector<Move> moves;
  switch (category) {
    case kagent::v1::BOTTLENECK_AT_ROOFLINE:
      return absl::FailedPreconditionError("the kernel is at the roofline: no move expected to help");
    case kagent::v1::BOTTLENECK_GRID_UNDERFILLED:
    case kagent::v1::BOTTLENECK_LATENCY_BOUND:
      moves = {{{{"SPLIT_K", "x2"}}, "", "grid underfilled: split the reduction"},
               {{{"BLOCK_M", "/2"}}, "", "grid underfilled: fewer rows per program"},
               {{}, cls == "matvec" ? "matvec_split_k" : cls == "gemm" ? "gemm_split_k" : "",
                "grid underfilled: split-K architecture"},
               {{{"SPLIT_R", "x2"}}, "", "grid underfilled: split the reduced dim"},
               {{{"SPLIT_N", "x2"}}, "", "grid underfilled: more partial sums"},
               {{{"num_warps", "x2"}}, "", "latency bound: more loads in flight"},
               {{{"num_stages", "+1"}}, "", "latency bound: deeper pipeline"}};
      break;
    case kagent::v1::BOTTLENECK_MEMORY_BOUND:
      moves = {{{}, cls == "matvec" && !absl::StrContains(request.parent->origin(), "matvec_row_per_program")
                        ? "matvec_row_per_program" : "",
                "memory bound matvec: one streaming row per program"},
               {{{"BLOCK_K", "x2"}}, "", "memory bound: wider loads per iteration"},
               {{{"BLOCK", "x2"}}, "", "memory bound: more bytes per program"},
               {{{"BLOCK_R", "x2"}}, "", "memory bound: wider loads per iteration"},
               {{{"BLOCK_W", "x2"}}, "", "memory bound: wider output rows per program"},
               {{{"num_stages", "+1"}}, "", "memory bound: more loads in flight"},
               {{{"num_warps", "x2"}}, "", "memory bound: more loads in flight"}};
      break;
    case kagent::v1::BOTTLENECK_COMPUTE_BOUND:
      moves = {{{{"BLOCK_N", "x2"}}, "", "compute bound: larger tiles, more reuse per load"},
               {{{"BLOCK_M", "x2"}}, "", "compute bound: larger tiles"},
               {{{"num_stages", "+1"}}, "", "compute bound: keep the tensor cores fed"},
               {{{"num_warps", "x2"}}, "", "compute bound: more warps per tile"}};
      break;
    case kagent::v1::BOTTLENECK_OCCUPANCY_LIMITED:
      if (limiter == "shared_memory") {
        moves = {{{{"num_stages", "-1"}}, "", "shared memory limits occupancy: fewer stages"},
                 {{{"BLOCK_K", "/2"}}, "", "shared memory limits occupancy: smaller K tiles"}};
      } else {
        moves = {{{{"BLOCK_K", "/2"}}, "", "registers limit occupancy: smaller tiles"},
                 {{{"BLOCK_M", "/2"}}, "", "registers limit occupancy: fewer rows per program"},
                 {{{"BLOCK_R", "/2"}}, "", "registers limit occupancy: smaller chunks"},
                 {{{"num_warps", "x2"}}, "", "spread the tile over more threads"}};
      }
      break;
    case kagent::v1::BOTTLENECK_LAUNCH_BOUND:
      moves = {{{{"BLOCK", "x2"}}, "", "launch bound: more work per program"},
               {{{"BLOCK_M", "x2"}}, "", "launch bound: more work per program"},
               {{{"BLOCK_R", "x2"}}, "", "launch bound: more work per program"},
               {{{"BLOCK_H", "x2"}}, "", "launch bound: more work per program"}};
      break;
    default:
      moves = {{{{"num_warps", "x2"}}, "", "no diagnosis: more loads in flight"},
               {{{"BLOCK_K", "x2"}}, "", "no diagnosis: wider loads"},
               {{{"num_stages", "+1"}}, "", "no diagnosis: deeper pipeline"},
               {{{"BLOCK_M", "/2"}}, "", "no diagnosis: more programs"}};
  }
  // The applicable moves in order; `alternative` picks among them.
  std::vector<BrainResult> applicable;
  std::vector<std::string> skipped;
  for (const Move& m : moves) {
    absl::StatusOr<BrainResult> r = absl::UnknownError("");
    if (!m.template_id.empty()) {
      r = SwitchTemplate(request, m.template_id);
      if (r.ok()) {
        r->expected_effect = absl::StrCat(m.why, ": ", r->expected_effect);
        r->expected_speedup = kTemplateMovePrior;
      }
    } else if (!m.knobs.empty()) {
      r = TuneKnobs(request, m.knobs, m.why);
      if (r.ok()) r->expected_speedup = kKnobMovePrior;
    } else {
      continue;
    }
    if (r.ok()) {
      applicable.push_back(*std::move(r));
      if (!wrap && static_cast<int>(applicable.size()) > alternative) break;
    } else {
      skipped.push_back(std::string(r.status().message()));
    }
  }
  if (applicable.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no applicable move for this diagnosis: ", absl::StrJoin(skipped, "; ")));
  }
  if (alternative >= static_cast<int>(applicable.size())) {
    if (wrap) return applicable[alternative % applicable.size()];
    return absl::FailedPreconditionError(absl::StrCat(
        "only ", applicable.size(), " distinct move(s) apply for this diagnosis; alternative ",
        alternative, " requested"));
  }
  return applicable[alternative];
}

absl::StatusOr<BrainResult> HeuristicBrain::ApplyFix(const FixRequest& request) {
  if (request.parent == nullptr || request.prescription == nullptr) {
    return absl::InvalidArgumentError("ApplyFix needs a parent kernel and a prescription");
  }
  if (request.parent->source().empty()) {
    return absl::InvalidArgumentError("the parent kernel's source is empty");
  }
  KAGENT_ASSIGN_OR_RETURN(BrainResult r, Fix(request));
  AddVariants(request.parent, request.signature, request.gpu, &r);
  return r;
}

absl::StatusOr<BrainResult> HeuristicBrain::Fix(const FixRequest& request) const {
  const kagent::v1::Prescription& p = *request.prescription;
  if (p.has_blind_seed()) {  // a blind sweep's move: nothing else of the request counts
    KAGENT_ASSIGN_OR_RETURN(BlindMove m, DrawBlindMove(*library_, *request.parent, request.signature,
                                                       request.gpu, p.blind_seed()));
    BrainResult r;
    r.kernel = std::move(m.kernel);
    r.moves = std::move(m.moves);
    r.expected_effect = absl::StrCat("a blind move (seed ", p.blind_seed(), "): ",
                                     absl::StrJoin(r.moves, ", "),
                                     "; drawn at random, with no diagnosis or expected effect");
    return r;
  }
  absl::StatusOr<BrainResult> direct = absl::UnknownError("");
  if (!p.template_switch().empty()) {
    direct = SwitchTemplate(request, p.template_switch());
  } else if (!p.knob_changes().empty()) {
    std::map<std::string, std::string> changes(p.knob_changes().begin(), p.knob_changes().end());
    direct = TuneKnobs(request, changes, p.title());
  } else {
    return DerivedMove(request, request.alternative, /*wrap=*/false);
  }
  if (direct.ok()) return direct;
  // The prescription names a knob this kernel does not have or a template the library
  // lacks (the analyzer sees neither), or its knob change cannot be made here (a no-op,
  // a bound): make the diagnosis's own move (without a report, the generic moves)
  // instead of wasting the worker, and say so. A template whose conditions do not hold
  // stays an error.
  const bool knob_path = p.template_switch().empty();
  if (!absl::IsNotFound(direct.status()) &&
      !(knob_path && absl::IsFailedPrecondition(direct.status()))) {
    return direct;
  }
  // The derived move owes nothing to the prescription: neither its knob changes nor its
  // expected effect and speedup.
  kagent::v1::Prescription neutral;
  neutral.set_pattern_id(p.pattern_id());
  neutral.set_title(p.title());
  FixRequest derived_request = request;
  derived_request.prescription = &neutral;
  absl::StatusOr<BrainResult> derived =
      DerivedMove(derived_request, std::max(0, request.fallback_alternative), /*wrap=*/true);
  if (!derived.ok()) return direct;
  derived->fallback = FallbackReason(direct.status());
  derived->expected_effect =
      absl::StrCat("'", p.title().empty() ? p.pattern_id() : p.title(), "' does not apply here (",
                   direct.status().message(), "); instead: ", derived->expected_effect);
  return derived;
}

}  // namespace kagent
