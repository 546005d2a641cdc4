// Token and cost accounting per job and per tenant, with budgets.
//
// Accountant keeps the totals and the budgets; AccountingLlmClient is the decorator that
// asks it before each call and records the usage after. When a job's or its tenant's
// token or cost budget is spent, calls are refused with RESOURCE_EXHAUSTED (and the
// provider is not contacted), which the coordinator takes as "end the job cleanly".
//
// A budget is checked before a call and charged after it, so the call that crosses the
// line completes and the next one is refused; concurrent calls of one job may each be
// admitted before any is charged. Budgets therefore bound spend to at most the budget
// plus the calls in flight when it was crossed.
//
// Thread-safe. Memory grows with the number of jobs and tenants seen; call ForgetJob()
// when a job ends.
#ifndef KAGENT_COMMON_LLM_ACCOUNTING_H_
#define KAGENT_COMMON_LLM_ACCOUNTING_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/llm/llm_client.h"

namespace kagent::llm {

// Prices in US dollars per million tokens.
struct Prices {
  double input_usd_per_mtok = 0.0;
  double output_usd_per_mtok = 0.0;
  double Cost(const Usage& usage) const;
};

// Limits; 0 means "no limit" for each field.
struct Budget {
  int64_t max_tokens = 0;  // input + output
  double max_cost_usd = 0.0;
};

struct UsageTotals {
  int64_t calls = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0.0;
  // Calls refused because a budget was spent.
  int64_t refused = 0;
  int64_t tokens() const { return input_tokens + output_tokens; }
};

struct AccountingSnapshot {
  UsageTotals total;
  std::map<std::string, UsageTotals> jobs;
  std::map<std::string, UsageTotals> tenants;
};

class Accountant {
 public:
  // Budgets applied to jobs and tenants that have none of their own.
  explicit Accountant(Budget default_job_budget = {}, Budget default_tenant_budget = {});

  void SetJobBudget(const std::string& job_id, Budget budget);
  void SetTenantBudget(const std::string& tenant, Budget budget);

  // OK when the job and its tenant may make another call; RESOURCE_EXHAUSTED naming the
  // job or tenant and the budget that is spent otherwise (and the refusal is counted).
  // An empty job id or tenant is not checked for that key.
  absl::Status Admit(const std::string& job_id, const std::string& tenant);

  // Charges `usage` at `prices` to the job, the tenant and the total; returns the cost.
  double Record(const std::string& job_id, const std::string& tenant, const Usage& usage,
                const Prices& prices);

  UsageTotals JobUsage(const std::string& job_id);
  UsageTotals TenantUsage(const std::string& tenant);
  AccountingSnapshot Snapshot();

  // Drops the job's totals and budget (its usage stays in its tenant's and the total).
  void ForgetJob(const std::string& job_id);

 private:
  static absl::Status CheckBudget(const char* kind, const std::string& key,
                                  const UsageTotals& used, const Budget& budget);

  const Budget default_job_budget_;
  const Budget default_tenant_budget_;
  absl::Mutex mu_;
  UsageTotals total_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, UsageTotals> jobs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, UsageTotals> tenants_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Budget> job_budgets_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Budget> tenant_budgets_ ABSL_GUARDED_BY(mu_);
};

// Limits of one operation (e.g. one GenerateRequest, carrying what is left of its job's
// budget as the coordinator counts it). Unlike Budget, an unset field is "no limit" and
// a set one is a limit even at 0 or below (then nothing may be spent).
struct MeterLimits {
  std::optional<int64_t> max_tokens;  // input + output
  std::optional<double> max_cost_usd;
};

// The usage of one operation, and its limits: the per-request budget. While a
// ScopedUsageMeter makes it the calling thread's meter, AccountingLlmClient admits that
// thread's calls only when both the Accountant and the meter allow them, and charges
// each successful call to both. Like the Accountant's budgets, a limit is checked before
// a call and charged after it: the call that crosses it completes, the next is refused.
// Thread-safe: one meter may serve the several threads of one operation.
class UsageMeter {
 public:
  // `label` names the operation in refusal messages (e.g. "request of job j-1").
  explicit UsageMeter(MeterLimits limits = {}, std::string label = "this request");

  // OK while under both limits; else RESOURCE_EXHAUSTED naming the label, the usage and
  // the limit (and the refusal is counted).
  absl::Status Admit();
  void Record(const Usage& usage, double cost_usd);
  UsageTotals Totals() const;
  const MeterLimits& limits() const { return limits_; }

 private:
  const MeterLimits limits_;
  const std::string label_;
  mutable absl::Mutex mu_;
  UsageTotals totals_ ABSL_GUARDED_BY(mu_);
};

// Makes `meter` the calling thread's meter until the scope ends, then restores the one
// before (scopes nest). `meter` may be null (no meter in the scope) and, when not, must
// outlive the scope. Not copyable; must end on the thread that made it.
class ScopedUsageMeter {
 public:
  explicit ScopedUsageMeter(UsageMeter* meter);
  ~ScopedUsageMeter();
  ScopedUsageMeter(const ScopedUsageMeter&) = delete;
  ScopedUsageMeter& operator=(const ScopedUsageMeter&) = delete;

 private:
  UsageMeter* const previous_;
};

// The calling thread's meter, or null.
UsageMeter* CurrentUsageMeter();

// Decorator: Admit() before the inner call, Record() after a successful one (replayed
// cassette responses are charged too, so a replayed run hits its budgets at the same
// point as the recorded one). Fills ChatResponse::cost_usd. The calling thread's
// UsageMeter, when there is one, is asked and charged too.
class AccountingLlmClient : public LlmClient {
 public:
  AccountingLlmClient(std::shared_ptr<LlmClient> inner, std::shared_ptr<Accountant> accountant,
                      Prices prices);
  absl::StatusOr<ChatResponse> Chat(const ChatRequest& request) override;

 private:
  const std::shared_ptr<LlmClient> inner_;
  const std::shared_ptr<Accountant> accountant_;
  const Prices prices_;
};

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_ACCOUNTING_H_
