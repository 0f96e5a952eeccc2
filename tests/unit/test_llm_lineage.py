"""The LLM policy's prompts on made-up runs (no harness): what a coder sees of its parent, of the lineage's
failures, of the planner's ideas; replies as diffs; the first kernel from --start-from; prompts fitted to
a context window."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentkern.models.context import context_window
from agentkern.models.litellm_model import LiteLLMModel
from agentkern.models.scripted import ScriptedModel
from agentkern.policies import lineage, prompt_budget, replies
from agentkern.policies.llm import LLMPolicy, ideas_in
from agentkern.policies.start import Starter
from agentkern.targets import get_target

PARENT = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        launch(x, y, block=256)
        return y
"""


def candidate(tmp_path, cid, *, parent=None, status="ok", speedup=None, source=PARENT, strategy="fam/v", **extra):
    path = tmp_path / f"{cid}.py"
    path.write_text(source)
    record = {
        "id": cid,
        "iteration": int(cid[:3]),
        "strategy": strategy,
        "params": {},
        "parent": parent,
        "path": str(path),
        "status": status,
        "correct": status == "ok" and speedup is not None,
        "speedup": speedup,
        "kernel_ms": 0.5 if speedup else None,
        "reference_ms": 0.5 * speedup if speedup else None,
        "roofline_fraction": 0.4 if speedup else None,
        "bound": "memory" if speedup else None,
        "predicted": False,
        "error": extra.pop("error", None),
        "verdict": {"status": status},
    }
    record.update(extra)
    return record


def context(candidates, beam=1, **over):
    ctx = {
        "iteration": 3,
        "stage": 1,
        "elites": [],
        "best": None,
        "tried": [],
        "candidates": candidates,
        "beam": beam,
        "feedback": "",
        "problem_source": "class Model(nn.Module):\n    def forward(self, x): return torch.relu(x)\n",
        "target": get_target("cpu"),
        "backend": "cpp",
        "run_id": "r",
        "knowledge": [],
    }
    return {**ctx, **over}


def policy(replies_, window=None, starter=None):
    calls = []
    model = ScriptedModel(replies_)
    if window:
        model.context_window = window

    def record(agent, iteration, prompt, reply, error, retrieved=None, notes=None):
        calls.append({"agent": agent, "prompt": prompt, "error": error, "notes": notes})

    win, source = context_window(model)
    return LLMPolicy(model, record, window=win, window_source=source, starter=starter), model, calls


def test_the_coder_sees_its_parent_source_verdict_and_the_lineages_mismatch_report(tmp_path):
    verdict = {
        "status": "incorrect",
        "correct": False,
        "error": "output differs from the reference: 812 of 1048576 elements (0.08%): max abs diff 0.37",
        "details": {"failed_trial": {"trial": 4, "seed": 99, "inputs": "scale_4"}},
    }
    cands = [
        candidate(tmp_path, "001-0", speedup=1.25, strategy="relu-omp/basic/0"),
        candidate(
            tmp_path,
            "002-0",
            parent="001-0",
            status="incorrect",
            error=verdict["error"],
            report=lineage.report_of(verdict),
            source=PARENT.replace("256", "512"),
        ),
    ]
    pol, model, calls = policy(["STRATEGY: relu/x\nvectorise", "```python\n" + PARENT + "```"])
    ctx = context(cands)
    plan = pol.plan(ctx)
    drafts = pol.write(plan, ctx, 1)
    coder = calls[1]["prompt"]
    assert "launch(x, y, block=256)" in coder and "(001-0, strategy relu-omp/basic/0)" in coder
    assert "correct, 1.25x measured, 40% of the roofline" in coder and "Memory-bound at 40%" in coder
    assert "002-0 (fam/v, from 001-0): incorrect: output differs" in coder
    assert "failed trial: trial 4, inputs scale_4" in coder and "max abs diff 0.37" in coder
    assert "seed" not in coder.split("Report:")[1]  # the seeds never leave the judge
    assert "unified diff against 001-0" in coder
    assert "launch(x, y, block=256)" in calls[0]["prompt"]  # the planner sees the kernel too
    assert drafts[0]["parent"] == "001-0" and drafts[0]["reply_form"] == "file"


def test_a_compile_error_reaches_the_next_coder_prompt(tmp_path):
    verdict = {
        "status": "compile_error",
        "correct": False,
        "error": "build failed",
        "details": {"log_tail": "kernel.cpp:7:9: error: 'undeclared_name' was not declared in this scope"},
    }
    cands = [
        candidate(tmp_path, "001-0", status="compile_error", error="build failed", report=lineage.report_of(verdict))
    ]
    pol, _, calls = policy(["STRATEGY: a/b\nfix it", "no code, sorry"])
    ctx = context(cands)
    drafts = pol.write(pol.plan(ctx), ctx, 1)
    assert "'undeclared_name' was not declared" in calls[1]["prompt"]
    assert "The latest attempts" in calls[1]["prompt"] and drafts[0]["parent"] is None
    assert drafts[0]["source"] is None and drafts[0]["error"].startswith("reply without usable code")


def test_branches_refine_different_families_with_the_planners_ideas(tmp_path):
    cands = [
        candidate(tmp_path, "001-0", speedup=1.5, strategy="tiled/a/0"),
        candidate(tmp_path, "001-1", speedup=1.1, strategy="simd/b/1", source=PARENT.replace("256", "64")),
    ]
    plan_reply = "STRATEGY: tiled/bigger\nlarger tiles\n\nSTRATEGY: simd/unroll\nunroll by 4\n"
    file_reply = "```python\n" + PARENT.replace("256", "1024") + "```"
    diff_reply = "```diff\n@@ -8 +8 @@\n-        launch(x, y, block=64)\n+        launch(x, y, block=128)\n```"
    pol, model, calls = policy([plan_reply, file_reply, diff_reply])
    ctx = context(cands, beam=2)
    plan = pol.plan(ctx)
    assert [i["strategy"] for i in plan["ideas"]] == ["tiled/bigger", "simd/unroll"]
    assert "Propose 2 distinct ideas" in calls[0]["prompt"]
    drafts = pol.write(plan, ctx, 2)
    assert [d["parent"] for d in drafts] == ["001-0", "001-1"]
    assert [d["strategy"] for d in drafts] == ["tiled/bigger/0", "simd/unroll/1"]
    assert "larger tiles" in calls[1]["prompt"] and "unroll by 4" in calls[2]["prompt"]
    assert "block=64" in calls[2]["prompt"] and "block=64" not in calls[1]["prompt"]
    assert drafts[1]["reply_form"] == "diff" and "launch(x, y, block=128)" in drafts[1]["source"]


def test_ideas_are_read_from_loosely_formatted_planner_replies():
    text = "Plan:\n**STRATEGY:** `softmax/online`\nfuse\n1. Strategy: softmax/two-pass.\nsplit"
    assert [i["strategy"] for i in ideas_in(text)] == ["softmax/online", "softmax/two-pass"]
    assert ideas_in("no strategy here") == []


def test_a_diff_that_does_not_apply_is_feedback(tmp_path):
    with pytest.raises(replies.NoCodeError, match="does not apply to the parent kernel: Hunk #1 FAILED"):
        replies.solution("```diff\n@@ -1 +1 @@\n-not in the file\n+x\n```", PARENT)
    with pytest.raises(replies.NoCodeError, match="no parent kernel"):
        replies.solution("```diff\n@@ -1 +1 @@\n-a\n+b\n```", None)
    with pytest.raises(replies.NoCodeError, match="no longer defines `class ModelNew`"):
        replies.solution("```diff\n@@ -5,1 +5,1 @@\n-class ModelNew(nn.Module):\n+class Other(nn.Module):\n```", PARENT)


def test_a_diff_without_headers_and_with_wrong_counts_applies():
    reply = "```diff\n@@ -99,7 +99,9 @@\n     def forward(self, x):\n-        y = torch.empty_like(x)\n+        y = torch.zeros_like(x)\n```"
    source, form = replies.solution(reply, PARENT)
    assert form == "diff" and "torch.zeros_like(x)" in source and "torch.empty_like" not in source


@pytest.mark.parametrize(
    "wrap",
    [
        lambda d: f"```python\n{d}```",  # labelled python
        lambda d: f"```\n{d}```",  # no label
        lambda d: f"Change one line:\n\n{d}\nThat should be faster.",  # no fence at all
    ],
)
def test_diffs_are_found_however_the_model_wraps_them(wrap):
    diff = "--- a/solution.py\n+++ b/solution.py\n@@ -7,1 +7,1 @@\n-        y = torch.empty_like(x)\n+        y = torch.zeros_like(x)\n"
    source, form = replies.solution(wrap(diff), PARENT)
    assert form == "diff" and "torch.zeros_like(x)" in source


def test_the_first_iteration_starts_from_the_starter_without_a_model_call(tmp_path):
    draft = {"strategy": "softmax:base/x", "params": {"a": 1}, "parent": None, "source": PARENT, "error": None}
    pol, model, calls = policy([], starter=Starter("the built-in softmax template", [draft]))
    ctx = context([])
    plan = pol.plan(ctx)
    assert plan["start"] and "built-in softmax template" in plan["summary"]
    assert pol.write(plan, ctx, 2) == [draft] and model.history == [] and calls == []


def test_prompts_are_trimmed_to_fit_a_small_window_and_the_trim_is_recorded(tmp_path):
    docs = [
        {"id": f"d{i}", "title": f"Doc {i}", "kind": "guide", "section": "", "sources": [], "excerpt": "tiling " * 400}
        for i in range(6)
    ]
    cands = [candidate(tmp_path, "001-0", speedup=1.2)]
    pol, model, calls = policy(["STRATEGY: a/b\nx", "```python\n" + PARENT + "```"], window=4096)
    ctx = context(cands, knowledge=docs)
    pol.write(pol.plan(ctx), ctx, 1)
    for call, asked in zip(calls, model.calls):
        notes = call["notes"]
        assert notes["window"] == 4096 and any("retrieved documents" in t for t in notes["trimmed"])
        # The scripted model counts a token per 4 characters: the first call's guess (2.5) is safe, the
        # second uses the ratio the first reply measured.
        assert len(call["prompt"]) // 4 + asked["max_tokens"] + prompt_budget.TEMPLATE_OVERHEAD <= 4096
        assert "launch(x, y, block=256)" in call["prompt"]  # the parent is not cut while anything else can be
    assert [c["notes"]["chars_per_token"] for c in calls] == [2.5, 3.8]
    assert model.calls[0]["max_tokens"] <= prompt_budget.REPLY_TOKENS["planner"]
    assert model.calls[1]["max_tokens"] > model.calls[0]["max_tokens"]


def test_a_parent_too_long_for_the_window_is_left_out_and_a_prompt_that_cannot_fit_is_not_sent(tmp_path):
    cands = [candidate(tmp_path, "001-0", speedup=1.2, source=PARENT + "# pad\n" * 2000)]
    pol, model, calls = policy(["STRATEGY: a/b\nx", "```python\n" + PARENT + "```"], window=2048)
    ctx = context(cands)
    drafts = pol.write(pol.plan(ctx), ctx, 1)
    assert "# pad" not in calls[1]["prompt"] and "too long to show" in calls[1]["prompt"]
    assert "the parent kernel's source" in calls[1]["notes"]["trimmed"] and "```diff" not in calls[1]["prompt"]
    assert drafts[0]["source"] and drafts[0]["parent"] == "001-0"
    pol, model, calls = policy(["STRATEGY: a/b\nx"], window=300)
    plan = pol.plan(ctx)
    assert model.history == [] and "context window" in calls[0]["error"] and "planner failed" in plan["summary"]


class _ModelsServer(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        body = json.dumps({"data": [{"id": "qwen", "object": "model", "max_model_len": 32768}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_the_context_window_comes_from_the_user_litellm_the_server_or_a_default():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ModelsServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}/v1"
        assert context_window(LiteLLMModel("openai/qwen", api_base=base))[0] == 32768
        assert context_window(LiteLLMModel("openai/qwen", api_base=base), 2048) == (2048, "--context-window")
    finally:
        server.shutdown()
    assert context_window(LiteLLMModel("openai/gpt-4o"))[0] >= 100_000  # litellm's map, offline
    window, why = context_window(LiteLLMModel("openai/unknown-local", api_base="http://127.0.0.1:9/v1"))
    assert window == 4096 and "--context-window" in why
    assert context_window(ScriptedModel([]))[0] is None


def test_the_rendered_example_of_docs_llm_md_still_renders():
    import subprocess
    import sys

    from support import ROOT

    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "render_prompts.py"), "--window", "2500"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    planner, coder = done.stdout.split("===== coder")
    assert "Best candidates so far" in planner and "The kernel the coder will improve (001-0" in planner
    assert "The kernel to improve (001-0, strategy relu-omp/flat/0)" in coder and "'window': 2500" in coder


def test_a_context_length_refusal_gets_one_shorter_request_and_the_calls_name_their_branch(tmp_path):
    from agentkern.models.base import ModelError

    refusal = ModelError(
        "openai/x: HTTP 400 (not retried): maximum context length is 4096 tokens", kind="http", status=400
    )
    cands = [candidate(tmp_path, "001-0", speedup=1.3), candidate(tmp_path, "001-1", speedup=1.1, strategy="g/v")]
    code = "```python\n" + PARENT + "```"
    pol, model, calls = policy(["STRATEGY: a/b\nx", code, refusal, code], window=8192)
    ctx = context(cands, beam=2)
    drafts = pol.write(pol.plan(ctx), ctx, 2)
    assert all(d["source"] for d in drafts) and len(model.history) == 4
    assert [c["notes"].get("branch") for c in calls] == [None, 0, 1, 1]
    assert calls[2]["error"] and calls[3]["error"] is None
    assert calls[3]["notes"]["chars_per_token"] < calls[2]["notes"]["chars_per_token"]


def test_with_three_branches_the_last_combines_two_families_best_kernels(tmp_path):
    cands = [
        candidate(tmp_path, "001-0", speedup=1.5, strategy="tiled/a/0"),
        candidate(tmp_path, "001-1", speedup=1.2, strategy="simd/b/1", source=PARENT.replace("256", "64")),
    ]
    code = "```python\n" + PARENT + "```"
    pol, model, calls = policy(["STRATEGY: a/x\n1\nSTRATEGY: b/y\n2\nSTRATEGY: c/z\n3", code, code, code])
    ctx = context(cands, beam=3)
    drafts = pol.write(pol.plan(ctx), ctx, 3)
    assert "Branch 3 combines 001-0 with 001-1" in calls[0]["prompt"]
    crossover = calls[3]["prompt"]
    assert "A second strong kernel, from another family (001-1" in crossover and "block=64" in crossover
    assert "block=256" in crossover and "Combine the two" in crossover
    assert drafts[2]["strategy"] == "crossover:001-0+001-1/2" and drafts[2]["parent"] == "001-0"
    assert drafts[2]["other_parent"] == "001-1" and "other_parent" not in drafts[0]


def test_a_diff_with_crlf_line_ends_and_changed_context_spacing_applies():
    diff = "```diff\r\n@@ -7,2 +7,2 @@\r\n \tdef forward(self, x):\r\n-        y = torch.empty_like(x)\r\n+        y = torch.zeros_like(x)\r\n```\r\n"
    source, form = replies.solution(diff, PARENT)
    assert form == "diff" and "torch.zeros_like(x)" in source and "\r" not in source


def test_an_unknown_start_from_is_one_clear_error_whatever_the_policy():
    from agentkern.errors import UserError
    from agentkern.loop import run as optimize
    from agentkern.loop.deps import OptimizeOptions

    with pytest.raises(UserError, match="--start-from must be auto, exemplar, builtin or scratch, not 'bogus'"):
        optimize.make_policy(OptimizeOptions(problem="relu", start_from="bogus"), None, "cpp", None, "r")
