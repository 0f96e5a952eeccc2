"""The reference's work at a size this machine need not run: shapes only, on torch's meta device.

For a GPU that is not here, correctness is checked at a small size, but the figures must be predicted at the
size the kernel will run at on the GPU (the problem's gpu size). The reference (trusted: the problem's own
Model) runs on meta tensors, which carry shapes and dtypes and compute nothing, so an 8192^3 GEMM costs
microseconds. Each aten op it dispatches is noted the way eager PyTorch would launch it: one kernel per op
that is not a view, with the bytes it reads and writes and its FLOPs (torch's own formulas,
torch.utils.flop_counter). The cost model prices the reference from that list (targets/kernel_model.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry

MAX_OPS = 512


def _nbytes(tree) -> int:
    leaves, _ = tree_flatten(tree)
    return sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))


def _is_view(func) -> bool:
    returns = func._schema.returns
    return bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)


class FusedOps(TorchFunctionMode):
    """Calls eager PyTorch runs as one fused kernel on a GPU, noted whole: on this CPU build torch decomposes
    scaled_dot_product_attention into a matmul, a mask, a softmax and a matmul, but on a GPU it is one
    FlashAttention kernel, and pricing the decomposition would flatter a candidate."""

    def __init__(self, eager: EagerOps) -> None:
        super().__init__()
        self.eager = eager

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is not F.scaled_dot_product_attention:
            return func(*args, **kwargs)
        self.eager.paused += 1
        try:
            out = func(*args, **kwargs)
        finally:
            self.eager.paused -= 1
        q, k = args[0], args[1]
        causal = bool(kwargs.get("is_causal", args[5] if len(args) > 5 else False))
        flops = 4 * q.numel() // q.shape[-1] * k.shape[-2] * q.shape[-1] // (2 if causal else 1)
        self.eager.note("scaled_dot_product_attention", _nbytes((args, kwargs)), _nbytes(out), flops, out.dtype)
        return out


class EagerOps(TorchDispatchMode):
    """Notes each non-view aten op: name, bytes in and out, FLOPs, the dtype of its first output."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[dict] = []
        self.paused = 0  # inside a fused call (FusedOps)

    def note(self, name: str, bytes_in: int, bytes_out: int, flops: int, dtype) -> None:
        if len(self.ops) < MAX_OPS:
            self.ops.append(
                {
                    "op": name,
                    "bytes_in": bytes_in,
                    "bytes_out": bytes_out,
                    "flops": flops,
                    "dtype": str(dtype).removeprefix("torch."),
                }
            )

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.paused or _is_view(func):
            return out
        packet = func._overloadpacket
        flops = 0
        if packet in flop_registry:
            try:
                flops = int(flop_registry[packet](*args, **kwargs, out_val=out))
            except Exception:  # noqa: BLE001 - a formula that does not fit these arguments: counted as 0
                flops = 0
        leaves, _ = tree_flatten(out)
        first = next((t for t in leaves if isinstance(t, torch.Tensor)), None)
        dtype = first.dtype if first is not None else torch.float32
        self.note(str(packet).removeprefix("aten."), _nbytes((args, kwargs)), _nbytes(out), flops, dtype)
        return out


def meta_work(problem, init_seed: int = 0) -> dict:
    """The work of the problem's reference at the problem's current size constants, on meta tensors."""
    torch.manual_seed(init_seed)
    with torch.device("meta"):
        init = list(problem.get_init_inputs())
        model = problem.Model(*init).eval()
        inputs = list(problem.get_inputs())
    recorder = EagerOps()
    with torch.no_grad(), recorder, FusedOps(recorder):
        out = model(*inputs)
    params = sum(p.numel() * p.element_size() for p in [*model.parameters(), *model.buffers()])
    leaves, _ = tree_flatten(out)
    outputs = [t for t in leaves if isinstance(t, torch.Tensor)]
    floating = [t for t in outputs if t.is_floating_point()] or outputs
    return {
        "flops": float(sum(op["flops"] for op in recorder.ops)),
        "bytes": float(_nbytes(inputs) + _nbytes(outputs) + params),
        "dtype": str(floating[0].dtype).removeprefix("torch.") if floating else "float32",
        "eager_ops": recorder.ops,
        "inputs": [
            {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
            if isinstance(t, torch.Tensor)
            else {"value": t}
            for t in inputs
        ],
        "init": init,
    }
