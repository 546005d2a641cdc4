// The op recognizer's insides, shared by its source files (op_recognition.cc and the
// op_recognition_<family>.cc files, one per family of op classes). Not part of the kernel
// model's interface: include only from those files; op_recognition.h is the interface.
//
// A Recognizer reads one OpSignature once: Run() tries the families in order (convolutions,
// attention, matrix products, losses, normalizations, softmax, pooling, scans, reductions,
// elementwise chains) and the first that matches decides the RecognizedOp; then
// CheckExtraOps() tags the ops the chosen template would not compute. Not thread-safe;
// one per call of RecognizeOp.
#ifndef KAGENT_KERNEL_MODEL_OP_RECOGNITION_INTERNAL_H_
#define KAGENT_KERNEL_MODEL_OP_RECOGNITION_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kagent/v1/common.pb.h"
#include "kernel_model/op_recognition.h"

namespace kagent::op_recognition_internal {

using kagent::v1::OpRecord;
using kagent::v1::OpSignature;
using kagent::v1::TensorInfo;

// Ops that move, view or allocate without computing.
const std::set<std::string>& ViewOps();
// Ops that only transpose their input.
const std::set<std::string>& TransposeOps();
// aten activation -> template op name.
const std::map<std::string, std::string>& Activations();
// Pointwise arithmetic and comparisons.
const std::set<std::string>& Pointwise();
std::vector<int64_t> ShapeOf(const TensorInfo& t);
int64_t Numel(const std::vector<int64_t>& s);
// aten::elu's scalars are SELU's constants: alpha 1.6733, scale 1.0507, input_scale 1.
bool IsSelu(const std::map<std::string, double>& scalars);
// True when the last two dims are laid out column-major (a transposed view).
bool IsColumnMajor(const TensorInfo& t);

// A compute op of the signature (views and allocations left out), in order.
struct Op {
  std::string name;
  const OpRecord* record;
};

class Recognizer {
 public:
  explicit Recognizer(const OpSignature& sig);

  RecognizedOp Run();

 private:
  bool Has(const std::string& n) const { return names_.count(n) > 0; }
  bool HasAny(std::initializer_list<const char*> ns) const {
    for (const char* n : ns) {
      if (Has(n)) return true;
    }
    return false;
  }
  // True when every compute op named `op` that records scalar `arg` recorded `want` (an
  // op that does not record it passes: older signatures carry no scalars).
  bool RecordedIs(const char* op, const char* arg, double want) const {
    for (const Op& o : compute_) {
      if (o.name != op) continue;
      auto it = o.record->scalars().find(arg);
      if (it != o.record->scalars().end() && it->second != want) return false;
    }
    return true;
  }
  // True when some compute op named `op` recorded scalar `arg` within 1e-6 (relative)
  // of `want`.
  bool RecordsNear(const char* op, const char* arg, double want) const {
    for (const Op& o : compute_) {
      if (o.name != op) continue;
      auto it = o.record->scalars().find(arg);
      if (it != o.record->scalars().end() &&
          std::abs(it->second - want) <= 1e-6 * std::max(1.0, std::abs(want))) {
        return true;
      }
    }
    return false;
  }
  size_t Count(const char* name) const {
    return std::count_if(compute_.begin(), compute_.end(),
                         [&](const Op& o) { return o.name == name; });
  }
  // GELU's tanh approximation written out, as MinGPT (KernelBench level 1) does:
  // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), x^3 by torch.pow. Its ops
  // and constants exactly; nothing else.
  bool WrittenOutGeluTanh() const {
    return compute_.size() == 8 && Count("tanh") == 1 && Count("pow") == 1 &&
           Count("mul") == 4 && Count("add") == 2 && RecordedIs("pow", "exponent", 3) &&
           RecordsAny("pow", "exponent") && RecordsNear("mul", "other", 0.044715) &&
           RecordsNear("mul", "other", 0.7978845608028654) &&
           RecordsNear("mul", "other", 0.5) && RecordsNear("add", "other", 1.0);
  }
  bool RecordsAny(const char* op, const char* arg) const {
    for (const Op& o : compute_) {
      if (o.name == op && o.record->scalars().count(arg)) return true;
    }
    return false;
  }
  const Op* Find(std::initializer_list<const char*> ns) const {
    for (const Op& op : compute_) {
      for (const char* n : ns) {
        if (op.name == n) return &op;
      }
    }
    return nullptr;
  }
  void Decide(const Op* op, std::string cls, std::string variant, std::string reason) {
    main_ = op->record;
    out_.op_class = std::move(cls);
    out_.variant = std::move(variant);
    out_.main_op = op->name;
    out_.reason = std::move(reason);
    out_.scalars = {op->record->scalars().begin(), op->record->scalars().end()};
    out_.strings = {op->record->strings().begin(), op->record->strings().end()};
    if (op->record->inputs_size() > 0) {
      out_.input_shape = ShapeOf(op->record->inputs(0));
      out_.dtype = op->record->inputs(0).dtype();
    }
  }
  // True when a transpose-like view produced t: a column-major tensor of exactly this
  // shape, or, where the signature records tensor ids, a transpose-like view's output that is t
  // (its layout is ambiguous when a dim has size 1: a (1000, 1) tensor transposed has the
  // strides of a contiguous (1, 1000) one).
  bool TransposedByModel(const TensorInfo& t) const {
    for (const OpRecord& r : sig_.ops()) {
      if (!TransposeOps().count(BaseOpName(r.op()))) continue;
      for (const TensorInfo& o : r.outputs()) {
        if (t.id() != 0 && o.id() == t.id()) return true;
        if (IsColumnMajor(t) && ShapeOf(o) == ShapeOf(t) && IsColumnMajor(o)) return true;
      }
    }
    return false;
  }

  bool Conv();

  // F.scaled_dot_product_attention as one aten op (variant sdpa), else the written-out
  // softmax(Q @ K^T * scale) @ V (variant written_out; WrittenOutAttention).
  bool Attention();
  // softmax(Q @ K^T * scale) @ V with exactly these compute ops, in this order: bmm/mm,
  // any mul/div of one tensor by a number (at most two, before the softmax), one softmax
  // over the last dim, bmm/mm; SDPA's math path adds its causal mask (tril of the [L, S]
  // ones, where, add) to the scores. Shapes must chain: [.., L, D] @ [.., D, S] ->
  // softmax -> [.., L, S] @ [.., S, DV].
  bool WrittenOutAttention();
  // Sets tag shared_inputs when the signature's tensor ids (0: not recorded) show Q, K and
  // V as views of fewer than three tensors (F.scaled_dot_product_attention(x, x, x), or
  // q, k, v = x.chunk(3)): the template takes them as three inputs.
  void CheckDistinctInputs(const TensorInfo& q, const TensorInfo& k, const TensorInfo& v);
  // Sets tag grouped_kv when a leading dim of K or V neither equals Q's nor is 1.
  void CheckKvBroadcast(const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                        const std::vector<int64_t>& v);
  // Tags depthwise_separable (and sets pointwise_weight_shape / pointwise_has_bias) when
  // the model computes exactly two convolutions, `first` a depthwise 2-D one (weight
  // (C * multiplier, 1, KH, KW), C = 1 included) and the other a 1x1 conv (stride 1,
  // padding 0, dilation 1, groups 1, not transposed) whose input is first's output (by
  // tensor id where the signature records ids, else by shape).
  void DepthwiseSeparable(const Op& first);

  // The smallest stride, then padding (dilation 1), that maps every spatial dim of x to
  // y's under weight w: out = (in + 2p - (k - 1) - 1) / s + 1.
  void InferConvParams(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                       const std::vector<int64_t>& y);

  // Sets triangle / diagonal when the model's only triangle op comes after the matmul `op`
  // and takes a tensor of the product's shape (torch.triu(A @ B)).
  void ProductTriangle(const Op& op);

  // Sets diag_side when the model's only diag op makes a matrix of a 1-D tensor and that
  // matrix is one operand of the matmul `op`: by tensor id, else by shape when only one
  // operand has the diagonal matrix's shape.
  void DiagSide(const Op& op);

  bool Matmul();

  bool ScalarOutput() const { return !out_.output_shape.empty() ? Numel(out_.output_shape) == 1 : true; }

  bool Loss();

  // The reduction a loss's recorded ops show: mean; kl_div's batchmean (sum / batch);
  // sum alone. A fused aten loss (mse_loss, smooth_l1_loss) hides it: torch's default mean.
  void LossReduction();

  bool Norm();

  // x / d along one contiguous range of dims, d the 1-norm, 2-norm or max-norm of x
  // written out (abs / pow / sum / mean / amax / sqrt) or through a norm op, with an eps
  // added or clamped: the forms in op_recognition_norms.cc. Sets class, dims, eps.
  bool LpNormalization();

  // The tensor `id` comes from, through view ops only: the first tensor upstream that a
  // view op did not make (id itself when none did, or 0).
  int64_t ThroughViews(int64_t id) const;

  // The view op that made tensor `id` (the last one recorded), or null (none, or id 0).
  const OpRecord* ViewMaker(int64_t id) const;

  // True when input `i` of `to` is the tensor `t`, or a view of it: by tensor ids when
  // both have one, else (older signatures) when the shapes are equal.
  bool Consumes(const OpRecord& to, int i, const TensorInfo& t) const;

  // True when the reduction `r` of x runs along one contiguous range of dims and `div`
  // divides x by its result (`den_made`: r's output or what eps ops made of it)
  // broadcast back over them: then sets dim, num_dims and keepdim. Else false, with why.
  bool AlongDims(const OpRecord& r, const OpRecord& div, const TensorInfo& den_made,
                 std::string* why);

  // F.instance_norm runs as batch_norm on x viewed as (1, N*C, *) (or as
  // aten::instance_norm undecomposed): the model's shape is the final output's; the tensor
  // inputs are x, weight?, bias?, then running_mean and running_var when the running
  // statistics are used (an InstanceNorm tracking them, in eval mode: training /
  // use_input_stats 0, tag running_stats).
  void InstanceNormArgs(const OpRecord& r);

  bool Softmax();

  bool Pooling();

  bool Scan();

  // The reduced dims the op was called with, from the recorded scalars (`dim`, or the
  // list `dim.0`, `dim.1`, ...), made non-negative and sorted; empty when none were
  // recorded (older harnesses, or no dim argument) or one is out of range.
  static std::vector<int> RecordedDims(const OpRecord& r, size_t rank);

  void InferDim(const OpRecord& r);

  bool Reduction();

  bool Elementwise();

  // A binary pointwise op of two tensors that broadcast (A.unsqueeze(1) * B, B * A,
  // x[:, None] - y), each a forward input or a view of one that only inserts size-1 dims:
  // elementwise/<op> with the operands' ranks and inserted dims, or gemm/diag for a row or
  // column scale of a matrix by a vector.
  bool BroadcastBinary();

  // The shape of the tensor numbered `id` where the signature first shows it; empty
  // when none does.
  std::vector<int64_t> ShapeOfId(int64_t id) const;

  // Groups of op names, each with how many ops of the group the recognized pattern runs.
  using Allowance = std::vector<std::pair<std::set<std::string>, int>>;

  // The compute ops the class's templates perform for the recognized variant, the main op
  // included; false when the class is not checked (no template for it, elementwise
  // "fused", vector_norm_dim: those are refused already). *whole: the allowance is the
  // whole model's (a decomposed loss), not the main op's plus helpers.
  bool Performed(Allowance* a, bool* whole) const;

  // An integer counter of one element updated in place (BatchNorm's num_batches_tracked).
  static bool IsCounterUpdate(const OpRecord& r);

  // Sets extra_ops / extra_ops_why / tag extra_ops when the model computes more than the
  // recognized class's templates do (see the header).
  void CheckExtraOps();

  const OpSignature& sig_;
  std::vector<Op> compute_;
  std::set<std::string> names_;
  std::set<std::string> all_;
  const OpRecord* main_ = nullptr;
  RecognizedOp out_;
};

}  // namespace kagent::op_recognition_internal

#endif  // KAGENT_KERNEL_MODEL_OP_RECOGNITION_INTERNAL_H_
