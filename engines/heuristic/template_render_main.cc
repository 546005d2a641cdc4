// kagent-template-render: renders a template of the embedded library to stdout.
//
//   kagent-template-render <id> [NAME=VALUE ...]   render with these params
//   kagent-template-render --list                   list the template ids
//   kagent-template-render --dir DIR <id> ...       use DIR instead of the embedded files
//   kagent-template-render --first-kernel [SMS]     the heuristic brain's first kernel for
//                                                   the OpSignature JSON on stdin (the
//                                                   harness's signature), on a GPU with SMS
//                                                   SMs (default 132); the chosen template
//                                                   and params go to stderr
//   kagent-template-render --first-kernel [SMS] --variants
//                                                   the same, with the brain's variants
//                                                   (BrainResult::variants): JSON on
//                                                   stdout, {"kernel": SOURCE, "origin":
//                                                   ORIGIN, "variants": [{"source":
//                                                   SOURCE, "change": "BLOCK_K 2048 ->
//                                                   4096"}, ...]}
//   kagent-template-render --first-kernel [SMS] [--arch ARCH] [--template ID] --batch
//                                                   the first kernel of each OpSignature of
//                                                   the JSON array on stdin (with --template,
//                                                   template ID rendered for it, as a
//                                                   template_switch does), on a GPU of arch
//                                                   ARCH (sm_90; default none): a JSON
//                                                   array on stdout, one {"source": SOURCE}
//                                                   or {"error": STATUS} per signature
//                                                   (exit 0 unless the input is malformed)
//   kagent-template-render --tune KNOB=CHANGE ...  the knob tuner on the Triton source on
//                                                   stdin (a user's kernel or a rendered
//                                                   template): the tuned source to stdout,
//                                                   one line per edit to stderr
//
// Exit 0 on success; 2 with the error on stderr otherwise. Used by the template tests
// (KAGENT_TEMPLATE_RENDER) so the Python checks exercise the C++ renderer and brain.
#include <google/protobuf/util/json_util.h>

#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engines/heuristic/heuristic_brain.h"
#include "engines/heuristic/knob_tuner.h"
#include "engines/heuristic/template_library.h"
#include "nlohmann/json.hpp"

namespace {

// How a variant's params differ from the kernel's: "NAME old -> new", comma-separated.
std::string Change(const kagent::TemplateLibrary& lib, const std::string& kernel,
                   const std::string& variant) {
  auto a = lib.MatchRender(kernel);
  auto b = lib.MatchRender(variant);
  if (!a.ok() || !b.ok()) return "?";
  std::string out;
  for (const auto& [name, value] : b->params) {
    const std::string& old = a->params[name];
    if (old != value) out += (out.empty() ? "" : ", ") + name + " " + old + " -> " + value;
  }
  return out;
}

absl::StatusOr<kagent::v1::OpSignature> ParseSignature(const std::string& json) {
  kagent::v1::OpSignature sig;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(json, &sig, opts);
  if (!st.ok()) return absl::InvalidArgumentError("bad OpSignature JSON: " + st.ToString());
  return sig;
}

// The brain's first kernel for sig, or template `id`'s render for it when id is not empty.
absl::StatusOr<kagent::BrainResult> Brain(std::shared_ptr<const kagent::TemplateLibrary> lib,
                                          const kagent::v1::OpSignature& sig, int sms,
                                          const std::string& arch, const std::string& id = "") {
  kagent::v1::GpuSpec gpu;
  gpu.set_sm_count(sms);
  if (!arch.empty()) gpu.set_arch(arch);
  kagent::v1::Problem problem;
  kagent::HeuristicBrain brain(lib);
  if (!id.empty()) return brain.RenderFor(id, sig, &gpu);
  return brain.FirstKernel({&problem, &sig, &gpu});
}

// --batch: a JSON array of signatures in, a JSON array of {"source"} / {"error"} out.
int FirstKernels(std::shared_ptr<const kagent::TemplateLibrary> lib, int sms,
                 const std::string& arch, const std::string& id) {
  nlohmann::json in = nlohmann::json::parse(std::cin, nullptr, /*allow_exceptions=*/false);
  if (!in.is_array()) {
    std::cerr << "--batch wants a JSON array of OpSignatures on stdin\n";
    return 2;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& j : in) {
    auto sig = ParseSignature(j.dump());
    absl::StatusOr<kagent::BrainResult> r =
        sig.ok() ? Brain(lib, *sig, sms, arch, id)
                 : absl::StatusOr<kagent::BrainResult>(sig.status());
    out.push_back(r.ok() ? nlohmann::json{{"source", r->kernel.source()}}
                         : nlohmann::json{{"error", r.status().ToString()}});
  }
  std::cout << out.dump() << "\n";
  return 0;
}

int FirstKernel(std::shared_ptr<const kagent::TemplateLibrary> lib, int sms, bool variants,
                const std::string& arch) {
  std::string json((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  auto sig = ParseSignature(json);
  if (!sig.ok()) {
    std::cerr << sig.status().message() << "\n";
    return 2;
  }
  auto r = Brain(lib, *sig, sms, arch);
  if (!r.ok()) {
    std::cerr << r.status().ToString() << "\n";
    return 2;
  }
  for (const std::string& m : r->moves) std::cerr << m << "\n";
  if (!variants) {
    std::cout << r->kernel.source();
    return 0;
  }
  nlohmann::json out = {{"kernel", r->kernel.source()},
                        {"origin", r->kernel.origin()},
                        {"variants", nlohmann::json::array()}};
  for (const kagent::v1::KernelSource& v : r->variants) {
    out["variants"].push_back(
        {{"source", v.source()}, {"change", Change(*lib, r->kernel.source(), v.source())}});
  }
  std::cout << out.dump(1) << "\n";
  return 0;
}

// NAME=VALUE arguments argv[i..argc) into *out; false (with the error on stderr) on one
// without '='.
bool ParseAssignments(int i, int argc, char** argv, std::map<std::string, std::string>* out) {
  for (; i < argc; ++i) {
    std::string kv = argv[i];
    size_t eq = kv.find('=');
    if (eq == std::string::npos) {
      std::cerr << "expected NAME=VALUE, got '" << kv << "'\n";
      return false;
    }
    (*out)[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return true;
}

int Tune(const kagent::TemplateLibrary* lib, const std::map<std::string, std::string>& changes) {
  std::string source((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  auto r = kagent::ApplyKnobChanges(source, changes, lib);
  if (!r.ok()) {
    std::cerr << r.status().ToString() << "\n";
    return 2;
  }
  for (const kagent::KnobEdit& e : r->edits) {
    std::cerr << e.knob << " " << (e.is_choice() ? e.old_text : std::to_string(e.old_value))
              << " -> " << (e.is_choice() ? e.new_text : std::to_string(e.new_value)) << ": "
              << e.where << (e.note.empty() ? "" : "; ") << e.note << "\n";
  }
  std::cout << r->source;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int i = 1;
  if (i + 1 < argc && std::string(argv[i]) == "--dir") {
    dir = argv[i + 1];
    i += 2;
  }
  auto lib = dir.empty() ? kagent::TemplateLibrary::Embedded()
                         : kagent::TemplateLibrary::FromDirectory(dir);
  if (!lib.ok()) {
    std::cerr << lib.status().ToString() << "\n";
    return 2;
  }
  if (i < argc && std::string(argv[i]) == "--first-kernel") {
    bool variants = false, batch = false;
    int sms = 132;
    std::string arch, id;
    for (int j = i + 1; j < argc; ++j) {
      if (std::string(argv[j]) == "--variants") {
        variants = true;
      } else if (std::string(argv[j]) == "--batch") {
        batch = true;
      } else if (std::string(argv[j]) == "--arch" && j + 1 < argc) {
        arch = argv[++j];
      } else if (std::string(argv[j]) == "--template" && j + 1 < argc) {
        id = argv[++j];
      } else if (int n = std::atoi(argv[j]); n > 0) {
        sms = n;
      }
    }
    if (!id.empty() && !batch) {
      std::cerr << "--template goes with --batch\n";
      return 2;
    }
    return batch ? FirstKernels(*lib, sms, arch, id) : FirstKernel(*lib, sms, variants, arch);
  }
  if (i < argc && std::string(argv[i]) == "--tune") {
    std::map<std::string, std::string> changes;
    if (!ParseAssignments(i + 1, argc, argv, &changes)) return 2;
    return Tune(lib->get(), changes);
  }
  if (i < argc && std::string(argv[i]) == "--list") {
    for (const std::string& id : (*lib)->Ids()) std::cout << id << "\n";
    return 0;
  }
  if (i >= argc) {
    std::cerr << "usage: kagent-template-render [--dir DIR] <id> [NAME=VALUE ...] | --list | "
                 "--first-kernel [SMS] [--arch ARCH] [--variants | [--template ID] --batch] | "
                 "--tune KNOB=CHANGE ...\n";
    return 2;
  }
  std::string id = argv[i++];
  std::map<std::string, std::string> params;
  if (!ParseAssignments(i, argc, argv, &params)) return 2;
  auto out = (*lib)->Render(id, params);
  if (!out.ok()) {
    std::cerr << out.status().ToString() << "\n";
    return 2;
  }
  std::cout << *out;
  return 0;
}
