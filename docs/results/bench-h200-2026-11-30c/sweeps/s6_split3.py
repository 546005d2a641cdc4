"""Session 6, call 2: 3xTF32 by K-concatenation. A' = [A_hi, A_hi, A_lo] (along K),
B' = [B_hi; B_lo; B_hi]: one tf32 GEMM over 3K computes A_hi B_hi + A_hi B_lo + A_lo B_hi
(about fp32 accuracy) on the tensor cores. Times the GEMM alone and split + GEMM, checks
against the fp32 reference with the harness's rule (atol 1e-4 * max(1, rms), rtol 1e-4)."""
import importlib.util, json, os, sys, time
import torch, triton
REPO = os.getcwd()
sys.path.insert(0, os.path.join(REPO, "engines", "heuristic", "tests"))
from template_render import load_model_new
OUT = open(os.path.join(os.environ["OUT"], "split3.jsonl"), "a")
def emit(row):
    print(json.dumps(row)[:300], flush=True); OUT.write(json.dumps(row) + "\n"); OUT.flush()
def hi_lo(x):
    hi = (x.view(torch.int32) & -8192).view(torch.float32)
    return hi, x - hi
def load(problem):
    spec = importlib.util.spec_from_file_location("p", os.path.join(REPO, "problems", problem + ".py"))
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
def check(got, ref):
    rms = ref.double().pow(2).mean().sqrt().item()
    err = (got.double() - ref.double()).abs()
    tol = 1e-4 * max(1.0, rms) + 1e-4 * ref.double().abs()
    return bool((err <= tol).all()), float(err.max()), float((err / tol).max())
def bench(fn): return triton.testing.do_bench(fn, return_mode="median")
def g(bm, bn, bk, w, s, **kw):
    d = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s, INPUT_PRECISION="tf32"); d.update(kw); return d
def gemm_case(problem, template, cfgs):
    prob = load(problem); torch.manual_seed(0)
    A, B = [x.cuda() for x in prob.get_inputs()]
    ref = prob.Model()(A, B)
    emit({"problem": problem, "eager_ms": bench(lambda: prob.Model()(A, B))})
    def split(A, B):
        ah, al = hi_lo(A); bh, bl = hi_lo(B)
        return torch.cat([ah, ah, al], dim=-1), torch.cat([bh, bl, bh], dim=-2)
    A3, B3 = split(A, B)
    emit({"problem": problem, "split_ms": bench(lambda: split(A, B))})
    for c in cfgs:
        row = {"problem": problem, "template": template, "params": c}
        try:
            m = load_model_new(template, **c)()
            got = m(A3, B3)
            row["ok"], row["max_abs"], row["worst_over_tol"] = check(got, ref)
            row["gemm_ms"] = bench(lambda: m(A3, B3))
            row["total_ms"] = bench(lambda: m(*split(A, B)))
            c1 = dict(c); c1["INPUT_PRECISION"] = "tf32"
            got1 = m(A, B)  # plain tf32 for comparison of accuracy and speed
            row["plain_tf32_ok"], _, row["plain_tf32_over_tol"] = check(got1, ref)
            row["plain_tf32_ms"] = bench(lambda: m(A, B))
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        emit(row)
def conv_case(cfgs):
    prob = load("35_conv2d_fp32"); torch.manual_seed(0)
    ref_model = prob.Model(*prob.get_init_inputs()).cuda()
    x = prob.get_inputs()[0].cuda()
    with torch.no_grad():
        ref = ref_model(x)
        w = ref_model.conv.weight
        def split(x):
            xh, xl = hi_lo(x); return torch.cat([xh, xh, xl], dim=1)
        wh, wl = hi_lo(w); w3 = torch.cat([wh, wl, wh], dim=1).contiguous()
        x3 = split(x)
        emit({"problem": "35_conv2d_fp32", "split_ms": bench(lambda: split(x))})
        for c in cfgs:
            row = {"problem": "35_conv2d_fp32", "template": "conv2d_implicit_gemm", "params": c}
            try:
                m = load_model_new("conv2d_implicit_gemm", **c)(3 * w.shape[1], w.shape[0], 3).cuda()
                m.conv.weight.copy_(w3)
                got = m(x3)
                row["ok"], row["max_abs"], row["worst_over_tol"] = check(got, ref)
                row["gemm_ms"] = bench(lambda: m(x3))
                row["total_ms"] = bench(lambda: m(split(x)))
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            emit(row)
which = sys.argv[1]
if which == "01":
    gemm_case("01_matmul_square_fp32", "gemm_tiled", [g(128,128,32,8,3), g(128,256,32,8,3), g(128,128,64,8,3), g(128,128,32,4,4), g(128,64,32,4,4), g(256,128,32,8,3)])
    gemm_case("01_matmul_square_fp32", "gemm_persistent_tma", [g(128,128,32,8,3), g(128,128,64,8,3), g(128,256,32,8,3)])
elif which == "06":
    gemm_case("06_matmul_batched_fp32", "gemm_tiled", [g(128,128,32,8,3), g(128,128,64,8,3), g(128,64,32,4,4), g(64,128,32,4,4)])
elif which == "03":
    gemm_case("03_matmul_tall_skinny_fp32", "gemm_tiled", [g(128,128,32,8,3), g(128,128,64,8,3), g(128,64,32,4,4), g(256,128,32,8,3)])
elif which == "05":
    gemm_case("05_matmul_large_k_fp32", "gemm_split_k", [g(64,64,64,4,3,SPLIT_K=32), g(128,128,32,8,3,SPLIT_K=32), g(128,128,64,8,3,SPLIT_K=32), g(64,64,64,4,3,SPLIT_K=16), g(128,128,32,8,3,SPLIT_K=64)])
elif which == "35":
    conv_case([g(128,128,32,8,3,PADDING=1), g(256,128,32,8,3,PADDING=1), g(128,128,64,8,3,PADDING=1), g(128,64,32,4,4,PADDING=1)])
