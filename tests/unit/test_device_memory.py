"""The judge's device memory for a GPU runner, its parts that run without a GPU: the output region's poison,
fence and check; the arena's views of a device copy; the sandbox's GPU device nodes; the runtime snapshot."""

from types import SimpleNamespace

import pytest
import torch

from agentkern.harness import confine
from agentkern.harness.arena import Arena, Mapping
from agentkern.harness.device_outputs import POISON, DeviceOutputs, region_bytes
from agentkern.harness.rejections import Rejected


def _protocol(what):
    return Rejected("protocol", what)


def _region(role="candidate", nbytes=4096):
    """A DeviceOutputs over host memory: the same logic as on a GPU, without the IPC buffer."""
    outs = DeviceOutputs(role, torch.device("cpu"), _protocol)
    buffer = SimpleNamespace(
        tensor=torch.zeros(nbytes, dtype=torch.uint8), nbytes=nbytes, spec={"handle": "h", "size": nbytes}
    )
    outs.region = SimpleNamespace(ensure=lambda n: buffer, release_retired=lambda: None, close=lambda: None)
    outs.buffer = buffer
    return outs


def _place(outs, offset, t):
    outs.buffer.tensor[offset : offset + t.numel() * t.element_size()].copy_(t.view(-1).view(torch.uint8))
    return {"device_offset": offset, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}


def test_the_region_is_poisoned_before_a_block_and_laid_out_as_the_runner_lays_it():
    like = [[torch.empty(3, 5), torch.empty(7, dtype=torch.int64)]] * 2
    outs = _region()
    field = outs.plan(like)
    assert region_bytes(like) == 2 * (64 + 64) == outs.used
    assert field["device_outputs"]["used"] == outs.used and field["device_outputs"]["size"] == 4096  # the buffer
    assert bool((outs.buffer.tensor[: outs.used] == POISON).all())
    assert outs.plan(None) == {} and outs.used == 0  # sizes unknown: the runner describes host outputs


def test_outputs_are_read_where_the_runner_placed_them_and_checked_against_the_fence():
    outs = _region()
    outs.plan([[torch.empty(4, 4)]])
    t = torch.randn(4, 4)
    desc = _place(outs, 0, t)
    outs.fence()
    assert torch.equal(outs.read(desc, torch.empty(4, 4)), t)
    outs.verify()  # unchanged since the clock stopped
    outs.buffer.tensor[8] ^= 1  # GPU work that landed after the answer
    with pytest.raises(Rejected) as caught:
        outs.verify()
    assert caught.value.code == "background_work"


def test_an_unfinished_output_still_holds_poison_and_cannot_match():
    outs = _region()
    outs.plan([[torch.empty(16)]])
    got = outs.read({"device_offset": 0, "dtype": "float32", "shape": [16]}, torch.empty(16))
    assert bool(torch.isnan(got).all())


@pytest.mark.parametrize(
    "desc, code",
    [
        ({"device_offset": 64, "dtype": "float32", "shape": [16]}, "protocol"),  # past the region
        ({"device_offset": 3, "dtype": "float32", "shape": [4]}, "protocol"),  # not where the runner lays out
        ({"device_offset": 0, "dtype": "nope", "shape": [4]}, "protocol"),
        ({"device_offset": 0, "dtype": "float32", "shape": [4], "aliases_input": True}, "aliases_input"),
    ],
)
def test_a_description_outside_the_region_or_of_an_input_is_refused(desc, code):
    outs = _region()
    outs.plan([[torch.empty(16)]])
    with pytest.raises(Rejected) as caught:
        outs.read(desc, None)
    assert caught.value.code == code


def test_a_runner_on_a_device_copy_reads_views_of_it_at_the_files_offsets():
    arena = Arena("test-device-views")
    x, y = torch.randn(3, 4), torch.arange(5)
    specs = arena.write([[x, 2.5, y]])
    copy = torch.frombuffer(bytearray(arena.map[: arena.size]), dtype=torch.uint8)  # stands for the device copy
    args = Mapping(arena.fd).args(specs[0], copy)
    assert torch.equal(args[0], x) and args[1] == 2.5 and torch.equal(args[2], y)
    assert args[0].data_ptr() == copy.data_ptr()  # a view, no copy
    arena.close()


def test_the_sandbox_binds_the_gpus_device_nodes(monkeypatch, tmp_path):
    monkeypatch.setattr(confine, "bwrap_status", lambda: (True, "test"))
    monkeypatch.setattr(confine, "gpu_device_nodes", lambda: ["/dev/nvidia0", "/dev/nvidiactl"])
    joined = " ".join(confine.command(["python"], tmp_path))
    assert "--dev-bind /dev/nvidia0 /dev/nvidia0" in joined and "--dev-bind /dev/nvidiactl /dev/nvidiactl" in joined
    assert joined.index("--dev /dev") < joined.index("--dev-bind /dev/nvidia0")  # over the fresh /dev, not under


def test_the_runtime_snapshot_ignores_state_torch_rebinds_but_not_a_swapped_function(monkeypatch):
    from agentkern.harness.guards import RuntimeSnapshot

    snapshot = RuntimeSnapshot()
    monkeypatch.setattr(torch.cuda, "_initialized", not torch.cuda._initialized)  # what a CUDA init does
    snapshot.check()
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    with pytest.raises(Rejected) as caught:
        snapshot.check()
    assert caught.value.code == "patches_runtime"
