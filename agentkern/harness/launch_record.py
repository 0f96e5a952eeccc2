"""The candidate's Triton launches, noted in its runner while the interpreter runs them.

Compiling a kernel for the target GPU needs what the launch passed: argument types, constexpr values,
num_warps, num_stages, and the grid (for occupancy and waves). The interpreter sees all of it, so the runner
wraps its launch (InterpretedFunction.run) before the candidate is imported. This runs in the candidate's
process, so the record is the candidate's word: the judge bounds and checks its form (launch_plan.py), the
compiler rebuilds the kernels from the source text (triton_source.py), and nothing here changes a verdict's
correctness or a measured time, only what is compiled and predicted.
"""

from __future__ import annotations

import os

MAX_LAUNCHES = 32  # per recorded call: a forward launching more is summarised by its first ones
_DTYPES = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int64": "i64",
    "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "i1",
}  # fmt: skip
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")

_recorded: list[dict] = []
_recording = False
_skipping = False  # planning at another size: note the launches, run none (launch_plan.py)
_installed = False


def _describe(value) -> dict:
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return {"tensor": _DTYPES.get(str(value.dtype).removeprefix("torch."), "fp32")}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"float": value}
    if value is None:
        return {"none": True}
    if isinstance(value, str):
        return {"str": value[:64]}
    return {"other": type(value).__name__}


def _grid(grid, meta: dict) -> list[int]:
    if callable(grid):
        grid = grid(meta)
    dims = [int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,))]
    return (dims + [1, 1, 1])[:3]


def install() -> bool:
    """Wrap the interpreter's launch (only where TRITON_INTERPRET is set); True when wrapped."""
    global _installed
    if _installed or os.environ.get("TRITON_INTERPRET") != "1":
        return _installed
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return False
    original = InterpretedFunction.run

    def run(self, *args, grid, warmup, **kwargs):
        if not warmup:
            _note(self, args, grid, kwargs)
        if _skipping:
            return None
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    InterpretedFunction.run = run
    _without_benchmarks()
    _installed = True
    return True


def _note(fn, args, grid, kwargs, alternative: int | None = None) -> None:
    """One launch of the interpreted kernel `fn`; `alternative`: the index of an autotuner's config."""
    if not _recording or len(_recorded) >= MAX_LAUNCHES:
        return
    try:
        names = list(fn.arg_names)
        meta = dict(zip(names, args)) | kwargs
        record = {
            "kernel": fn.fn.__name__,
            "args": {n: _describe(v) for n, v in zip(names, args)}
            | {k: _describe(v) for k, v in kwargs.items() if k not in LAUNCH_OPTIONS and k != "warmup"},
            "options": {k: kwargs[k] for k in LAUNCH_OPTIONS if isinstance(kwargs.get(k), int)},
            "grid": _grid(grid, meta),
        }
        if alternative is not None:
            record["alternative"] = alternative
        _recorded.append(record)
    except Exception:  # noqa: BLE001 - a record that cannot be made is left out, the launch still runs
        pass


def _without_benchmarks() -> None:
    """@triton.autotune with several configs times each one on a GPU (do_bench: "0 active drivers" here). In
    the interpreter each config is noted as an alternative (the compiler compiles them all, as the GPU's
    autotuner would try them all), and the configs take turns, one call each: the trials check every config,
    not only the one that happens to run first (a GPU may pick any of them)."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return
    original_run = Autotuner.run

    def bench(self, *args, config, **meta):
        index = self.configs.index(config) if config in self.configs else len(self.configs)
        current = dict(meta, **config.all_kwargs())
        fn = self.fn
        while not hasattr(fn, "arg_names") or not hasattr(fn, "fn"):  # through @triton.heuristics
            fn = fn.fn
        grid = current.pop("grid", None)
        if grid is not None:
            _note(fn, args, grid, current, alternative=index)
        turn = (index - getattr(self, "_agentkern_turn", 0)) % max(len(self.configs), 1)
        return [float(turn)] * 3  # the config whose turn it is ranks first

    def run(self, *args, **kwargs):
        self.cache.clear()  # choose again on every call: the next config's turn
        try:
            return original_run(self, *args, **kwargs)
        finally:
            self._agentkern_turn = getattr(self, "_agentkern_turn", 0) + 1

    Autotuner._bench = bench
    Autotuner.run = run


def start(skip: bool = False) -> None:
    """Note the launches from now on; with `skip`, without running them."""
    global _recording, _skipping
    _recorded.clear()
    _recording, _skipping = True, skip


def take() -> list[dict]:
    global _recording, _skipping
    _recording = _skipping = False
    taken = list(_recorded)
    _recorded.clear()
    return taken


def validated(raw) -> list[dict]:
    """The judge's reading of a runner's launch record: only the form above survives, bounded; anything else
    is dropped (the record is the candidate's word, and only ever feeds the compiler and the prediction)."""
    out = []
    for launch in raw[:MAX_LAUNCHES] if isinstance(raw, list) else []:
        if not isinstance(launch, dict) or not isinstance(launch.get("kernel"), str):
            continue
        args = launch.get("args")
        options = launch.get("options")
        grid = launch.get("grid")
        if not (isinstance(args, dict) and isinstance(options, dict) and isinstance(grid, list) and len(grid) == 3):
            continue
        if not all(isinstance(g, int) and 0 <= g < 2**31 for g in grid):
            continue
        kept_args = {
            str(name)[:64]: {k: v for k, v in desc.items() if k in _FORMS and isinstance(v, _FORMS[k])}
            for name, desc in list(args.items())[:64]
            if isinstance(desc, dict) and len(desc) == 1
        }
        kept_options = {k: v for k, v in options.items() if k in LAUNCH_OPTIONS and isinstance(v, int) and 0 < v <= 64}
        kept = {"kernel": launch["kernel"][:128], "args": kept_args, "options": kept_options, "grid": grid}
        if isinstance(launch.get("alternative"), int) and 0 <= launch["alternative"] < 64:
            kept["alternative"] = launch["alternative"]
        out.append(kept)
    return out


_FORMS = {"tensor": str, "int": int, "float": float, "bool": bool, "none": bool, "str": str, "other": str}
