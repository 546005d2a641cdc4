#include "common/llm/prompt_templates.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/llm/builtin_prompts.h"

namespace kagent::llm {
namespace {

bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

// A placeholder found at text[pos] == '{'.
struct Slot {
  size_t length;  // of the whole "{{ name }}"
  absl::string_view name;
};

std::optional<Slot> SlotAt(absl::string_view text, size_t pos) {
  if (text.substr(pos, 2) != "{{") return std::nullopt;
  size_t i = pos + 2;
  while (i < text.size() && text[i] == ' ') ++i;
  const size_t name_start = i;
  if (i >= text.size() || !IsNameStart(text[i])) return std::nullopt;
  while (i < text.size() && IsNameChar(text[i])) ++i;
  const size_t name_end = i;
  while (i < text.size() && text[i] == ' ') ++i;
  if (text.substr(i, 2) != "}}") return std::nullopt;
  return Slot{i + 2 - pos, text.substr(name_start, name_end - name_start)};
}

absl::StatusOr<std::string> CheckName(absl::string_view name) {
  if (absl::EndsWith(name, ".md")) name.remove_suffix(3);
  if (name.empty()) return absl::InvalidArgumentError("empty prompt template name");
  for (char c : name) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_' || c == '-')) {
      return absl::InvalidArgumentError(absl::StrCat(
          "prompt template name \"", name, "\" must use only a-z, 0-9, '_' and '-'"));
    }
  }
  return std::string(name);
}

}  // namespace

std::vector<std::string> TemplatePlaceholders(absl::string_view text) {
  std::vector<std::string> names;
  for (size_t pos = text.find("{{"); pos != absl::string_view::npos;) {
    if (auto slot = SlotAt(text, pos)) {
      std::string name(slot->name);
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      pos = text.find("{{", pos + slot->length);
    } else {
      pos = text.find("{{", pos + 1);
    }
  }
  return names;
}

absl::StatusOr<std::string> RenderTemplate(absl::string_view template_name,
                                           absl::string_view text, const PromptValues& values) {
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  for (size_t pos = text.find("{{"); pos != absl::string_view::npos;) {
    auto slot = SlotAt(text, pos);
    if (!slot.has_value()) {
      pos = text.find("{{", pos + 1);
      continue;
    }
    auto it = values.find(slot->name);
    if (it == values.end()) {
      return absl::InvalidArgumentError(absl::StrCat("prompt template \"", template_name,
                                                     "\": no value for placeholder {{",
                                                     slot->name, "}}"));
    }
    out.append(text.data() + copied, pos - copied);
    out.append(it->second);
    copied = pos + slot->length;
    pos = text.find("{{", copied);
  }
  out.append(text.data() + copied, text.size() - copied);
  return out;
}

PromptLibrary::PromptLibrary(std::string override_dir) : override_dir_(std::move(override_dir)) {}

bool PromptLibrary::IsOverridden(absl::string_view name) const {
  if (override_dir_.empty()) return false;
  absl::StatusOr<std::string> checked = CheckName(name);
  if (!checked.ok()) return false;
  std::error_code ec;
  return std::filesystem::is_regular_file(
      std::filesystem::path(override_dir_) / absl::StrCat(*checked, ".md"), ec);
}

absl::StatusOr<std::string> PromptLibrary::Template(absl::string_view name) const {
  absl::StatusOr<std::string> checked = CheckName(name);
  if (!checked.ok()) return checked.status();
  if (IsOverridden(*checked)) {
    const std::filesystem::path path =
        std::filesystem::path(override_dir_) / absl::StrCat(*checked, ".md");
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    if (!in.good() && !in.eof()) {
      return absl::InternalError(absl::StrCat("cannot read prompt template ", path.string()));
    }
    return buffer.str();
  }
  for (size_t i = 0; i < internal::kBuiltinPromptCount; ++i) {
    if (*checked == internal::kBuiltinPrompts[i].name) return std::string(internal::kBuiltinPrompts[i].text);
  }
  return absl::NotFoundError(absl::StrCat(
      "no prompt template \"", *checked, "\"",
      override_dir_.empty() ? std::string() : absl::StrCat(" in ", override_dir_),
      " or among the built-ins"));
}

absl::StatusOr<std::string> PromptLibrary::Render(absl::string_view name,
                                                  const PromptValues& values) const {
  absl::StatusOr<std::string> text = Template(name);
  if (!text.ok()) return text.status();
  return RenderTemplate(name, *text, values);
}

std::vector<std::string> PromptLibrary::BuiltinNames() {
  std::vector<std::string> names;
  for (size_t i = 0; i < internal::kBuiltinPromptCount; ++i) {
    names.emplace_back(internal::kBuiltinPrompts[i].name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace kagent::llm
