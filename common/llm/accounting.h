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

// Decorator: Admit() before the inner call, Record() after a successful one (replayed
// cassette responses are charged too, so a replayed run hits its budgets at the same
// point as the recorded one). Fills ChatResponse::cost_usd.
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
