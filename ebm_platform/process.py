"""This process: the CPU cores it may use, its costly shared objects (the encoder, a lake's
retriever), built once per argument tuple even when several threads ask for one at the same moment,
and the worker processes it runs calls in (`run_in_workers`)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from functools import lru_cache, wraps
from typing import TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

# How often a call runs again after its worker process died (as the instance's run_retries in dagster.yaml).
WORKER_RETRIES = 2


def cores() -> int:
    """CPU cores this process may use (the affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def shared_instance(factory: Callable[..., T]) -> Callable[..., T]:
    """`factory` cached per arguments (lru, 4 entries) and called under a lock: concurrent first
    callers share one object instead of each building its own (transformers' lazy imports, run
    while an encoder is built, are not thread-safe). `cache_clear()` is kept."""
    cached = lru_cache(maxsize=4)(factory)
    lock = threading.Lock()

    @wraps(factory)
    def get(*args: object) -> T:
        with lock:
            return cached(*args)

    get.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return get


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    """The C library, loaded once (None where it cannot be)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's malloc_trim (None where there is none)."""
    return getattr(_libc(), "malloc_trim", None)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> None:
    """Have Linux kill this process when its parent ends (prctl PR_SET_PDEATHSIG), as the caller's
    process group would have; where there is no prctl this does nothing."""
    prctl = getattr(_libc(), "prctl", None)
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim): a step that built and
    dropped large arrays otherwise leaves them resident in the process that runs the next step.
    Does nothing where the C library has no malloc_trim."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def one_blas_thread() -> None:
    """numpy's BLAS (OpenBLAS) on one thread in this process, whatever numpy was loaded with. The query path's
    matrix products are small and OpenBLAS's second thread spins between them: gathering one question's
    candidates at a time kept 1.8 cores busy for 1.0 core's work, and two threads gathering at once took 16.5 s
    for 110 questions instead of 12.6 s (docs/performance.md). Nothing here needs a threaded BLAS: the encoders
    run on OpenVINO or torch, LightGBM on its own threads. A BLAS loaded later (scipy's) reads the variable."""
    from threadpoolctl import threadpool_limits

    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    threadpool_limits(1, user_api="blas")


def peak_rss_mb(reset: bool = False) -> float | None:
    """This process's peak resident memory in MiB (Linux VmHWM) since it started or since the last
    reset; `reset` releases the free heap (`release_free_memory`) and starts a new peak from what is
    left (the next step run by the same process measures its own). None where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            peak = next((int(line.split()[1]) for line in status if line.startswith("VmHWM:")), None)
        if reset:
            release_free_memory()
            with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
                refs.write("5")
    except OSError:
        return None
    return None if peak is None else round(peak / 1024, 1)


# In a worker process of `run_in_workers`: the queue it announces each call's key on before running it.
_started = None


def _worker_start(started, initializer: Callable[..., None] | None, initargs: tuple) -> None:
    """A worker's initializer: leave the caller's process group, so that a Ctrl-C at the terminal reaches
    only the caller, which stops the workers itself (`run_in_workers`); end with the step server it was
    forked from, which ends with the caller; keep the announcement queue; run the caller's initializer."""
    global _started
    os.setpgid(0, 0)
    die_with_parent()
    if os.getppid() == 1:  # the step server ended before the line above
        os._exit(1)
    _started = started
    if initializer:
        initializer(*initargs)


def _announced(key: Hashable, call: Callable[..., T], args: tuple) -> T:
    """Say that the call for `key` started, then run it."""
    _started.put(key)
    return call(*args)


def _announced_so_far(started) -> set:
    """The keys of the calls announced on `started` (the calls that began)."""
    began = set()
    while not started.empty():
        began.add(started.get())
    return began


def _kill_workers(pool) -> None:
    """Kill a ProcessPoolExecutor's worker processes at once (its own `kill_workers` from Python 3.14)."""
    if kill := getattr(pool, "kill_workers", None):
        kill()
        return
    for process in list((pool._processes or {}).values()):
        process.kill()


def run_in_workers(
    call: Callable[..., T],
    jobs: dict[K, tuple],
    workers: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
    on_death: Callable[[list[K], int], None] | None = None,
    on_stop: Callable[[list[K]], None] | None = None,
) -> Iterator[tuple[K, T]]:
    """`call(*args)` for each job (key -> args), `workers` at a time in processes forked from
    multiprocessing's forkserver, yielding (key, result) as each finishes. When a worker process
    dies (a crash in native code takes the whole pool down), the jobs not finished run again in a
    new pool, and `on_death(keys, attempt)` is told which of them were under way. RuntimeError names
    a job that was under way at more than WORKER_RETRIES + 1 deaths. An exception raised by `call`
    itself is not retried: it reaches the caller, after the calls under way have finished. When the
    caller stops early (Ctrl-C, which reaches only the caller: `_worker_start`; or an error of its own
    that closes this generator), the workers are killed at once and `on_stop(keys)` is told which
    calls were under way."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("forkserver")
    todo, deaths = dict(jobs), Counter()
    while todo:
        started = context.SimpleQueue()
        pool = ProcessPoolExecutor(
            min(workers, len(todo)),
            mp_context=context,
            initializer=_worker_start,
            initargs=(started, initializer, initargs),
        )
        lost = False
        try:
            futures = {pool.submit(_announced, key, call, args): key for key, args in todo.items()}
            for future in as_completed(futures):
                try:
                    result = future.result()
                except BrokenProcessPool:
                    lost = True
                    continue
                del todo[futures[future]]
                yield futures[future], result
        except (KeyboardInterrupt, GeneratorExit):
            _kill_workers(pool)
            if on_stop:
                began = _announced_so_far(started)
                on_stop([key for key in todo if key in began])
            raise
        finally:  # after a failure of `call` the calls under way finish and the rest are not started
            pool.shutdown(wait=True, cancel_futures=True)
        if not lost:
            continue
        began = _announced_so_far(started)
        under_way = [key for key in todo if key in began] or list(todo)
        deaths.update(under_way)
        if given_up := [key for key in under_way if deaths[key] > WORKER_RETRIES]:
            raise RuntimeError(
                f"the worker processes running {', '.join(map(str, given_up))} died "
                f"{WORKER_RETRIES + 1} times; giving up"
            )
        if on_death:
            on_death(under_way, max(deaths[key] for key in under_way) + 1)
