"""The launches and the work at the GPU's size, for a GPU that is not here (issue 15: check small, predict at
the real size).

Correctness runs in Triton's interpreter at the problem's small size. The prediction must be at the size the
kernel will run at on the GPU (the problem's `gpu` size), where its grid, its constexprs (a launcher may pick
its tiles by shape) and the reference's work all differ. So, after the trials:
- the reference's work at the gpu size comes from the problem's Model on meta tensors (meta_work.py);
- the candidate's model is loaded again at the gpu size and called once on empty tensors of the gpu shapes
  with every Triton launch noted and none run (launch_record.py): its host code runs, its kernels do not.
Nothing here changes the verdict: where either step fails, details.plan says why and the prediction falls
back to the check size.
"""

from __future__ import annotations

from agentkern.harness.second_shape import set_constants, size_constants
from agentkern.helpers import one_line

PLAN_SIZE = "gpu"
# Share of the sandbox's memory limit the gpu size's inputs and outputs may take: the candidate's host code
# runs there for real (its kernels do not), and one that fills its outputs touches all of it.
PLAN_MEMORY_SHARE = 0.5


def plan(session) -> dict:
    """details.plan for an EvalSession whose candidate passed its trials; whatever happens at the gpu size, it
    keeps the reference's eager ops at the size the trials ran at (`checked_eager_ops`), so a prediction
    made there still prices the reference op by op."""
    from agentkern.harness.meta_work import meta_work

    try:
        checked = {"checked_eager_ops": meta_work(session.problem, session.init_seed)["eager_ops"]}
    except (RuntimeError, ValueError, TypeError, NotImplementedError):
        checked = {}
    return _at_gpu_size(session) | checked


def _at_gpu_size(session) -> dict:
    from agentkern.harness.launch_record import validated
    from agentkern.harness.meta_work import meta_work
    from agentkern.harness.sides import CandidateFailed, ReferenceFailed

    problem = session.problem
    sizes = getattr(problem, "SIZES", None)
    size_name = PLAN_SIZE
    if isinstance(sizes, dict) and isinstance(sizes.get(PLAN_SIZE), dict):
        constants = {k: v for k, v in sizes[PLAN_SIZE].items() if isinstance(k, str)}
    elif session.base_constants:  # no SIZES (a KernelBench file): the size it is written at is the real one
        constants, size_name = dict(session.written_constants), "as written"
    else:
        return {"unavailable": f"the problem declares no {PLAN_SIZE} size and was checked as written"}
    first = size_constants(problem) | {k: getattr(problem, k) for k in constants if hasattr(problem, k)}
    set_constants(problem, constants)
    try:
        work = meta_work(problem, session.init_seed)
        budget = PLAN_MEMORY_SHARE * float(session.opts.get("memory_limit_gb", 8.0)) * 2**30
        if work["bytes"] > budget:  # a candidate that fills its outputs would take the whole verdict down with it
            why = f"the gpu size moves {work['bytes'] / 2**30:.1f} GiB, more than {budget / 2**30:.1f} GiB of this sandbox"
            return {"size": size_name, "constants": constants, "unavailable": why}
        cand = session.sides["candidate"]
        common = {"device": session.req["device"], "threads": session.opts.get("threads"), "constants": constants}
        init = list(problem.get_init_inputs())
        cand.load(session.candidate_kind, session._candidate_source(), init, session.init_seed, common | {"size": None})
        answer = cand.plan_call(work["inputs"])
    except (CandidateFailed, ReferenceFailed, RuntimeError, ValueError, TypeError, NotImplementedError) as exc:
        return {"size": size_name, "constants": constants, "unavailable": one_line(f"{type(exc).__name__}: {exc}")}
    finally:
        set_constants(problem, first)  # the check size's constants, as the trials left them
    launches = validated(answer.get("launches"))
    plan = {"size": size_name, "constants": constants, "launches": launches}
    plan["work"] = {k: work[k] for k in ("flops", "bytes", "dtype")}
    plan["eager_ops"] = work["eager_ops"]
    if not launches:
        plan["unavailable"] = "the candidate launched no Triton kernel at that size"
    return plan
