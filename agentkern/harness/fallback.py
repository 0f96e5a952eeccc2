"""Torch fallbacks, inside the sandbox worker: which aten ops a call dispatches, grouped into families, and
the rule that rejects a candidate computing its answer with the reference's own heavy ops.

OpRecorder also counts the FLOPs of what it records (torch's own formulas), which the roofline uses.
Runs only in the worker: it imports torch.
"""

from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry, sdpa_flop_count

from agentkern.harness.rejections import Rejected

# Ops that only allocate, reshape or copy: calling them is not computing the answer with torch.
NEUTRAL_OPS = {
    "empty",
    "empty_like",
    "empty_strided",
    "new_empty",
    "new_empty_strided",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "new_zeros",
    "new_ones",
    "new_full",
    "fill_",
    "zero_",
    "view",
    "_unsafe_view",
    "reshape",
    "as_strided",
    "t",
    "transpose",
    "permute",
    "contiguous",
    "clone",
    "copy_",
    "detach",
    "alias",
    "expand",
    "squeeze",
    "unsqueeze",
    "select",
    "slice",
    "split",
    "split_with_sizes",
    "chunk",
    "lift_fresh",
    "_to_copy",
    "to",
    "resize_",
    "set_",
    "unbind",
    "flatten",
    "unflatten",
    "narrow",
    "unfold",  # a view: windows of a dim as a new last dim (as_strided), copied only by a clone after it
    "arange",
    "_local_scalar_dense",
    "item",
    "is_contiguous",
    "stride",
    "size",
    "numel",
    "dim",
    "sym_size",
    "sym_stride",
    "sym_numel",
    "_reshape_alias",
    "view_as",
    "expand_as",
    "empty_permuted",
    "randn",
    "rand",
    "normal_",
    "uniform_",
}
# Ops that do the real work of a problem: a candidate may not call any of these that the reference
# calls. Grouped, so that torch.addmm does not stand in for torch.mm.
FAMILIES = {
    "matmul": {
        "mm",
        "addmm",
        "bmm",
        "baddbmm",
        "addbmm",
        "matmul",
        "linear",
        "addmv",
        "mv",
        "dot",
        "vdot",
        "einsum",
        "_addmm_activation",
        "tensordot",
        "inner",
        "outer",
        "addr",
        "_mm_plus_mm",
    },
    "softmax": {"_softmax", "softmax", "_log_softmax", "log_softmax", "_safe_softmax"},
    "layer_norm": {"native_layer_norm", "layer_norm"},
    "rms_norm": {"rms_norm", "_fused_rms_norm"},
    "group_norm": {"native_group_norm", "group_norm"},
    "batch_norm": {
        "native_batch_norm",
        "batch_norm",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_no_training",
        "_batch_norm_impl_index",
    },
    "conv": {
        "convolution",
        "_convolution",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "mkldnn_convolution",
        "cudnn_convolution",
    },
    "attention": {
        "scaled_dot_product_attention",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
        "_flash_attention_forward",
    },
}
HEAVY_FAMILIES = set(FAMILIES)
_FAMILY_OF = {op: fam for fam, ops in FAMILIES.items() for op in ops}


def op_family(op: str) -> str:
    return _FAMILY_OF.get(op, op.rstrip("_"))  # relu_ and relu are one op


def _causal_share(args: tuple, kwargs: dict) -> float:
    """The share of the (query, key) pairs causal attention computes (query i sees keys 0..i): the least work
    a correct kernel does, so a kernel that skips the masked half is not flagged as beating the roofline.
    torch's formula counts every pair whatever is_causal says. 1.0 when not causal."""
    causal = args[4] if len(args) > 4 else kwargs.get("is_causal", False)
    if not causal:
        return 1.0
    sq, skv = args[0].shape[-2], args[1].shape[-2]
    if sq == 0 or skv == 0:
        return 1.0
    full = max(0, min(sq, skv))  # rows i < skv see i + 1 keys; later rows see all skv
    seen = full * (full + 1) // 2 + (sq - full) * skv
    return seen / (sq * skv)


class OpRecorder(TorchDispatchMode):
    """Records the aten ops dispatched while active (after autograd, so torch.softmax shows as _softmax),
    and counts their FLOPs with torch's own formulas (torch.utils.flop_counter's registry)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Otherwise the first dispatch imports torch._dynamo (~2 s), for a mode that never compiles.
        return False

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func.overloadpacket
        self.ops.add(packet.__name__)
        out = func(*args, **kwargs)
        count = flop_registry.get(packet)
        if count is not None:
            self.flops += count(*args, **kwargs, out_val=out)
        elif packet.__name__ == "_scaled_dot_product_flash_attention_for_cpu":
            # torch's registry has the GPU attention kernels only; the CPU one does the same work
            self.flops += sdpa_flop_count(args[0].shape, args[1].shape, args[2].shape) * _causal_share(args, kwargs)
        return out

    def compute_families(self) -> set[str]:
        return compute_families(self.ops)


def compute_families(ops) -> set[str]:
    """The op families of `ops` that compute (allocation, views and copies left out)."""
    return {op_family(op) for op in ops if op not in NEUTRAL_OPS}


def check_fallback(reference_families: set[str], candidate_families: set[str]) -> None:
    """Reject a candidate that calls the reference's heavy op, or re-runs all of the reference in torch."""
    shared_heavy = sorted(reference_families & candidate_families & HEAVY_FAMILIES)
    if shared_heavy:
        raise Rejected("torch_fallback", f"calls torch's {shared_heavy[0]} op, which the reference uses")
    if reference_families and reference_families <= candidate_families:
        ops = ", ".join(sorted(reference_families))
        raise Rejected("torch_fallback", f"computes with the reference's own torch ops ({ops})")
