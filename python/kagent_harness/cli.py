"""Entry point: python -m kagent_harness MODE [--request FILE] [--out FILE].

Reads the request JSON (file or stdin), runs the mode, writes the result JSON (file,
written atomically, or stdout). It always answers with JSON: any failure of the harness
itself is an INFRA_ERROR result, never a traceback without an answer. Exit status 0 when
a result was written, 2 on a usage error (the JSON still says why).
"""

import argparse
import json
import os
import sys
import traceback


def _write(result, out_path):
    data = json.dumps(result, indent=1, sort_keys=True, allow_nan=False,
                      default=str)
    if out_path:
        tmp = out_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(data + "\n")
        os.replace(tmp, out_path)
    else:
        sys.stdout.write(data + "\n")
        sys.stdout.flush()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["serve"]:
        # The long-lived supervisor of a GPU worker (server.py): its own flags.
        from kagent_harness.server import main as serve
        code = serve(argv[1:])
        # Everything the server owns is closed by now (its socket removed, its candidate
        # processes ended): skip the interpreter's teardown (torch's and the thread pools'
        # exit handlers), which took 3 s of the worker's shutdown and frees nothing.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    parser = argparse.ArgumentParser(prog="python -m kagent_harness")
    parser.add_argument("mode", nargs="?", default=None,
                        help="measure | signature | profile | gpuinfo | serve (its own "
                             "flags: serve --help)")
    parser.add_argument("--request", help="request JSON file (default: stdin)")
    parser.add_argument("--out", help="result JSON file (default: stdout)")
    parser.add_argument("--measure-ceilings", action="store_true",
                        help="gpuinfo: also measure copy bandwidth and bf16 matmul FLOP/s")
    parser.add_argument("--gate-dir", metavar="DIR",
                        help="profile: prepare without the GPU, then wait for the worker's "
                             "go in DIR (gate.py)")
    args = parser.parse_args(argv)
    from kagent_harness.sandbox import harden_supervisor
    harden_supervisor()

    from kagent_harness import protocol as P
    log = P.Log()
    result = None
    rc = 0
    try:
        if args.request:
            with open(args.request, encoding="utf-8") as f:
                text = f.read()
        elif args.mode == "gpuinfo" and sys.stdin.isatty():
            text = "{}"
        else:
            text = sys.stdin.read()
        raw = json.loads(text) if text.strip() else {}
        if args.measure_ceilings and isinstance(raw, dict):
            raw["measure_ceilings"] = True
        req = P.Request(raw, mode=args.mode, log=log)
        if req.cuda_visible_devices is not None:
            # Pins the supervisor (reference, baselines) and, by inheritance, the child to
            # the same GPU; CUDA is not initialised yet at this point.
            os.environ["CUDA_VISIBLE_DEVICES"] = req.cuda_visible_devices
        if req.mode == "profile" and os.environ.get("KAGENT_CUPTI_OUT"):
            # The CUPTI backend traces the candidate's process alone: the tracer must not
            # load into this one (it would write its own trace to the same file), so its
            # variables move to the child's environment before CUDA starts here.
            req.child_env = {k: os.environ.pop(k) for k in
                             ("CUDA_INJECTION64_PATH", "KAGENT_CUPTI_OUT") if k in os.environ}
            # The child's environment drops KAGENT_* variables: the library it marks
            # the profiled forwards through must be handed over explicitly too.
            if os.environ.get("KAGENT_CUPTI_LIB"):
                req.child_env["KAGENT_CUPTI_LIB"] = os.environ["KAGENT_CUPTI_LIB"]
        if args.gate_dir and req.mode != "profile":
            raise P.RequestError("--gate-dir is for mode profile only")
        if req.mode == "profile":
            # Profile mode shares the host's /tmp and /dev/shm with the candidate (bwrap,
            # PROFILER_SHARED), where the worker keeps this run's files (the request, the
            # result, ncu's log, the gate): their directories are hidden from it.
            # Never a whole shared directory (a request in /tmp itself): the profile
            # needs those.
            from kagent_harness.bwrap import SCRATCH_MASKS
            own = [os.path.dirname(os.path.abspath(x)) for x in (args.request, args.out)
                   if x] + ([os.path.abspath(args.gate_dir)] if args.gate_dir else [])
            own = [d for d in own if d not in ("/",) + SCRATCH_MASKS]
            req.sandbox_hide = sorted(set(req.sandbox_hide) | set(own))
        gate = None
        if args.gate_dir:
            from kagent_harness.gate import Gate
            gate = Gate(args.gate_dir, log)
        result = run(req, log, gate)
    except (P.RequestError, ValueError, OSError) as e:
        rc = 2 if isinstance(e, P.RequestError) else 0
        log.add(f"bad request: {e}")
        result = P.error_result(f"bad request: {e}", log)
    except Exception as e:  # noqa: BLE001 - the harness must answer
        log.add(traceback.format_exc())
        result = P.error_result(f"harness error: {type(e).__name__}: {e}", log)
    _write(P.sanitize(result), args.out)
    return rc


def run(req, log, gate=None):
    if req.mode == "gpuinfo":
        from kagent_harness.gpuinfo import gpu_info
        res = gpu_info(req.measure_ceilings, log)
        res["log"] = log.tail()
        return res
    from kagent_harness.measure import Supervisor
    sup = Supervisor(req, log)
    if req.mode == "measure":
        return sup.run_measure()
    if req.mode == "profile":
        return sup.run_profile(gate)
    # signature
    res = {"ok": False, "op_signature": None, "reason": ""}
    try:
        import torch
        torch.set_grad_enabled(False)
        sup.load_reference()
        res["op_signature"] = sup.signature()
        res["ok"] = True
    except Exception as e:  # noqa: BLE001
        log.add(traceback.format_exc())
        res["reason"] = f"{type(e).__name__}: {e}"
        res["verdict"] = P_INFRA
    finally:
        r = sup.finish(0.0)
        res["log"] = r["log"]
        res["gpu_name"] = r["gpu_name"]
    return res


P_INFRA = "INFRA_ERROR"
