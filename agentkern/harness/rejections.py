"""Why a candidate is rejected: stable reason codes, shared by the static and the dynamic checks."""

from __future__ import annotations

REASONS = {
    "reads_harness": "introspects the harness or the reference (frames, gc, tracing, sys.modules)",
    "reuses_reference_output": "returns memory the reference wrote instead of computing",
    "aliases_input": "returns (a view of) an input instead of a new tensor",
    "caches_results": "returns results cached from an earlier call",
    "mutates_inputs": "modifies its inputs",
    "torch_fallback": "computes with torch ops (beyond allocating, viewing and copying) instead of its own kernel",
    "dispatch_guard": "turns torch's dispatch modes off, hiding its ops from the allowlist",
    "numpy_fallback": "hands tensors to numpy to compute",
    "native_fallback": "computes with BLAS, oneDNN/MKL or ATen from native code",
    "protocol": "answers the judge with something an honest runner cannot send",
    "background_work": "leaves work running after the call returns",
    "patches_runtime": "patches timers, synchronisation or comparison functions",
    "not_a_tensor": "does not return a real torch.Tensor",
    "side_stream": "runs work on a side CUDA stream",
    "forbidden_call": "spawns processes, opens sockets or runs generated code",
    "timed_output_mismatch": "a timed call returned a wrong result although the correctness trials passed",
}


class Rejected(Exception):
    """Raised inside the worker (or by the static checks) to end an evaluation with status 'rejected'."""

    def __init__(self, code: str, message: str):
        assert code in REASONS, code
        super().__init__(message)
        self.code = code
        self.message = message
