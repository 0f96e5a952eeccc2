"""The reference's float64 copy (the exact answer, session.against_exact) is refused, with the reason, when it
and the inputs in float64 would take more than the share of the memory limit set aside for it."""

import torch

from agentkern.harness.runner import float64_refusal


def test_a_copy_past_the_budget_is_refused_and_one_within_it_is_not():
    model = torch.nn.Linear(1000, 250)  # 250250 floating values
    x = torch.randn(4, 1000)  # 4000
    ids = torch.arange(10**6)  # an integer input stays as it is: not counted
    need = (250250 + 4000) * 8
    assert float64_refusal(model, [x, ids, 3.0], need) is None
    why = float64_refusal(model, [x, ids, 3.0], need - 1)
    assert why is not None and "float64 copy and inputs would take 0.00 GiB" in why
    model.register_buffer("running", torch.zeros(2**25))  # 32M values: 0.25 GiB in float64
    assert "would take 0.25 GiB, more than the 0.12 GiB" in float64_refusal(model, [x], 2**27)
