"""This process: the CPU cores it may use, and its costly shared objects (the encoder, a lake's
retriever), built once per argument tuple even when several threads ask for one at the same moment."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

T = TypeVar("T")


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
def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's malloc_trim, looked up once (None where there is none)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim): a step that built and
    dropped large arrays otherwise leaves them resident in the process that runs the next step.
    Does nothing where the C library has no malloc_trim."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


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
