"""How `ebm` runs Dagster jobs: every run is recorded in the DAGSTER_HOME instance (the UI shows it),
partition runs go two at a time in worker processes forked from a preloaded step server, global
assets and the evaluation through the job's multiprocess executor. Why not Dagster's run queue for
the partition runs: docs/architecture.md (Running jobs)."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ebm_platform.console import say as _say
from ebm_platform.lake_files import is_file
from ebm_platform.lake_layout import LakeLayout


@functools.cache
def dagster_instance():
    """The DAGSTER_HOME instance when configured (runs show in the UI), else an ephemeral one."""
    from dagster import DagsterInstance

    if os.environ.get("DAGSTER_HOME"):
        return DagsterInstance.get()
    return DagsterInstance.ephemeral()


def _quiet(level: str = "WARNING") -> dict:
    """Run config that keeps the console logger at `level` (the UI keeps every event)."""
    return {"loggers": {"console": {"config": {"log_level": level}}}}


def _tags(partition: str | tuple[str, str] | None) -> dict[str, str] | None:
    """A run's partition tags: one key, or (first, last) for one run over that range."""
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    return (
        None
        if partition is None
        else {"dagster/partition": partition}
        if isinstance(partition, str)
        else {ASSET_PARTITION_RANGE_START_TAG: partition[0], ASSET_PARTITION_RANGE_END_TAG: partition[1]}
    )


def _execute(
    name: str,
    instance,
    partition: str | tuple[str, str] | None = None,
    selection: list | None = None,
    log_level: str = "WARNING",
):
    """Run job `name` as the UI's runs go: recorded in the DAGSTER_HOME instance and executed by the
    job's multiprocess executor (steps forked from the preloaded forkserver, concurrency pools
    enforced). With no instance configured the run executes in this process on an ephemeral
    instance (an evaluation lake's build has its own: `evaluation.lakes.lake_instance`).
    `partition`: one key, or (first, last) for one run over that range of partitions. `log_level`:
    what the console shows (CRITICAL where the caller reports the outcome itself in one line)."""
    from dagster import build_reconstructable_job, execute_job

    from ebm_platform.definitions import defs

    if instance.is_ephemeral:
        return defs.resolve_job_def(name).execute_in_process(
            instance=instance,
            run_config=_quiet(log_level),
            tags=_tags(partition),
            asset_selection=selection,
            raise_on_error=False,
        )
    job = build_reconstructable_job("ebm_platform.definitions", "job_named", reconstructable_args=(name,))
    return execute_job(
        job,
        instance,
        run_config=_quiet(log_level),
        tags=_tags(partition),
        asset_selection=selection,
        raise_on_error=False,
    )


def _outcome(result, started: float) -> dict:
    """What the CLI needs of a finished run (picklable, so a worker process can return it), with
    each asset's peak resident memory (the IO manager's `peak_rss_mb`)."""
    counts: dict[str, float] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        for label in ("documents", "windows", "quarantined"):
            if label in mat.metadata and mat.asset_key.path[-1] in ("source_documents", "evidence_windows"):
                counts[f"{mat.asset_key.path[-1]}.{label}"] = mat.metadata[label].value
    return {
        "success": result.success,
        "interrupted": interrupted(result),
        "blocked": only_benchmark_blocked(result),
        "counts": counts,
        "peaks": step_peaks(result),
        "seconds": time.perf_counter() - started,
    }


def step_peaks(result) -> dict[str, float]:
    """Each materialised asset's largest `peak_rss_mb` (MiB) in a run's events."""
    from ebm_platform.defs.io import PEAK_RSS

    peaks: dict[str, float] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if PEAK_RSS in mat.metadata:
            name = mat.asset_key.path[-1]
            peaks[name] = max(peaks.get(name, 0.0), float(mat.metadata[PEAK_RSS].value))
    return peaks


def record_peaks(lake: Path, peaks: list[tuple[str, dict[str, float]]]) -> str:
    """Write each build step's peak resident memory (the largest over its runs, with the run's
    partition) to the lake's build_memory.json and return it as one line."""
    from ebm_platform.atomic import write_text_atomic

    steps: dict[str, dict] = {}
    for scope, run in peaks:
        for name, peak in run.items():
            if peak > steps.get(name, {}).get("peak_rss_mb", -1.0):
                steps[name] = {"peak_rss_mb": peak, "run": scope}
    path = LakeLayout(lake).build_memory
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps({"finished": time.strftime("%Y-%m-%d %H:%M:%S"), "steps": steps}, indent=1))
    top = sorted(steps.items(), key=lambda item: -item[1]["peak_rss_mb"])[:4]
    return "peak resident memory per build step (MiB, largest run): " + ", ".join(
        f"{name} {step['peak_rss_mb']:.0f} ({step['run']})" for name, step in top
    )


def _start_worker(environment: dict[str, str]) -> None:
    """A run worker takes the parent's EBM_* and DAGSTER_* settings (the forkserver it is forked
    from may predate them)."""
    from ebm_platform.defs.progress import TO_STDERR, print_progress
    from ebm_platform.settings import adopt_environment

    adopt_environment(environment)
    if environment.get(TO_STDERR):
        print_progress()


def _worker_run(name: str, partition: str | tuple[str, str], selection: list | None) -> dict:
    """One run in a worker process: recorded in the DAGSTER_HOME instance like any other, its steps
    executed in this process one after another (they share the models the worker has loaded)."""
    from ebm_platform.definitions import defs

    started = time.perf_counter()
    result = defs.resolve_job_def(name).execute_in_process(
        instance=dagster_instance(),
        run_config=_quiet(),
        tags=_tags(partition),
        asset_selection=selection,
        raise_on_error=False,
    )
    return _outcome(result, started)


def run_many(
    name: str, requests: list[tuple[str | tuple[str, str], list | None]], workers: int
) -> Iterator[tuple[str | tuple[str, str], dict]]:
    """The runs of job `name` for `requests` ((partition, asset selection) each), yielding each
    (partition, outcome) as it finishes. With `workers` > 1 (see `_run_workers`) they run that
    many at a time, each in a worker process forked from the step server (a partition chain
    is mostly one step after another, so one run leaves a core idle); the writer pools and the
    stores' file locks keep one writer per store. A run whose worker process dies is marked failed
    in the instance and run again (`process.run_in_workers`): every partition write is atomic and
    idempotent. With one worker they run one after another here."""
    from datetime import UTC, datetime

    from ebm_platform.process import run_in_workers

    if workers < 2 or len(requests) < 2:
        for partition, selection in requests:
            started = time.perf_counter()
            yield partition, _outcome(_execute(name, dagster_instance(), partition, selection), started)
        return
    start_step_server()
    since = datetime.now(UTC)

    def died(partitions: list, attempt: int) -> None:
        reason = "its worker process died; `ebm` ran the partition again in a new run"
        orphans = fail_orphaned_runs(dagster_instance(), name, partitions, since, reason)
        _say(
            f"a worker process died (a crash in native code; its run{'s' if len(orphans) > 1 else ''} "
            f"{', '.join(orphans) or 'none'} marked failed in the Dagster UI): running "
            f"{', '.join(map(str, partitions))} again in new workers (attempt {attempt})"
        )

    def stopped(partitions: list) -> None:
        reason = "`ebm` stopped before this run finished (Ctrl-C, or another run failed); its worker was killed"
        orphans = fail_orphaned_runs(dagster_instance(), name, partitions, since, reason)
        if orphans:
            _say(
                f"stopped {', '.join(map(str, partitions))} (runs {', '.join(orphans)} marked failed in the Dagster UI)"
            )

    environment = {k: v for k, v in os.environ.items() if k.startswith(("EBM_", "DAGSTER_"))}
    yield from run_in_workers(
        _worker_run,
        {partition: (name, partition, selection) for partition, selection in requests},
        workers,
        initializer=_start_worker,
        initargs=(environment,),
        on_death=died,
        on_stop=stopped,
    )


def fail_orphaned_runs(instance, name: str, partitions: list, since, reason: str) -> list[str]:
    """Mark failed, saying `reason`, the runs of job `name` for `partitions`, created after `since`, that
    are still recorded as started (their process died before it could say so); returns their short ids."""
    from dagster import DagsterRunStatus, RunsFilter

    wanted = [_tags(partition) for partition in partitions]
    orphans = []
    for run in instance.get_runs(RunsFilter(job_name=name, statuses=[DagsterRunStatus.STARTED], created_after=since)):
        if any(tags.items() <= run.tags.items() for tags in wanted):
            instance.report_run_failed(run, reason)
            orphans.append(run.run_id[:8])
    return orphans


def _run_workers() -> int:
    """How many runs `ebm` executes at once: EBM_RUN_WORKERS capped at the cores, and one with no
    DAGSTER_HOME instance (an ephemeral instance has no pools shared between processes)."""
    from ebm_platform.process import cores
    from ebm_platform.settings import get_settings

    return 1 if dagster_instance().is_ephemeral else min(get_settings().run_workers, cores())  # both are >= 1


def largest_first(codes: list[str], landing: Path) -> list[str]:
    """Partitions ordered by the bytes of their landing files, largest first (ties keep their order:
    the sort is stable): with runs in parallel the long ones start at once and the short ones fill
    the gaps."""

    def size(code: str) -> int:
        folder = landing / code
        return sum(f.stat().st_size for f in folder.iterdir() if f.is_file()) if folder.is_dir() else 0

    return sorted(codes, key=size, reverse=True)


# Partitioned assets whose only output is their parquet file, in dependency order: a resumed build
# skips the leading ones already written (the IO manager writes them atomically). Assets that write
# Kùzu or LanceDB always run again; their partition replace is idempotent.
RESUMABLE_ASSETS = ("source_documents", "evidence_windows", "pico_extractions")


def already_built(lake: Path, code: str) -> list[str]:
    """The leading RESUMABLE_ASSETS whose parquet output exists for partition `code`."""
    done = []
    for name in RESUMABLE_ASSETS:
        if not is_file(LakeLayout(lake).asset(name, code)):
            break
        done.append(name)
    return done


def interrupted(result) -> bool:
    """Whether a run ended because it was interrupted (a Ctrl-C that reached it: Dagster turns it into a failed
    step or run), not because a step failed."""
    return any(
        getattr(getattr(event.event_specific_data, "error", None), "cls_name", None)
        == "DagsterExecutionInterruptedError"
        for event in result.all_events
    )


def stop_if_interrupted(ended: bool) -> None:
    """Raise KeyboardInterrupt when a run ended because of a Ctrl-C (`interrupted`): the caller stops as
    the user asked, instead of reporting a failed run and going on with the next."""
    if ended:
        raise KeyboardInterrupt


def failed_checks(result) -> set[tuple]:
    """(asset key, check name) of every check that failed in an in-process run's result."""
    return {
        (e.asset_check_evaluation_data.asset_key, e.asset_check_evaluation_data.check_name)
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION" and not e.asset_check_evaluation_data.passed
    }


def only_benchmark_blocked(result) -> bool:
    """True when a partition run failed only because benchmark_structure (blocking) failed: every
    asset was written and that partition's benchmark is kept out downstream, so the build goes on."""
    from dagster import AssetKey

    failed_steps = {e.step_key for e in result.all_events if e.event_type_value == "STEP_FAILURE"}
    structure = (AssetKey("benchmark_qa"), "benchmark_structure")
    return (
        not result.success
        and structure in failed_checks(result)
        and failed_steps <= {"benchmark_qa_benchmark_structure"}
    )


# run as separate stages so that a reranker that fails its blocking check leaves BETR to the hand-set scorer
AFTER_RERANKER = ("reranker_model", "candidate_pools", "betr_parameters", "betr_report")


def run_all_partitions(
    codes: list[str] | None = None,
    partition_job: str = "conditions_job",
    global_job: str = "global_job",
    resume: bool = False,
) -> dict[str, dict[str, float]]:
    """Materialise the models job (the PICO tagger; reused when unchanged), the partition job for
    each partition, then the global job; with `resume`, assets already written by an interrupted
    build of the same lake are loaded, not recomputed."""
    from dagster import AssetKey

    from ebm_platform.definitions import conditions_partitions, defs
    from ebm_platform.defs.progress import print_progress
    from ebm_platform.settings import get_settings

    print_progress()
    instance = dagster_instance()
    job = defs.resolve_job_def(partition_job)
    summary: dict[str, dict[str, float]] = {}
    _say("training (or reusing) the PICO tagger, the verdict model and the closed-question reader ...")
    models = _execute("models_job", instance)
    stop_if_interrupted(interrupted(models))
    failed = {key.path[-1] for key, _ in failed_checks(models)}
    if "pico_tagger" in failed or not models.success:
        _say(
            "the PICO tagger may not be usable (training failed or it did not beat the rules; see the run in the "
            "Dagster UI): then the offline rules extract PICO"
        )
    if "verdict_model" in failed:
        _say("the learned verdict did not beat the rules and the majority class: answers state the rules' verdict")
    if "closed_answer_model" in failed:
        _say(
            "the closed-question reader did not beat the verdict mapping and the majority class: closed questions "
            "are answered from the verdict and the question's direction"
        )
    keys = codes or conditions_partitions.get_partition_keys()
    settings = get_settings()
    requests = []
    for code in largest_first(keys, settings.landing_dir):
        selection = None
        if resume and (done := already_built(settings.lake, code)):
            _say(f"resuming {code}: reusing {', '.join(done)}")
            selection = [key for key in job.asset_layer.executable_asset_keys if key.path[-1] not in done]
        requests.append((code, selection))
    workers = _run_workers()
    if workers > 1:
        _say(f"{workers} partition runs at a time, largest first")
    peaks = [("models", step_peaks(models))]
    for n, (code, outcome) in enumerate(run_many(partition_job, requests, workers), 1):
        stop_if_interrupted(outcome["interrupted"])
        if not outcome["success"] and not outcome["blocked"]:
            raise RuntimeError(f"partition {code} failed; see the run in the Dagster UI")
        counts = summary[code] = outcome["counts"]
        peaks.append((code, outcome["peaks"]))
        _say(
            f"[{n:>2}/{len(keys)}] {code:<7} documents={counts.get('source_documents.documents', 0):>4} "
            f"quarantined={counts.get('source_documents.quarantined', 0):>2} "
            f"windows={counts.get('evidence_windows.windows', 0):>5}  ({outcome['seconds']:.1f}s)"
        )
        if outcome["blocked"]:
            _say(
                f"        {code}'s benchmark failed benchmark_structure: the last good one stays in place and "
                f"{code} is kept out of the splits, BETR and evaluation (see the check in the Dagster UI)"
            )
    glob = defs.resolve_job_def(global_job)
    stages = [[k for k in glob.asset_layer.executable_asset_keys if k.path[-1] not in AFTER_RERANKER]]
    if any(k.path[-1] == "reranker_model" for k in glob.asset_layer.executable_asset_keys):
        stages += [[AssetKey("reranker_model")], [AssetKey(n) for n in AFTER_RERANKER if n != "reranker_model"]]
    for selection in stages:
        reranker = selection == [AssetKey("reranker_model")]
        if reranker:
            _say("training the learned reranker on the benchmark's train and validation questions ...")
        result = _execute(global_job, instance, selection=selection, log_level="CRITICAL" if reranker else "WARNING")
        stop_if_interrupted(interrupted(result))
        peaks.append(("global", step_peaks(result)))
        if reranker:
            _say(reranker_summary(settings.lake))
        elif not result.success:
            raise RuntimeError("global assets failed; see the run in the Dagster UI")
    _say(record_peaks(settings.lake, peaks))
    return summary


def reranker_summary(lake: Path) -> str:
    """The reranker run's outcome in one line (its gate's figures when it trained), then the gate's
    figures per benchmark source."""
    from ebm_platform.retrieval.learned import LearnedReranker, gate_by_source, gate_line, reranker_path

    model = LearnedReranker.load(reranker_path(lake))
    if model is None or "validation" not in model.meta:
        return "the learned reranker did not train (see the run in the Dagster UI): the hand-set fine scorer ranks"
    return "\n".join([gate_line(model.meta), *gate_by_source(model.meta)])


def unblocked_ranges(codes: list[str], blocked: set[str]) -> list[list[str]]:
    """The runs of consecutive `codes` with no blocked code between them."""
    ranges: list[list[str]] = [[]]
    for code in codes:
        if code in blocked:
            ranges.append([])
        else:
            ranges[-1].append(code)
    return [r for r in ranges if r]


def evaluation_requests(keys: list[str], skipped: list[str], workers: int, landing: Path) -> list[list[str]]:
    """The partitions of each evaluation_report run for `keys` less `skipped`: with several workers
    one run per partition, largest first (each worker opens the lake once and keeps it for its runs);
    with one, one run per range of partitions with no skipped one between them (the lake is opened
    once per run)."""
    if workers > 1:
        return [[code] for code in largest_first([code for code in keys if code not in skipped], landing)]
    return unblocked_ranges(keys, set(skipped))


def run_evaluation(codes: list[str] | None = None) -> list[str]:
    """evaluation_report for the partitions (see `evaluation_requests`; a partition whose benchmark
    failed its blocking check is reported and skipped), then evaluation_summary; returns the
    partitions left without a report."""
    from ebm_platform.definitions import conditions_partitions
    from ebm_platform.defs.benchmark import structure_verdicts
    from ebm_platform.defs.progress import print_progress
    from ebm_platform.settings import get_settings

    settings = get_settings()
    print_progress()
    instance = dagster_instance()
    keys = codes or conditions_partitions.get_partition_keys()
    _say(
        f"evaluating strategies {settings.eval_strategies} on at most "
        f"{settings.eval_max_questions or 'all'} test questions per condition"
        + (
            f", and {settings.eval_full_strategies} on every test question with gold windows"
            if settings.eval_full_strategies and settings.eval_max_questions
            else ""
        )
        + " ..."
    )
    verdicts = structure_verdicts(instance, keys)
    skipped = [code for code in keys if verdicts.get(code)]
    for code in skipped:
        _say(f"        {code:<7} no evaluation report: {verdicts[code]} (see benchmark_qa's check in the UI)")
    order = conditions_partitions.get_partition_keys()
    workers = _run_workers()
    runs = {
        chosen[0] if len(chosen) == 1 else (chosen[0], chosen[-1]): chosen
        for chosen in evaluation_requests(
            order, sorted(set(order) - set(keys) | set(skipped)), workers, settings.landing_dir
        )
    }
    if workers > 1 and len(runs) > 1:
        _say(f"{workers} evaluation runs at a time, largest first")
    for partition, outcome in run_many("evaluation_job", [(partition, None) for partition in runs], workers):
        chosen = runs[partition]
        stop_if_interrupted(outcome["interrupted"])
        if not outcome["success"]:
            skipped += chosen
            _say(f"        {', '.join(chosen)}: no evaluation report (the run failed; see it in the UI)")
            continue
        _say(
            f"        evaluation report for {chosen[0]}{'..' + chosen[-1] if len(chosen) > 1 else ''} ({outcome['seconds']:.1f}s)"
        )
    summary = _execute("evaluation_summary_job", instance)
    stop_if_interrupted(interrupted(summary))
    if not summary.success:
        raise RuntimeError("evaluation_summary failed; see the run in the Dagster UI")
    return skipped


def start_step_server() -> None:
    """Start the multiprocess executor's forkserver now (as its first run would), so that it imports
    the step modules (~9 s) while the datasets are imported rather than after. Progress printing is
    switched on first: the step processes it forks inherit its environment, not a later one."""
    import multiprocessing
    from multiprocessing import forkserver

    from ebm_platform.defs import STEP_MODULES
    from ebm_platform.defs.progress import print_progress

    print_progress()
    multiprocessing.get_context("forkserver").set_forkserver_preload(
        ["dagster._core.executor.multiprocess", *STEP_MODULES]
    )  # the list the executor sets (definitions.py)
    forkserver.ensure_running()
