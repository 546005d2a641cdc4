// The backend-neutral Storage conformance suite.
//
// Every Storage backend must pass it. A backend's test file provides a factory of
// StorageTestEnv (each env a fresh, empty database that can be opened again and again)
// and instantiates the suite:
//
//   #include "common/storage/storage_test_suite.h"
//   std::unique_ptr<kagent::StorageTestEnv> MakeEnv() { ... }
//   KAGENT_STORAGE_CONFORMANCE_TESTS("sqlite", MakeEnv)
//
// which defines one Catch2 TEST_CASE per suite case, named "<backend>: <case>" and
// tagged [storage]. The cases use Catch2 assertions, so they run only inside a test.
#ifndef KAGENT_COMMON_STORAGE_STORAGE_TEST_SUITE_H_
#define KAGENT_COMMON_STORAGE_STORAGE_TEST_SUITE_H_

#include <catch2/catch.hpp>

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/storage/storage.h"

namespace kagent {

// One database under test. Owned by the test case that made it; used from one thread
// (the Storage it opens is shared across threads by the concurrency cases).
class StorageTestEnv {
 public:
  virtual ~StorageTestEnv() = default;

  // Opens the env's database (the same one every call: the suite closes a Storage by
  // destroying it and opens it again to check persistence). At most one Storage is
  // open at a time.
  virtual absl::StatusOr<std::unique_ptr<Storage>> Open() = 0;

  // With no Storage open: rewrites the database's recorded schema version to
  // `version`, as a newer binary would have left it. Open() must then fail with
  // FAILED_PRECONDITION.
  virtual absl::Status SetRecordedSchemaVersion(int64_t version) = 0;
};

// Makes a fresh env over a new, empty database.
using StorageTestEnvFactory = std::function<std::unique_ptr<StorageTestEnv>()>;

namespace storage_suite {

void JobCreateAndGet(const StorageTestEnvFactory& factory);
void JobValidation(const StorageTestEnvFactory& factory);
void JobIdempotencyKey(const StorageTestEnvFactory& factory);
void JobOptimisticConcurrency(const StorageTestEnvFactory& factory);
void JobConcurrentUpdatersOneWins(const StorageTestEnvFactory& factory);
void ListJobsPaginationAndTenants(const StorageTestEnvFactory& factory);
void ListJobsStateFilterAndTokens(const StorageTestEnvFactory& factory);
void ListUnfinishedJobs(const StorageTestEnvFactory& factory);
void DeleteJobCascades(const StorageTestEnvFactory& factory);
void EventSequences(const StorageTestEnvFactory& factory);
void EventConcurrentAppenders(const StorageTestEnvFactory& factory);
void Candidates(const StorageTestEnvFactory& factory);
void TaskResultsAreIdempotent(const StorageTestEnvFactory& factory);
void Reflexions(const StorageTestEnvFactory& factory);
void SharedReflexionMemory(const StorageTestEnvFactory& factory);
void Artifacts(const StorageTestEnvFactory& factory);
void ArtifactSizeBound(const StorageTestEnvFactory& factory);
void Checkpoints(const StorageTestEnvFactory& factory);
void TransactionCommitsTogether(const StorageTestEnvFactory& factory);
void TransactionRollsBackOnError(const StorageTestEnvFactory& factory);
void NestedTransaction(const StorageTestEnvFactory& factory);
void ConcurrentTransactionsAndReaders(const StorageTestEnvFactory& factory);
void BadInputLeavesDataIntact(const StorageTestEnvFactory& factory);
void RestartKeepsEverything(const StorageTestEnvFactory& factory);
void SchemaVersionAndNewerSchemaRefused(const StorageTestEnvFactory& factory);

}  // namespace storage_suite
}  // namespace kagent

#define KAGENT_STORAGE_SUITE_CASE_(backend, factory, name) \
  TEST_CASE(backend ": " #name, "[storage]") { ::kagent::storage_suite::name(factory); }

// Defines the whole suite for one backend. `backend` is a string literal; `factory` an
// expression convertible to kagent::StorageTestEnvFactory.
#define KAGENT_STORAGE_CONFORMANCE_TESTS(backend, factory)                            \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, JobCreateAndGet)                       \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, JobValidation)                         \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, JobIdempotencyKey)                     \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, JobOptimisticConcurrency)              \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, JobConcurrentUpdatersOneWins)          \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, ListJobsPaginationAndTenants)          \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, ListJobsStateFilterAndTokens)          \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, ListUnfinishedJobs)                    \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, DeleteJobCascades)                     \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, EventSequences)                        \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, EventConcurrentAppenders)              \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, Candidates)                            \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, TaskResultsAreIdempotent)              \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, Reflexions)                            \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, SharedReflexionMemory)                 \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, Artifacts)                             \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, ArtifactSizeBound)                     \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, Checkpoints)                           \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, TransactionCommitsTogether)            \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, TransactionRollsBackOnError)           \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, NestedTransaction)                     \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, ConcurrentTransactionsAndReaders)      \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, BadInputLeavesDataIntact)              \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, RestartKeepsEverything)                \
  KAGENT_STORAGE_SUITE_CASE_(backend, factory, SchemaVersionAndNewerSchemaRefused)

#endif  // KAGENT_COMMON_STORAGE_STORAGE_TEST_SUITE_H_
