"""The judge's handle on a runner process (runner.py): start it confined, command it, freeze it, read it.

A runner is frozen (SIGSTOP) whenever it is not serving the judge: it cannot look at the next inputs
before the clock starts, and it cannot burn a core while the other side is timed. A block of calls is
timed on the judge's clock from just before the runner is thawed to the moment it is frozen again after
answering, so work a candidate defers past its answer (a thread finishing the output) is still inside its
time. Outputs are then read from the frozen runner's memory through /proc/PID/mem, at the addresses it
gave: no copy inside the timed window, nothing computed after it, and whatever the bytes are, the judge
compares them with the reference's. Before reading, the runner must be alone in its sandbox: a process
it left running could still write to memory it shares with the runner.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch

from agentkern.harness import confine, op_observer, torch_pch
from agentkern.harness.arena import Arena, described
from agentkern.harness.host_load import children, tree_pids
from agentkern.harness.omp_env import runner_thread_env
from agentkern.harness.rejections import Rejected

_perf = time.perf_counter
REPLY_LIMIT = 1 << 20


def runner_env(scratch: Path, inside_scratch: Path, judge_env: dict[str, str]) -> dict[str, str]:
    """A runner's environment: the judge's, with the user's OpenMP settings back, and its own HOME, TMPDIR and
    build caches, all in its scratch folder (confine.sandbox_env), and the judge's precompiled torch headers."""
    return confine.sandbox_env(scratch, inside_scratch, runner_thread_env(judge_env)) | torch_pch.runner_env()


class RunnerDied(Exception):
    """The runner exited or closed its answer pipe: a crash of the model it holds."""


class RunnerProcess:
    def __init__(self, role: str, scratch: Path, env: dict[str, str], log_path: Path, confined: bool = True) -> None:
        self.role = role
        self.arena = Arena(f"agentkern-{role}")
        scratch.mkdir(parents=True, exist_ok=True)
        self.scratch = scratch
        self.log_path = log_path
        self.inside = confine.inside(scratch) if confined else scratch  # the scratch folder as the runner sees it
        env = runner_env(scratch, self.inside, env)
        reply_r, reply_w = os.pipe()
        argv = [sys.executable, "-m", "agentkern.harness.runner", str(reply_w), str(self.arena.fd)]
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                confine.command(argv, scratch, readable=op_observer.readable() + torch_pch.readable())
                if confined
                else argv,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(reply_w, self.arena.fd),
                env=env,
                cwd=scratch,
            )
        os.close(reply_w)
        self.replies = reply_r
        self.buffer = b""
        self.pid: int | None = None
        self.mem: int | None = None
        self.frozen = False

    # ---- start-up ------------------------------------------------------------------------------------
    def wait_ready(self) -> None:
        if self.pid is not None:
            return  # started by a spare worker, ready long ago
        self.read_answer()
        self.pid = self._leaf(self.proc.pid)
        self.freeze()

    def _leaf(self, pid: int) -> int:
        """The runner's own pid on this side: down the chain bwrap -> its init -> python, one child each
        (at "ready" no candidate code has run, so the chain has no branches)."""
        for _ in range(4):
            kids = children(pid)
            if len(kids) != 1:
                break
            pid = kids[0]
        return pid

    def others(self) -> list[int]:
        """Processes in the runner's sandbox besides the chain to the runner itself."""
        chain, pid = {self.proc.pid}, self.proc.pid
        while pid != self.pid:
            kids = children(pid)
            if not kids:
                break
            pid = self.pid if self.pid in kids else kids[0]
            chain.add(pid)
        return sorted(tree_pids(self.proc.pid) - chain)

    # ---- freezing ------------------------------------------------------------------------------------
    def freeze(self) -> None:
        """SIGSTOP the runner and wait until every one of its threads has stopped."""
        self.stop()
        self.wait_stopped()

    def stop(self) -> None:
        """Send SIGSTOP. A thread running on a core is interrupted at once; a sleeping one stops before it
        runs another instruction of its own: from here on the runner computes nothing, though /proc may
        take a scheduler tick to say so (wait_stopped)."""
        try:
            os.kill(self.pid, signal.SIGSTOP)
            self.frozen = True
        except ProcessLookupError:
            pass

    def wait_stopped(self) -> None:
        if not self.frozen:
            return
        for _ in range(100_000):
            if self._all_stopped():
                return
        raise RunnerDied(f"the {self.role} runner did not stop")

    def _all_stopped(self) -> bool:
        try:
            for task in os.listdir(f"/proc/{self.pid}/task"):
                with open(f"/proc/{self.pid}/task/{task}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0]
                if state not in (b"T", b"t", b"Z", b"X"):
                    return False
        except (OSError, IndexError):
            pass  # a thread that vanished is not running
        return True

    def thaw(self) -> None:
        self.frozen = False
        try:
            os.kill(self.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass

    # ---- commands ------------------------------------------------------------------------------------
    def send(self, cmd: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(cmd).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise RunnerDied(f"the {self.role} runner is gone") from exc

    def read_answer(self) -> dict:
        while b"\n" not in self.buffer:
            select.select([self.replies], [], [])
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                raise RunnerDied(f"the {self.role} runner exited")
            self.buffer += chunk
            if len(self.buffer) > REPLY_LIMIT:
                raise Rejected("protocol", f"the {self.role} runner's answer is longer than {REPLY_LIMIT} bytes")
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError as exc:
            raise Rejected("protocol", f"the {self.role} runner answered something that is not JSON") from exc
        if not isinstance(answer, dict):
            raise Rejected("protocol", f"the {self.role} runner answered {type(answer).__name__}, not an object")
        return answer

    def call(self, cmd: dict, fence=None) -> tuple[dict, float]:
        """Thaw, send, wait for the answer, stop: (answer, seconds on the judge's clock). `fence` (on a GPU:
        the judge's own read of the outputs' region) runs before the clock stops."""
        t0 = _perf()
        self.thaw()
        self.send(cmd)
        answer = self.read_answer()
        self.stop()
        if fence is not None:
            fence()
        elapsed = _perf() - t0
        self.wait_stopped()
        self.arena.release_retired()
        return answer, elapsed

    def arena_ranges(self) -> list[tuple[int, int]]:
        """Where the input arena is mapped in the runner, as the kernel says (/proc/PID/maps), not the runner:
        an output there is (a view of) an input."""
        marker = f"memfd:agentkern-{self.role}"
        ranges = []
        try:
            with open(f"/proc/{self.pid}/maps") as f:
                for line in f:
                    if marker in line:
                        lo, hi = line.split()[0].split("-")
                        ranges.append((int(lo, 16), int(hi, 16)))
        except OSError:
            pass
        return ranges

    # ---- reading outputs -----------------------------------------------------------------------------
    def read_tensor(self, desc: dict, expected: torch.Tensor | None = None) -> torch.Tensor:
        """An output the runner described, read from its frozen memory. The description is the runner's
        word: the shape and dtype must be plain, and the bytes read are only ever compared."""
        if not self.frozen:
            raise RuntimeError("outputs are read only from a frozen runner")
        try:
            got = described(desc, "addr", expected)
        except ValueError as exc:
            raise Rejected("protocol", f"the {self.role} runner described an output it cannot have") from exc
        if isinstance(got, torch.Tensor):
            return got
        dtype, shape, addr, nbytes = got
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype)
        if self.mem is None:
            self.mem = os.open(f"/proc/{self.pid}/mem", os.O_RDONLY)
        try:
            data = bytearray(nbytes)
            got = os.preadv(self.mem, [data], addr)
        except OSError as exc:
            raise Rejected("protocol", f"an output of the {self.role} runner cannot be read ({exc.strerror})") from exc
        if got != nbytes:
            raise Rejected("protocol", f"an output of the {self.role} runner is only partly readable")
        return torch.frombuffer(data, dtype=torch.uint8).view(dtype).view(shape)

    # ---- the end -------------------------------------------------------------------------------------
    def close(self) -> None:
        if self.mem is not None:
            os.close(self.mem)
        try:
            self.proc.kill()  # bwrap's --die-with-parent and the PID namespace take the rest with it
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        os.close(self.replies)
        self.arena.close()

    def exit_signal(self) -> int | None:
        """The signal the runner died of, once it has exited (bwrap reports its child's as 128 + n)."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None
        if code < 0:
            return -code
        if code > 128 and confine.isolation() == confine.ISOLATION_BWRAP and code - 128 in signal.valid_signals():
            return code - 128
        return None

    def exit_description(self) -> str:
        sig = self.exit_signal()
        if sig is not None:
            return f"died with {signal.Signals(sig).name}"
        code = self.proc.poll()
        return "closed its answer pipe" if code is None else f"exited with code {code}"
