"""Cheat: a C++ kernel that launches a detached std::thread (running an OpenMP loop) and returns at once.

softmax_launch() starts `std::thread(...).detach()`; the thread runs an OpenMP-parallel row softmax and
then sets a completion flag. forward() returns immediately, so the timed call costs a thread launch.
Like the Python-thread variant it waits on the flag during its first 9 calls (the correctness trials)
and afterwards only waits, at the start of the next call, for the previous launch to finish. Nothing in
Python shows a thread: threading.enumerate() does not list native threads; /proc/self/task does.
"""
# problem: softmax
# expect: rejected background_work

import ctypes
import time

import torch
import torch.nn as nn

from agentkern.native import compile_cpp, ptr

_SRC = r"""
#include <atomic>
#include <cmath>
#include <thread>

static void softmax_rows(const float* x, float* y, long rows, long cols) {
  #pragma omp parallel for
  for (long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -INFINITY;
    for (long c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    double s = 0.0;
    for (long c = 0; c < cols; ++c) { yr[c] = std::exp(xr[c] - m); s += yr[c]; }
    float inv = (float)(1.0 / s);
    for (long c = 0; c < cols; ++c) yr[c] *= inv;
  }
}

extern "C" void softmax_launch(const float* x, float* y, long rows, long cols, int* done) {
  __atomic_store_n(done, 0, __ATOMIC_RELEASE);
  std::thread([=] {
    softmax_rows(x, y, rows, cols);
    __atomic_store_n(done, 1, __ATOMIC_RELEASE);
  }).detach();
}
"""
_LIB = compile_cpp(_SRC, "bg_detached_softmax")
_LIB.softmax_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long, ctypes.c_long, ctypes.c_void_p]
_SYNC_CALLS = 9


def _wait(flag: ctypes.c_int) -> None:
    while not flag.value:
        time.sleep(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._calls = 0
        self._pending = None  # (flag, x, out): kept alive until the thread is done

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._pending is not None:
            _wait(self._pending[0])
            self._pending = None
        x = x.contiguous()
        out = torch.empty_like(x)
        flag = ctypes.c_int(0)
        _LIB.softmax_launch(ptr(x), ptr(out), x.shape[0], x.shape[1], ctypes.byref(flag))
        self._calls += 1
        if self._calls <= _SYNC_CALLS:
            _wait(flag)
        else:
            self._pending = (flag, x, out)
        return out
