"""Times a template's configurations on a GPU for one suite problem, beside eager and
torch.compile, so the brain's tile rules can be set from measurements.

  python3 tests/gpu/template_sweep.py PROBLEM TEMPLATE 'JSON list of param dicts' [OUT]

Each configuration is rendered (engines/heuristic/tests/template_render.py), checked
against the reference on the problem's inputs (torch.testing.assert_close with the
harness's default tolerance for the dtype) and timed with triton.testing.do_bench
(median). Prints one JSON line per configuration (and appends them to OUT when given).
Needs a CUDA GPU. Not the harness: no sandbox, no L2 flush between calls; figures are for
ranking configurations against each other, the harness's are the ones reported.
"""
import importlib.util
import json
import os
import sys
import time

import torch
import triton

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "engines", "heuristic", "tests"))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_sweep import emitter  # noqa: E402
from template_render import load_model_new  # noqa: E402
from kagent_harness.protocol import default_tolerance  # noqa: E402


def main():
    problem, template, configs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    emit = emitter(sys.argv[4] if len(sys.argv) > 4 else "")

    spec = importlib.util.spec_from_file_location("p", os.path.join(REPO, "problems", problem + ".py"))
    prob = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prob)
    init = prob.get_init_inputs()
    torch.manual_seed(0)
    ref_model = prob.Model(*init).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in prob.get_inputs()]
    with torch.no_grad():
        ref = ref_model(*inputs)
        eager = triton.testing.do_bench(lambda: ref_model(*inputs), return_mode="median")
        compiled = torch.compile(ref_model)
        compiled(*inputs)
        comp = triton.testing.do_bench(lambda: compiled(*inputs), return_mode="median")
    emit({"problem": problem, "eager_ms": eager, "compile_ms": comp})
    atol, rtol = default_tolerance(str(ref.dtype).replace("torch.", ""))
    for params in configs:
        row = {"problem": problem, "template": template, "params": params}
        t0 = time.time()
        try:
            # The harness's rule: both constructors under the same seed, so a candidate
            # whose module attributes are named differently still gets the same weights.
            cls = load_model_new(template, **params)
            torch.manual_seed(0)
            model = cls(*init).cuda()
            own = model.state_dict()
            if own and set(own) == set(ref_model.state_dict()):
                model.load_state_dict(ref_model.state_dict())
            with torch.no_grad():
                got = model(*inputs)
                scale = max(1.0, ref.double().pow(2).mean().sqrt().item())
                torch.testing.assert_close(got, ref, atol=atol * scale, rtol=rtol)
                row["ms"] = triton.testing.do_bench(lambda: model(*inputs), return_mode="median")
            row["vs_compile"] = comp / row["ms"]
        except Exception as e:  # noqa: BLE001 - reported per configuration
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        row["seconds"] = round(time.time() - t0, 1)
        emit(row)


if __name__ == "__main__":
    main()
