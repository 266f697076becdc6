"""Submit a partition backfill to the instance, as the UI's "Materialize -> partitions" does: the
backfill daemon turns it into one run per partition, the queued run coordinator admits
`max_concurrent_runs`, each run executes its steps with the multiprocess executor and the writer
pools. Without a running daemon, one is started for the backfill's duration."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
from dagster._core.execution.backfill import BULK_ACTION_TERMINAL_STATUSES, PartitionBackfill
from dagster._core.utils import make_new_backfill_id
from dagster._daemon.controller import all_daemons_live

WORKSPACE = Path(__file__).resolve().parents[2] / "workspace.yaml"
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


@dataclass
class BackfillOutcome:
    """What a finished backfill did: its id, run statuses, and the partitions no run built (a retried
    run that succeeded builds its partition)."""

    backfill_id: str
    status: str
    runs: Counter = field(default_factory=Counter)
    failed_partitions: list[str] = field(default_factory=list)
    seconds: float = 0.0


def submit(instance: dg.DagsterInstance, defs: dg.Definitions, job_name: str, partitions: list[str]) -> str:
    """Add an asset backfill of `job_name`'s assets (and their checks) over `partitions`; return its id."""
    keys = sorted(defs.resolve_job_def(job_name).asset_layer.executable_asset_keys)
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id=make_new_backfill_id(),
        asset_graph=defs.resolve_asset_graph(),
        partition_names=partitions,
        asset_selection=keys,
        backfill_timestamp=time.time(),
        tags={"ebm/trigger": "ebm backfill"},
        dynamic_partitions_store=instance,
        all_partitions=False,
        title=f"ebm backfill {job_name}",
        description=f"{job_name} over {len(partitions)} partitions",
        run_config=None,
    )
    instance.add_backfill(backfill)
    return backfill.backfill_id


def start_daemon(log: Path) -> subprocess.Popen:
    """`dagster-daemon run` over the workspace, in its own process group, logging to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", str(WORKSPACE)],
        cwd=WORKSPACE.parent,
        env=os.environ.copy(),
        start_new_session=True,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL),
    )


def stop_daemon(daemon: subprocess.Popen) -> None:
    """Stop a daemon this module started (its runs have finished by then)."""
    os.killpg(daemon.pid, signal.SIGTERM)
    try:
        daemon.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait(timeout=30)


def wait(
    instance: dg.DagsterInstance,
    backfill_id: str,
    progress: Callable[[str], None],
    poll_s: float = 5.0,
    timeout_s: float = 6 * 3600,
) -> BackfillOutcome:
    """Poll until the backfill is done and its runs have finished, printing a line when counts change."""
    started, last = time.monotonic(), None
    while True:
        backfill = instance.get_backfill(backfill_id)
        runs = instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        counts = Counter(r.status.value for r in runs)
        line = ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items())) or "no run yet"
        if line != last:
            progress(f"[backfill {backfill_id}] {line} ({time.monotonic() - started:.0f}s)")
            last = line
        if backfill.status in BULK_ACTION_TERMINAL_STATUSES and all(r.status in FINISHED for r in runs):
            built = {r.tags.get("dagster/partition") for r in runs if r.status == dg.DagsterRunStatus.SUCCESS}
            failed = sorted(
                {r.tags.get("dagster/partition", "?") for r in runs} - built
            )  # a retry that succeeded counts
            return BackfillOutcome(backfill_id, backfill.status.value, counts, failed, time.monotonic() - started)
        if time.monotonic() - started > timeout_s:
            raise TimeoutError(f"backfill {backfill_id} not done after {timeout_s:.0f}s ({line})")
        time.sleep(poll_s)


def run_backfill(
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    job_name: str,
    partitions: list[str],
    daemon_log: Path,
    progress: Callable[[str], None],
) -> BackfillOutcome:
    """Submit the backfill, start a daemon unless one is live, wait for it, stop what was started."""
    backfill_id = submit(instance, defs, job_name, partitions)
    daemon = None
    if not all_daemons_live(instance):
        progress(f"no live dagster-daemon: starting one for this backfill (log: {daemon_log})")
        daemon = start_daemon(daemon_log)
    try:
        return wait(instance, backfill_id, progress)
    finally:
        if daemon is not None:
            stop_daemon(daemon)
