"""graph_rewrite.py on traced plans: a GEMM summed over its columns becomes a matrix-vector product; a
log-softmax picked at one index a row becomes one op."""

import pytest

torch = pytest.importorskip("torch")

from agentkern.policies.builtin.graph_rewrite import rewrite  # noqa: E402
from agentkern.policies.builtin.graph_trace import refs, trace_graph  # noqa: E402


class _Forward(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.w = torch.nn.Parameter(torch.randn(40, 33))
        self.l = torch.nn.Linear(33, 40)

    def forward(self, *xs):
        return self.fn(self, *xs)


def _ops(plan):
    return [(n["op"], n.get("shape")) for n in plan["nodes"] if n["op"] not in ("input", "param")]


def test_a_transposed_weight_is_summed_as_it_lies_and_the_product_has_one_column():
    plan = trace_graph(_Forward(lambda m, x: torch.sum(x @ m.w.T / 2, dim=1, keepdim=True) * 1.5), [torch.rand(17, 33)])
    ops = _ops(rewrite(plan))
    assert ("aten.sum.dim_IntList", [1, 33]) in ops  # W [40, 33] summed over its rows, no transposed copy
    assert ("aten.mm.default", [17, 1]) in ops and ("aten.div.Tensor", [17, 1]) in ops
    assert not any(op == "aten.mm.default" and shape == [17, 40] for op, shape in ops)
    assert _ops(plan) != ops  # the traced plan itself untouched
    assert ("aten.mm.default", [17, 40]) in _ops(plan)


def test_a_linear_layer_sums_its_bias_too_and_a_mean_stays_a_mean():
    plan = rewrite(trace_graph(_Forward(lambda m, x: m.l(x).mean(-1)), [torch.randn(9, 33)]))
    ops = _ops(plan)
    assert ("aten.addmm.default", [9, 1]) in ops and ("aten.squeeze.dim", [9]) in ops
    assert [op for op, _ in ops].count("aten.mean.dim") == 2  # of W's rows and of the bias
    assert plan["outputs"] == [{"ref": plan["nodes"][-1]["name"]}]


def test_columns_read_elsewhere_or_a_nonlinear_step_keep_the_gemm():
    for fn in [
        lambda m, x: (lambda y: y.sum(1, keepdim=True) + y)(x @ m.w.T),
        lambda m, x: torch.relu(x @ m.w.T).sum(1),
        lambda m, x: (x @ m.w.T).sum(0),
        lambda m, x: (x @ m.w.T * x[:, :1]).sum(1),
    ]:
        plan = trace_graph(_Forward(fn), [torch.randn(9, 33)])
        assert rewrite(plan) == plan


def test_a_cross_entropy_picks_from_its_rows_log_sum_exp_without_the_log_softmax():
    fn = lambda m, x, t: torch.nn.functional.cross_entropy(x, t)  # noqa: E731
    plan = trace_graph(_Forward(fn), [torch.randn(9, 33), torch.randint(0, 33, (9,))])
    ops = [op for op, _ in _ops(rewrite(plan))]
    assert "agentkern.log_softmax_gather" in ops
    assert "aten._log_softmax.default" not in ops and "aten.gather.default" not in ops
    assert "aten._log_softmax.default" in [op for op, _ in _ops(plan)]  # the traced plan itself untouched


def test_a_log_softmax_read_elsewhere_or_picked_along_a_leading_dim_or_twice_a_row_stays():
    x = torch.randn(9, 33)
    for fn, index in [
        (lambda m, x, t: (lambda y: y.gather(1, t) + y.sum())(torch.log_softmax(x, 1)), [9, 1]),
        (lambda m, x, t: torch.log_softmax(x, 0).gather(0, t), [1, 33]),  # one a column: along dim 0
        (lambda m, x, t: torch.log_softmax(x, 1).gather(1, t), [9, 2]),
    ]:
        plan = trace_graph(_Forward(fn), [x, torch.randint(0, 9, index)])
        assert rewrite(plan) == plan, index
    plan = trace_graph(
        _Forward(lambda m, x, t: torch.log_softmax(x, -1).gather(-1, t)),
        [torch.randn(4, 9, 33), torch.randint(0, 33, (4, 9, 1))],
    )
    assert "agentkern.log_softmax_gather" in [op for op, _ in _ops(rewrite(plan))]  # a 3-D x's last dim


def test_a_triangle_of_a_product_is_the_gemm_told_the_triangle_and_the_index_grids_go():
    for fn, triangle in [
        (lambda m, x: torch.tril(x @ m.w.T), [1, 0]),
        (lambda m, x: torch.triu(x @ m.w.T, diagonal=2), [2, 2]),
        (lambda m, x: torch.tril(m.l(x), -3) * 2, [1, -3]),
    ]:
        plan = rewrite(trace_graph(_Forward(fn), [torch.randn(50, 33)]))
        gemms = [n for n in plan["nodes"] if n["op"] in ("aten.mm.default", "aten.addmm.default")]
        assert [g["kwargs"].get("triangle") for g in gemms] == [triangle]
        ops = [op for op, _ in _ops(plan)]
        assert not {"aten.where.self", "aten.arange.start_step", "aten.sub.Tensor"} & set(ops), ops


def test_a_triangle_read_elsewhere_or_filled_with_another_value_keeps_the_where():
    for fn in [
        lambda m, x: (lambda y: torch.tril(y) + y)(x @ m.w.T),  # the product read twice
        lambda m, x: torch.where(torch.ones(50, 40, dtype=torch.bool).tril(), x @ m.w.T, 1.0),  # not a zero
        lambda m, x: torch.tril(x @ m.w.T - 1),  # not the product itself
    ]:
        plan = trace_graph(_Forward(fn), [torch.randn(50, 33)])
        rewritten = rewrite(plan)
        assert not any("triangle" in n.get("kwargs", {}) for n in rewritten["nodes"])
        assert "aten.where.self" in [op for op, _ in _ops(rewritten)]


def test_a_view_repeated_at_each_step_is_made_once_and_a_returned_one_stays():
    def steps(m, x):
        h = x
        for _ in range(3):
            h = torch.tanh(h[:, :33] @ m.w.T)  # the same transpose of w at every step
        return h, m.w.T, m.w.T

    traced = trace_graph(_Forward(steps), [torch.randn(5, 33)])
    plan = rewrite(traced)

    def transposes(p):
        return [n for n in p["nodes"] if n["op"] == "aten.permute.default"]

    assert len(transposes(traced)) == 5
    assert len(transposes(plan)) == 3  # the steps' one, and the two returned: each its own tensor
    mms = [n for n in plan["nodes"] if n["op"] == "aten.mm.default"]
    assert len(mms) == 3 and len({n["args"][1]["ref"] for n in mms}) == 1
    returned = [o["ref"] for o in plan["outputs"]]
    assert len(set(returned)) == 3
    names = {n["name"] for n in plan["nodes"]}
    for node in plan["nodes"]:  # every ref names a node still there
        assert set(refs([node.get("args"), node.get("kwargs")])) <= names, node
