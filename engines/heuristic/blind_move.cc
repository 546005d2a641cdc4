#include "engines/heuristic/blind_move.h"

#include <map>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/source_text.h"
#include "engines/heuristic/knob_tuner.h"
#include "engines/heuristic/template_rules.h"
#include "engines/heuristic/triton_source.h"
#include "kernel_model/op_recognition.h"

namespace kagent {
namespace {

using Rng = std::mt19937_64;

// A uniform index in [0, n) from the generator's own output (no std:: distribution, whose
// algorithm the standard leaves to the library).
size_t Pick(Rng& rng, size_t n) { return n <= 1 ? 0 : static_cast<size_t>(rng() % n); }

// Every legal value of an integer knob within [min, max] (see the file comment of
// blind_move.h), as text.
std::vector<std::string> IntValues(int64_t min, int64_t max, bool pow2) {
  std::set<int64_t> v;
  if (!pow2 && max - min < 64) {
    for (int64_t x = min; x <= max; ++x) v.insert(x);
  } else {
    for (int64_t p = 1; p <= max && p > 0; p *= 2) {
      if (p >= min) v.insert(p);
    }
    if (!pow2) v.insert({min, max});
  }
  std::vector<std::string> out;
  for (int64_t x : v) out.push_back(absl::StrCat(x));
  return out;
}

std::vector<std::string> ParamValues(const TemplateParam& p) {
  if (p.type == "choice") return p.allowed;
  if (p.type == "pow2" || p.type == "int") return IntValues(p.min, p.max, p.type == "pow2");
  return {};  // float: never moved
}

// A random value of `values` other than `current`; nullopt when there is none.
std::optional<std::string> OtherValue(Rng& rng, const std::vector<std::string>& values,
                                      const std::string& current) {
  std::vector<std::string> others;
  for (const std::string& v : values) {
    if (v != current) others.push_back(v);
  }
  if (others.empty()) return std::nullopt;
  return others[Pick(rng, others.size())];
}

// The template's knobs that can move, in param order.
std::vector<const TemplateParam*> MovableKnobs(const TemplateInfo& t) {
  std::vector<const TemplateParam*> out;
  for (const TemplateParam& p : t.params) {
    if (p.kind == "knob" && ParamValues(p).size() > 1) out.push_back(&p);
  }
  return out;
}

// Sets one or two of `t`'s knobs in `params` at random; the moves go to `moves`.
void RandomizeKnobs(Rng& rng, const TemplateInfo& t, std::map<std::string, std::string>& params,
                    std::vector<std::string>* moves) {
  std::vector<const TemplateParam*> knobs = MovableKnobs(t);
  const size_t count = std::min<size_t>(knobs.size(), 1 + Pick(rng, 2));
  for (size_t i = 0; i < count; ++i) {
    const size_t k = Pick(rng, knobs.size());
    const TemplateParam& p = *knobs[k];
    knobs.erase(knobs.begin() + static_cast<std::ptrdiff_t>(k));
    const std::string current = params.count(p.name) ? params[p.name] : p.default_value;
    std::optional<std::string> next = OtherValue(rng, ParamValues(p), current);
    if (!next.has_value()) continue;
    moves->push_back(absl::StrCat(p.name, " ", current, " -> ", *next));
    params[p.name] = *next;
  }
}

v1::KernelSource Render(const TemplateInfo& t, std::string source) {
  v1::KernelSource k;
  k.set_language(t.language == "cuda" ? v1::KERNEL_LANGUAGE_CUDA : v1::KERNEL_LANGUAGE_TRITON);
  k.set_source(std::move(source));
  k.set_origin(absl::StrCat("template:", t.id));
  return k;
}

// One draw of a knob setting on a kernel that is no render: the knob tuner's knobs.
absl::StatusOr<BlindMove> TunerDraw(Rng& rng, const TemplateLibrary& library,
                                    const v1::KernelSource& parent) {
  absl::StatusOr<TritonSourceInfo> info = ParseTritonSource(parent.source());
  if (!info.ok()) return info.status();
  const std::map<std::string, int64_t> current = CurrentKnobs(parent.source(), *info);
  std::vector<std::string> names;
  for (const auto& [name, value] : current) names.push_back(name);
  if (names.empty()) return absl::FailedPreconditionError("the kernel has no knob to move");
  std::map<std::string, std::string> changes;
  BlindMove out;
  const size_t count = std::min<size_t>(names.size(), 1 + Pick(rng, 2));
  for (size_t i = 0; i < count; ++i) {
    const size_t k = Pick(rng, names.size());
    const std::string name = names[k];
    names.erase(names.begin() + static_cast<std::ptrdiff_t>(k));
    const KnobBounds b = BoundsFor(name, *info, &library);
    const std::string now = absl::StrCat(current.at(name));
    std::optional<std::string> next = OtherValue(rng, IntValues(b.min, b.max, b.pow2), now);
    if (!next.has_value()) continue;
    changes[name] = *next;
    out.moves.push_back(absl::StrCat(name, " ", now, " -> ", *next));
  }
  absl::StatusOr<TuneResult> tuned = ApplyKnobChanges(parent.source(), changes, &library);
  if (!tuned.ok()) return tuned.status();
  out.kernel.set_language(parent.language() == v1::KERNEL_LANGUAGE_UNSPECIFIED
                              ? v1::KERNEL_LANGUAGE_TRITON
                              : parent.language());
  out.kernel.set_source(std::move(tuned->source));
  out.kernel.set_origin("brain:heuristic");
  return out;
}

}  // namespace

absl::StatusOr<BlindMove> DrawBlindMove(const TemplateLibrary& library,
                                        const v1::KernelSource& parent,
                                        const v1::OpSignature* signature, const v1::GpuSpec* gpu,
                                        uint64_t seed) {
  Rng rng(seed);
  absl::StatusOr<RenderMatch> match = library.MatchRender(parent.source());
  // The switches: the op class's other templates whose conditions hold, with their rules'
  // params.
  std::vector<std::pair<const TemplateInfo*, std::map<std::string, std::string>>> switches;
  if (signature != nullptr && !signature->ops().empty()) {
    absl::StatusOr<RecognizedOp> op = RecognizeOp(*signature);
    if (op.ok()) {
      for (const TemplateInfo* t : library.ForOpClass(op->op_class)) {
        if (match.ok() && match->info == t) continue;
        auto params = TemplateParamsFor(*t, *op, gpu);
        if (params.ok()) switches.emplace_back(t, *std::move(params));
      }
    }
  }
  const bool parent_has_knobs =
      match.ok() ? !MovableKnobs(*match->info).empty()
                 : ParseTritonSource(parent.source()).ok();
  const std::string parent_normalized = NormalizeSource(parent.source());
  std::string last_error = "no draw made";
  for (int draw = 0; draw < kBlindDraws; ++draw) {
    absl::StatusOr<BlindMove> move = absl::UnknownError("");
    const bool do_switch = !switches.empty() && (!parent_has_knobs || Pick(rng, 4) == 0);
    if (do_switch) {
      auto [t, params] = switches[Pick(rng, switches.size())];
      BlindMove m;
      m.moves.push_back(absl::StrCat("switch to ", t->id));
      RandomizeKnobs(rng, *t, params, &m.moves);
      absl::StatusOr<std::string> source = library.Render(t->id, params);
      if (source.ok()) {
        m.kernel = Render(*t, *std::move(source));
        move = std::move(m);
      } else {
        move = source.status();
      }
    } else if (match.ok()) {
      std::map<std::string, std::string> params = match->params;
      BlindMove m;
      RandomizeKnobs(rng, *match->info, params, &m.moves);
      absl::StatusOr<std::string> source = library.Render(match->info->id, params);
      if (source.ok()) {
        m.kernel = Render(*match->info, *std::move(source));
        move = std::move(m);
      } else {
        move = source.status();
      }
    } else if (parent_has_knobs) {
      move = TunerDraw(rng, library, parent);
    } else {
      return absl::FailedPreconditionError(
          "no blind move: the kernel has no knob the tuner can read and the op class no "
          "template to switch to");
    }
    if (!move.ok()) {
      last_error = std::string(move.status().message());
      continue;
    }
    if (NormalizeSource(move->kernel.source()) == parent_normalized) {
      last_error = "the draw gave the parent kernel again";
      continue;
    }
    return move;
  }
  return absl::FailedPreconditionError(absl::StrCat("no blind move in ", kBlindDraws,
                                                    " draws (seed ", seed, "): ", last_error));
}

}  // namespace kagent
