#!/usr/bin/env python3
"""A kagent client in Python: generates the gRPC stubs from proto/ into a temporary
folder, submits a job to JobService, watches its events and prints the result.

    pip install grpcio grpcio-tools      # scripts/setup.sh puts both in .venv
    python examples/python_client.py --server 127.0.0.1:50051 \\
        --problem examples/matvec_small/problem.py \\
        --kernel examples/matvec_small/start_kernel.py --rounds 1

The stubs come from grpcio-tools (`python -m grpc_tools.protoc`, which bundles its own
protoc); `--protoc protoc` uses the machine's protoc with grpc_python_plugin instead
(Debian 12: protobuf-compiler-grpc; protoc 3.15 or newer, since the protocol uses proto3
`optional`), whose code then needs a protobuf runtime of the same major version.
docs/api.md says which tools work. Exit status: 0 when the job is DONE, 3 when it ended
otherwise, 1 on an RPC error.
"""
import argparse
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.join(HERE, "..", "proto")
PROTOS = ["kagent/v1/common.proto", "kagent/v1/job_service.proto"]


def generate_stubs(out_dir, protoc):
    """Writes kagent/v1/{common,job_service}_pb2(_grpc).py under out_dir."""
    if protoc:
        plugin = shutil.which("grpc_python_plugin")
        if plugin is None:
            sys.exit("python_client: --protoc needs grpc_python_plugin on PATH "
                     "(Debian: protobuf-compiler-grpc)")
        argv = [protoc, f"--plugin=protoc-gen-grpc_python={plugin}",
                f"--grpc_python_out={out_dir}"]
    else:
        argv = [sys.executable, "-m", "grpc_tools.protoc", f"--grpc_python_out={out_dir}"]
    argv += [f"-I{PROTO_ROOT}", f"--python_out={out_dir}"] + PROTOS
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"python_client: {' '.join(argv)} failed:\n{done.stderr}")
    sys.path.insert(0, out_dir)
    return (importlib.import_module("kagent.v1.job_service_pb2"),
            importlib.import_module("kagent.v1.job_service_pb2_grpc"))


def ratio(r):
    """A speedup as people read it: "1.31x faster", "25.00x slower", "n/a"."""
    if r <= 0:
        return "n/a"
    return f"{r:.2f}x faster" if r >= 1 else f"{1 / r:.2f}x slower"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default=os.environ.get("KAGENT_SERVER", "127.0.0.1:50051"))
    ap.add_argument("--token", default=os.environ.get("KAGENT_TOKEN", ""))
    ap.add_argument("--problem", required=True, help="KernelBench-format problem file")
    ap.add_argument("--kernel", help="starting kernel (a Python source defining ModelNew)")
    ap.add_argument("--name", help="problem name (default: the file's stem)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--beam-width", type=int, default=1)
    ap.add_argument("--fixes-per-kernel", type=int, default=1)
    ap.add_argument("--protoc", help="a protoc to use instead of grpcio-tools' own")
    args = ap.parse_args()

    import grpc  # after argparse, so --help works without grpcio

    with tempfile.TemporaryDirectory(prefix="kagent-stubs-") as stubs:
        pb, pb_grpc = generate_stubs(stubs, args.protoc)
        common = sys.modules["kagent.v1.common_pb2"]
        stub = pb_grpc.JobServiceStub(grpc.insecure_channel(args.server))
        metadata = [("authorization", f"Bearer {args.token}")] if args.token else []

        req = pb.SubmitJobRequest()
        with open(args.problem) as f:
            req.problem.source = f.read()
        req.problem.name = args.name or os.path.splitext(os.path.basename(args.problem))[0]
        if args.kernel:
            with open(args.kernel) as f:
                req.start_kernel.source = f.read()
            cuda = "load_inline" in req.start_kernel.source
            req.start_kernel.language = (common.KERNEL_LANGUAGE_CUDA if cuda
                                         else common.KERNEL_LANGUAGE_TRITON)
        # proto3 `optional` fields: set means chosen, unset means the server's default.
        req.config.beam_width = args.beam_width
        req.config.fixes_per_kernel = args.fixes_per_kernel
        req.config.budget.max_rounds = args.rounds
        try:
            job = stub.SubmitJob(req, metadata=metadata, timeout=30).job
            print(f"submitted {job.id} ({job.problem.name}); config: beam_width "
                  f"{job.config.beam_width} (set: {job.config.HasField('beam_width')}), "
                  f"fixes_per_kernel {job.config.fixes_per_kernel}, "
                  f"max_rounds {job.config.budget.max_rounds}", flush=True)

            # The stream ends after JOB_FINISHED; a client that loses it resumes with
            # from_sequence = the last sequence seen + 1.
            state = common.JOB_STATE_UNSPECIFIED
            watch = pb.WatchJobRequest(job_id=job.id, from_sequence=1)
            for e in stub.WatchJob(watch, metadata=metadata, timeout=3600):
                kind = common.JobEventType.Name(e.type).removeprefix("JOB_EVENT_")
                print(f"  #{e.sequence} {kind}: {e.message}", flush=True)
                if e.type == common.JOB_EVENT_JOB_FINISHED:
                    state = e.state

            got = stub.GetJob(pb.GetJobRequest(job_id=job.id), metadata=metadata, timeout=30).job
        except grpc.RpcError as err:
            print(f"python_client: {err.code().name}: {err.details()}", file=sys.stderr)
            return 1
        r = got.result
        print(f"job {got.id} {common.JobState.Name(got.state).removeprefix('JOB_STATE_')}")
        if r.best_candidate_id:
            m = r.best_measurement
            start = ("it is the starting kernel" if r.lineage and r.lineage[0] == r.best_candidate_id
                     else f"{ratio(r.speedup_vs_start)} than the start")
            print(f"best {r.best_candidate_id} ({common.Verdict.Name(m.verdict)}): "
                  f"{m.candidate.median_ms:.4f} ms on {m.gpu_name}; {start}; "
                  f"{ratio(r.speedup_vs_eager)} than eager; "
                  f"{ratio(r.speedup_vs_compile)} than torch.compile")
        return 0 if state == common.JOB_STATE_DONE else 3


if __name__ == "__main__":
    sys.exit(main())
