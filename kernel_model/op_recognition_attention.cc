// Op recognition: scaled-dot-product attention, as one aten op or written out.
// Methods of op_recognition_internal::Recognizer (op_recognition_internal.h).
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernel_model/op_recognition_internal.h"

namespace kagent::op_recognition_internal {
namespace {

// The product of s's dims but the last two (1 for a matrix).
int64_t Leading(const std::vector<int64_t>& s) {
  int64_t p = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) p *= s[i];
  return p;
}

std::string Dims(const std::vector<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ", "), "]");
}

}  // namespace

void Recognizer::CheckKvBroadcast(const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                                  const std::vector<int64_t>& v) {
  for (const std::vector<int64_t>* t : {&k, &v}) {
    // Leading dims aligned from the right, as torch broadcasts them.
    const size_t tl = t->size() - 2, ql = q.size() - 2;
    for (size_t i = 1; i <= tl && i <= ql; ++i) {
      const int64_t td = (*t)[tl - i], qd = q[ql - i];
      if (td != qd && td != 1 && qd != 1) out_.tags.insert("grouped_kv");
    }
  }
}

void Recognizer::CheckDistinctInputs(const TensorInfo& q, const TensorInfo& k,
                                     const TensorInfo& v) {
  if (q.id() == 0 || k.id() == 0 || v.id() == 0) return;
  // A view's output id -> its input's id; so for a tensor times or over a number (the
  // scale ops of the pattern: the math path scales Q and K^T).
  std::map<int64_t, int64_t> source;
  for (const OpRecord& r : sig_.ops()) {
    const std::string name = BaseOpName(r.op());
    const bool scaled = (name == "mul" || name == "div") && r.inputs_size() == 1;
    if ((!ViewOps().count(name) && !scaled) || r.inputs_size() < 1 || r.inputs(0).id() == 0) {
      continue;
    }
    for (const TensorInfo& o : r.outputs()) {
      if (o.id() != 0 && o.id() != r.inputs(0).id()) source.emplace(o.id(), r.inputs(0).id());
    }
  }
  auto root = [&](int64_t id) {
    for (int hops = 0; hops < 64; ++hops) {
      auto it = source.find(id);
      if (it == source.end()) break;
      id = it->second;
    }
    return id;
  };
  if (std::set<int64_t>{root(q.id()), root(k.id()), root(v.id())}.size() < 3) {
    out_.tags.insert("shared_inputs");
  }
}

bool Recognizer::Attention() {
  static const auto* kFused = new std::set<std::string>{
      "scaled_dot_product_attention",
      "_scaled_dot_product_efficient_attention",
      "_scaled_dot_product_flash_attention",
      "_scaled_dot_product_cudnn_attention",
      "_scaled_dot_product_flash_attention_for_cpu",
      "_scaled_dot_product_fused_attention_overrideable"};
  const Op* op = nullptr;
  for (const Op& o : compute_) {
    if (kFused->count(o.name)) {
      op = &o;
      break;
    }
  }
  if (op == nullptr) return WrittenOutAttention();
  const OpRecord& r = *op->record;
  Decide(op, "attention", "sdpa", absl::StrCat("aten::", op->name));
  if (r.inputs_size() < 3 || r.inputs(0).shape_size() < 2 || r.inputs(1).shape_size() < 2 ||
      r.inputs(2).shape_size() < 2) {
    absl::StrAppend(&out_.reason, " without Q, K and V of rank >= 2 recorded");
    return true;
  }
  const std::vector<int64_t> q = ShapeOf(r.inputs(0)), k = ShapeOf(r.inputs(1)),
                             v = ShapeOf(r.inputs(2));
  out_.batch = Leading(q);
  out_.m = q[q.size() - 2];
  out_.k = q.back();
  out_.n = k[k.size() - 2];
  out_.head_dim_v = v.back();
  // The tensor after Q, K, V is the attention mask (attn_mask / attn_bias).
  if (r.inputs_size() > 3) out_.tags.insert("masked");
  out_.causal = ScalarArg(out_, "is_causal", 0) != 0;
  out_.scale = ScalarArg(out_, "scale", 0);
  if (ScalarArg(out_, "dropout_p", 0) > 0) out_.tags.insert("dropout");
  CheckKvBroadcast(q, k, v);
  CheckDistinctInputs(r.inputs(0), r.inputs(1), r.inputs(2));
  absl::StrAppend(&out_.reason, " Q ", Dims(q), " K ", Dims(k), " V ", Dims(v),
                  out_.causal ? " causal" : "");
  return true;
}

bool Recognizer::WrittenOutAttention() {
  static const auto* kProducts = new std::set<std::string>{"bmm", "mm", "matmul"};
  static const auto* kSoftmax = new std::set<std::string>{"_softmax", "softmax", "_safe_softmax"};
  std::vector<size_t> products, scales;
  size_t softmax = 0, tril = 0, where = 0, add = 0;  // positions + 1 (0: absent)
  for (size_t i = 0; i < compute_.size(); ++i) {
    const std::string& n = compute_[i].name;
    size_t* single = n == "tril" ? &tril : n == "where" ? &where : n == "add" ? &add
                     : kSoftmax->count(n) ? &softmax : nullptr;
    if (kProducts->count(n)) {
      products.push_back(i);
    } else if (n == "mul" || n == "div") {
      scales.push_back(i);
    } else if (single != nullptr && *single == 0) {
      *single = i + 1;
    } else {
      return false;
    }
  }
  const bool masked = tril || where || add;
  if (products.size() != 2 || softmax == 0 || scales.size() > 2 ||
      (masked && !(tril && where && add))) {
    return false;
  }
  const size_t p1 = products[0], p2 = products[1], sm = softmax - 1;
  if (!(p1 < sm && sm < p2)) return false;
  const OpRecord &r1 = *compute_[p1].record, &r2 = *compute_[p2].record,
                 &rs = *compute_[sm].record;
  if (r1.inputs_size() != 2 || r2.inputs_size() != 2 || r1.outputs_size() < 1 ||
      rs.inputs_size() < 1) {
    return false;
  }
  const std::vector<int64_t> a = ShapeOf(r1.inputs(0)), b = ShapeOf(r1.inputs(1)),
                             p = ShapeOf(r2.inputs(0)), v = ShapeOf(r2.inputs(1)),
                             s = ShapeOf(rs.inputs(0));
  const size_t rank = a.size();
  if ((rank != 2 && rank != 3) || b.size() != rank || p.size() != rank || v.size() != rank ||
      s.size() < 2) {
    return false;
  }
  const int64_t bh = Leading(a), l = a[rank - 2], d = a[rank - 1], kv = b[rank - 1],
                dv = v[rank - 1];
  if (b[rank - 2] != d || p[rank - 2] != l || p[rank - 1] != kv || v[rank - 2] != kv ||
      Leading(b) != bh || Leading(p) != bh || Leading(v) != bh || s.back() != kv ||
      Numel(s) != bh * l * kv) {
    return false;
  }
  // The softmax runs over the scores' last dim.
  const auto dim = rs.scalars().find("dim");
  if (dim != rs.scalars().end() && dim->second != -1 &&
      dim->second != static_cast<double>(s.size() - 1)) {
    return false;
  }
  // Scale ops: one tensor (Q, K^T or the scores) times or over one number.
  double scale = 1;
  for (size_t i : scales) {
    const OpRecord& r = *compute_[i].record;
    const auto other = r.scalars().find("other");
    if (i > sm || r.inputs_size() != 1 || other == r.scalars().end()) return false;
    const int64_t n = Numel(ShapeOf(r.inputs(0)));
    if (n != Numel(a) && n != Numel(b) && n != bh * l * kv) return false;
    if (compute_[i].name == "mul") {
      scale *= other->second;
    } else {
      if (other->second == 0) return false;
      scale /= other->second;
    }
  }
  // SDPA's math path: scores + where(tril(ones(L, S)), 0, -inf).
  if (masked) {
    const OpRecord& rt = *compute_[tril - 1].record;
    const OpRecord& ra = *compute_[add - 1].record;
    const std::vector<int64_t> lower = {l, kv};
    if (rt.inputs_size() != 1 || ShapeOf(rt.inputs(0)) != lower ||
        !RecordedIs("tril", "diagonal", 0) || !(tril < where && where < add) ||
        !(p1 < add - 1 && add - 1 < sm) || ra.inputs_size() != 2 ||
        ShapeOf(ra.inputs(1)) != lower) {
      return false;
    }
  }
  Decide(&compute_[p1], "attention", "written_out", "");
  out_.batch = bh;
  out_.m = l;
  out_.k = d;
  out_.n = kv;
  out_.head_dim_v = dv;
  out_.causal = masked;
  out_.scale = scale;
  // The model transposed K itself when the product reads a column-major view or a
  // transpose op made a tensor of K^T's matrix shape; else it was given K^T.
  bool transposed = IsColumnMajor(r1.inputs(1));
  for (const OpRecord& r : sig_.ops()) {
    if (!TransposeOps().count(BaseOpName(r.op())) || r.outputs_size() < 1) continue;
    const std::vector<int64_t> t = ShapeOf(r.outputs(0));
    if (t.size() >= 2 && t[t.size() - 2] == d && t.back() == kv) transposed = true;
  }
  if (!transposed) out_.tags.insert("k_given_transposed");
  CheckDistinctInputs(r1.inputs(0), r1.inputs(1), r2.inputs(1));
  out_.reason = absl::StrCat("softmax(Q @ K^T * ", scale, ") @ V written out: Q ", Dims(a),
                             " K^T ", Dims(b), " V ", Dims(v), masked ? " causal" : "");
  return true;
}

}  // namespace kagent::op_recognition_internal
