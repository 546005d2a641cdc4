// TemplateLibrary: the kernel templates of engines/heuristic/templates.
//
// A template is two files: `<id>.py`, a complete candidate source (imports, @triton.jit
// kernels, `class ModelNew(nn.Module)`) with `{{NAME}}` placeholders, and `<id>.json`,
// its metadata: op_class, language, title, architecture notes, dtypes, conditions of use
// (text), and params. The language is "triton" (the default when the JSON has none) or
// "cuda": a module whose CUDA C++ source, a string, is built with
// torch.utils.cpp_extension.load_inline at import (the harness's language "cuda"). Each param has a kind ("knob": a tunable the knob tuner may change later;
// "shape": set from the recognized op), a type ("pow2", "int", "float", "choice"),
// bounds (min/max) or allowed values, a default and a doc line. Optional
// "max_tile_elements" bounds the product of the template's BLOCK_* knobs.
//
// Partials: code that several templates share verbatim is written once, in
// `partials/<name>.py` (no JSON; not a template: not in Ids() or ForOpClass()). A template
// line made only of an indentation (spaces) and `{{> name}}` is replaced by the partial's
// lines, each prefixed with that indentation (empty lines stay empty), so a partial can
// stand at any depth of a kernel body; placeholders inside a partial are then substituted
// like the template's own, from the including template's params. A partial cannot include
// another. Includes are expanded when the library is loaded (TemplateInfo::source holds
// the expanded text), so an unknown partial, a partial that includes, a malformed include
// line or a partial's placeholder the template does not declare fails the load with
// INVALID_ARGUMENT naming the template and the partial. The rendered kernel stays one
// standalone Python file. See docs/templates.md.
//
// The library is built into the binary (the files are embedded at build time) and can
// also be loaded from a directory (development, tests).
//
// Thread-safety: immutable after construction; all methods are const and thread-safe.
#ifndef KAGENT_ENGINES_HEURISTIC_TEMPLATE_LIBRARY_H_
#define KAGENT_ENGINES_HEURISTIC_TEMPLATE_LIBRARY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kagent {

// A double as the templates render a float param, like Python's repr: the shortest digits
// that read back as the same value, ".0" on integers, an exponent only below 1e-4 or from
// 1e16 on ("20.0", "0.2", "1e-06").
std::string FloatText(double d);

struct TemplateParam {
  std::string name;
  std::string kind;           // "knob" or "shape"
  std::string type;           // "pow2", "int", "float", "choice"
  int64_t min = 0;            // pow2 / int
  int64_t max = 0;
  std::vector<std::string> allowed;  // choice
  std::string default_value;  // rendered text
  std::string doc;
};

struct TemplateInfo {
  std::string id;
  std::string op_class;
  std::string language = "triton";    // "triton" or "cuda"
  std::string title;
  std::string architecture;
  std::vector<std::string> dtypes;
  std::vector<std::string> conditions;
  std::vector<TemplateParam> params;  // in the order of the JSON file
  int64_t max_tile_elements = 0;      // 0: no bound
  std::string source;                 // the .py text, partials included, placeholders left

  const TemplateParam* FindParam(absl::string_view name) const;
};

// A source that is a render of one of the library's templates, and the params it was
// rendered with (TemplateLibrary::MatchRender).
struct RenderMatch {
  const TemplateInfo* info = nullptr;          // owned by the library
  std::map<std::string, std::string> params;   // every param of the template, normalized
};

class TemplateLibrary {
 public:
  // The templates compiled into the binary.
  static absl::StatusOr<std::shared_ptr<const TemplateLibrary>> Embedded();
  // Every <id>.json + <id>.py pair of `dir`, and the partials in `dir`/partials/*.py.
  // INVALID_ARGUMENT on malformed metadata or includes (the message names the file),
  // NOT_FOUND when the directory is missing.
  static absl::StatusOr<std::shared_ptr<const TemplateLibrary>> FromDirectory(
      const std::string& dir);
  // From (file name -> contents) pairs, e.g. {"matvec_split_k.json": "...", ...}; a
  // partial is named "partials/<name>.py".
  static absl::StatusOr<std::shared_ptr<const TemplateLibrary>> FromFiles(
      const std::map<std::string, std::string>& files);

  // nullptr when unknown.
  const TemplateInfo* Find(absl::string_view id) const;
  std::vector<const TemplateInfo*> ForOpClass(absl::string_view op_class) const;
  std::vector<std::string> Ids() const;

  // Substitutes every placeholder: a value from `params`, else the param's default.
  // Errors: NOT_FOUND unknown template; INVALID_ARGUMENT for an unknown param name, a
  // value of the wrong type or out of bounds (a pow2 param must be a power of two), a
  // tile over max_tile_elements, or a placeholder without a param.
  absl::StatusOr<std::string> Render(absl::string_view id,
                                     const std::map<std::string, std::string>& params) const;

  // Whether `source` is, byte for byte, Render(id, params) for the template its first line
  // names (`# kagent-template: <id>`) and params the template accepts, and those params
  // (every param; one the template's text does not use has its default). This is how
  // the brain tells its own code from anyone else's, whatever a kernel's origin claims.
  // NOT_FOUND when the first line names no template of the library; INVALID_ARGUMENT
  // when the source is not such a render (any other edit, a value its param does not
  // accept in normalized form, a tile over max_tile_elements).
  absl::StatusOr<RenderMatch> MatchRender(absl::string_view source) const;

  // Checks one value against its param; returns the normalized text.
  static absl::StatusOr<std::string> CheckValue(const TemplateParam& param,
                                                absl::string_view value);

 private:
  std::map<std::string, TemplateInfo> templates_;
};

}  // namespace kagent

#endif  // KAGENT_ENGINES_HEURISTIC_TEMPLATE_LIBRARY_H_
