// Options filled from command-line flags, the environment and a config file.
//
// Each option is registered once with a target variable, a default (the target's
// current value) and a help line. Precedence, highest first:
//   --name=value (or --name value)  >  KAGENT_NAME env  >  config file  >  default.
// The config file is JSON (an object of option name -> value), named by --config or
// KAGENT_CONFIG. Unknown flags and unknown config keys are errors, so typos are caught.
// After parsing, per-option validators run; `LogEffective()` logs every value once
// (secret options redacted).
//
// Not thread-safe; use at start-up only.
#ifndef KAGENT_COMMON_OPTIONS_H_
#define KAGENT_COMMON_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kagent {

class OptionSet {
 public:
  explicit OptionSet(std::string program) : program_(std::move(program)) {}

  using Validator = std::function<absl::Status()>;

  // Targets must outlive the OptionSet. `secret` options are never logged.
  void AddString(const std::string& name, std::string* target, std::string help,
                 bool secret = false);
  void AddInt(const std::string& name, int64_t* target, std::string help);
  void AddInt(const std::string& name, int* target, std::string help);
  void AddDouble(const std::string& name, double* target, std::string help);
  void AddBool(const std::string& name, bool* target, std::string help);
  // A list of strings. Each --name=value on the command line adds one value (the flags
  // replace what the environment or the config file gave); KAGENT_NAME is a comma-separated
  // list; in the config file a JSON array of strings (or one comma-separated string).
  void AddStringList(const std::string& name, std::vector<std::string>* target, std::string help);
  // A check run after every source is applied; its error message should say what to fix.
  void AddValidator(Validator validator) { validators_.push_back(std::move(validator)); }

  // Parses flags (argv[0] skipped), then env, then the config file. Positional arguments
  // (not starting with "--") are collected into positional(). "--help" sets help_requested().
  // `env` defaults to the process environment when null.
  absl::Status Parse(int argc, const char* const* argv,
                     const std::map<std::string, std::string>* env = nullptr);

  const std::vector<std::string>& positional() const { return positional_; }
  bool help_requested() const { return help_; }
  std::string Usage() const;
  // Where each option's value came from: "flag", "env", "config" or "default".
  std::string SourceOf(const std::string& name) const;
  // The config file Parse read (--config or KAGENT_CONFIG); empty when none.
  const std::string& config_path() const { return config_path_; }
  void LogEffective() const;

  // KAGENT_ + upper-cased name with '-' as '_': "metrics-port" -> "KAGENT_METRICS_PORT".
  static std::string EnvName(const std::string& name);

 private:
  enum class Kind { kString, kInt64, kInt, kDouble, kBool, kStringList };
  struct Option {
    Kind kind;
    void* target;
    std::string help;
    std::string default_text;
    std::string source = "default";
    bool secret = false;
  };
  void Add(const std::string& name, Kind kind, void* target, std::string help, bool secret);
  absl::Status Set(const std::string& name, Option& option, const std::string& value,
                   const std::string& source);
  std::string ValueText(const Option& option) const;

  std::string program_;
  std::map<std::string, Option> options_;
  std::vector<std::string> order_;
  std::vector<Validator> validators_;
  std::vector<std::string> positional_;
  std::string config_path_;
  bool help_ = false;
};

}  // namespace kagent

#endif  // KAGENT_COMMON_OPTIONS_H_
