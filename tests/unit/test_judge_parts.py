"""The judge's pure parts (harness v2): the shared-memory arena, the sandbox's command line, the fallback
verdicts a runner's answer can carry, the native-symbol rules and the per-candidate build cache."""

from pathlib import Path

import pytest
import torch

from agentkern.harness import allowlist, build_cache, confine
from agentkern.harness.arena import Arena, Mapping
from agentkern.harness.native_check import refused_symbol
from agentkern.harness.rejections import Rejected


def test_the_arena_hands_the_runner_the_judges_bytes_without_a_copy():
    arena = Arena("test")
    x, y = torch.randn(3, 5), torch.arange(7, dtype=torch.int64)
    specs = arena.write([[x, 2.5], [y]])
    assert specs[0][1] == {"value": 2.5} and specs[0][0]["offset"] % 64 == 0
    mapping = Mapping(arena.fd)
    mapping.ensure(arena.size)
    got_x, scale = mapping.args(specs[0])
    (got_y,) = mapping.args(specs[1])
    assert torch.equal(got_x, x) and scale == 2.5 and torch.equal(got_y, y)
    got_x.mul_(0)  # what the runner writes shows in the judge's view of the same file: mutation is visible
    assert not torch.equal(arena.view(specs[0][0]), x.view(-1).view(torch.uint8))
    arena.close()


def test_a_runner_is_confined_read_only_with_the_judges_folders_hidden(tmp_path, monkeypatch):
    monkeypatch.setattr(confine, "bwrap_status", lambda: (True, "test"))
    monkeypatch.setenv("AGENTKERN_HOME", str(tmp_path / "home"))
    argv = confine.command(["python", "-m", "x"], tmp_path / "scratch")
    joined = " ".join(argv)
    assert "--unshare-all" in argv and "--die-with-parent" in argv and "--ro-bind / /" in joined
    assert f"--tmpfs {(tmp_path / 'home').resolve()}" in joined  # requests, results, locks, run store
    assert f"--bind {(tmp_path / 'scratch').resolve()} {confine.SANDBOX_SCRATCH}" in joined
    assert argv[-3:] == ["python", "-m", "x"]
    assert confine.inside(tmp_path / "scratch") == confine.SANDBOX_SCRATCH


def test_without_bubblewrap_the_command_is_unchanged_and_the_verdict_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(confine, "bwrap_status", lambda: (False, "not installed"))
    assert confine.command(["python"], tmp_path) == ["python"]
    assert confine.isolation() == "process" and confine.inside(tmp_path) == tmp_path


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ({"refused_op": "mm"}, "torch_fallback"),
        ({"trapped": ["dispatch_guard", "_DisableTorchDispatch"]}, "dispatch_guard"),
        ({"trapped": ["numpy_fallback", "Tensor.numpy"]}, "numpy_fallback"),
        ({"trapped": ["made_up", "x"]}, "numpy_fallback"),  # an unknown trap is still a fallback, never a pass
    ],
)
def test_a_fallback_in_a_runners_answer_becomes_its_verdict(answer, code):
    verdict = allowlist.fallback_verdict(answer)
    assert isinstance(verdict, Rejected) and verdict.code == code


def test_an_answer_without_a_fallback_has_no_verdict():
    assert allowlist.fallback_verdict({"outputs": []}) is None


@pytest.mark.parametrize(
    ("symbol", "refused"),
    [
        ("cblas_sgemm", True),
        ("scipy_cblas_sgemm64_", True),
        ("dgemm_", True),
        ("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)", True),
        ("at::_ops::_softmax::call(at::Tensor const&, long, bool)", True),
        ("at::native::add(at::Tensor const&)", True),
        ("at::_ops::empty_memory_format::call(...)", False),
        ("at::_ops::to_dtype::call(...)", False),
        ("memcpy", False),
        ("omp_get_num_threads", False),
        ("GOMP_parallel", False),
    ],
)
def test_undefined_symbols_of_a_compute_library_are_refused(symbol, refused):
    assert (refused_symbol(symbol) is not None) == refused


def test_builds_are_kept_for_the_same_candidate_only(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTKERN_HOME", str(tmp_path / "home"))
    scratch = tmp_path / "scratch" / "cache"
    (scratch / "cpp").mkdir(parents=True)
    (scratch / "cpp" / "libk.so").write_bytes(b"built")
    build_cache.keep("candidate A", scratch)
    again, other = tmp_path / "again", tmp_path / "other"
    assert build_cache.restore("candidate A", again) and (again / "cpp" / "libk.so").read_bytes() == b"built"
    assert not build_cache.restore("candidate B", other) and not Path(other).exists()


def test_a_sys_path_entry_of_tmp_itself_is_not_bound_over_the_scratch_mount(monkeypatch, tmp_path):
    """A script run from /tmp puts /tmp on sys.path; binding it read-only left nowhere to mount the scratch
    folder ("Can't mkdir /tmp/agentkern-runner: Read-only file system")."""
    from pathlib import Path

    from agentkern.harness import confine

    monkeypatch.setattr(confine, "bwrap_status", lambda: (True, "test"))
    monkeypatch.setattr(confine, "_needed_paths", lambda: (Path("/tmp"), Path(tmp_path)))
    argv = confine.command(["python"], tmp_path)
    binds = [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
    assert "/tmp" not in binds and str(tmp_path) in binds
