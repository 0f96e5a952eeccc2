"""The built-in policy: no network, deterministic for a seed.

The problem is recognised once (recognize.py: torch.fx in the sandbox) as a family with attributes;
candidates are rendered from that family's parametrised template in kernels_dataset/templates/. The planner
picks a parent among the elites of each strategy family and the coder proposes neighbours: one parameter
changed, drawn from the parameters the current stage allows (stage 1: tiling and vectorisation; 2: algorithm
variants and fusion; 3: fine scheduling). A neighbour whose kernel takes a code path that does not read the
parameter changed (kernel_paths.py: a GEMM on AMX tiles and its FMA tiling) is the same kernel: not proposed.
"""

from __future__ import annotations

import json
import random
from typing import Any

from agentkern.policies.base import Policy, PolicyContext
from agentkern.policies.builtin import kernel_paths, templates
from agentkern.types import Draft, OpSpec, Plan


def _knob_by_knob(space: dict[str, list], base: dict[str, Any], rng: random.Random) -> list[tuple[str, Any]]:
    """The one-change moves away from `base` in `space`, every parameter's first before any parameter's second
    (parameters and values in random order): a beam of a few candidates tries each knob of the stage rather
    than two values of one (the elementwise template's store mode, 1.4x on a 4 MiB ReLU, went untried in a
    search of 8 candidates that tried both chunk sizes)."""
    per_knob = []
    for name, values in sorted(space.items()):
        others = [v for v in values if base.get(name) != v]
        rng.shuffle(others)
        if others:
            per_knob.append([(name, v) for v in others])
    rng.shuffle(per_knob)
    return [knob[i] for i in range(max(map(len, per_knob), default=0)) for knob in per_knob if i < len(knob)]


class BuiltinPolicy(Policy):
    reads_knowledge = False  # its templates and search need no documents: its runs never open the knowledge base

    def __init__(
        self,
        spec: OpSpec,
        backend: str,
        seed: int = 0,
        start: tuple[dict[str, Any], str] | None = None,
        features: frozenset | None = None,
    ) -> None:
        """`start`: (params, where from) of the best kernel known for this problem and target (a run added
        to the knowledge base with `kb add --from-run`); the search starts there instead of the defaults.
        `features`: the host CPU's (templates.host_features); parameter values it cannot run are never
        proposed, and the defaults take the template's preferences for it (None: no filtering)."""
        self.spec = spec
        self.family = spec["family"]
        self.backend = backend
        self.seed = seed
        self.features = features
        self.start = None
        if start is not None:
            space = templates.param_space(self.family, backend, features=features)
            params, origin = start
            if set(params) == set(space) and all(v in space[k] for k, v in params.items()):
                self.start = (dict(params), origin)

    def _key(self, params: dict[str, Any]) -> str:
        """Equal for two parameter sets whose kernels are one at the problem's shapes on this host."""
        return json.dumps(kernel_paths.behaviour(self.spec, params, self.backend, self.features), sort_keys=True)

    def read_params(self, params: dict[str, Any]) -> dict[str, Any]:
        read = kernel_paths.behaviour(self.spec, params, self.backend, self.features)
        read.pop("path", None)
        return read

    def _space(self, stage: int) -> dict[str, list]:
        return templates.param_space(self.family, self.backend, stage_max=stage, features=self.features)

    def strategy(self, params: dict[str, Any]) -> str:
        """family:<algorithm choices>/<tiling and scheduling>: the part before '/' is the strategy family. On a
        named code path (kernel_paths.py: "matmul:amx/amx=1") the path's name comes first, and only the parameters it
        reads appear."""
        read = kernel_paths.behaviour(self.spec, params, self.backend, self.features)
        path = read.pop("path", None)
        algorithm = set(self._space(2)) - set(self._space(1))
        left = ",".join([path] * bool(path) + [f"{k}={read[k]}" for k in sorted(algorithm) if k in read]) or "base"
        right = ",".join(f"{k}={v}" for k, v in sorted(read.items()) if k not in algorithm)
        return f"{self.family}:{left}/{right}"

    def plan(self, ctx: PolicyContext) -> Plan:
        elites = ctx["elites"]
        if not elites and self.start is not None:
            parent = {"id": None, "params": self.start[0], "label": f"the best known kernel ({self.start[1]})"}
        elif not elites:
            parent = {"id": None, "params": templates.default_params(self.family, self.backend, self.features)}
        else:
            # Quality-diversity: mostly the best family, now and then another family's elite.
            rng = random.Random(f"{self.seed}-plan-{ctx['iteration']}")
            parent = elites[0] if len(elites) == 1 or rng.random() < 0.7 else rng.choice(elites[1:])
        return {
            "summary": f"stage {ctx['stage']}: neighbours of {parent['id'] or parent.get('label', 'the defaults')}",
            "parent": parent["id"],
            "parent_params": parent["params"],
            "stage": ctx["stage"],
        }

    def write(self, plan: Plan, ctx: PolicyContext, beam: int) -> list[Draft]:
        rng = random.Random(f"{self.seed}-write-{ctx['iteration']}")
        tried = {self._key(p) for p in ctx["tried"]}
        proposals: list[tuple[dict[str, Any], str | None]] = []
        # The planner's parent first; when its neighbourhood is used up, the other elites', best first.
        parents = [(plan["parent"], dict(plan["parent_params"]))]
        parents += [(e["id"], dict(e["params"])) for e in ctx["elites"] if e["id"] != plan["parent"]]
        for parent_id, base in parents:
            self._neighbours(base, parent_id, plan["stage"], beam, tried, proposals, rng)
            if len(proposals) >= beam:
                break
        drafts: list[Draft] = []
        for params, parent_id in proposals:
            try:
                source, error = templates.render(self.spec, params, self.backend), None
            except Exception as exc:  # a template that cannot take these parameters: a verdict, not a crash
                source, error = None, f"template error: {exc}"
            drafts.append(
                {
                    "strategy": self.strategy(params),
                    "params": params,
                    "parent": parent_id,
                    "source": source,
                    "error": error,
                }
            )
        return drafts

    def _neighbours(
        self,
        base: dict[str, Any],
        parent_id: str | None,
        stage: int,
        beam: int,
        tried: set[str],
        proposals: list[tuple[dict[str, Any], str | None]],
        rng: random.Random,
    ) -> None:
        """Add untried parameter sets one change away from `base`: moves the current stage allows first,
        then the next stages', so a small parameter space does not leave the beam half empty."""
        seen = tried | {self._key(p) for p, _ in proposals}
        if self._key(base) not in seen and len(proposals) < beam:
            proposals.append((base, parent_id))
            seen.add(self._key(base))
        for s in range(stage, 4):
            for name, value in _knob_by_knob(self._space(s), base, rng):
                if len(proposals) >= beam:
                    return
                params = {**base, name: value}
                if self._key(params) not in seen:
                    proposals.append((params, parent_id))
                    seen.add(self._key(params))
