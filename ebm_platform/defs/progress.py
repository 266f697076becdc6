"""Progress of long asset work: each line goes to the run's Dagster log (the UI) and to the
`ebm.progress` Python logger, which the `ebm` command prints to stderr with the elapsed time, so
a demo or an evaluation-lake build shows counts and rates while it runs."""

import logging
import time
from collections.abc import Callable

import dagster as dg

LOGGER = logging.getLogger("ebm.progress")


def reporter(context: dg.AssetExecutionContext) -> Callable[[str], None]:
    """A progress callback for domain code: '<asset>[<partition>] <message> (<elapsed> s)'."""
    name = context.asset_key.to_user_string()
    where = f"{name}[{context.partition_key}]" if context.has_partition_key else name
    started = time.perf_counter()

    def report(message: str) -> None:
        line = f"{where} {message} ({time.perf_counter() - started:.0f} s)"
        context.log.info(line)
        LOGGER.info(line)

    return report
