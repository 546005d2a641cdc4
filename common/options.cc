#include "common/options.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace kagent {

void OptionSet::Add(const std::string& name, Kind kind, void* target, std::string help,
                    bool secret) {
  KAGENT_CHECK(options_.count(name) == 0) << "option registered twice: " << name;
  Option o{kind, target, std::move(help), "", "default", secret};
  o.default_text = ValueText(o);
  options_.emplace(name, std::move(o));
  order_.push_back(name);
}

void OptionSet::AddString(const std::string& name, std::string* target, std::string help,
                          bool secret) {
  Add(name, Kind::kString, target, std::move(help), secret);
}
void OptionSet::AddInt(const std::string& name, int64_t* target, std::string help) {
  Add(name, Kind::kInt64, target, std::move(help), false);
}
void OptionSet::AddInt(const std::string& name, int* target, std::string help) {
  Add(name, Kind::kInt, target, std::move(help), false);
}
void OptionSet::AddDouble(const std::string& name, double* target, std::string help) {
  Add(name, Kind::kDouble, target, std::move(help), false);
}
void OptionSet::AddBool(const std::string& name, bool* target, std::string help) {
  Add(name, Kind::kBool, target, std::move(help), false);
}

void OptionSet::AddStringList(const std::string& name, std::vector<std::string>* target,
                              std::string help) {
  Add(name, Kind::kStringList, target, std::move(help), false);
}

std::string OptionSet::EnvName(const std::string& name) {
  std::string env = "KAGENT_" + absl::AsciiStrToUpper(name);
  for (char& c : env) {
    if (c == '-') c = '_';
  }
  return env;
}

std::string OptionSet::ValueText(const Option& o) const {
  switch (o.kind) {
    case Kind::kString: return *static_cast<std::string*>(o.target);
    case Kind::kInt64: return std::to_string(*static_cast<int64_t*>(o.target));
    case Kind::kInt: return std::to_string(*static_cast<int*>(o.target));
    case Kind::kDouble: {
      std::ostringstream s;
      s << *static_cast<double*>(o.target);
      return s.str();
    }
    case Kind::kBool: return *static_cast<bool*>(o.target) ? "true" : "false";
    case Kind::kStringList: return absl::StrJoin(*static_cast<std::vector<std::string>*>(o.target), ",");
  }
  return "";
}

absl::Status OptionSet::Set(const std::string& name, Option& o, const std::string& value,
                            const std::string& source) {
  auto bad = [&](const char* what) {
    return absl::InvalidArgumentError(absl::StrCat("option ", name, " (from ", source, "): '",
                                                   value, "' is not ", what));
  };
  switch (o.kind) {
    case Kind::kString:
      *static_cast<std::string*>(o.target) = value;
      break;
    case Kind::kInt64: {
      int64_t v;
      if (!absl::SimpleAtoi(value, &v)) return bad("an integer");
      *static_cast<int64_t*>(o.target) = v;
      break;
    }
    case Kind::kInt: {
      int v;
      if (!absl::SimpleAtoi(value, &v)) return bad("an integer");
      *static_cast<int*>(o.target) = v;
      break;
    }
    case Kind::kDouble: {
      double v;
      if (!absl::SimpleAtod(value, &v)) return bad("a number");
      *static_cast<double*>(o.target) = v;
      break;
    }
    case Kind::kBool: {
      bool v;
      if (!absl::SimpleAtob(value, &v)) return bad("a boolean (true/false)");
      *static_cast<bool*>(o.target) = v;
      break;
    }
    case Kind::kStringList: {
      auto* list = static_cast<std::vector<std::string>*>(o.target);
      if (source == "flag") {  // one value per flag; the first flag replaces other sources
        if (o.source != "flag") list->clear();
        list->push_back(value);
        break;
      }
      list->clear();
      if (source == "config" && absl::StartsWith(value, "[")) {
        nlohmann::json j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_array()) return bad("a JSON array of strings");
        for (const auto& v : j) {
          if (!v.is_string()) return bad("a JSON array of strings");
          list->push_back(v.get<std::string>());
        }
        break;
      }
      for (absl::string_view v : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        list->emplace_back(v);
      }
      break;
    }
  }
  o.source = source;
  return absl::OkStatus();
}

absl::Status OptionSet::Parse(int argc, const char* const* argv,
                              const std::map<std::string, std::string>* env) {
  std::map<std::string, std::string> process_env;
  if (env == nullptr) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string kv(*e);
      size_t eq = kv.find('=');
      if (eq != std::string::npos) process_env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    env = &process_env;
  }
  // 1. Collect flags (applied last so they win).
  std::vector<std::pair<std::string, std::string>> flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional_.push_back(argv[i]);
      break;
    }
    if (!absl::StartsWith(arg, "--")) {
      positional_.push_back(arg);
      continue;
    }
    std::string body = arg.substr(2);
    if (body == "help" || body == "h") {
      help_ = true;
      continue;
    }
    std::string name = body, value;
    size_t eq = body.find('=');
    bool has_value = eq != std::string::npos;
    if (has_value) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
    }
    if (name == "config") {
      if (!has_value) {
        if (i + 1 >= argc) return absl::InvalidArgumentError("--config needs a file name");
        value = argv[++i];
      }
      config_path_ = value;
      continue;
    }
    auto it = options_.find(name);
    if (it == options_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, " (see ", program_, " --help)"));
    }
    if (!has_value) {
      if (it->second.kind == Kind::kBool) {
        value = "true";
      } else {
        if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
        value = argv[++i];
      }
    }
    flags.emplace_back(name, value);
  }
  // 2. Config file.
  if (config_path_.empty()) {
    auto it = env->find("KAGENT_CONFIG");
    if (it != env->end()) config_path_ = it->second;
  }
  if (!config_path_.empty()) {
    std::ifstream in(config_path_);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read config file ", config_path_));
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config file ", config_path_, " is not a JSON object"));
    }
    for (const auto& [key, val] : j.items()) {
      auto it = options_.find(key);
      if (it == options_.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("config file ", config_path_, ": unknown option '", key, "'"));
      }
      std::string text = val.is_string() ? val.get<std::string>() : val.dump();
      KAGENT_RETURN_IF_ERROR(Set(key, it->second, text, "config"));
    }
  }
  // 3. Environment.
  for (auto& [name, option] : options_) {
    auto it = env->find(EnvName(name));
    if (it != env->end()) KAGENT_RETURN_IF_ERROR(Set(name, option, it->second, "env"));
  }
  // 4. Flags.
  for (const auto& [name, value] : flags) {
    KAGENT_RETURN_IF_ERROR(Set(name, options_.at(name), value, "flag"));
  }
  if (help_) return absl::OkStatus();
  for (const auto& v : validators_) KAGENT_RETURN_IF_ERROR(v());
  return absl::OkStatus();
}

std::string OptionSet::SourceOf(const std::string& name) const {
  auto it = options_.find(name);
  return it == options_.end() ? "" : it->second.source;
}

std::string OptionSet::Usage() const {
  std::ostringstream out;
  out << "usage: " << program_ << " [--config FILE] [--name=value ...]\n\noptions:\n";
  for (const auto& name : order_) {
    const Option& o = options_.at(name);
    out << "  --" << name << "  (env " << EnvName(name) << ", default '"
        << (o.secret ? "***" : o.default_text) << "')\n      " << o.help << "\n";
  }
  return out.str();
}

void OptionSet::LogEffective() const {
  for (const auto& name : order_) {
    const Option& o = options_.at(name);
    std::string value = o.secret ? (ValueText(o).empty() ? "" : "<redacted>") : ValueText(o);
    KLOG(INFO).With("option", name).With("value", value).With("source", o.source)
        << "option " << name;
  }
}

}  // namespace kagent
