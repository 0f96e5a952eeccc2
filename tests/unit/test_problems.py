import pytest
from support import ROOT

from agentkern.errors import UserError
from agentkern.helpers import MAX_SOURCE_BYTES, SourceTooComplex, compile_python, parse_python
from agentkern.problems import known_problems, load_problem, load_solution, resolve_problem


def test_op_names_resolve_to_shipped_problems():
    assert {"softmax", "matmul", "layernorm", "relu", "sum_rows"} <= set(known_problems())
    assert resolve_problem("softmax").name == "softmax.py"


def test_a_path_is_taken_as_is(tmp_path):
    p = tmp_path / "mine.py"
    p.write_text("import torch\nclass Model: pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n")
    assert resolve_problem(str(p)) == p.resolve()
    assert load_problem(str(p)).path == p.resolve()


@pytest.mark.parametrize(
    "text, message",
    [
        ("def get_inputs(): return []\n", "lacks Model, get_init_inputs"),
        ("class Model(:\n", "not valid Python"),
    ],
)
def test_a_file_that_is_not_a_problem_is_bad_input(tmp_path, text, message):
    p = tmp_path / "bad.py"
    p.write_text(text)
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        load_problem(str(p))


def test_unknown_op_lists_the_known_ones():
    with pytest.raises(UserError, match="unknown problem 'softmaxx'.*softmax"):
        resolve_problem("softmaxx")


def test_missing_files_are_bad_input(tmp_path):
    with pytest.raises(UserError, match="not found"):
        resolve_problem(str(tmp_path / "nope.py"))
    with pytest.raises(UserError, match="not found"):
        load_solution(tmp_path / "nope.py")


def test_a_directory_is_named_as_one_not_as_missing(tmp_path, monkeypatch):
    with pytest.raises(UserError, match="is a directory, not a problem file"):
        resolve_problem(str(tmp_path))
    with pytest.raises(UserError, match="is a directory, not a file"):
        load_solution(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    with pytest.raises(UserError, match="mine is a directory"):
        resolve_problem("mine")
    (tmp_path / "softmax").mkdir()  # a folder named like an op does not hide the shipped problem
    assert resolve_problem("softmax").name == "softmax.py"


def test_solution_without_model_new_is_bad_input(tmp_path):
    p = tmp_path / "sol.py"
    p.write_text("class Model: pass\n")
    with pytest.raises(UserError, match="defines no ModelNew"):
        load_solution(p)


def test_solution_with_syntax_error_is_not_bad_input(tmp_path):
    # A broken candidate is a verdict (compile_error), so loading it must not raise.
    p = tmp_path / "sol.py"
    p.write_text("class ModelNew(nn.Module:\n    pass\n")
    assert load_solution(p).source.startswith("class ModelNew")


def test_the_data_folders_come_from_agentkern_data_else_the_package_else_the_checkout(tmp_path, monkeypatch):
    from agentkern import config

    monkeypatch.delenv("AGENTKERN_DATA", raising=False)
    assert (config.dataset_dir() / "problems" / "softmax.py").is_file()  # a checkout, or an installed wheel
    monkeypatch.setattr(config, "PACKAGED_DATA", tmp_path / "missing")
    assert config.data_root() == config.CHECKOUT  # an editable install: the package has no data/
    packaged = tmp_path / "site-packages" / "agentkern" / "data"
    packaged.mkdir(parents=True)
    monkeypatch.setattr(config, "PACKAGED_DATA", packaged)
    assert config.data_root() == packaged  # a wheel
    monkeypatch.setenv("AGENTKERN_DATA", str(tmp_path / "mine"))
    assert config.dataset_dir() == tmp_path / "mine" / "kernels_dataset"
    with pytest.raises(UserError, match=r"unknown problem 'softmax'.*\(none shipped\)"):
        resolve_problem("softmax")


# Sources built to exhaust the parser (issue 14): a 200,000-deep expression made CPython 3.11 raise MemoryError
# or RecursionError inside agentkern. Each must be a SyntaxError (SourceTooComplex), never those.
DEEP = 200_000
HEADER = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
DEEP_TAILS = {
    "unary": "Y = " + "-" * DEEP + "1\n",  # MemoryError in 3.11's parser
    "binop": "Y = " + "+".join(["1"] * DEEP) + "\n",  # RecursionError during ast construction
    "attribute": "Y = a" + ".b" * DEEP + "\n",
    "parentheses": "Y = " + "(" * DEEP + "1" + ")" * DEEP + "\n",  # the tokenizer's own limit
}


@pytest.mark.parametrize("kind", sorted(DEEP_TAILS))
def test_a_deeply_nested_solution_is_a_syntax_error_not_an_internal_error(tmp_path, kind):
    p = tmp_path / f"deep_{kind}.py"
    p.write_text(HEADER + DEEP_TAILS[kind])
    solution = load_solution(p)  # ModelNew is in the text: a compile_error verdict, not bad input
    assert isinstance(solution.error, SyntaxError)
    assert "nested" in str(solution.error.msg)


@pytest.mark.parametrize("kind", ["unary", "binop"])
def test_a_deeply_nested_problem_is_bad_input(tmp_path, kind):
    p = tmp_path / "deep_problem.py"
    p.write_text((ROOT / "kernels_dataset/problems/relu.py").read_text() + DEEP_TAILS[kind])
    with pytest.raises(UserError, match="not valid Python: source too deeply nested"):
        load_problem(str(p))


def test_a_huge_file_is_refused_without_being_read(tmp_path, monkeypatch):
    p = tmp_path / "huge.py"
    p.write_text(HEADER + "#" + "x" * (MAX_SOURCE_BYTES + 10) + "\n")
    monkeypatch.setattr(type(p), "read_text", lambda *a, **k: pytest.fail("read a file over the limit"))
    solution = load_solution(p)
    assert solution.source == "" and "source too large" in str(solution.error.msg)
    with pytest.raises(UserError, match=f"source too large: {p.stat().st_size} bytes, limit {MAX_SOURCE_BYTES}"):
        load_problem(str(p))


def test_parse_python_turns_exhaustion_into_syntax_errors():
    for tail in (DEEP_TAILS["unary"], DEEP_TAILS["binop"], "x" * (MAX_SOURCE_BYTES + 1)):
        with pytest.raises(SourceTooComplex):
            parse_python(tail)
        with pytest.raises(SourceTooComplex):
            compile_python(tail)
