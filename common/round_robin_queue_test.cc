#include "common/round_robin_queue.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace kagent {
namespace {

std::vector<int> Drain(RoundRobinQueue<int>& q) {
  std::vector<int> out;
  while (std::optional<int> i = q.TakeNext()) out.push_back(*i);
  return out;
}

TEST_CASE("round-robin queue: jobs take turns, first in first out within a job",
          "[round_robin_queue]") {
  RoundRobinQueue<int> q;
  q.Push("a", 1);
  q.Push("a", 2);
  q.Push("a", 3);
  q.Push("b", 10);
  q.Push("c", 20);
  q.Push("c", 21);
  CHECK(q.size() == 6);
  CHECK(Drain(q) == std::vector<int>{1, 10, 20, 2, 21, 3});
  CHECK(q.empty());
  CHECK_FALSE(q.TakeNext().has_value());
}

TEST_CASE("round-robin queue: the turn continues after the job served last",
          "[round_robin_queue]") {
  RoundRobinQueue<int> q;
  q.Push("b", 1);
  CHECK(q.TakeNext() == 1);  // b served last
  q.Push("a", 2);
  q.Push("c", 3);
  CHECK(q.TakeNext() == 3);  // c comes after b, a wraps around
  CHECK(q.TakeNext() == 2);
}

TEST_CASE("round-robin queue: a job without an eligible item keeps its turn",
          "[round_robin_queue]") {
  RoundRobinQueue<int> q;
  q.Push("a", 1);
  q.Push("a", 2);
  q.Push("b", 3);
  auto even = [](const int& i) { return i % 2 == 0; };
  CHECK(q.TakeNext(even) == 2);  // a's first eligible item, a served last
  CHECK_FALSE(q.TakeNext([](const int&) { return false; }).has_value());
  CHECK(q.size() == 2);
  CHECK(q.TakeNext() == 3);
  CHECK(q.TakeNext() == 1);
}

TEST_CASE("round-robin queue: a removed item leaves the queue", "[round_robin_queue]") {
  RoundRobinQueue<int> q;
  q.Push("a", 1);
  q.Push("a", 2);
  CHECK(q.Remove("a", 1));
  CHECK_FALSE(q.Remove("a", 1));
  CHECK_FALSE(q.Remove("b", 2));
  CHECK(q.Remove("a", 2));
  CHECK(q.empty());
}

}  // namespace
}  // namespace kagent
