"""The device lock (agentkern/harness/device_lock.py) as flock sees it: timing excludes everything, builds and
correctness checks share the device. (An evaluation waiting for it: tests/e2e/test_executors.py.)"""

import os


def test_a_measurement_waits_for_builds_and_checks_and_they_wait_for_a_measurement():
    """The device lock (harness/device_lock.py): a candidate is timed only when no other worker builds,
    checks or times on the device; builds and correctness checks share the device with each other."""
    import fcntl

    from agentkern.harness.device_lock import building, checking, lock_dir, timing_lock

    def can(mode) -> bool:
        fd = os.open(lock_dir() / "device-cpu.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    with timing_lock("cpu"):
        assert not can(fcntl.LOCK_SH) and not can(fcntl.LOCK_EX)
    for shared in (building, checking):
        with shared("cpu"):
            assert can(fcntl.LOCK_SH) and not can(fcntl.LOCK_EX)
    assert can(fcntl.LOCK_EX)


def test_a_bounded_wait_for_the_timing_lock_gives_up_and_holds_nothing():
    """timing_lock_within: agentkern's own host measurement waits at most so long for the device."""
    import fcntl
    import time

    from agentkern.harness.device_lock import lock_dir, timing_lock, timing_lock_within

    def can_take() -> bool:
        fd = os.open(lock_dir() / "device-cpu.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    with timing_lock("cpu"):
        start = time.monotonic()
        with timing_lock_within("cpu", 0.3) as held:
            assert held is False
        assert 0.3 <= time.monotonic() - start < 5
    with timing_lock_within("cpu", 0.3) as held:
        assert held is True and not can_take()
    assert can_take()


def test_a_fresh_workers_imports_wait_for_a_measurement_on_the_cpu():
    """A worker started for its request (not a spare: the torch.compile baselines) imports torch with its mode
    (agentkern/harness/worker.py): under the CPU's build lock, so never beside a measurement."""
    import threading

    from agentkern.harness import worker
    from agentkern.harness.device_lock import timing_lock

    worker._mode("baseline")  # imported once beforehand, so that only the lock can hold the import up
    imported = threading.Event()

    def start():
        worker._imported_mode({"mode": "baseline", "device": "cpu"})
        imported.set()

    with timing_lock("cpu"):
        thread = threading.Thread(target=start, daemon=True)
        thread.start()
        assert not imported.wait(0.5)  # queued behind the measurement
        # an evaluation on a GPU imports at once: its build runs on the CPU, not on the device being timed
        assert worker._imported_mode({"mode": "baseline", "device": "cuda"}) is not None
        # nor a worker whose parent holds the device for it (counters.py): waiting would deadlock
        assert worker._imported_mode({"mode": "baseline", "device": "cpu", "timing_lock_held": True}) is not None
    assert imported.wait(30)
    thread.join(5)
