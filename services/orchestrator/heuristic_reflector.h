// The deterministic Reflector: HeuristicReflect (reflexion.h) with the prescriber over the
// optimization database for try-patterns. An attempt with no correct parent to compare
// against (a first kernel) gets a reflexion that records its verdict only.
#ifndef KAGENT_SERVICES_ORCHESTRATOR_HEURISTIC_REFLECTOR_H_
#define KAGENT_SERVICES_ORCHESTRATOR_HEURISTIC_REFLECTOR_H_

#include <memory>

#include "kernel_model/prescriber.h"
#include "services/orchestrator/orchestrator_service.h"

namespace kagent {

class HeuristicReflector : public Reflector {
 public:
  // `prescriber` may be null (no try-patterns).
  explicit HeuristicReflector(std::shared_ptr<const Prescriber> prescriber)
      : prescriber_(std::move(prescriber)) {}
  absl::StatusOr<v1::ReflectResponse> Reflect(const v1::ReflectRequest& request) override;

 private:
  std::shared_ptr<const Prescriber> prescriber_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_ORCHESTRATOR_HEURISTIC_REFLECTOR_H_
