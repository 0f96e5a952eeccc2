"""Human-readable rendering of results (the --json form is EvalResult.to_json)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from agentkern.harness import core_link, host_load
from agentkern.traces.describe import remeasure_line
from agentkern.types import EvalResult

STYLE = {
    "ok": "bold green",
    "incorrect": "bold yellow",
    "rejected": "bold red",
    "unverified": "bold cyan",
    "suspicious": "bold magenta",
}


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g} ms"


def print_eval(console: Console, result: EvalResult) -> None:
    d = result.details
    style = STYLE.get(result.status, "bold red")
    console.print(
        f"[{style}]{result.status}[/]  {d.get('backend', '?')} kernel on {d.get('target', '?')} ({d.get('device', '?')})",
        highlight=False,
    )
    if result.error:
        console.print(f"  {result.error}", highlight=False)
    if d.get("size_note"):
        console.print(f"  size: {d['size_note']}", highlight=False)
    if d.get("check_size"):
        console.print(
            f"  checked at {constants_text(d['check_size'])} (shrunk for the interpreter: harness/check_size.py)",
            highlight=False,
        )
    if result.correct or d.get("outputs_matched"):
        seeds = d.get("seeds") or []
        shown = ", ".join(str(s) for s in seeds[:2]) + (", ..." if len(seeds) > 2 else "")
        console.print(
            f"  correct over {d.get('trials', '?')} trials (seeds {shown}), max abs diff {d.get('max_abs_diff', 0):.3g}",
            highlight=False,
        )
        second = d.get("second_shape") or {}
        if second.get("failed"):
            console.print(f"  [yellow]shape-specialised:[/] wrong {second['failed']}", highlight=False)
        elif second.get("constants"):
            console.print(
                f"  and at a second shape ({constants_text(second['constants'])}) over {second.get('trials', '?')} trials",
                highlight=False,
            )
    exact = exact_answer_line(d.get("exact_answer"))
    if exact:
        console.print(f"  {exact}", highlight=False)
    timing = d.get("timing") or {}
    if "unavailable" in timing:
        console.print(f"  timing: {timing['unavailable']}", highlight=False)
    elif result.kernel_ms is not None:
        ref, ker = timing["reference"], timing["kernel"]
        console.print(
            f"  reference {_ms(result.reference_ms)} (p10-p90 {ref['p10_ms']:.4g}-{ref['p90_ms']:.4g})   "
            f"kernel {_ms(result.kernel_ms)} (p10-p90 {ker['p10_ms']:.4g}-{ker['p90_ms']:.4g})   "
            f"{ker['calls']} calls each, {timing['mode']} mode"
            + (f", in {timing['blocks']} blocks" if timing.get("blocks") else ""),
            highlight=False,
        )
        console.print(f"  [bold]speedup {result.speedup:.2f}x[/]", highlight=False)
        load_note = host_load.note(timing.get("host_load"))
        if load_note:
            console.print(f"  [yellow]{escape(load_note)}[/]", highlight=False)  # process names are anyone's
        cores_note = core_link.note(timing.get("cores"))
        if cores_note:
            console.print(f"  [yellow]{cores_note}[/]", highlight=False)
    if result.roofline_fraction is not None:
        console.print(
            f"  roofline: {result.roofline_fraction:.1%} of the {d.get('bound', '?')}-bound limit "
            f"({d.get('roofline_bound_ms', 0):.4g} ms)",
            highlight=False,
        )
    _print_compiled(console, d.get("compiled"))
    _print_prediction(console, d.get("prediction"), d.get("plan"))
    if d.get("suspicious") and result.status != "suspicious":  # a suspicious verdict's error says it already
        console.print(f"  [bold red]suspicious:[/] {d['suspicious']}", highlight=False)
    check = d.get("roofline_check")
    if check:
        console.print(f"  roofline check: {remeasure_line(check)}", highlight=False)
    if d.get("isolation") == "process":  # without bubblewrap: say it where the verdict is read
        console.print("  isolation: plain processes, not bubblewrap (see `agentkern doctor`)", highlight=False)
    if d.get("workdir"):
        console.print(f"  sandbox folder: {d['workdir']}", highlight=False)


def exact_answer_line(entries: list | None) -> str | None:
    """What the reference's exact (float64) answer decided (session.against_exact): where eager's answer and the
    kernel's differed it judged again; None where it was never asked for."""
    if not entries:
        return None
    used = [e for e in entries if "unavailable" not in e]
    parts = []
    if used:
        forgiven = sum(int(e.get("nearer_exact") or 0) for e in used)
        wrong = [e["at"] for e in used if not e.get("ok")]
        where = ", ".join(e["at"] for e in used[:3]) + (", ..." if len(used) > 3 else "")
        parts.append(
            f"judged again with the reference's exact (float64) answer at {len(used)} place(s) ({where}): "
            f"{forgiven} position(s) off eager's answer but within tolerance of the exact one"
            + (f"; still wrong at {wrong[0]}" if wrong else "")
        )
    missing = [e for e in entries if "unavailable" in e]
    if missing:
        parts.append(f"no exact answer at {missing[0]['at']}: {escape(str(missing[0]['unavailable']))}")
    return "exact answer: " + "; ".join(parts)


def compiled_line(kernel: dict) -> str:
    """One compiled kernel's resources, as `eval` and the traces show them."""
    if "error" in kernel:
        return f"{kernel['kernel']}: does not compile: {kernel['error']}"
    if "unavailable" in kernel:
        return f"{kernel['kernel']}: not compiled here: {kernel['unavailable']}"
    mix = ", ".join(name for name, count in kernel.get("instructions", {}).items() if count) or "no tensor-core ops"
    spills = f"{kernel['spill_bytes']} B spilled" if kernel.get("spill_bytes") else "no spills"
    launch = (
        f", {kernel['num_warps']} warps, occupancy {kernel['occupancy']:.0%}" if "occupancy" in kernel else ""
    )  # a CUDA kernel's block size is set by its launch, which is not seen here
    return (
        f"{kernel['kernel']}: {kernel['registers']} registers, {kernel['shared_bytes'] / 1024:.1f} KiB shared, "
        f"{spills}{launch} ({mix})"
    )


def _print_compiled(console: Console, compiled: dict | None) -> None:
    if not compiled:
        return
    if "unavailable" in compiled:
        console.print(f"  compiled for the target: not done ({compiled['unavailable']})", highlight=False)
        return
    console.print(f"  compiled for {compiled['arch']} ({compiled['source']}):", highlight=False)
    for kernel in compiled["kernels"]:
        console.print(f"    {compiled_line(kernel)}", highlight=False)


def constants_text(constants: dict) -> str:
    """A problem's size constants as `K=8192, M=8192, N=8192`."""
    return ", ".join(f"{k}={v}" for k, v in sorted(constants.items()))


def size_label(size) -> str:
    if isinstance(size, dict):
        return "size " + constants_text(size)
    return f"the {size} size" if size else "the problem's size"


def _print_prediction(console: Console, prediction: dict | None, plan: dict | None) -> None:
    if plan and plan.get("unavailable"):
        console.print(f"  at the gpu size: not planned ({plan['unavailable']})", highlight=False)
    if not prediction:
        return
    if "unavailable" in prediction:
        console.print(f"  predicted: not available ({prediction['unavailable']})", highlight=False)
        return
    low, high = (prediction.get("band") or {}).get("speedup", [None, None])
    band = f" ({low:.2f}-{high:.2f}x)" if low else ""
    console.print(
        f"  [bold]predicted[/] at {size_label(prediction.get('size'))}: kernel {_ms(prediction['kernel_ms'])}, "
        f"reference {_ms(prediction['reference_ms'])} (eager PyTorch), speedup {prediction['speedup']:.2f}x{band}; "
        f"{prediction['model']}, not measured",
        highlight=False,
    )
    if prediction.get("notes"):
        console.print(f"    {'; '.join(prediction['notes'])}", highlight=False)
