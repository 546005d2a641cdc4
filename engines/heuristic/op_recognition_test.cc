#include "kernel_model/op_recognition.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engines/heuristic/test_signatures.h"

namespace kagent {
namespace {

using testing::AddOp;
using testing::T;
using v1::OpSignature;

RecognizedOp Recognize(const OpSignature& sig) {
  auto r = RecognizeOp(sig);
  REQUIRE(r.ok());
  return *r;
}

TEST_CASE("Recognition: the flagship matvec (mm with one column)") {
  RecognizedOp op = Recognize(testing::MatvecSignature(2048, 1048576));
  CHECK(op.op_class == "matvec");
  CHECK(op.variant == "mm_n1");
  CHECK(op.m == 2048);
  CHECK(op.k == 1048576);
  CHECK(op.dtype == "bfloat16");
  CHECK_FALSE(op.trans_a);
  CHECK(DescribeOp(op) == "matvec/mm_n1 M=2048 K=1048576 bfloat16");
}

TEST_CASE("Recognition: mv, GEMM shapes, transposes and batches") {
  OpSignature mv;
  AddOp(&mv, "aten::mv", {{{64, 100}}, {{100}}}, {{{64}}});
  CHECK(Recognize(mv).op_class == "matvec");
  CHECK(Recognize(mv).variant == "mv");

  // torch.matmul(A.T, B): aten::t produces a column-major view consumed by mm.
  OpSignature ta;
  AddOp(&ta, "aten::t", {{{512, 256}}}, {{{256, 512}, "float32", {1, 256}}});
  AddOp(&ta, "aten::mm", {{{256, 512}, "float32", {1, 256}}, {{512, 128}}}, {{{256, 128}}});
  RecognizedOp g = Recognize(ta);
  CHECK(g.op_class == "gemm");
  CHECK(g.trans_a);
  CHECK_FALSE(g.trans_b);
  CHECK(g.m == 256);
  CHECK(g.n == 128);
  CHECK(g.k == 512);
  CHECK(g.tags.count("transposed_a"));

  // A column-major input the model did not transpose itself is not "trans_a".
  OpSignature given;
  AddOp(&given, "aten::mm", {{{256, 512}, "float32", {1, 256}}, {{512, 128}}}, {{{256, 128}}});
  CHECK_FALSE(Recognize(given).trans_a);

  OpSignature bmm;
  AddOp(&bmm, "aten::bmm", {{{8, 100, 30}}, {{8, 30, 70}}}, {{{8, 100, 70}}});
  RecognizedOp b = Recognize(bmm);
  CHECK(b.variant == "bmm");
  CHECK(b.batch == 8);
  CHECK(b.tags.count("batched"));
  CHECK(b.tags.count("irregular"));

  OpSignature tall;
  AddOp(&tall, "aten::mm", {{{32768, 64}}, {{64, 32}}}, {{{32768, 32}}});
  RecognizedOp t = Recognize(tall);
  CHECK(t.tags.count("tall_skinny"));

  OpSignature diag;
  AddOp(&diag, "aten::diag", {{{64}}}, {{{64, 64}}});
  AddOp(&diag, "aten::mm", {{{64, 64}}, {{64, 32}}}, {{{64, 32}}});
  CHECK(Recognize(diag).variant == "diag");
}

TEST_CASE("Recognition: activations, including composites") {
  for (auto [aten, variant] : std::vector<std::pair<std::string, std::string>>{
           {"aten::relu", "relu"}, {"aten::leaky_relu", "leaky_relu"}, {"aten::gelu", "gelu"},
           {"aten::sigmoid", "sigmoid"}, {"aten::tanh", "tanh"}, {"aten::softplus", "softplus"},
           {"aten::elu", "elu"}, {"aten::selu", "selu"}, {"aten::hardtanh", "hardtanh"},
           {"aten::hardsigmoid", "hardsigmoid"}, {"aten::silu", "swish"}}) {
    OpSignature s;
    AddOp(&s, aten, {{{16, 1024}}}, {{{16, 1024}}});
    RecognizedOp op = Recognize(s);
    CHECK(op.op_class == "elementwise");
    CHECK(op.variant == variant);
    CHECK(op.numel == 16 * 1024);
  }
  OpSignature swish;
  AddOp(&swish, "aten::sigmoid", {{{16, 1024}}}, {{{16, 1024}}});
  AddOp(&swish, "aten::mul", {{{16, 1024}}, {{16, 1024}}}, {{{16, 1024}}});
  CHECK(Recognize(swish).variant == "swish");
  OpSignature softsign;
  AddOp(&softsign, "aten::abs", {{{16, 64}}}, {{{16, 64}}});
  AddOp(&softsign, "aten::add", {{{16, 64}}}, {{{16, 64}}});
  AddOp(&softsign, "aten::div", {{{16, 64}}, {{16, 64}}}, {{{16, 64}}});
  CHECK(Recognize(softsign).variant == "softsign");
}

TEST_CASE("Recognition: activation scalars, and torch.selu as aten::elu with SELU constants") {
  // torch.selu / nn.SELU as the harness records them.
  OpSignature selu;
  AddOp(&selu, "aten::elu", {{{16, 1024}, "bfloat16"}}, {{{16, 1024}, "bfloat16"}},
        {{"alpha", 1.6732632423543772}, {"scale", 1.0507009873554805}, {"input_scale", 1.0}});
  RecognizedOp s = Recognize(selu);
  CHECK(s.op_class == "elementwise");
  CHECK(s.variant == "selu");
  CHECK(s.main_op == "elu");
  CHECK(s.scalars.at("scale") == 1.0507009873554805);
  CHECK(absl::StrContains(s.reason, "SELU"));
  CHECK(absl::StrContains(DescribeOp(s), "scale=1.0507"));

  // F.elu(x) (problem 16): alpha 1, scale 1.
  OpSignature elu;
  AddOp(&elu, "aten::elu", {{{16, 1024}}}, {{{16, 1024}}},
        {{"alpha", 1.0}, {"scale", 1.0}, {"input_scale", 1.0}});
  CHECK(Recognize(elu).variant == "elu");
  // A scale that is not SELU's stays elu, with its scalars for the template.
  OpSignature scaled;
  AddOp(&scaled, "aten::elu", {{{16, 1024}}}, {{{16, 1024}}},
        {{"alpha", 0.5}, {"scale", 2.0}, {"input_scale", 1.0}});
  RecognizedOp e = Recognize(scaled);
  CHECK(e.variant == "elu");
  CHECK(ScalarArg(e, "scale", 1.0) == 2.0);
  CHECK(ScalarArg(e, "alpha", 1.0) == 0.5);
  // Without recorded scalars (an older harness) aten::elu is plain elu.
  OpSignature bare;
  AddOp(&bare, "aten::elu", {{{16, 1024}}}, {{{16, 1024}}});
  RecognizedOp b = Recognize(bare);
  CHECK(b.variant == "elu");
  CHECK(b.scalars.empty());
  CHECK(ScalarArg(b, "alpha", 1.0) == 1.0);

  // nn.GELU(approximate="tanh"): the recorded string argument picks the tanh variant;
  // the exact GELU records approximate="none", an older harness records nothing.
  OpSignature gelu_tanh;
  AddOp(&gelu_tanh, "aten::gelu", {{{16, 1024}}}, {{{16, 1024}}});
  (*gelu_tanh.mutable_ops(0)->mutable_strings())["approximate"] = "tanh";
  RecognizedOp gt = Recognize(gelu_tanh);
  CHECK(gt.variant == "gelu_tanh");
  CHECK(gt.strings.at("approximate") == "tanh");
  CHECK(absl::StrContains(gt.reason, "tanh"));
  OpSignature gelu;
  AddOp(&gelu, "aten::gelu", {{{16, 1024}}}, {{{16, 1024}}});
  CHECK(Recognize(gelu).variant == "gelu");
  (*gelu.mutable_ops(0)->mutable_strings())["approximate"] = "none";
  CHECK(Recognize(gelu).variant == "gelu");

  OpSignature lrelu;
  AddOp(&lrelu, "aten::leaky_relu", {{{16, 1024}}}, {{{16, 1024}}}, {{"negative_slope", 0.2}});
  CHECK(ScalarArg(Recognize(lrelu), "negative_slope", 0.01) == 0.2);
  // F.relu6 dispatches to aten::hardtanh(x, 0, 6).
  OpSignature relu6;
  AddOp(&relu6, "aten::hardtanh", {{{16, 1024}}}, {{{16, 1024}}},
        {{"min_val", 0.0}, {"max_val", 6.0}});
  RecognizedOp h = Recognize(relu6);
  CHECK(h.variant == "hardtanh");
  CHECK(ScalarArg(h, "min_val", -1.0) == 0.0);
  CHECK(ScalarArg(h, "max_val", 1.0) == 6.0);
}

TEST_CASE("Recognition: reductions infer dim and keepdim from shapes") {
  OpSignature sum;
  AddOp(&sum, "aten::sum", {{{16, 256, 256}}}, {{{16, 1, 256}}});
  RecognizedOp s = Recognize(sum);
  CHECK(s.op_class == "reduction");
  CHECK(s.variant == "sum");
  CHECK(s.dim == 1);
  CHECK(s.keepdim);

  OpSignature am;
  AddOp(&am, "aten::argmax", {{{16, 256, 128}}}, {{{16, 128}, "int64"}});
  RecognizedOp a = Recognize(am);
  CHECK(a.variant == "argmax");
  CHECK(a.dim == 1);
  CHECK_FALSE(a.keepdim);

  OpSignature mx;
  AddOp(&mx, "aten::max", {{{16, 256, 128}}}, {{{16, 256}}, {{16, 256}, "int64"}});
  CHECK(Recognize(mx).variant == "max");
  CHECK(Recognize(mx).dim == 2);

  OpSignature amin;
  AddOp(&amin, "aten::amin", {{{4, 8}}}, {{{4}}});
  CHECK(Recognize(amin).variant == "min");
}

TEST_CASE("Recognition: a recorded dim beats the shapes, which can be ambiguous") {
  // problems/24: torch.min(x, dim=1) of 96 x 4096 x 4096; the shapes alone say dim 2.
  OpSignature bare;
  AddOp(&bare, "aten::min", {{{96, 4096, 4096}, "bfloat16"}},
        {{{96, 4096}, "bfloat16"}, {{96, 4096}, "int64"}});
  CHECK(Recognize(bare).dim == 2);
  OpSignature min1;
  AddOp(&min1, "aten::min", {{{96, 4096, 4096}, "bfloat16"}},
        {{{96, 4096}, "bfloat16"}, {{96, 4096}, "int64"}}, {{"dim", 1.0}, {"keepdim", 0.0}});
  RecognizedOp m = Recognize(min1);
  CHECK(m.variant == "min");
  CHECK(m.dim == 1);
  CHECK(m.num_dims == 1);
  CHECK_FALSE(m.keepdim);
  // A negative dim, keepdim.
  OpSignature neg;
  AddOp(&neg, "aten::sum", {{{8, 8, 8}}}, {{{8, 8, 1}}}, {{"dim.0", -1.0}, {"keepdim", 1.0}});
  CHECK(Recognize(neg).dim == 2);
  CHECK(Recognize(neg).keepdim);
  // A contiguous list of dims: mean over (1, 2).
  OpSignature two;
  AddOp(&two, "aten::mean", {{{4, 8, 8, 8}}}, {{{4, 8}}}, {{"dim.0", 2.0}, {"dim.1", 1.0}});
  CHECK(Recognize(two).dim == 1);
  CHECK(Recognize(two).num_dims == 2);
  // An out-of-range recorded dim is ignored: the shapes decide.
  OpSignature bad;
  AddOp(&bad, "aten::sum", {{{16, 256, 256}}}, {{{16, 1, 256}}}, {{"dim", 7.0}});
  CHECK(Recognize(bad).dim == 1);
  // softmax over a recorded non-last dim.
  OpSignature sm;
  AddOp(&sm, "aten::_softmax", {{{16, 64, 128}}}, {{{16, 64, 128}}}, {{"dim", 1.0}});
  CHECK(Recognize(sm).dim == 1);
}

TEST_CASE("Recognition: softmax, norms, losses") {
  OpSignature sm;
  AddOp(&sm, "aten::_softmax", {{{16, 16384}}}, {{{16, 16384}}});
  CHECK(Recognize(sm).op_class == "softmax");
  CHECK(Recognize(sm).variant == "softmax");
  CHECK(Recognize(sm).dim == 1);
  OpSignature lsm;
  AddOp(&lsm, "aten::_log_softmax", {{{16, 100}}}, {{{16, 100}}});
  CHECK(Recognize(lsm).variant == "log_softmax");

  OpSignature ln;
  AddOp(&ln, "aten::native_layer_norm", {{{16, 64, 256, 256}}, {{64, 256, 256}}, {{64, 256, 256}}},
        {{{16, 64, 256, 256}}, {{16, 1, 1, 1}}, {{16, 1, 1, 1}}});
  RecognizedOp l = Recognize(ln);
  CHECK(l.op_class == "norm");
  CHECK(l.variant == "layer");
  CHECK(l.num_dims == 3);
  CHECK(l.dim == 1);
  CHECK(l.has_affine);

  // KernelBench RMSNorm: x / sqrt(mean(x**2, dim=1, keepdim=True) + eps).
  OpSignature rms;
  AddOp(&rms, "aten::pow", {{{16, 64, 32, 32}}}, {{{16, 64, 32, 32}}});
  AddOp(&rms, "aten::mean", {{{16, 64, 32, 32}}}, {{{16, 1, 32, 32}}});
  AddOp(&rms, "aten::add", {{{16, 1, 32, 32}}}, {{{16, 1, 32, 32}}});
  AddOp(&rms, "aten::sqrt", {{{16, 1, 32, 32}}}, {{{16, 1, 32, 32}}});
  AddOp(&rms, "aten::div", {{{16, 64, 32, 32}}, {{16, 1, 32, 32}}}, {{{16, 64, 32, 32}}});
  RecognizedOp r = Recognize(rms);
  CHECK(r.op_class == "norm");
  CHECK(r.variant == "rms");
  CHECK(r.dim == 1);
  CHECK_FALSE(r.has_affine);

  OpSignature bn;
  AddOp(&bn, "aten::_native_batch_norm_legit_no_training", {{{16, 64, 32, 32}}, {{64}}, {{64}}},
        {{{16, 64, 32, 32}}});
  CHECK(Recognize(bn).variant == "batch");
  CHECK_FALSE(Recognize(bn).has_affine);  // x, running_mean, running_var
  OpSignature cudnn;  // F.batch_norm on a GPU, fp32 with weight and bias
  AddOp(&cudnn, "aten::cudnn_batch_norm", {{{16, 64, 32, 32}}, {{64}}, {{64}}, {{64}}, {{64}}},
        {{{16, 64, 32, 32}}, {{64}}, {{64}}, {{0}, "uint8"}},
        {{"training", 0.0}, {"exponential_average_factor", 0.1}, {"epsilon", 1e-5}});
  RecognizedOp cb = Recognize(cudnn);
  CHECK(cb.variant == "batch");
  CHECK(cb.has_affine);
  CHECK(cb.dim == 1);
  OpSignature half_affine;  // weight without bias
  AddOp(&half_affine, "aten::native_batch_norm",
        {{{16, 64, 32, 32}}, {{64}}, {{64}}, {{64}}}, {{{16, 64, 32, 32}}});
  CHECK(Recognize(half_affine).tags.count("partial_affine"));
  OpSignature gn;
  AddOp(&gn, "aten::native_group_norm", {{{4, 64, 8, 8}}, {{64}}, {{64}}},
        {{{4, 64, 8, 8}}, {{4, 8}}, {{4, 8}}},
        {{"N", 4.0}, {"C", 64.0}, {"HxW", 64.0}, {"group", 8.0}, {"eps", 1e-5}});
  RecognizedOp g = Recognize(gn);
  CHECK(g.variant == "group");
  CHECK(g.has_affine);
  CHECK_FALSE(g.tags.count("partial_affine"));
  CHECK(ScalarArg(g, "group", 0) == 8.0);

  // nn.InstanceNorm2d(8) on (2, 8, 5, 6) as the harness records it: batch_norm over x viewed
  // as (1, 16, 5, 6) with the batch's own statistics. The model's shape is the output's.
  auto instance = [](int tensors, double training) {
    OpSignature sig;
    AddOp(&sig, "aten::view", {{{2, 8, 5, 6}}}, {{{1, 16, 5, 6}}});
    std::vector<T> in = {{{1, 16, 5, 6}}};
    for (int i = 1; i < tensors; ++i) in.push_back({{16}});
    AddOp(&sig, "aten::native_batch_norm", in, {{{1, 16, 5, 6}}, {{16}}, {{16}}},
          {{"training", training}, {"momentum", 0.1}, {"eps", 1e-5}});
    AddOp(&sig, "aten::view", {{{1, 16, 5, 6}}}, {{{2, 8, 5, 6}}});
    return Recognize(sig);
  };
  RecognizedOp in = instance(1, 1.0);
  CHECK(in.variant == "instance");
  CHECK(in.input_shape == std::vector<int64_t>{2, 8, 5, 6});
  CHECK_FALSE(in.has_affine);
  CHECK_FALSE(in.tags.count("running_stats"));
  CHECK(instance(3, 1.0).has_affine);  // affine=True: x, weight, bias
  CHECK(instance(2, 1.0).tags.count("partial_affine"));
  RecognizedOp tracked = instance(3, 0.0);  // track_running_stats, eval: x, mean, var
  CHECK(tracked.tags.count("running_stats"));
  CHECK_FALSE(tracked.has_affine);
  CHECK(instance(5, 0.0).has_affine);

  // A batch of one: the view to (1, N*C, ...) changes nothing, so only the training flag
  // with no running statistics says instance norm. BatchNorm2d (training, with its running
  // statistics) and inference BatchNorm stay batch.
  auto batch_of_one = [](int tensors, double training) {
    OpSignature sig;
    std::vector<T> in = {{{1, 16, 5, 6}}};
    for (int i = 1; i < tensors; ++i) in.push_back({{16}});
    AddOp(&sig, "aten::native_batch_norm", in, {{{1, 16, 5, 6}}, {{16}}, {{16}}},
          {{"training", training}, {"momentum", 0.1}, {"eps", 1e-5}});
    return Recognize(sig);
  };
  RecognizedOp one = batch_of_one(1, 1.0);
  CHECK(one.variant == "instance");
  CHECK(one.input_shape == std::vector<int64_t>{1, 16, 5, 6});
  CHECK_FALSE(one.tags.count("running_stats"));
  CHECK(batch_of_one(3, 1.0).has_affine);
  CHECK(batch_of_one(5, 1.0).variant == "batch");  // BatchNorm2d training: running stats
  CHECK(batch_of_one(5, 0.0).variant == "batch");  // inference

  // torch.norm(x, p='fro') records linalg_vector_norm(ord 2) to a scalar: Frobenius; a
  // norm along dim 1 (KernelBench's L2Norm) is l2, of order 1 l1; a scalar norm of
  // order 1, another order along dims or an unrecorded one (+-inf) is vector_norm_dim.
  auto over = [](std::vector<int64_t> norm_out, double ord) {
    OpSignature sig;
    AddOp(&sig, "aten::linalg_vector_norm", {{{2, 8, 5, 6}}}, {{norm_out}},
          {{"ord", ord}, {"keepdim", 0.0}});
    AddOp(&sig, "aten::div", {{{2, 8, 5, 6}}, {norm_out}}, {{{2, 8, 5, 6}}});
    return Recognize(sig);
  };
  CHECK(over({}, 2.0).variant == "frobenius");
  RecognizedOp l2 = over({2, 1, 5, 6}, 2.0);  // no dims recorded: from the keepdim shape
  CHECK(l2.op_class == "norm");
  CHECK(l2.variant == "l2");
  CHECK(l2.dim == 1);
  CHECK(l2.num_dims == 1);
  CHECK(l2.keepdim);
  CHECK(over({2, 1, 5, 6}, 1.0).variant == "l1");
  CHECK(over({2, 1, 1, 6}, 2.0).num_dims == 2);
  RecognizedOp l3 = over({2, 1, 5, 6}, 3.0);
  CHECK(l3.variant == "vector_norm_dim");
  CHECK(absl::StrContains(l3.reason, "order 3"));
  CHECK(over({}, 1.0).variant == "vector_norm_dim");
  CHECK(over({1, 8, 1, 6}, 2.0).variant == "vector_norm_dim");  // dims 0 and 2

  // As the harness records KernelBench's L2Norm / L1Norm on (16, 64): the dims and keepdim
  // from the scalars.
  auto l2_dims = [](std::vector<int64_t> x, std::vector<int64_t> n, std::vector<int64_t> den,
                    std::map<std::string, double> scalars,
                    std::vector<std::string> extra = {}) {
    OpSignature sig;
    AddOp(&sig, "aten::linalg_vector_norm", {{x}}, {{n}}, scalars);
    for (const std::string& e : extra) AddOp(&sig, "aten::" + e, {{n}}, {{n}});
    AddOp(&sig, "aten::div", {{x}, {den}}, {{x}});
    return Recognize(sig);
  };
  RecognizedOp kb = l2_dims({16, 64}, {16, 1}, {16, 1},
                            {{"ord", 2.0}, {"dim.0", 1.0}, {"keepdim", 1.0}});
  CHECK(kb.variant == "l2");
  CHECK(kb.dim == 1);
  CHECK(kb.input_shape == std::vector<int64_t>{16, 64});
  RecognizedOp mid = l2_dims({4, 8, 33}, {4, 1, 33}, {4, 1, 33},
                             {{"ord", 1.0}, {"dim.0", -2.0}, {"keepdim", 1.0}});
  CHECK(mid.variant == "l1");
  CHECK(mid.dim == 1);
  // Without keepdim: dim 0 broadcasts back (a leading dim), dim 1 of a square does not.
  RecognizedOp lead = l2_dims({8, 8}, {8}, {8}, {{"ord", 2.0}, {"dim.0", 0.0}, {"keepdim", 0.0}});
  CHECK(lead.variant == "l2");
  CHECK(lead.dim == 0);
  CHECK_FALSE(lead.keepdim);
  CHECK(l2_dims({8, 8}, {8}, {8}, {{"ord", 2.0}, {"dim.0", 1.0}, {"keepdim", 0.0}}).variant ==
        "vector_norm_dim");
  // ord=inf is not recorded: not l2.
  RecognizedOp inf = l2_dims({16, 64}, {16, 1}, {16, 1}, {{"dim.0", 1.0}, {"keepdim", 1.0}});
  CHECK(inf.variant == "vector_norm_dim");
  CHECK(absl::StrContains(inf.reason, "not recorded"));
  // F.normalize: x / norm.clamp_min(eps).expand_as(x): l2 with the eps as a lower bound.
  // Without the expand op (and without tensor ids) the (16, 64) divisor is not the norm.
  auto normalize = [](bool expand) {
    OpSignature sig;
    AddOp(&sig, "aten::linalg_vector_norm", {{{16, 64}}}, {{{16, 1}}},
          {{"ord", 2.0}, {"dim.0", 1.0}, {"keepdim", 1.0}});
    AddOp(&sig, "aten::clamp_min", {{{16, 1}}}, {{{16, 1}}}, {{"min", 1e-12}});
    if (expand) AddOp(&sig, "aten::expand", {{{16, 1}}}, {{{16, 64}}});
    AddOp(&sig, "aten::div", {{{16, 64}}, {{16, 64}}}, {{{16, 64}}});
    return Recognize(sig);
  };
  RecognizedOp fn = normalize(true);
  CHECK(fn.variant == "l2");
  CHECK(fn.eps_mode == "clamp");
  CHECK(fn.eps == 1e-12);
  CHECK_FALSE(fn.tags.count("extra_ops"));
  CHECK(normalize(false).variant == "vector_norm_dim");

  // KernelBench's L1Norm: x / torch.sum(torch.abs(x), dim=1, keepdim=True).
  auto l1 = [](std::vector<int64_t> den, std::map<std::string, double> scalars) {
    OpSignature sig;
    AddOp(&sig, "aten::abs", {{{16, 64}}}, {{{16, 64}}});
    AddOp(&sig, "aten::sum", {{{16, 64}}}, {{{16, 1}}}, scalars);
    AddOp(&sig, "aten::div", {{{16, 64}}, {den}}, {{{16, 64}}});
    return Recognize(sig);
  };
  RecognizedOp kb1 = l1({16, 1}, {{"dim.0", 1.0}, {"keepdim", 1.0}});
  CHECK(kb1.op_class == "norm");
  CHECK(kb1.variant == "l1");
  CHECK(kb1.main_op == "sum");
  CHECK(kb1.dim == 1);
  CHECK(kb1.num_dims == 1);
  CHECK(kb1.keepdim);
  CHECK(kb1.input_shape == std::vector<int64_t>{16, 64});
  CHECK(l1({16, 1}, {}).variant == "l1");  // dims from the keepdim shape
  // Not a per-row quotient: still the sum reduction it was.
  CHECK(l1({16, 64}, {{"dim.0", 1.0}, {"keepdim", 1.0}}).op_class == "reduction");
  // The written-out family: the mean of |x| over a middle dim, the max-norm through
  // torch.max(dim) (values and indices), x / sqrt(sum(x^2) + eps), an eps added after
  // the root, clamp_min; a cube or another op between is refused.
  const T x3{{4, 9, 5}}, k3{{4, 1, 5}};
  OpSignature l1_mean;
  AddOp(&l1_mean, "aten::abs", {x3}, {x3});
  AddOp(&l1_mean, "aten::mean.dim", {x3}, {k3}, {{"dim.0", 1.0}, {"keepdim", 1.0}});
  AddOp(&l1_mean, "aten::div.Tensor", {x3, k3}, {x3});
  RecognizedOp lm = Recognize(l1_mean);
  CHECK(lm.variant == "l1");
  CHECK(lm.tags.count("mean_stat"));
  CHECK(lm.dim == 1);
  CHECK(lm.eps_mode.empty());
  CHECK_FALSE(lm.tags.count("extra_ops"));
  OpSignature max_norm;
  AddOp(&max_norm, "aten::abs", {x3}, {x3});
  AddOp(&max_norm, "aten::max.dim", {x3}, {{{4, 9, 1}}, {{{4, 9, 1}}, "int64"}},
        {{"dim", -1.0}, {"keepdim", 1.0}});
  AddOp(&max_norm, "aten::add.Tensor", {{{4, 9, 1}}}, {{{4, 9, 1}}}, {{"other", 1e-6}, {"alpha", 1.0}});
  AddOp(&max_norm, "aten::div.Tensor", {x3, {{4, 9, 1}}}, {x3});
  RecognizedOp mx_n = Recognize(max_norm);
  CHECK(mx_n.variant == "max");
  CHECK(mx_n.dim == 2);
  CHECK(mx_n.eps_mode == "add");
  CHECK(mx_n.eps == 1e-6);
  auto l2_written = [&](std::vector<std::pair<std::string, std::map<std::string, double>>> post,
                        double exponent = 2.0) {
    OpSignature sig;
    AddOp(&sig, "aten::pow", {x3}, {x3}, {{"exponent", exponent}});
    AddOp(&sig, "aten::sum", {x3}, {k3}, {{"dim.0", 1.0}, {"keepdim", 1.0}});
    for (const auto& [name, scalars] : post) AddOp(&sig, "aten::" + name, {k3}, {k3}, scalars);
    AddOp(&sig, "aten::div", {x3, k3}, {x3});
    return Recognize(sig);
  };
  RecognizedOp inside = l2_written({{"add", {{"other", 1e-8}}}, {"sqrt", {}}});
  CHECK(inside.variant == "l2");
  CHECK(inside.eps_mode == "add_inside");
  CHECK(l2_written({{"sqrt", {}}, {"add", {{"other", 1e-8}}}}).eps_mode == "add");
  CHECK(l2_written({{"sqrt", {}}, {"clamp_min", {{"min", 1e-8}}}}).eps_mode == "clamp");
  CHECK(l2_written({{"sqrt", {}}}).eps_mode.empty());
  CHECK(l2_written({{"sqrt", {}}}, 3.0).variant != "l2");                  // a cube
  CHECK(l2_written({}).variant != "l2");                                   // no root
  CHECK(l2_written({{"sqrt", {}}, {"exp", {}}}).variant != "l2");          // another op
  CHECK(l2_written({{"clamp", {{"min", 1e-8}, {"max", 1.0}}}, {"sqrt", {}}}).variant != "l2");
  OpSignature softsign;  // x / (1 + |x|): abs and div without a sum
  AddOp(&softsign, "aten::abs", {{{16, 64}}}, {{{16, 64}}});
  AddOp(&softsign, "aten::add", {{{16, 64}}}, {{{16, 64}}});
  AddOp(&softsign, "aten::div", {{{16, 64}}, {{16, 64}}}, {{{16, 64}}});
  CHECK(Recognize(softsign).variant == "softsign");

  OpSignature ce;  // cross-entropy is softmax inside: still a loss
  AddOp(&ce, "aten::_log_softmax", {{{128, 10}}}, {{{128, 10}}});
  AddOp(&ce, "aten::nll_loss_forward", {{{128, 10}}, {{128}, "int64"}}, {{{}}, {{}}});
  CHECK(Recognize(ce).op_class == "loss");
  CHECK(Recognize(ce).variant == "cross_entropy");

  OpSignature mse;
  AddOp(&mse, "aten::sub", {{{128, 4096}}, {{128, 4096}}}, {{{128, 4096}}});
  AddOp(&mse, "aten::pow", {{{128, 4096}}}, {{{128, 4096}}});
  AddOp(&mse, "aten::mean", {{{128, 4096}}}, {{{}}});
  CHECK(Recognize(mse).op_class == "loss");
  CHECK(Recognize(mse).variant == "mse");

  OpSignature hl;
  AddOp(&hl, "aten::huber_loss", {{{128, 4096}}, {{128, 4096}}}, {{{}}});
  CHECK(Recognize(hl).variant == "huber");
}

TEST_CASE("Recognition: conv, pooling, scans, unknown, empty") {
  OpSignature dw;
  AddOp(&dw, "aten::convolution", {{{16, 64, 128, 128}}, {{64, 1, 3, 3}}}, {{{16, 64, 126, 126}}});
  RecognizedOp c = Recognize(dw);
  CHECK(c.op_class == "conv");
  CHECK(c.variant == "conv2d");
  CHECK(c.tags.count("depthwise"));
  CHECK_FALSE(c.tags.count("transposed"));

  OpSignature tr;
  AddOp(&tr, "aten::convolution", {{{16, 32, 16, 16, 16}}, {{32, 64, 3, 3, 3}}},
        {{{16, 64, 18, 18, 18}}});
  CHECK(Recognize(tr).variant == "conv3d");
  CHECK(Recognize(tr).tags.count("transposed"));
  // The recorded `transposed` flag decides when present: a 1 x 1, stride-1 transposed conv
  // does not grow its output; a transposed conv with C_out = 1 is not depthwise; its
  // groups come from the scalars (the weight is (C_in, C_out / groups, *k)).
  auto transposed = [](double groups, int64_t cout_per_group) {
    OpSignature sig;
    AddOp(&sig, "aten::convolution", {{{2, 8, 5, 6}}, {{8, cout_per_group, 1, 1}}},
          {{{2, cout_per_group * static_cast<int64_t>(groups), 5, 6}}},
          {{"transposed", 1.0}, {"groups", groups}, {"stride.0", 1.0}});
    return Recognize(sig);
  };
  RecognizedOp t1 = transposed(1, 1);
  CHECK(t1.tags.count("transposed"));
  CHECK_FALSE(t1.tags.count("depthwise"));
  CHECK_FALSE(t1.tags.count("grouped"));
  CHECK(transposed(2, 4).tags.count("grouped"));
  // aten::conv_transpose1d / 3d (no `transposed` flag: the name tells) with the groups
  // recorded; without a groups scalar (an older harness) the output's channels over the
  // weight's C_out / groups give them.
  OpSignature t1d;
  AddOp(&t1d, "aten::conv_transpose1d", {{{2, 8, 9}}, {{8, 3, 3}}}, {{{2, 6, 19}}},
        {{"groups", 2.0}, {"stride.0", 2.0}, {"output_padding.0", 1.0}});
  RecognizedOp r1 = Recognize(t1d);
  CHECK(r1.variant == "conv1d");
  CHECK(r1.tags.count("transposed"));
  CHECK(r1.tags.count("grouped"));
  CHECK(ScalarArg(r1, "output_padding.0", 0) == 1.0);
  OpSignature t3d;
  AddOp(&t3d, "aten::conv_transpose3d", {{{1, 4, 3, 3, 3}}, {{4, 5, 2, 2, 2}}},
        {{{1, 5, 4, 4, 4}}}, {{"groups", 1.0}});
  CHECK(Recognize(t3d).variant == "conv3d");
  CHECK(Recognize(t3d).tags.count("transposed"));
  CHECK_FALSE(Recognize(t3d).tags.count("grouped"));
  OpSignature unrecorded;
  AddOp(&unrecorded, "aten::convolution", {{{2, 8, 5, 6}}, {{8, 2, 3, 3}}}, {{{2, 8, 7, 8}}});
  CHECK(Recognize(unrecorded).tags.count("transposed"));
  CHECK(Recognize(unrecorded).tags.count("grouped"));
  OpSignature plain;  // transposed = 0 recorded: a standard conv
  AddOp(&plain, "aten::convolution", {{{2, 8, 5, 6}}, {{16, 8, 1, 1}}}, {{{2, 16, 5, 6}}},
        {{"transposed", 0.0}, {"groups", 1.0}});
  CHECK_FALSE(Recognize(plain).tags.count("transposed"));

  OpSignature mp;
  AddOp(&mp, "aten::max_pool2d_with_indices", {{{16, 32, 128, 128}}},
        {{{16, 32, 64, 64}}, {{16, 32, 64, 64}, "int64"}});
  CHECK(Recognize(mp).op_class == "pooling");
  CHECK(Recognize(mp).variant == "max2d");

  OpSignature rc;
  AddOp(&rc, "aten::flip", {{{128, 4000}}}, {{{128, 4000}}});
  AddOp(&rc, "aten::cumsum", {{{128, 4000}}}, {{{128, 4000}}});
  AddOp(&rc, "aten::flip", {{{128, 4000}}}, {{{128, 4000}}});
  CHECK(Recognize(rc).op_class == "scan");
  CHECK(Recognize(rc).variant == "reverse_cumsum");

  OpSignature unk;
  AddOp(&unk, "aten::fft_fft", {{{16}}}, {{{16}}});
  RecognizedOp u = Recognize(unk);
  CHECK(u.op_class == "unknown");
  CHECK(u.reason.find("fft_fft") != std::string::npos);

  CHECK(RecognizeOp(OpSignature()).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(BaseOpName("aten::relu_.default") == "relu");
  CHECK(BaseOpName("aten::_softmax") == "_softmax");
}

}  // namespace
}  // namespace kagent

namespace kagent {
namespace {

using testing::AddOp;
using v1::OpSignature;

// Signatures as the harness records them for problems/31-44 (at a reduced scale).
TEST_CASE("Recognition: the convolution class reports group problems by") {
  auto conv = [](std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> y,
                 double groups, double transposed) {
    OpSignature s;
    AddOp(&s, "aten::convolution", {{x}, {w}}, {{y}},
          {{"groups", groups}, {"transposed", transposed}, {"stride.0", 1.0}});
    return ConvClass(Recognize(s));
  };
  CHECK(conv({8, 64, 32, 32}, {128, 64, 3, 3}, {8, 128, 30, 30}, 1, 0) == "conv2d");
  CHECK(conv({8, 64, 100}, {128, 64, 5}, {8, 128, 96}, 1, 0) == "conv1d");
  CHECK(conv({2, 16, 8, 8, 8}, {32, 16, 3, 3, 3}, {2, 32, 6, 6, 6}, 1, 0) == "conv3d");
  CHECK(conv({8, 64, 32, 32}, {128, 64, 1, 1}, {8, 128, 32, 32}, 1, 0) == "conv2d pointwise");
  CHECK(conv({8, 3, 224, 224}, {64, 3, 7, 7}, {8, 64, 218, 218}, 1, 0) == "conv2d stem");
  CHECK(conv({8, 1, 64, 64}, {16, 1, 3, 3}, {8, 16, 62, 62}, 1, 0) == "conv2d stem");
  CHECK(conv({8, 64, 32, 32}, {64, 1, 3, 3}, {8, 64, 30, 30}, 64, 0) == "conv2d depthwise");
  CHECK(conv({8, 64, 32, 32}, {128, 16, 3, 3}, {8, 128, 30, 30}, 4, 0) == "conv2d grouped");
  CHECK(conv({8, 64, 32, 32}, {64, 32, 3, 3}, {8, 32, 34, 34}, 1, 1) == "conv2d transposed");
  CHECK(conv({4, 32, 100}, {32, 4, 5}, {4, 16, 104}, 4, 1) == "conv1d transposed grouped");
  OpSignature sep;  // a depthwise conv, then a pointwise one
  AddOp(&sep, "aten::convolution", {{{2, 6, 9, 11}}, {{6, 1, 3, 3}}}, {{{2, 6, 9, 11}}},
        {{"groups", 6.0}, {"transposed", 0.0}, {"padding.0", 1.0}});
  AddOp(&sep, "aten::convolution", {{{2, 6, 9, 11}}, {{10, 6, 1, 1}}}, {{{2, 10, 9, 11}}},
        {{"groups", 1.0}, {"transposed", 0.0}});
  CHECK(ConvClass(Recognize(sep)) == "conv2d depthwise-separable");
  OpSignature mm;
  AddOp(&mm, "aten::mm", {{{64, 32}}, {{32, 16}}}, {{{64, 16}}});
  CHECK(ConvClass(Recognize(mm)).empty());
}

TEST_CASE("Recognition: 1-D pooling runs as an unsqueezed 2-D op") {
  OpSignature mp1;  // nn.MaxPool1d(3, 2, 1) on (2, 64, 2048)
  AddOp(&mp1, "aten::unsqueeze", {{{2, 64, 2048}}}, {{{2, 64, 1, 2048}}});
  AddOp(&mp1, "aten::max_pool2d_with_indices", {{{2, 64, 1, 2048}}},
        {{{2, 64, 1, 1024}}, {{2, 64, 1, 1024}, "int64"}});
  AddOp(&mp1, "aten::squeeze", {{{2, 64, 1, 1024}}}, {{{2, 64, 1024}}});
  AddOp(&mp1, "aten::squeeze", {{{2, 64, 1, 1024}, "int64"}}, {{{2, 64, 1024}, "int64"}});
  RecognizedOp m = Recognize(mp1);
  CHECK(m.op_class == "pooling");
  CHECK(m.variant == "max1d");
  CHECK(m.input_shape == std::vector<int64_t>{2, 64, 2048});

  OpSignature ap1;  // nn.AvgPool1d(4, 2, 1), bf16
  AddOp(&ap1, "aten::unsqueeze", {{{2, 64, 2048}, "bfloat16"}}, {{{2, 64, 1, 2048}, "bfloat16"}});
  AddOp(&ap1, "aten::avg_pool2d", {{{2, 64, 1, 2048}, "bfloat16"}}, {{{2, 64, 1, 1024}, "bfloat16"}});
  AddOp(&ap1, "aten::squeeze", {{{2, 64, 1, 1024}, "bfloat16"}}, {{{2, 64, 1024}, "bfloat16"}});
  CHECK(Recognize(ap1).variant == "avg1d");
  CHECK(Recognize(ap1).dtype == "bfloat16");

  OpSignature ap2;  // a 2-D pool over a plane of height 1 is still 2-D without the unsqueeze
  AddOp(&ap2, "aten::avg_pool2d", {{{2, 64, 1, 2048}}}, {{{2, 64, 1, 1024}}});
  CHECK(Recognize(ap2).variant == "avg2d");
}

TEST_CASE("Recognition: conv stride, padding and bias from the shapes") {
  OpSignature c35;  // problems/35: 3x3, padding 1, no bias
  AddOp(&c35, "aten::convolution", {{{1, 64, 6, 7}}, {{128, 64, 3, 3}}}, {{{1, 128, 6, 7}}});
  RecognizedOp c = Recognize(c35);
  CHECK(c.variant == "conv2d");
  CHECK(c.stride == 1);
  CHECK(c.padding == 1);
  CHECK_FALSE(c.has_bias);
  CHECK(c.tags.count("conv_params_inferred"));
  CHECK(c.weight_shape == std::vector<int64_t>{128, 64, 3, 3});
  CHECK(DescribeOp(c) ==
        "conv/conv2d shape=[1,64,6,7] weight=[128,64,3,3] stride=1 padding=1 float32 "
        "[conv_params_inferred]");

  OpSignature s2;  // 5x5, stride 2, padding 2, bias
  AddOp(&s2, "aten::convolution", {{{4, 3, 224, 224}}, {{32, 3, 5, 5}}, {{32}}},
        {{{4, 32, 112, 112}}});
  RecognizedOp r = Recognize(s2);
  CHECK(r.stride == 2);
  CHECK(r.padding == 2);
  CHECK(r.has_bias);

  OpSignature dw;  // problems/36: depthwise with bias
  AddOp(&dw, "aten::convolution", {{{1, 128, 8, 8}}, {{128, 1, 3, 3}}, {{128}}}, {{{1, 128, 8, 8}}});
  CHECK(Recognize(dw).tags.count("depthwise"));
  CHECK_FALSE(Recognize(dw).tags.count("grouped"));

  OpSignature g;  // groups = 4
  AddOp(&g, "aten::convolution", {{{1, 32, 8, 8}}, {{64, 8, 3, 3}}}, {{{1, 64, 6, 6}}});
  CHECK(Recognize(g).tags.count("grouped"));
  CHECK(Recognize(g).padding == 0);
}

TEST_CASE("Recognition: a depthwise conv then a pointwise one is depthwise_separable") {
  const std::map<std::string, double> dw_args = {
      {"stride.0", 1.0}, {"stride.1", 1.0}, {"padding.0", 1.0}, {"padding.1", 1.0},
      {"dilation.0", 1.0}, {"dilation.1", 1.0}, {"transposed", 0.0}, {"groups", 6.0}};
  const std::map<std::string, double> pw_args = {
      {"stride.0", 1.0}, {"stride.1", 1.0}, {"padding.0", 0.0}, {"padding.1", 0.0},
      {"dilation.0", 1.0}, {"dilation.1", 1.0}, {"transposed", 0.0}, {"groups", 1.0}};
  OpSignature sep;  // KernelBench level 1's depthwise-separable conv, a pointwise bias
  AddOp(&sep, "aten::convolution", {{{2, 6, 9, 11}}, {{6, 1, 3, 3}}}, {{{2, 6, 9, 11}}}, dw_args);
  AddOp(&sep, "aten::convolution", {{{2, 6, 9, 11}}, {{10, 6, 1, 1}}, {{10}}},
        {{{2, 10, 9, 11}}}, pw_args);
  RecognizedOp r = Recognize(sep);
  CHECK(r.variant == "conv2d");
  CHECK(r.tags.count("depthwise"));
  CHECK(r.tags.count("depthwise_separable"));
  CHECK_FALSE(r.tags.count("extra_ops"));
  CHECK(r.weight_shape == std::vector<int64_t>{6, 1, 3, 3});
  CHECK_FALSE(r.has_bias);
  CHECK(r.pointwise_weight_shape == std::vector<int64_t>{10, 6, 1, 1});
  CHECK(r.pointwise_has_bias);
  CHECK(r.scalars.at("padding.0") == 1.0);  // the depthwise conv's
  CHECK(r.output_shape == std::vector<int64_t>{2, 10, 9, 11});
  CHECK(absl::StrContains(DescribeOp(r), "then pointwise weight=[10,6,1,1] bias"));

  // Not a chain the template computes: the second conv is 3x3, strided, grouped, or
  // first; a third conv; the second takes another tensor's shape. Each stays refused.
  auto second = [&](std::vector<int64_t> w, std::vector<int64_t> y,
                    std::map<std::string, double> args) {
    OpSignature s;
    AddOp(&s, "aten::convolution", {{{2, 6, 9, 11}}, {{6, 1, 3, 3}}}, {{{2, 6, 9, 11}}}, dw_args);
    AddOp(&s, "aten::convolution", {{{2, 6, 9, 11}}, {w}}, {{y}}, args);
    return Recognize(s);
  };
  auto strided = pw_args;
  strided["stride.0"] = strided["stride.1"] = 2;
  auto grouped = pw_args;
  grouped["groups"] = 2;
  for (const RecognizedOp& o :
       {second({10, 6, 3, 3}, {2, 10, 7, 9}, {}), second({10, 6, 1, 1}, {2, 10, 5, 6}, strided),
        second({10, 3, 1, 1}, {2, 10, 9, 11}, grouped)}) {
    CHECK_FALSE(o.tags.count("depthwise_separable"));
    CHECK(o.tags.count("extra_ops"));
  }
  OpSignature pw_first;
  AddOp(&pw_first, "aten::convolution", {{{2, 6, 9, 11}}, {{6, 6, 1, 1}}}, {{{2, 6, 9, 11}}},
        pw_args);
  AddOp(&pw_first, "aten::convolution", {{{2, 6, 9, 11}}, {{6, 1, 3, 3}}}, {{{2, 6, 9, 11}}},
        dw_args);
  CHECK_FALSE(Recognize(pw_first).tags.count("depthwise_separable"));
  CHECK(Recognize(pw_first).tags.count("extra_ops"));
  OpSignature three = sep;
  AddOp(&three, "aten::convolution", {{{2, 10, 9, 11}}, {{10, 10, 1, 1}}}, {{{2, 10, 9, 11}}},
        pw_args);
  CHECK_FALSE(Recognize(three).tags.count("depthwise_separable"));
  CHECK(Recognize(three).tags.count("extra_ops"));
  OpSignature other_input;  // the pointwise conv takes a tensor of another shape
  AddOp(&other_input, "aten::convolution", {{{2, 6, 9, 11}}, {{6, 1, 3, 3}}},
        {{{2, 6, 7, 9}}}, dw_args);
  AddOp(&other_input, "aten::convolution", {{{2, 6, 9, 11}}, {{10, 6, 1, 1}}},
        {{{2, 10, 9, 11}}}, pw_args);
  CHECK_FALSE(Recognize(other_input).tags.count("depthwise_separable"));
  OpSignature one_channel;  // a one-channel first conv is depthwise too (groups 1)
  AddOp(&one_channel, "aten::convolution", {{{2, 1, 9, 11}}, {{1, 1, 3, 3}}}, {{{2, 1, 9, 11}}},
        dw_args);
  AddOp(&one_channel, "aten::convolution", {{{2, 1, 9, 11}}, {{4, 1, 1, 1}}}, {{{2, 4, 9, 11}}},
        pw_args);
  CHECK(Recognize(one_channel).tags.count("depthwise_separable"));
  CHECK_FALSE(Recognize(one_channel).tags.count("extra_ops"));
}

TEST_CASE("Recognition: exclusive scans that change the shape are tagged") {
  OpSignature good;  // cat((0, x[:, :-1]), 1).cumsum(1): the input's shape
  AddOp(&good, "aten::slice", {{{4, 6}}}, {{{4, 1}}});
  AddOp(&good, "aten::zeros_like", {{{4, 1}}}, {{{4, 1}}});
  AddOp(&good, "aten::slice", {{{4, 6}}}, {{{4, 5}}});
  AddOp(&good, "aten::cat", {{{4, 1}}, {{4, 5}}}, {{{4, 6}}});
  AddOp(&good, "aten::cumsum", {{{4, 6}}}, {{{4, 6}}});
  CHECK(Recognize(good).variant == "exclusive_cumsum");
  CHECK_FALSE(Recognize(good).tags.count("shape_changing"));

  OpSignature kb;  // KernelBench: cat((0, x), 1)[:-1].cumsum(1) -> (B - 1, N + 1)
  AddOp(&kb, "aten::select", {{{4, 6}}}, {{{4}}});
  AddOp(&kb, "aten::unsqueeze", {{{4}}}, {{{4, 1}}});
  AddOp(&kb, "aten::zeros_like", {{{4, 1}}}, {{{4, 1}}});
  AddOp(&kb, "aten::cat", {{{4, 1}}, {{4, 6}}}, {{{4, 7}}});
  AddOp(&kb, "aten::slice", {{{4, 7}}}, {{{3, 7}}});
  AddOp(&kb, "aten::cumsum", {{{3, 7}}}, {{{3, 7}}});
  CHECK(Recognize(kb).variant == "exclusive_cumsum");
  CHECK(Recognize(kb).tags.count("shape_changing"));
}

TEST_CASE("Recognition: loss reductions and the KL-div log input") {
  OpSignature kl;  // problems/40: kl_div(log(p), t, reduction="batchmean")
  AddOp(&kl, "aten::log", {{{256, 512}}}, {{{256, 512}}});
  AddOp(&kl, "aten::mul", {{{256, 512}}, {{256, 512}}}, {{{256, 512}}});
  AddOp(&kl, "aten::xlogy", {{{256, 512}}, {{256, 512}}}, {{{256, 512}}});
  AddOp(&kl, "aten::sub", {{{256, 512}}, {{256, 512}}}, {{{256, 512}}});
  AddOp(&kl, "aten::sum", {{{256, 512}}}, {{{}}});
  AddOp(&kl, "aten::div", {{{}}}, {{{}}});
  RecognizedOp k = Recognize(kl);
  CHECK(k.variant == "kl_div");
  CHECK(k.reduction == "batchmean");
  CHECK(k.tags.count("log_input"));

  OpSignature hinge;  // problems/39: mean(clamp(1 - p * t, min=0))
  AddOp(&hinge, "aten::mul", {{{512, 256}}, {{512, 256}}}, {{{512, 256}}});
  AddOp(&hinge, "aten::rsub", {{{512, 256}}}, {{{512, 256}}});
  AddOp(&hinge, "aten::clamp", {{{512, 256}}}, {{{512, 256}}});
  AddOp(&hinge, "aten::mean", {{{512, 256}}}, {{{}}});
  CHECK(Recognize(hinge).variant == "hinge");
  CHECK(Recognize(hinge).reduction == "mean");

  OpSignature sl1;  // problems/41: the fused aten op hides the reduction: torch's mean
  AddOp(&sl1, "aten::smooth_l1_loss", {{{512, 512}, "bfloat16"}, {{512, 512}, "bfloat16"}},
        {{{}, "bfloat16"}});
  CHECK(Recognize(sl1).variant == "smooth_l1");
  CHECK(Recognize(sl1).reduction == "mean");

  OpSignature sse;  // sum of squared differences
  AddOp(&sse, "aten::sub", {{{64, 64}}, {{64, 64}}}, {{{64, 64}}});
  AddOp(&sse, "aten::pow", {{{64, 64}}}, {{{64, 64}}});
  AddOp(&sse, "aten::sum", {{{64, 64}}}, {{{}}});
  CHECK(Recognize(sse).reduction == "sum");

  OpSignature he;
  AddOp(&he, "aten::hinge_embedding_loss", {{{64, 64}}, {{64, 64}}}, {{{}}});
  CHECK(Recognize(he).variant == "hinge_embedding");
}

TEST_CASE("Recognition: a triangular product names its triangle, an operand's is not one") {
  const T a{{128, 64}}, b{{64, 96}}, c{{128, 96}};
  OpSignature upper;  // torch.triu(A @ B, diagonal=-2)
  AddOp(&upper, "aten::mm", {a, b}, {c});
  AddOp(&upper, "aten::triu", {c}, {c}, {{"diagonal", -2.0}});
  RecognizedOp u = Recognize(upper);
  CHECK(u.variant == "triangular");
  CHECK(u.triangle == "upper");
  CHECK(u.diagonal == -2);
  CHECK_FALSE(u.tags.count("extra_ops"));
  OpSignature lower;  // torch.tril(A @ B)
  AddOp(&lower, "aten::mm", {a, b}, {c});
  AddOp(&lower, "aten::tril", {c}, {c});
  CHECK(Recognize(lower).triangle == "lower");
  CHECK(Recognize(lower).diagonal == 0);
  OpSignature operand;  // torch.tril(A) @ B: the triangle is A's
  AddOp(&operand, "aten::tril", {a}, {a});
  AddOp(&operand, "aten::mm", {a, b}, {c});
  RecognizedOp o = Recognize(operand);
  CHECK(o.variant == "triangular");
  CHECK(o.triangle.empty());
}

TEST_CASE("Recognition: diag(d) @ B's side from the tensor ids, else the shapes") {
  auto with_ids = [](int64_t left_id, int64_t right_id, std::vector<int64_t> b_shape) {
    OpSignature sig;
    AddOp(&sig, "aten::diag_embed", {{{96}}}, {{{96, 96}}});
    AddOp(&sig, "aten::mm", {{{96, 96}}, {b_shape}}, {{{96, 96}}});
    sig.mutable_ops(0)->mutable_outputs(0)->set_id(2);
    sig.mutable_ops(1)->mutable_inputs(0)->set_id(left_id);
    sig.mutable_ops(1)->mutable_inputs(1)->set_id(right_id);
    return Recognize(sig);
  };
  CHECK(with_ids(2, 3, {96, 96}).diag_side == "left");   // square: only the ids tell
  CHECK(with_ids(3, 2, {96, 96}).diag_side == "right");
  CHECK(with_ids(2, 3, {96, 96}).variant == "diag");
  CHECK_FALSE(with_ids(2, 3, {96, 96}).tags.count("extra_ops"));
  CHECK(with_ids(0, 0, {96, 96}).diag_side.empty());     // no ids, square: unknown
  OpSignature shapes;  // no ids, B (96, 50): the diagonal can only be on the left
  AddOp(&shapes, "aten::diag_embed", {{{96}}}, {{{96, 96}}});
  AddOp(&shapes, "aten::mm", {{{96, 96}}, {{96, 50}}}, {{{96, 50}}});
  CHECK(Recognize(shapes).diag_side == "left");
}

TEST_CASE("Recognition: GELU's tanh approximation written out (MinGPT) is gelu_tanh") {
  const T x{{64, 128}};
  auto gpt = [&](double cubic) {
    OpSignature sig;  // the ops and scalars the harness records for KernelBench's NewGELU
    AddOp(&sig, "aten::pow", {x}, {x}, {{"exponent", 3.0}});
    AddOp(&sig, "aten::mul", {x}, {x}, {{"other", cubic}});
    AddOp(&sig, "aten::add", {x, x}, {x}, {{"alpha", 1.0}});
    AddOp(&sig, "aten::mul", {x}, {x}, {{"other", 0.7978845608028654}});
    AddOp(&sig, "aten::tanh", {x}, {x});
    AddOp(&sig, "aten::add", {x}, {x}, {{"other", 1.0}, {"alpha", 1.0}});
    AddOp(&sig, "aten::mul", {x}, {x}, {{"other", 0.5}});
    AddOp(&sig, "aten::mul", {x, x}, {x});
    return Recognize(sig);
  };
  RecognizedOp op = gpt(0.044715);
  CHECK(op.variant == "gelu_tanh");
  CHECK(op.main_op == "tanh");
  CHECK_FALSE(op.tags.count("extra_ops"));
  // Another cubic coefficient is another function: tanh with extra ops, refused.
  RecognizedOp other = gpt(0.05);
  CHECK(other.variant == "tanh");
  CHECK(other.tags.count("extra_ops"));
}

TEST_CASE("Recognition: a tensor times one number is elementwise scale") {
  const T a{{64, 128}};
  OpSignature times;  // A * s, s a Python number (a forward argument or a constant)
  AddOp(&times, "aten::mul", {a}, {a}, {{"other", 3.14}});
  RecognizedOp op = Recognize(times);
  CHECK(op.op_class == "elementwise");
  CHECK(op.variant == "scale");
  CHECK(ScalarArg(op, "other", 1) == 3.14);
  CHECK_FALSE(op.tags.count("extra_ops"));
  OpSignature tensors;  // A * B: two tensors of one shape, elementwise mul
  AddOp(&tensors, "aten::mul", {a, a}, {a});
  RecognizedOp ab = Recognize(tensors);
  CHECK(ab.variant == "mul");
  CHECK_FALSE(ab.tags.count("broadcast"));
  OpSignature two;  // A * B + C: two ops, fused, no template
  AddOp(&two, "aten::mul", {a, a}, {a});
  AddOp(&two, "aten::add", {a, a}, {a}, {{"alpha", 1.0}});
  CHECK(Recognize(two).variant == "fused");
}

// Builds one op record with tensor ids (as the harness records them).
static void AddIdOp(OpSignature* sig, const std::string& op,
                    std::vector<std::pair<std::vector<int64_t>, int64_t>> in,
                    std::vector<std::pair<std::vector<int64_t>, int64_t>> out,
                    std::map<std::string, double> scalars = {}) {
  std::vector<T> ins, outs;
  for (const auto& t : in) ins.push_back({t.first});
  for (const auto& t : out) outs.push_back({t.first});
  AddOp(sig, op, ins, outs, scalars);
  auto* r = sig->mutable_ops(sig->ops_size() - 1);
  for (size_t i = 0; i < in.size(); ++i) r->mutable_inputs(i)->set_id(in[i].second);
  for (size_t i = 0; i < out.size(); ++i) r->mutable_outputs(i)->set_id(out[i].second);
}

TEST_CASE("Recognition: binary ops of broadcasting tensors") {
  // A.unsqueeze(1) * B: a row scale, gemm/diag left; B * A: a column scale, right.
  OpSignature row;
  AddIdOp(&row, "aten::unsqueeze", {{{5}, 1}}, {{{5, 1}, 2}}, {{"dim", 1.0}});
  AddIdOp(&row, "aten::mul", {{{5, 1}, 2}, {{5, 7}, 3}}, {{{5, 7}, 4}});
  RecognizedOp r = Recognize(row);
  CHECK(r.op_class == "gemm");
  CHECK(r.variant == "diag");
  CHECK(r.diag_side == "left");
  CHECK(r.n == 7);
  CHECK(r.tags.count("broadcast"));
  CHECK_FALSE(r.tags.count("extra_ops"));
  OpSignature col;
  AddIdOp(&col, "aten::mul", {{{6, 6}, 1}, {{6}, 2}}, {{{6, 6}, 3}});
  CHECK(Recognize(col).diag_side == "right");
  // x[:, None, :] - y over a middle dim: elementwise sub, the inserted dim recorded.
  OpSignature sub;
  AddIdOp(&sub, "aten::unsqueeze", {{{4, 7}, 1}}, {{{4, 1, 7}, 2}}, {{"dim", 1.0}});
  AddIdOp(&sub, "aten::sub", {{{4, 1, 7}, 2}, {{4, 3, 7}, 3}}, {{{4, 3, 7}, 4}}, {{"alpha", 1.0}});
  RecognizedOp s = Recognize(sub);
  CHECK(s.op_class == "elementwise");
  CHECK(s.variant == "sub");
  CHECK(s.operand_rank[0] == 2);
  CHECK(s.operand_unsqueeze[0] == 0b10);
  CHECK(s.operand_rank[1] == 3);
  CHECK(s.operand_unsqueeze[1] == 0);
  CHECK(s.tags.count("broadcast"));
  // A transposed operand, an alpha, a product of a mul (two ops): not this pattern.
  OpSignature tr;
  AddIdOp(&tr, "aten::t", {{{6, 6}, 1}}, {{{6, 6}, 2}});
  AddIdOp(&tr, "aten::unsqueeze", {{{6}, 3}}, {{{6, 1}, 4}}, {{"dim", 1.0}});
  AddIdOp(&tr, "aten::mul", {{{6, 1}, 4}, {{6, 6}, 2}}, {{{6, 6}, 5}});
  CHECK(Recognize(tr).variant == "fused");
  OpSignature alpha;
  AddIdOp(&alpha, "aten::add", {{{4, 7}, 1}, {{7}, 2}}, {{{4, 7}, 3}}, {{"alpha", 2.0}});
  CHECK(Recognize(alpha).variant == "fused");
}

TEST_CASE("Recognition: decomposed losses with other constants are not MSE or hinge") {
  const T x{{512, 256}}, s{{}};
  auto mse_like = [&](double exponent, double alpha) {
    OpSignature sig;  // mean((p - alpha * t) ** exponent), the scalars the harness records
    AddOp(&sig, "aten::sub", {x, x}, {x}, {{"alpha", alpha}});
    AddOp(&sig, "aten::pow", {x}, {x}, {{"exponent", exponent}});
    AddOp(&sig, "aten::mean", {x}, {s});
    return Recognize(sig);
  };
  CHECK(mse_like(2, 1).variant == "mse");  // problems/37 as recorded
  for (auto [exponent, alpha] : {std::pair{3.0, 1.0}, {1.5, 1.0}, {2.0, 2.0}}) {
    RecognizedOp op = mse_like(exponent, alpha);
    INFO(DescribeOp(op) << ": " << op.extra_ops_why);
    CHECK(op.op_class != "loss");
    CHECK(op.tags.count("extra_ops"));  // the reduction's template would drop sub and pow
  }
  auto hinge_like = [&](std::map<std::string, double> rsub, std::map<std::string, double> clamp) {
    OpSignature sig;  // mean(clamp(other - p * t, min, max))
    AddOp(&sig, "aten::mul", {x, x}, {x});
    AddOp(&sig, "aten::rsub", {x}, {x}, rsub);
    AddOp(&sig, "aten::clamp", {x}, {x}, clamp);
    AddOp(&sig, "aten::mean", {x}, {s});
    return Recognize(sig);
  };
  CHECK(hinge_like({{"other", 1}, {"alpha", 1}}, {{"min", 0}}).variant == "hinge");  // problems/39
  CHECK(hinge_like({{"other", 2}, {"alpha", 1}}, {{"min", 0}}).op_class != "loss");
  CHECK(hinge_like({{"other", 1}, {"alpha", 1}}, {{"min", -1}}).op_class != "loss");
  CHECK(hinge_like({{"other", 1}, {"alpha", 1}}, {{"min", 0}, {"max", 1}}).op_class != "loss");
}

TEST_CASE("Recognition: compute ops the class's templates do not perform are extra_ops") {
  const T x{{64, 128}}, row{{64}}, row1{{64, 1}};
  auto unary = [](OpSignature* sig, const char* op, const T& t) { AddOp(sig, op, {t}, {t}); };
  auto extra = [](const OpSignature& sig) {
    RecognizedOp op = Recognize(sig);
    INFO(DescribeOp(op) << ": " << op.extra_ops_why);
    CHECK(op.tags.count("extra_ops"));
    CHECK_FALSE(op.extra_ops.empty());
    return op;
  };
  // torch.sum(torch.abs(x), dim=1): no division, so not L1; reduce_dim would sum x.
  OpSignature sum_abs;
  unary(&sum_abs, "aten::abs", x);
  AddOp(&sum_abs, "aten::sum.dim_IntList", {x}, {row}, {{"dim.0", 1.0}, {"keepdim", 0.0}});
  RecognizedOp sa = extra(sum_abs);
  CHECK(sa.op_class == "reduction");
  CHECK(sa.variant == "sum");
  CHECK(sa.extra_ops == std::vector<std::string>{"aten::abs"});
  CHECK(sa.extra_ops_why == "the model also computes aten::abs before aten::sum");
  CHECK(absl::StrContains(DescribeOp(sa), "extra_ops"));

  // torch.max(x * 2, dim=1), torch.mean(x.exp(), dim=1), torch.argmax(|x|, dim=1).
  for (const char* pre : {"aten::mul", "aten::exp", "aten::abs"}) {
    for (const char* red : {"aten::max.dim", "aten::mean.dim", "aten::argmax"}) {
      OpSignature sig;
      unary(&sig, pre, x);
      AddOp(&sig, red, {x}, {row}, {{"dim", 1.0}});
      CHECK(extra(sig).op_class == "reduction");
    }
  }
  // relu(sum(x, dim=1)): an epilogue.
  OpSignature sum_relu;
  AddOp(&sum_relu, "aten::sum.dim_IntList", {x}, {row}, {{"dim.0", 1.0}});
  unary(&sum_relu, "aten::relu", row);
  CHECK(extra(sum_relu).extra_ops_why == "the model also computes aten::relu after aten::sum");

  // softmax(x + 1), log_softmax(3 x), softmax(x) * 2.
  OpSignature sm_pre;
  unary(&sm_pre, "aten::add.Tensor", x);
  AddOp(&sm_pre, "aten::_softmax", {x}, {x}, {{"dim", 1.0}});
  CHECK(extra(sm_pre).op_class == "softmax");
  OpSignature sm_post;
  AddOp(&sm_post, "aten::_log_softmax", {x}, {x}, {{"dim", 1.0}});
  unary(&sm_post, "aten::mul.Tensor", x);
  CHECK(extra(sm_post).variant == "log_softmax");

  // cumsum(x ** 2), cumprod(exp(x)): the scan's own helpers are flips, cat and x * mask.
  OpSignature scan_pow;
  unary(&scan_pow, "aten::pow.Tensor_Scalar", x);
  AddOp(&scan_pow, "aten::cumsum", {x}, {x}, {{"dim", 1.0}});
  CHECK(extra(scan_pow).variant == "cumsum");
  OpSignature scan_exp;
  unary(&scan_exp, "aten::exp", x);
  AddOp(&scan_exp, "aten::cumprod", {x}, {x}, {{"dim", 1.0}});
  CHECK(extra(scan_exp).variant == "cumprod");

  // relu(conv(x)), gelu(layer_norm(x)), relu(batch_norm(x)), relu(max_pool(x)).
  const T img{{2, 4, 9, 9}}, fmap{{2, 8, 7, 7}};
  OpSignature conv_relu;
  AddOp(&conv_relu, "aten::convolution", {img, {{8, 4, 3, 3}}, {{8}}}, {fmap});
  unary(&conv_relu, "aten::relu", fmap);
  RecognizedOp cr = extra(conv_relu);
  CHECK(cr.op_class == "conv");
  CHECK(cr.extra_ops_why == "the model also computes aten::relu after aten::convolution");
  OpSignature ln_gelu;
  AddOp(&ln_gelu, "aten::native_layer_norm", {x, {{128}}, {{128}}}, {x, row1, row1});
  unary(&ln_gelu, "aten::gelu", x);
  CHECK(extra(ln_gelu).variant == "layer");
  OpSignature bn_relu;
  AddOp(&bn_relu, "aten::native_batch_norm", {fmap, {{8}}, {{8}}, {{8}}, {{8}}}, {fmap},
        {{"training", 0.0}});
  unary(&bn_relu, "aten::relu", fmap);
  CHECK(extra(bn_relu).variant == "batch");
  OpSignature pool_relu;
  AddOp(&pool_relu, "aten::max_pool2d_with_indices", {fmap}, {{{2, 8, 3, 3}}, {{2, 8, 3, 3}, "int64"}});
  unary(&pool_relu, "aten::relu", {{2, 8, 3, 3}});
  CHECK(extra(pool_relu).op_class == "pooling");

  // GEMM epilogues: relu(A @ B), (A @ B) * 2, relu(linear(x)), A @ B + bias.
  const T a{{32, 64}}, b{{64, 48}}, c{{32, 48}};
  for (const char* epi : {"aten::relu", "aten::mul.Tensor", "aten::add.Tensor", "aten::gelu"}) {
    OpSignature mm;
    AddOp(&mm, "aten::mm", {a, b}, {c});
    unary(&mm, epi, c);
    RecognizedOp g = extra(mm);
    CHECK(g.op_class == "gemm");
    CHECK(g.extra_ops == std::vector<std::string>{"aten::" + BaseOpName(epi)});
    CHECK(absl::StrContains(g.extra_ops_why, "after aten::mm"));
  }
  OpSignature linear_relu;
  AddOp(&linear_relu, "aten::t", {{{48, 64}}}, {{{64, 48}, "float32", {1, 64}}});
  AddOp(&linear_relu, "aten::addmm", {{{48}}, a, {{64, 48}, "float32", {1, 64}}}, {c});
  unary(&linear_relu, "aten::relu", c);
  CHECK(extra(linear_relu).variant == "addmm");

  // Two activations, an activation and arithmetic, MinGPT's tanh GELU written out.
  OpSignature two;
  unary(&two, "aten::tanh", x);
  unary(&two, "aten::sigmoid", x);
  CHECK(extra(two).variant == "tanh");
  OpSignature relu_x2;
  unary(&relu_x2, "aten::relu", x);
  unary(&relu_x2, "aten::mul.Tensor", x);
  CHECK(extra(relu_x2).variant == "relu");
  // MinGPT's ops without its constants (written-out GELU needs them: the next test case).
  OpSignature gpt_gelu;  // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
  for (const char* op : {"aten::mul.Tensor", "aten::pow.Tensor_Scalar", "aten::mul.Tensor",
                         "aten::add.Tensor", "aten::mul.Tensor", "aten::tanh",
                         "aten::add.Tensor", "aten::mul.Tensor"}) {
    unary(&gpt_gelu, op, x);
  }
  CHECK(extra(gpt_gelu).variant == "tanh");
  OpSignature swish2;  // x * sigmoid(x) * 2: one mul too many
  unary(&swish2, "aten::sigmoid", x);
  unary(&swish2, "aten::mul.Tensor", x);
  unary(&swish2, "aten::mul.Tensor", x);
  CHECK(extra(swish2).extra_ops == std::vector<std::string>{"aten::mul"});

  // Norm patterns with one op more: relu(x / ||x||_F), relu(RMSNorm(x)).
  OpSignature fro_relu;
  AddOp(&fro_relu, "aten::linalg_vector_norm", {x}, {{{}}}, {{"ord", 2.0}});
  AddOp(&fro_relu, "aten::div.Tensor", {x, {{}}}, {x});
  unary(&fro_relu, "aten::relu", x);
  CHECK(extra(fro_relu).variant == "frobenius");
  OpSignature rms_relu;
  unary(&rms_relu, "aten::pow.Tensor_Scalar", x);
  AddOp(&rms_relu, "aten::mean.dim", {x}, {row1}, {{"dim.0", 1.0}, {"keepdim", 1.0}});
  unary(&rms_relu, "aten::add.Scalar", row1);
  unary(&rms_relu, "aten::sqrt", row1);
  AddOp(&rms_relu, "aten::div.Tensor", {x, row1}, {x});
  unary(&rms_relu, "aten::relu", x);
  RecognizedOp rr = extra(rms_relu);
  CHECK(rr.variant == "rms");
  CHECK(rr.extra_ops == std::vector<std::string>{"aten::relu"});

  // A decomposed loss names the whole model: mean((2 p - t)^2).
  OpSignature mse2;
  unary(&mse2, "aten::mul.Tensor", x);
  AddOp(&mse2, "aten::sub.Tensor", {x, x}, {x});
  unary(&mse2, "aten::pow.Tensor_Scalar", x);
  AddOp(&mse2, "aten::mean", {x}, {{{}}});
  RecognizedOp m2 = extra(mse2);
  CHECK(m2.variant == "mse");
  CHECK(absl::StrContains(m2.extra_ops_why, "more than the loss/mse pattern"));
}

TEST_CASE("Recognition: the patterns' own helper ops are not extra_ops") {
  const T x{{64, 128}}, x1{{64, 1}};
  auto clean = [](const OpSignature& sig) {
    RecognizedOp op = Recognize(sig);
    INFO(DescribeOp(op) << ": " << op.extra_ops_why);
    CHECK_FALSE(op.tags.count("extra_ops"));
    CHECK(op.extra_ops.empty());
    CHECK(op.extra_ops_why.empty());
    return op;
  };
  OpSignature l1;  // x / sum(|x|, dim=1, keepdim)
  AddOp(&l1, "aten::abs", {x}, {x});
  AddOp(&l1, "aten::sum.dim_IntList", {x}, {x1}, {{"dim.0", 1.0}, {"keepdim", 1.0}});
  AddOp(&l1, "aten::div.Tensor", {x, x1}, {x});
  CHECK(clean(l1).variant == "l1");
  OpSignature rms;  // x / sqrt(mean(x * x) + eps)
  AddOp(&rms, "aten::mul.Tensor", {x, x}, {x});
  AddOp(&rms, "aten::mean.dim", {x}, {x1}, {{"dim.0", 1.0}, {"keepdim", 1.0}});
  AddOp(&rms, "aten::add.Scalar", {x1}, {x1});
  AddOp(&rms, "aten::sqrt", {x1}, {x1});
  AddOp(&rms, "aten::div.Tensor", {x, x1}, {x});
  CHECK(clean(rms).variant == "rms");
  OpSignature rev;  // cumsum(x.flip(1), 1).flip(1)
  AddOp(&rev, "aten::flip", {x}, {x});
  AddOp(&rev, "aten::cumsum", {x}, {x}, {{"dim", 1.0}});
  AddOp(&rev, "aten::flip", {x}, {x});
  CHECK(clean(rev).variant == "reverse_cumsum");
  OpSignature masked;  // cumsum(x * mask)
  AddOp(&masked, "aten::mul.Tensor", {x, {{64, 128}, "bool"}}, {x});
  AddOp(&masked, "aten::cumsum", {x}, {x}, {{"dim", 1.0}});
  CHECK(clean(masked).variant == "masked_cumsum");
  OpSignature excl;  // cumsum(cat((zeros, x), 1)[:-1])
  AddOp(&excl, "aten::cat", {x1, x}, {{{64, 129}}});
  AddOp(&excl, "aten::slice.Tensor", {{{64, 129}}}, {{{63, 129}}});
  AddOp(&excl, "aten::cumsum", {{{63, 129}}}, {{{63, 129}}}, {{"dim", 1.0}});
  CHECK(clean(excl).variant == "exclusive_cumsum");
  OpSignature swish, softsign;
  AddOp(&swish, "aten::sigmoid", {x}, {x});
  AddOp(&swish, "aten::mul.Tensor", {x, x}, {x});
  CHECK(clean(swish).variant == "swish");
  AddOp(&softsign, "aten::abs", {x}, {x});
  AddOp(&softsign, "aten::add.Scalar", {x}, {x});
  AddOp(&softsign, "aten::div.Tensor", {x, x}, {x});
  CHECK(clean(softsign).variant == "softsign");
  // Training-mode BatchNorm bumps num_batches_tracked (an int64 add_ of one element).
  const T f{{2, 8, 5, 5}}, c{{8}};
  OpSignature bn;
  AddOp(&bn, "aten::add_.Tensor", {{{}, "int64"}}, {{{}, "int64"}});
  AddOp(&bn, "aten::native_batch_norm", {f, c, c, c, c}, {f}, {{"training", 1.0}});
  CHECK(clean(bn).variant == "batch");
  // InstanceNorm with running statistics: repeats and the averaged update.
  OpSignature in;
  for (int i = 0; i < 4; ++i) AddOp(&in, "aten::repeat", {c}, {{{16}}});
  AddOp(&in, "aten::view", {f}, {{{1, 16, 5, 5}}});
  AddOp(&in, "aten::native_batch_norm", {{{1, 16, 5, 5}}, {{16}}, {{16}}, {{16}}, {{16}}},
        {{{1, 16, 5, 5}}}, {{"training", 1.0}});
  AddOp(&in, "aten::mean.dim", {{{2, 8}}}, {c});
  AddOp(&in, "aten::mean.dim", {{{2, 8}}}, {c});
  AddOp(&in, "aten::view", {{{1, 16, 5, 5}}}, {f});
  CHECK(clean(in).variant == "instance");
  OpSignature diag;  // diag(a) @ B
  AddOp(&diag, "aten::diag_embed", {{{64}}}, {{{64, 64}}});
  AddOp(&diag, "aten::mm", {{{64, 64}}, x}, {x});
  CHECK(clean(diag).variant == "diag");
  OpSignature ce;  // F.cross_entropy
  AddOp(&ce, "aten::_log_softmax", {x}, {x}, {{"dim", 1.0}});
  AddOp(&ce, "aten::nll_loss_forward", {x, {{64}, "int64"}}, {{{}}, {{}}});
  CHECK(clean(ce).variant == "cross_entropy");
  OpSignature hinge;  // mean(clamp(1 - p * t, min=0))
  AddOp(&hinge, "aten::mul.Tensor", {x, x}, {x});
  AddOp(&hinge, "aten::rsub.Scalar", {x}, {x});
  AddOp(&hinge, "aten::clamp", {x}, {x});
  AddOp(&hinge, "aten::mean", {x}, {{{}}});
  CHECK(clean(hinge).variant == "hinge");
}

TEST_CASE("Recognition: F.scaled_dot_product_attention as one aten op, each backend") {
  const T q{{2, 8, 17, 64}}, k{{2, 8, 20, 64}}, v{{2, 8, 20, 48}};
  for (const char* name : {"aten::_scaled_dot_product_flash_attention_for_cpu",
                           "aten::_scaled_dot_product_efficient_attention",
                           "aten::_scaled_dot_product_flash_attention",
                           "aten::_scaled_dot_product_cudnn_attention"}) {
    INFO(name);
    OpSignature sig;
    AddOp(&sig, name, {q, k, v}, {{{2, 8, 17, 48}}, {{2, 8, 17}}},
          {{"dropout_p", 0.0}, {"is_causal", 0.0}});
    RecognizedOp op = Recognize(sig);
    CHECK(op.op_class == "attention");
    CHECK(op.variant == "sdpa");
    CHECK(op.batch == 16);
    CHECK(op.m == 17);
    CHECK(op.n == 20);
    CHECK(op.k == 64);
    CHECK(op.head_dim_v == 48);
    CHECK_FALSE(op.causal);
    CHECK(op.scale == 0);
    CHECK(op.tags.empty());
    CHECK(DescribeOp(op) == "attention/sdpa batch=16 Lq=17 Lk=20 D=64 Dv=48 float32");
  }
  // is_causal and scale come from the recorded scalars.
  OpSignature causal;
  AddOp(&causal, "aten::_scaled_dot_product_efficient_attention",
        {{{4, 1, 64}, "bfloat16"}, {{4, 9, 64}, "bfloat16"}, {{4, 9, 64}, "bfloat16"}},
        {{{4, 1, 64}, "bfloat16"}},
        {{"compute_log_sumexp", 0.0}, {"dropout_p", 0.0}, {"is_causal", 1.0}, {"scale", 0.3}});
  RecognizedOp c = Recognize(causal);
  CHECK(c.causal);
  CHECK(c.scale == 0.3);
  CHECK(c.batch == 4);
  CHECK(c.dtype == "bfloat16");
  CHECK(DescribeOp(c) ==
        "attention/sdpa batch=4 Lq=1 Lk=9 D=64 Dv=64 causal scale=0.3 bfloat16");
  // A mask tensor, dropout, and K / V heads that do not broadcast to Q's are tagged.
  OpSignature masked, dropout, gqa, bcast;
  AddOp(&masked, "aten::_scaled_dot_product_flash_attention_for_cpu", {q, k, k, {{17, 20}}},
        {{{2, 8, 17, 64}}});
  CHECK(Recognize(masked).tags.count("masked"));
  AddOp(&dropout, "aten::_scaled_dot_product_efficient_attention", {q, k, k}, {q},
        {{"dropout_p", 0.1}});
  CHECK(Recognize(dropout).tags.count("dropout"));
  AddOp(&gqa, "aten::_scaled_dot_product_flash_attention", {q, {{2, 2, 20, 64}}, {{2, 2, 20, 64}}},
        {q});
  CHECK(Recognize(gqa).tags.count("grouped_kv"));
  AddOp(&bcast, "aten::_scaled_dot_product_flash_attention", {q, {{2, 1, 20, 64}}, {{20, 64}}},
        {q});
  CHECK(Recognize(bcast).tags.empty());
  // CUDA's SDPA pads head dims to a multiple of 8 for flash: the pads are the pattern's;
  // an activation after it is not.
  OpSignature padded;
  const T p{{1, 2, 33, 104}, "float16"};
  for (int i = 0; i < 3; ++i) {
    AddOp(&padded, "aten::constant_pad_nd", {{{1, 2, 33, 100}, "float16"}}, {p});
  }
  AddOp(&padded, "aten::_scaled_dot_product_flash_attention", {p, p, p}, {p},
        {{"scale", 0.1}});
  AddOp(&padded, "aten::slice", {p}, {{{1, 2, 33, 100}, "float16"}});
  RecognizedOp pd = Recognize(padded);
  CHECK(pd.op_class == "attention");
  CHECK_FALSE(pd.tags.count("extra_ops"));
  AddOp(&padded, "aten::relu", {{{1, 2, 33, 100}, "float16"}}, {{{1, 2, 33, 100}, "float16"}});
  RecognizedOp relu = Recognize(padded);
  CHECK(relu.tags.count("extra_ops"));
  CHECK(relu.extra_ops == std::vector<std::string>{"aten::relu"});
}

TEST_CASE("Recognition: softmax(Q @ K^T * scale) @ V written out, and SDPA's math path") {
  RecognizedOp w = Recognize(testing::WrittenOutAttentionSignature(6, 17, 20, 64, 32, 8.0,
                                                                   "float32"));
  CHECK(w.op_class == "attention");
  CHECK(w.variant == "written_out");
  CHECK(w.batch == 6);
  CHECK(w.m == 17);
  CHECK(w.n == 20);
  CHECK(w.k == 64);
  CHECK(w.head_dim_v == 32);
  CHECK(w.scale == 0.125);
  CHECK_FALSE(w.causal);
  CHECK(w.tags.empty());
  CHECK(w.main_op == "bmm");

  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    RecognizedOp m = Recognize(
        testing::MathPathAttentionSignature(2, 3, 17, 20, 64, 0.3, causal, "bfloat16"));
    CHECK(m.op_class == "attention");
    CHECK(m.variant == "written_out");
    CHECK(m.batch == 6);
    CHECK(m.causal == causal);
    CHECK(std::abs(m.scale - 0.3) < 1e-12);
    CHECK(m.dtype == "bfloat16");
    // K^T times sqrt(scale) is contiguous, but the model's transpose made K^T's shape.
    CHECK(m.tags.empty());
  }

  // The model is given K^T (row-major, no transpose op): K_EXPR K.mT.
  OpSignature given;
  AddOp(&given, "aten::bmm", {{{6, 17, 64}}, {{6, 64, 20}}}, {{{6, 17, 20}}});
  AddOp(&given, "aten::mul", {{{6, 17, 20}}}, {{{6, 17, 20}}}, {{"other", 0.5}});
  AddOp(&given, "aten::_softmax", {{{6, 17, 20}}}, {{{6, 17, 20}}}, {{"dim", 2.0}});
  AddOp(&given, "aten::bmm", {{{6, 17, 20}}, {{6, 20, 64}}}, {{{6, 17, 64}}});
  RecognizedOp g = Recognize(given);
  CHECK(g.op_class == "attention");
  CHECK(g.tags.count("k_given_transposed"));
  CHECK(g.scale == 0.5);

  // Q, K, V traced through views (and the scale ops) by the recorded tensor ids: three
  // inputs, or views of one (q, k, v = x.chunk(3, -1)), which the template cannot take.
  auto with_ids = [](OpSignature sig, int64_t q, int64_t k, int64_t v) {
    // ops: transpose(K), bmm(Q, K^T), div, _softmax, bmm(P, V)
    sig.mutable_ops(0)->mutable_inputs(0)->set_id(k);
    sig.mutable_ops(0)->mutable_outputs(0)->set_id(10);
    sig.mutable_ops(1)->mutable_inputs(0)->set_id(q);
    sig.mutable_ops(1)->mutable_inputs(1)->set_id(10);
    sig.mutable_ops(4)->mutable_inputs(1)->set_id(v);
    return sig;
  };
  const OpSignature base = testing::WrittenOutAttentionSignature(6, 17, 17, 64, 64, 8.0,
                                                                 "float32");
  CHECK(Recognize(with_ids(base, 1, 2, 3)).tags.empty());
  OpSignature chunked = with_ids(base, 11, 12, 13);
  AddOp(&chunked, "aten::split", {{{6, 17, 192}}}, {{{6, 17, 64}}, {{6, 17, 64}}, {{6, 17, 64}}});
  chunked.mutable_ops()->SwapElements(0, 5);  // the split runs first
  auto* split = chunked.mutable_ops(0);
  split->mutable_inputs(0)->set_id(1);
  for (int i = 0; i < 3; ++i) split->mutable_outputs(i)->set_id(11 + i);
  RecognizedOp ch = Recognize(chunked);
  CHECK(ch.op_class == "attention");
  CHECK(ch.tags.count("shared_inputs"));
  // F.scaled_dot_product_attention(x, x, x): one tensor.
  OpSignature self;
  AddOp(&self, "aten::_scaled_dot_product_flash_attention_for_cpu",
        {{{2, 8, 16}}, {{2, 8, 16}}, {{2, 8, 16}}}, {{{2, 8, 16}}});
  for (int i = 0; i < 3; ++i) self.mutable_ops(0)->mutable_inputs(i)->set_id(5);
  CHECK(Recognize(self).tags.count("shared_inputs"));

  // Not attention: the softmax over another dim, a scale by a tensor, a third product.
  OpSignature other_dim = given;
  (*other_dim.mutable_ops(2)->mutable_scalars())["dim"] = 1;
  CHECK(Recognize(other_dim).op_class == "gemm");
  OpSignature by_tensor;
  AddOp(&by_tensor, "aten::bmm", {{{6, 17, 64}}, {{6, 64, 20}}}, {{{6, 17, 20}}});
  AddOp(&by_tensor, "aten::mul", {{{6, 17, 20}}, {{6, 17, 20}}}, {{{6, 17, 20}}});
  AddOp(&by_tensor, "aten::_softmax", {{{6, 17, 20}}}, {{{6, 17, 20}}}, {{"dim", -1.0}});
  AddOp(&by_tensor, "aten::bmm", {{{6, 17, 20}}, {{6, 20, 64}}}, {{{6, 17, 64}}});
  CHECK(Recognize(by_tensor).op_class == "gemm");
  OpSignature third = given;
  AddOp(&third, "aten::bmm", {{{6, 17, 64}}, {{6, 64, 64}}}, {{{6, 17, 64}}});
  CHECK(Recognize(third).op_class == "gemm");
  // Shapes that do not chain (P @ V with V of another length).
  OpSignature broken;
  AddOp(&broken, "aten::bmm", {{{6, 17, 64}}, {{6, 64, 20}}}, {{{6, 17, 20}}});
  AddOp(&broken, "aten::_softmax", {{{6, 17, 20}}}, {{{6, 17, 20}}}, {{"dim", -1.0}});
  AddOp(&broken, "aten::bmm", {{{6, 17, 20}}, {{6, 21, 64}}}, {{{6, 17, 64}}});
  CHECK(Recognize(broken).op_class == "gemm");
}

}  // namespace
}  // namespace kagent
