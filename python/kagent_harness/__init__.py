"""kagent harness: the one place in kagent that imports torch and triton.

Run as ``python -m kagent_harness MODE --request req.json --out result.json``.
See docs/harness.md for the JSON protocol and the trust model.
"""

__version__ = "0.1.0"

# Name of the NVTX range around each profiled candidate forward (profile mode).
NVTX_RANGE = "kagent_candidate"
