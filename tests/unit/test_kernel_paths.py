"""Which code path a template's kernel takes at the problem's timed shapes (policies/builtin/kernel_paths.py), and
the built-in search never timing one kernel twice under parameters its path does not read."""

import pytest

from agentkern.policies.builtin import kernel_paths
from agentkern.policies.builtin.policy import BuiltinPolicy

AMX_HOST = frozenset({"avx512f", "amx_bf16", "intel"})
FMA_HOST = frozenset({"avx512f", "intel"})


def gemm_spec(family, a_shape, b_shape, out_shape, dtype="float32", ta=False, tb=False, b_param=False):
    b = {"param": "weight", "trans": tb} if b_param else {"input": 1, "trans": tb}
    shapes = [a_shape] if b_param else [a_shape, b_shape]
    return {
        "family": family,
        "dtype": dtype,
        "input_shapes": shapes,
        "output_shape": out_shape,
        "attrs": {"a": {"input": 0, "trans": ta}, "b": b},
        "epilogue": [],
    }


SQUARE = gemm_spec("matmul", [1024, 1024], [1024, 1024], [1024, 1024])


@pytest.mark.parametrize(
    "spec, dims",
    [
        (SQUARE, (1, 1024, 1024, 1024)),
        # a linear layer's leading dims are its rows; K from the input, its weight a parameter
        (gemm_spec("linear", [4, 128, 512], None, [4, 128, 1000], tb=True, b_param=True), (1, 512, 1000, 512)),
        (gemm_spec("bmm", [16, 256, 64], [16, 64, 300], [16, 256, 300]), (16, 256, 300, 64)),
        (gemm_spec("matmul", [700, 150], [700, 300], [150, 300], ta=True), (1, 150, 300, 700)),
        (gemm_spec("matmul", [4096, 4096], [4096, 1], [4096, 1]), (1, 4096, 1, 4096)),
    ],
)
def test_gemm_dims_are_the_launchers(spec, dims):
    assert kernel_paths.gemm_dims(spec) == dims


def test_gemm_dims_unknown_without_shapes():
    assert kernel_paths.gemm_dims({"family": "matmul", "attrs": {}}) is None
    assert kernel_paths.timed_path({"family": "matmul"}, {"amx": 0}, "cpp", AMX_HOST) is None


@pytest.mark.parametrize(
    "spec, params, features, path",
    [
        (SQUARE, {"amx": 1}, AMX_HOST, "amx"),
        (SQUARE, {"amx": 0}, AMX_HOST, "fma"),
        (SQUARE, {"amx": 1}, FMA_HOST, "fma"),  # no tiles on this host
        (SQUARE, {"amx": 1}, None, None),  # unknown host: the tiles may or may not run
        (SQUARE, {"amx": 0}, None, "fma"),
        # the tiles from 256 rows and columns (fp32), 32 (bf16), a K of 32
        (gemm_spec("matmul", [256, 300], [300, 270], [256, 270]), {"amx": 1}, AMX_HOST, "amx"),
        (gemm_spec("matmul", [255, 300], [300, 270], [255, 270]), {"amx": 1}, AMX_HOST, "fma"),
        (gemm_spec("matmul", [8192, 512], [512, 64], [8192, 64]), {"amx": 1}, AMX_HOST, "fma"),
        (gemm_spec("matmul", [64, 64], [64, 64], [64, 64], "bfloat16"), {"amx": 1}, AMX_HOST, "amx"),
        (gemm_spec("matmul", [64, 16], [16, 64], [64, 64], "bfloat16"), {"amx": 1}, AMX_HOST, "fma"),
        (gemm_spec("matmul", [512, 512], [512, 512], [512, 512], "float16"), {"amx": 1}, AMX_HOST, "fma"),
        (gemm_spec("matmul", [512, 512], [512, 512], [512, 512], ta=True), {"amx": 1}, AMX_HOST, "fma"),
        # a matrix-vector product, whatever the host
        (gemm_spec("matmul", [4096, 4096], [4096, 1], [4096, 1]), {"amx": 1}, AMX_HOST, "gemv"),
        (gemm_spec("matmul", [1, 4096], [4096, 4096], [1, 4096]), {"amx": 0}, None, "gemv"),
        (gemm_spec("matmul", [4096, 4096], [4096, 1], [4096, 1], "float16"), {"amx": 0}, None, "fma"),
        # a template without paths
        ({"family": "softmax", "dtype": "float32", "attrs": {}}, {"simd": "avx2"}, AMX_HOST, None),
    ],
)
def test_timed_path(spec, params, features, path):
    assert kernel_paths.timed_path(spec, params, "cpp", features) == path


def test_behaviour_keeps_what_the_path_reads():
    params = {"micro": "12x32", "kc": 192, "amx": 1}
    assert kernel_paths.behaviour(SQUARE, params, "cpp", AMX_HOST) == {"path": "amx", "amx": 1}
    assert kernel_paths.behaviour(SQUARE, params, "cpp", FMA_HOST) == {"path": "fma", "micro": "12x32", "kc": 192}
    assert kernel_paths.behaviour(SQUARE, params, "cpp", None) == params


def _search(spec, features, iterations, beam=8):
    """Every draft of a run of the built-in policy whose candidates all measure 1.0x, the best first."""
    policy, drafts, elites = BuiltinPolicy(spec, "cpp", seed=0, features=features), [], {}
    for it in range(1, iterations + 1):
        ctx = {
            "iteration": it,
            "stage": min(it, 3),
            "elites": list(elites.values()),
            "tried": [d["params"] for d in drafts],
        }
        new = policy.write(policy.plan(ctx), ctx, beam)
        for j, d in enumerate(new):
            d["id"] = f"{it:03d}-{j}"
            family = d["strategy"].rsplit("/", 1)[0]
            elites.setdefault(family, {"id": d["id"], "params": d["params"], "speedup": 1.0})
        drafts += new
    return policy, drafts


@pytest.mark.parametrize("features", [AMX_HOST, FMA_HOST])
def test_the_search_never_times_one_kernel_twice(monkeypatch, features):
    from agentkern.policies.builtin import templates

    monkeypatch.setattr(templates, "render", lambda spec, params, backend: "class ModelNew: pass\n")
    policy, drafts = _search(SQUARE, features, iterations=4)
    kernels = [policy._key(d["params"]) for d in drafts]
    assert len(kernels) == len(set(kernels)) == len(drafts) > 8
    if "amx_bf16" in features:
        # the tiles once (the defaults), then the FMA path and its parameters
        on_tiles = [d for d in drafts if d["strategy"].startswith("matmul:amx/")]
        assert [d["strategy"] for d in on_tiles] == ["matmul:amx/amx=1"] and drafts[0] is on_tiles[0]
        assert drafts[1]["params"]["amx"] == 0 and len(drafts) > 2


def test_a_matrix_vector_product_is_one_candidate(monkeypatch):
    from agentkern.policies.builtin import templates

    monkeypatch.setattr(templates, "render", lambda spec, params, backend: "class ModelNew: pass\n")
    _, drafts = _search(gemm_spec("matmul", [4096, 4096], [4096, 1], [4096, 1]), AMX_HOST, iterations=3)
    assert [d["strategy"] for d in drafts] == ["matmul:gemv/"]
