"""Imported last by the step server's preload (`defs.STEP_MODULES`): when its parent exits, the
forkserver leaves at once instead of finalising an interpreter that holds torch, LanceDB, polars and
OpenVINO. Finalising took about 8 s of garbage collection with their native threads still running,
and a forkserver that outlives `ebm` holds the caller's output pipes open for as long as that takes.
A CI test that read a build's output through pipes waited 15 minutes in such a read (2026-12-02); the
hang did not reproduce here. Imported anywhere else, this module does nothing."""

from __future__ import annotations

import atexit
import os
import sys

FORKSERVER_MAIN = "from multiprocessing.forkserver import main"


def is_forkserver() -> bool:
    """True in the multiprocessing forkserver process (its command is `python -c FORKSERVER_MAIN...`)."""
    return any(arg.startswith(FORKSERVER_MAIN) for arg in sys.orig_argv)


def _leave_now() -> None:
    """Flush what the forkserver printed and end the process without finalising the interpreter."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    os._exit(0)


if is_forkserver():  # registered after every other preloaded module's handlers, so it runs first
    atexit.register(_leave_now)
