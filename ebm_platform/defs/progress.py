"""Progress of long asset work: each line goes to the run's Dagster log (the UI) and to the
`ebm.progress` Python logger, which the `ebm` command prints to stderr with the elapsed time, so
a demo or an evaluation-lake build shows counts and rates while it runs."""

import logging
import os
import sys
import time
from collections.abc import Callable

import dagster as dg

LOGGER = logging.getLogger("ebm.progress")
# Set by `ebm` (and inherited by the executor's step processes): print progress lines on stderr.
TO_STDERR = "EBM_PROGRESS_STDERR"


def print_progress() -> None:
    """Send the `ebm.progress` lines to stderr, in this process and in every step process it starts."""
    os.environ[TO_STDERR] = "1"
    if not LOGGER.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("  %(message)s"))
        LOGGER.addHandler(handler)
        LOGGER.setLevel(logging.INFO)
        LOGGER.propagate = False


def reporter(context: dg.AssetExecutionContext) -> Callable[[str], None]:
    """A progress callback for domain code: '<asset>[<partition>] <message> (<elapsed> s)'."""
    if os.environ.get(TO_STDERR):
        print_progress()
    name = context.asset_key.to_user_string()
    where = f"{name}[{context.partition_key}]" if context.has_partition_key else name
    started = time.perf_counter()

    def report(message: str) -> None:
        line = f"{where} {message} ({time.perf_counter() - started:.0f} s)"
        context.log.info(line)
        LOGGER.info(line)

    return report
