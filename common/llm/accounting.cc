#include "common/llm/accounting.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"

namespace kagent::llm {

double Prices::Cost(const Usage& usage) const {
  return (static_cast<double>(usage.input_tokens) * input_usd_per_mtok +
          static_cast<double>(usage.output_tokens) * output_usd_per_mtok) /
         1e6;
}

Accountant::Accountant(Budget default_job_budget, Budget default_tenant_budget)
    : default_job_budget_(default_job_budget), default_tenant_budget_(default_tenant_budget) {}

void Accountant::SetJobBudget(const std::string& job_id, Budget budget) {
  absl::MutexLock lock(&mu_);
  job_budgets_[job_id] = budget;
}

void Accountant::SetTenantBudget(const std::string& tenant, Budget budget) {
  absl::MutexLock lock(&mu_);
  tenant_budgets_[tenant] = budget;
}

absl::Status Accountant::CheckBudget(const char* kind, const std::string& key,
                                     const UsageTotals& used, const Budget& budget) {
  if (budget.max_tokens > 0 && used.tokens() >= budget.max_tokens) {
    return absl::ResourceExhaustedError(
        absl::StrCat("LLM token budget of ", kind, " ", key, " is spent: ", used.tokens(),
                     " of ", budget.max_tokens, " tokens used"));
  }
  if (budget.max_cost_usd > 0 && used.cost_usd >= budget.max_cost_usd) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("LLM cost budget of %s %s is spent: $%.4f of $%.4f used", kind, key,
                        used.cost_usd, budget.max_cost_usd));
  }
  return absl::OkStatus();
}

absl::Status Accountant::Admit(const std::string& job_id, const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  absl::Status status;
  if (!job_id.empty()) {
    auto b = job_budgets_.find(job_id);
    const Budget& budget = b != job_budgets_.end() ? b->second : default_job_budget_;
    auto u = jobs_.find(job_id);
    status = CheckBudget("job", job_id, u != jobs_.end() ? u->second : UsageTotals{}, budget);
  }
  if (status.ok() && !tenant.empty()) {
    auto b = tenant_budgets_.find(tenant);
    const Budget& budget = b != tenant_budgets_.end() ? b->second : default_tenant_budget_;
    auto u = tenants_.find(tenant);
    status =
        CheckBudget("tenant", tenant, u != tenants_.end() ? u->second : UsageTotals{}, budget);
  }
  if (!status.ok()) {
    ++total_.refused;
    if (!job_id.empty()) ++jobs_[job_id].refused;
    if (!tenant.empty()) ++tenants_[tenant].refused;
  }
  return status;
}

double Accountant::Record(const std::string& job_id, const std::string& tenant,
                          const Usage& usage, const Prices& prices) {
  const double cost = prices.Cost(usage);
  auto charge = [&](UsageTotals& t) {
    ++t.calls;
    t.input_tokens += usage.input_tokens;
    t.output_tokens += usage.output_tokens;
    t.cost_usd += cost;
  };
  absl::MutexLock lock(&mu_);
  charge(total_);
  if (!job_id.empty()) charge(jobs_[job_id]);
  if (!tenant.empty()) charge(tenants_[tenant]);
  return cost;
}

UsageTotals Accountant::JobUsage(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  return it != jobs_.end() ? it->second : UsageTotals{};
}

UsageTotals Accountant::TenantUsage(const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  auto it = tenants_.find(tenant);
  return it != tenants_.end() ? it->second : UsageTotals{};
}

AccountingSnapshot Accountant::Snapshot() {
  absl::MutexLock lock(&mu_);
  AccountingSnapshot snap;
  snap.total = total_;
  snap.jobs.insert(jobs_.begin(), jobs_.end());
  snap.tenants.insert(tenants_.begin(), tenants_.end());
  return snap;
}

void Accountant::ForgetJob(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  jobs_.erase(job_id);
  job_budgets_.erase(job_id);
}

namespace {
thread_local UsageMeter* current_meter = nullptr;
}  // namespace

UsageMeter::UsageMeter(MeterLimits limits, std::string label)
    : limits_(limits), label_(std::move(label)) {}

absl::Status UsageMeter::Admit() {
  absl::MutexLock lock(&mu_);
  absl::Status status;
  if (limits_.max_tokens.has_value() && totals_.tokens() >= *limits_.max_tokens) {
    status = absl::ResourceExhaustedError(
        absl::StrCat("LLM token budget of ", label_, " is spent: ", totals_.tokens(), " of ",
                     std::max<int64_t>(0, *limits_.max_tokens), " tokens used"));
  } else if (limits_.max_cost_usd.has_value() && totals_.cost_usd >= *limits_.max_cost_usd) {
    status = absl::ResourceExhaustedError(
        absl::StrFormat("LLM cost budget of %s is spent: $%.4f of $%.4f used", label_,
                        totals_.cost_usd, std::max(0.0, *limits_.max_cost_usd)));
  }
  if (!status.ok()) ++totals_.refused;
  return status;
}

void UsageMeter::Record(const Usage& usage, double cost_usd) {
  absl::MutexLock lock(&mu_);
  ++totals_.calls;
  totals_.input_tokens += usage.input_tokens;
  totals_.output_tokens += usage.output_tokens;
  totals_.cost_usd += cost_usd;
}

UsageTotals UsageMeter::Totals() const {
  absl::MutexLock lock(&mu_);
  return totals_;
}

ScopedUsageMeter::ScopedUsageMeter(UsageMeter* meter) : previous_(current_meter) {
  current_meter = meter;
}

ScopedUsageMeter::~ScopedUsageMeter() { current_meter = previous_; }

UsageMeter* CurrentUsageMeter() { return current_meter; }

AccountingLlmClient::AccountingLlmClient(std::shared_ptr<LlmClient> inner,
                                         std::shared_ptr<Accountant> accountant, Prices prices)
    : inner_(std::move(inner)), accountant_(std::move(accountant)), prices_(prices) {}

absl::StatusOr<ChatResponse> AccountingLlmClient::Chat(const ChatRequest& request) {
  if (absl::Status admitted = accountant_->Admit(request.job_id, request.tenant);
      !admitted.ok()) {
    LogScope scope({.job_id = request.job_id, .request_id = "", .tenant = request.tenant});
    KLOG(WARNING) << "llm call refused: " << admitted.message();
    return admitted;
  }
  UsageMeter* meter = CurrentUsageMeter();
  if (meter != nullptr) {
    if (absl::Status admitted = meter->Admit(); !admitted.ok()) {
      LogScope scope({.job_id = request.job_id, .request_id = "", .tenant = request.tenant});
      KLOG(WARNING) << "llm call refused: " << admitted.message();
      return admitted;
    }
  }
  absl::StatusOr<ChatResponse> response = inner_->Chat(request);
  if (!response.ok()) return response;
  response->cost_usd =
      accountant_->Record(request.job_id, request.tenant, response->usage, prices_);
  if (meter != nullptr) meter->Record(response->usage, response->cost_usd);
  return response;
}

}  // namespace kagent::llm
