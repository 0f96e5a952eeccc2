"""What a run says about the parameters it chose (agentkern/loop/winning_params.py)."""

from agentkern.loop.winning_params import explain, one_line


def cand(id_, params, speedup, correct=True):
    return {"id": id_, "params": params, "speedup": speedup, "correct": correct, "strategy": "reduce:rows/x"}


def test_each_changed_value_is_argued_by_the_best_candidate_without_it():
    runs = [
        cand("001-0", {"prefetch": 2048, "unroll": 4}, 1.02),
        cand("001-1", {"prefetch": 4096, "unroll": 4}, 1.10),
        cand("002-0", {"prefetch": 4096, "unroll": 8}, 1.21),
        cand("002-1", {"prefetch": 1024, "unroll": 8}, 1.15),
        cand("003-0", {"prefetch": 8192, "unroll": 8}, 9.0, correct=False),  # wrong: never evidence
    ]
    got = explain(runs, host="a CPU")
    assert got["candidate"] == "002-0" and got["speedup"] == 1.21
    assert got["start"] == {"params": {"prefetch": 2048, "unroll": 4}, "candidate": "001-0", "speedup": 1.02}
    assert got["changed"]["prefetch"]["from"] == 2048 and got["changed"]["prefetch"]["to"] == 4096
    assert got["changed"]["prefetch"]["best_without"] == {"value": 1024, "speedup": 1.15, "candidate": "002-1"}
    assert got["changed"]["unroll"]["best_without"] == {"value": 4, "speedup": 1.10, "candidate": "001-1"}
    assert got["measured_candidates"] == 4
    line = one_line(got)
    assert "prefetch=4096 (start 2048; best with prefetch=1024: 1.15x, 002-1)" in line
    assert "1.21x (002-0) against the start's 1.02x (001-0), measured on a CPU" in line


def test_the_start_winning_says_so():
    runs = [cand("001-0", {"micro": "8x32"}, 1.5), cand("001-1", {"micro": "6x16"}, 1.2)]
    got = explain(runs)
    assert got["changed"] == {}
    assert (
        one_line(got)
        == "parameters: the starting ones won (micro=8x32), 1.50x; 1 other parameter sets measured were slower"
    )


def test_the_start_is_the_first_correct_candidate():
    runs = [cand("001-0", {"k": 1}, None, correct=False), cand("001-1", {"k": 2}, 1.1), cand("002-0", {"k": 3}, 1.3)]
    got = explain(runs)
    assert got["start"]["candidate"] == "001-1"
    assert got["changed"] == {
        "k": {"from": 2, "to": 3, "best_without": {"value": 2, "speedup": 1.1, "candidate": "001-1"}}
    }


def test_hand_written_kernels_have_no_parameters_to_explain():
    assert explain([cand("001-0", {}, 1.4)]) is None
    assert explain([]) is None
    assert one_line(None) is None


def test_only_parameters_the_winners_kernel_reads_are_credited():
    # A GEMM on AMX tiles reads `amx` only (policies/builtin/kernel_paths.py): its FMA tiling is not a reason.
    def on_tiles(params):
        return {"amx": 1} if params["amx"] == 1 else dict(params)

    runs = [
        cand("001-0", {"amx": 0, "micro": "12x32", "kc": 192}, 0.90),
        cand("001-1", {"amx": 1, "micro": "6x16", "kc": 192}, 1.40),
    ]
    got = explain(runs, read_params=on_tiles)
    assert got["read"] == ["amx"] and got["params"] == runs[1]["params"]  # kept whole, for `kb add --from-run`
    assert list(got["changed"]) == ["amx"]
    line = one_line(explain([runs[1], runs[0]], read_params=on_tiles))
    assert line.startswith("parameters: the starting ones won (amx=1), 1.40x")
    assert "micro" in one_line(explain(runs))  # without the policy's answer: every parameter


def test_a_kernel_that_reads_no_parameter_says_so():
    # a matrix-vector product on the GEMM template's gemv path: one candidate, nothing to credit
    got = explain([cand("001-0", {"micro": "12x32", "amx": 1}, 0.99)], host="a CPU", read_params=lambda p: {})
    assert got["read"] == [] and got["changed"] == {}
    assert one_line(got) == "parameters: none read by this kernel at the problem's shapes, 0.99x on a CPU"
