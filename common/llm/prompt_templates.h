// Prompt templates: text files with {{placeholder}} slots.
//
// The built-in templates are the files under prompts/ at the repository root, embedded
// into the library at build time (so binaries need no data files). A deployment can
// override any of them: PromptLibrary looks in its override directory first, and a file
// "<name>.md" there replaces the built-in template of that name (new names may be added
// the same way). docs/llm.md lists every template and its placeholders.
//
// Syntax: "{{name}}" or "{{ name }}" where name is [A-Za-z_][A-Za-z0-9_]*. Substitution is
// a single pass: values are inserted verbatim and never expanded again. Text between
// braces that is not a placeholder name (e.g. "{{}}", "{{ a.b }}") is left as it is.
//
// Thread-safe (const after construction; override files are read on each call, so edits
// take effect without a restart).
#ifndef KAGENT_COMMON_LLM_PROMPT_TEMPLATES_H_
#define KAGENT_COMMON_LLM_PROMPT_TEMPLATES_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kagent::llm {

using PromptValues = std::map<std::string, std::string, std::less<>>;

// The placeholder names in `text`, in order of first appearance, without duplicates.
std::vector<std::string> TemplatePlaceholders(absl::string_view text);

// Substitutes `values` into `text`. INVALID_ARGUMENT naming the template and the first
// placeholder with no value. Values without a placeholder are ignored.
absl::StatusOr<std::string> RenderTemplate(absl::string_view template_name,
                                           absl::string_view text, const PromptValues& values);

class PromptLibrary {
 public:
  // `override_dir` empty: built-ins only. The directory need not exist.
  explicit PromptLibrary(std::string override_dir = "");

  // The template text for `name` ("prescribe" or "prescribe.md"). INVALID_ARGUMENT for a
  // name that is not [a-z0-9_-]+; NOT_FOUND when neither the override directory nor the
  // built-ins have it; INTERNAL when an override file exists but cannot be read.
  absl::StatusOr<std::string> Template(absl::string_view name) const;

  // Template(name) rendered with `values`.
  absl::StatusOr<std::string> Render(absl::string_view name, const PromptValues& values) const;

  // Names (without ".md") of the built-in templates, sorted.
  static std::vector<std::string> BuiltinNames();
  // True when `name` would be served from the override directory.
  bool IsOverridden(absl::string_view name) const;

 private:
  const std::string override_dir_;
};

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_PROMPT_TEMPLATES_H_
