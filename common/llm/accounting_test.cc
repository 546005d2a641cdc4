// Token and cost accounting, budgets per job and tenant.
#include "common/llm/accounting.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"

namespace kagent::llm {
namespace {

TEST_CASE("prices are per million tokens", "[accounting]") {
  Prices p{.input_usd_per_mtok = 3.0, .output_usd_per_mtok = 15.0};
  CHECK(p.Cost({.input_tokens = 1'000'000, .output_tokens = 0}) == Approx(3.0));
  CHECK(p.Cost({.input_tokens = 2000, .output_tokens = 1000}) == Approx(0.006 + 0.015));
  CHECK(Prices{}.Cost({.input_tokens = 5, .output_tokens = 5}) == 0.0);
}

TEST_CASE("usage is charged to the job, the tenant and the total", "[accounting]") {
  Accountant a;
  Prices p{.input_usd_per_mtok = 1.0, .output_usd_per_mtok = 2.0};
  a.Record("job-1", "acme", {.input_tokens = 100, .output_tokens = 10}, p);
  a.Record("job-1", "acme", {.input_tokens = 200, .output_tokens = 20}, p);
  a.Record("job-2", "acme", {.input_tokens = 1, .output_tokens = 1}, p);
  a.Record("", "", {.input_tokens = 5, .output_tokens = 5}, p);  // unattributed

  UsageTotals job1 = a.JobUsage("job-1");
  CHECK(job1.calls == 2);
  CHECK(job1.input_tokens == 300);
  CHECK(job1.output_tokens == 30);
  CHECK(job1.cost_usd == Approx((300 * 1.0 + 30 * 2.0) / 1e6));
  CHECK(a.TenantUsage("acme").calls == 3);
  AccountingSnapshot snap = a.Snapshot();
  CHECK(snap.total.calls == 4);
  CHECK(snap.total.tokens() == 300 + 30 + 2 + 10);
  CHECK(snap.jobs.size() == 2);
  CHECK(snap.tenants.size() == 1);

  a.ForgetJob("job-1");
  CHECK(a.JobUsage("job-1").calls == 0);
  CHECK(a.TenantUsage("acme").calls == 3);  // the tenant keeps its history
}

TEST_CASE("a spent job token budget refuses further calls", "[accounting]") {
  Accountant a(/*default_job_budget=*/{.max_tokens = 1000});
  CHECK(a.Admit("job-1", "acme").ok());
  a.Record("job-1", "acme", {.input_tokens = 900, .output_tokens = 50}, {});
  CHECK(a.Admit("job-1", "acme").ok());  // 950 < 1000
  a.Record("job-1", "acme", {.input_tokens = 100, .output_tokens = 0}, {});
  absl::Status refused = a.Admit("job-1", "acme");
  CHECK(absl::IsResourceExhausted(refused));
  CHECK(absl::StrContains(refused.message(), "job job-1"));
  CHECK(absl::StrContains(refused.message(), "1050 of 1000 tokens"));
  CHECK(a.Admit("job-2", "acme").ok());  // other jobs unaffected
  CHECK(a.JobUsage("job-1").refused == 1);
  CHECK(a.Snapshot().total.refused == 1);
}

TEST_CASE("cost budgets and per-job/tenant overrides", "[accounting]") {
  Accountant a;
  a.SetJobBudget("cheap", {.max_cost_usd = 0.01});
  a.SetTenantBudget("small", {.max_tokens = 100});
  Prices p{.input_usd_per_mtok = 10'000.0, .output_usd_per_mtok = 0.0};  // $0.01 per token

  a.Record("cheap", "big", {.input_tokens = 1}, p);
  absl::Status refused = a.Admit("cheap", "big");
  CHECK(absl::IsResourceExhausted(refused));
  CHECK(absl::StrContains(refused.message(), "cost budget"));

  a.Record("j", "small", {.input_tokens = 60, .output_tokens = 40}, {});
  refused = a.Admit("another-job", "small");
  CHECK(absl::IsResourceExhausted(refused));
  CHECK(absl::StrContains(refused.message(), "tenant small"));
  CHECK(a.Admit("another-job", "").ok());
}

TEST_CASE("the accountant is thread-safe", "[accounting]") {
  Accountant a;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&a, t] {
      for (int i = 0; i < 1000; ++i) {
        (void)a.Admit("job", "tenant");
        a.Record(t % 2 ? "job" : "other", "tenant", {.input_tokens = 1, .output_tokens = 2}, {});
        (void)a.Snapshot();
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(a.Snapshot().total.calls == 8000);
  CHECK(a.TenantUsage("tenant").tokens() == 24000);
  CHECK(a.JobUsage("job").calls == 4000);
}

// Counts calls; answers with fixed usage.
class CountingClient : public LlmClient {
 public:
  absl::StatusOr<ChatResponse> Chat(const ChatRequest&) override {
    ++calls;
    ChatResponse r;
    r.content = "ok";
    r.usage = {.input_tokens = 400, .output_tokens = 100};
    return r;
  }
  std::atomic<int> calls{0};
};

TEST_CASE("AccountingLlmClient refuses once the budget is spent", "[accounting]") {
  auto inner = std::make_shared<CountingClient>();
  auto accountant = std::make_shared<Accountant>(Budget{.max_tokens = 1000});
  AccountingLlmClient client(inner, accountant, {.input_usd_per_mtok = 2.0,
                                                 .output_usd_per_mtok = 10.0});
  ChatRequest r;
  r.messages.push_back({Role::kUser, "x"});
  r.job_id = "job-7";
  r.tenant = "t";
  auto first = client.Chat(r);
  REQUIRE(first.ok());
  CHECK(first->cost_usd == Approx((400 * 2.0 + 100 * 10.0) / 1e6));
  REQUIRE(client.Chat(r).ok());  // 500 < 1000
  auto third = client.Chat(r);   // 1000 >= 1000
  CHECK(absl::IsResourceExhausted(third.status()));
  CHECK(inner->calls == 2);
}

TEST_CASE("a usage meter limits one request and tallies its calls", "[accounting]") {
  auto inner = std::make_shared<CountingClient>();
  auto accountant = std::make_shared<Accountant>();  // no job or tenant budget
  AccountingLlmClient client(inner, accountant, {.input_usd_per_mtok = 2.0,
                                                 .output_usd_per_mtok = 10.0});
  ChatRequest r;
  r.messages.push_back({Role::kUser, "x"});
  r.job_id = "job-m";
  r.tenant = "t";
  REQUIRE(CurrentUsageMeter() == nullptr);
  UsageMeter meter({.max_tokens = 900}, "request of job job-m");
  {
    ScopedUsageMeter scope(&meter);
    CHECK(CurrentUsageMeter() == &meter);
    REQUIRE(client.Chat(r).ok());  // 0 < 900
    REQUIRE(client.Chat(r).ok());  // 500 < 900: this call crosses the limit and completes
    auto third = client.Chat(r);   // 1000 >= 900
    REQUIRE(absl::IsResourceExhausted(third.status()));
    CHECK_THAT(std::string(third.status().message()),
               Catch::Contains("request of job job-m") && Catch::Contains("1000 of 900"));
  }
  CHECK(CurrentUsageMeter() == nullptr);
  CHECK(inner->calls == 2);
  UsageTotals t = meter.Totals();
  CHECK(t.calls == 2);
  CHECK(t.input_tokens == 800);
  CHECK(t.output_tokens == 200);
  CHECK(t.cost_usd == Approx(2 * (400 * 2.0 + 100 * 10.0) / 1e6));
  CHECK(t.refused == 1);
  // The accountant saw the same two calls; outside the scope the meter no longer applies.
  CHECK(accountant->JobUsage("job-m").calls == 2);
  REQUIRE(client.Chat(r).ok());
  CHECK(meter.Totals().calls == 2);
}

TEST_CASE("a usage meter at zero refuses the first call, and scopes nest", "[accounting]") {
  auto inner = std::make_shared<CountingClient>();
  AccountingLlmClient client(inner, std::make_shared<Accountant>(), {});
  ChatRequest r;
  r.messages.push_back({Role::kUser, "x"});
  UsageMeter spent({.max_cost_usd = 0.0});
  UsageMeter open;  // no limits: only tallies
  {
    ScopedUsageMeter outer(&open);
    {
      ScopedUsageMeter inner_scope(&spent);
      CHECK(absl::IsResourceExhausted(client.Chat(r).status()));
    }
    CHECK(CurrentUsageMeter() == &open);
    REQUIRE(client.Chat(r).ok());
    {
      ScopedUsageMeter none(nullptr);
      REQUIRE(client.Chat(r).ok());  // no meter in this scope
    }
  }
  CHECK(inner->calls == 2);
  CHECK(spent.Totals().refused == 1);
  CHECK(spent.Totals().calls == 0);
  CHECK(open.Totals().calls == 1);
  CHECK(open.Totals().tokens() == 500);
}

TEST_CASE("a usage meter is shared by the threads of one request", "[accounting]") {
  auto inner = std::make_shared<CountingClient>();
  AccountingLlmClient client(inner, std::make_shared<Accountant>(), {});
  UsageMeter meter;
  std::atomic<int> failures{0};  // Catch2's assertions are not thread-safe
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      ScopedUsageMeter scope(&meter);
      ChatRequest r;
      r.messages.push_back({Role::kUser, "x"});
      for (int i = 0; i < 25; ++i) failures += client.Chat(r).ok() ? 0 : 1;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(meter.Totals().calls == 100);
  CHECK(meter.Totals().tokens() == 100 * 500);
}

}  // namespace
}  // namespace kagent::llm
