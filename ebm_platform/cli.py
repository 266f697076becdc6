"""`ebm`: the command line of ebm-platform (demo, import, quarantine)."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ebm_platform.lake_layout import LakeLayout

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _say(message: str) -> None:
    print(message, flush=True)


def _progress(message: str) -> None:
    """Progress goes to stderr so that --json output stays parseable."""
    print(message, file=sys.stderr, flush=True)


def cmd_import(args: argparse.Namespace) -> int:
    from ebm_platform.conditions import active_catalogue
    from ebm_platform.corpus.importers import import_dataset
    from ebm_platform.settings import get_settings

    settings = get_settings()
    root = Path(args.source) if args.source else settings.require_datasets_dir()
    report = import_dataset(args.dataset, root, settings.landing_dir, active_catalogue(), progress=_say)
    _say(json.dumps(report.as_dict(), indent=2) if args.json else report.table())
    return 0


@functools.cache
def _instance():
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
    enforced). With no instance configured (evaluation lakes keep out of the history) the run
    executes in this process on an ephemeral instance. `partition`: one key, or (first, last) for
    one run over that range of partitions. `log_level`: what the console shows (CRITICAL where the
    caller reports the outcome itself in one line)."""
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
    """What the CLI needs of a finished run (picklable, so a worker process can return it)."""
    counts: dict[str, float] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        for label in ("documents", "windows", "quarantined"):
            if label in mat.metadata and mat.asset_key.path[-1] in ("source_documents", "evidence_windows"):
                counts[f"{mat.asset_key.path[-1]}.{label}"] = mat.metadata[label].value
    return {
        "success": result.success,
        "blocked": only_benchmark_blocked(result),
        "counts": counts,
        "seconds": time.perf_counter() - started,
    }


def _start_worker(environment: dict[str, str]) -> None:
    """A run worker takes the parent's EBM_* and DAGSTER_* settings (the forkserver it is forked
    from may predate them)."""
    from ebm_platform.defs.progress import TO_STDERR, print_progress
    from ebm_platform.settings import get_settings

    os.environ.update(environment)
    get_settings.cache_clear()
    if environment.get(TO_STDERR):
        print_progress()


def _worker_run(name: str, partition: str | tuple[str, str], selection: list | None) -> dict:
    """One run in a worker process: recorded in the DAGSTER_HOME instance like any other, its steps
    executed in this process one after another (they share the models the worker has loaded)."""
    from ebm_platform.definitions import defs

    started = time.perf_counter()
    result = defs.resolve_job_def(name).execute_in_process(
        instance=_instance(),
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
    stores' file locks keep one writer per store. Otherwise they run one after another here."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    if workers < 2 or len(requests) < 2:
        for partition, selection in requests:
            started = time.perf_counter()
            yield partition, _outcome(_execute(name, _instance(), partition, selection), started)
        return
    start_step_server()
    environment = {k: v for k, v in os.environ.items() if k.startswith(("EBM_", "DAGSTER_"))}
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("forkserver"),
        initializer=_start_worker,
        initargs=(environment,),
    )
    try:
        futures = {pool.submit(_worker_run, name, partition, selection): partition for partition, selection in requests}
        for future in as_completed(futures):
            try:
                outcome = future.result()
            except BrokenProcessPool as error:
                raise RuntimeError(
                    f"the worker process running {futures[future]} died ({error}); its run is "
                    "left as started in the Dagster UI"
                ) from error
            yield futures[future], outcome
    finally:  # after a failure the runs under way finish and the rest are not started
        pool.shutdown(wait=True, cancel_futures=True)


def _run_workers() -> int:
    """How many runs `ebm` executes at once: EBM_RUN_WORKERS capped at the cores, and one with no
    DAGSTER_HOME instance (an ephemeral instance has no pools shared between processes)."""
    from ebm_platform.process import cores
    from ebm_platform.settings import get_settings

    return 1 if _instance().is_ephemeral else min(get_settings().run_workers, cores())  # both are >= 1


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
        if not LakeLayout(lake).asset(name, code).is_file():
            break
        done.append(name)
    return done


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
    instance = _instance()
    job = defs.resolve_job_def(partition_job)
    summary: dict[str, dict[str, float]] = {}
    _say("training (or reusing) the PICO tagger and training the verdict model ...")
    models = _execute("models_job", instance)
    failed = {key.path[-1] for key, _ in failed_checks(models)}
    if "pico_tagger" in failed or not models.success:
        _say(
            "the PICO tagger may not be usable (training failed or it did not beat the rules; see the run in the "
            "Dagster UI): then the offline rules extract PICO"
        )
    if "verdict_model" in failed:
        _say("the learned verdict did not beat the rules and the majority class: answers state the rules' verdict")
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
    for n, (code, outcome) in enumerate(run_many(partition_job, requests, workers), 1):
        if not outcome["success"] and not outcome["blocked"]:
            raise RuntimeError(f"partition {code} failed; see the run in the Dagster UI")
        counts = summary[code] = outcome["counts"]
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
        if reranker:
            _say(reranker_summary(settings.lake))
        elif not result.success:
            raise RuntimeError("global assets failed; see the run in the Dagster UI")
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


def run_evaluation(codes: list[str] | None = None) -> list[str]:
    """evaluation_report for the partitions (one run per range of partitions with no blocked
    benchmark between them: the lake is opened once per run; a partition whose benchmark failed
    its blocking check is reported and skipped), then evaluation_summary; returns the partitions
    left without a report."""
    from ebm_platform.definitions import conditions_partitions
    from ebm_platform.defs.benchmark import structure_verdicts
    from ebm_platform.defs.progress import print_progress
    from ebm_platform.settings import get_settings

    settings = get_settings()
    print_progress()
    instance = _instance()
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
    for chosen in unblocked_ranges(order, set(order) - set(keys) | set(skipped)):
        started = time.perf_counter()
        result = _execute("evaluation_job", instance, chosen[0] if len(chosen) == 1 else (chosen[0], chosen[-1]))
        if not result.success:
            skipped += chosen
            _say(f"        {', '.join(chosen)}: no evaluation report (the run failed; see it in the UI)")
            continue
        _say(
            f"        evaluation reports for {len(chosen)} partition(s) {chosen[0]}..{chosen[-1]} "
            f"({time.perf_counter() - started:.1f}s)"
        )
    if not _execute("evaluation_summary_job", instance).success:
        raise RuntimeError("evaluation_summary failed; see the run in the Dagster UI")
    return skipped


# What the demo evaluates unless EBM_EVAL_* say otherwise: the five seed systems and the naive
# hybrid on two test questions per condition, and sr_rag and naive on every test question with gold
# windows (their paired comparison) (all 18 strategies on every test question take ~1.5 h
# on 2 cores; materialise evaluation_report from the UI or set EBM_EVAL_* for that).
DEMO_EVALUATION = {
    "EBM_EVAL_STRATEGIES": "sr_rag,naive,med_r2,meta_rag,claims,kg_refine",
    "EBM_EVAL_MAX_QUESTIONS": "2",
    "EBM_EVAL_FULL_STRATEGIES": "sr_rag,naive",
}


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


def cmd_demo(args: argparse.Namespace) -> int:
    from ebm_platform.atomic import write_text_atomic
    from ebm_platform.conditions import active_catalogue
    from ebm_platform.corpus.importers import import_all
    from ebm_platform.process import cores
    from ebm_platform.settings import get_settings

    for key, value in DEMO_EVALUATION.items():
        os.environ.setdefault(key, value)
    get_settings.cache_clear()
    settings = get_settings()
    started = time.perf_counter()
    if os.environ.get("DAGSTER_HOME"):  # runs go through the instance and its multiprocess executor
        start_step_server()
    if settings.datasets_dir and Path(settings.datasets_dir).is_dir():
        import_all(
            Path(settings.datasets_dir),
            settings.landing_dir,
            active_catalogue(),
            LakeLayout(settings.lake).reports,
            progress=_say,
        )
    else:
        _say("EBM_DATASETS_DIR not found: materialising only what is already in the landing folders")
    _say(
        f"materialising every asset for {len(active_catalogue().codes)} partitions (offline: "
        f"model={settings.llm_model}) ..."
    )
    run_all_partitions()
    run_evaluation()
    report = write_demo_report(settings.lake)
    _say(f"\n{report.read_text(encoding='utf-8')}")
    seconds = time.perf_counter() - started
    write_text_atomic(
        LakeLayout(settings.lake).reports / "demo_timing.json",
        json.dumps({"seconds": round(seconds, 1), "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "cores": cores()}),
    )
    _say(f"demo finished in {seconds:.0f}s; report: {report}; open the UI with `make dev`")
    return 0


def cmd_backfill(args: argparse.Namespace) -> int:
    from ebm_platform.definitions import conditions_partitions, defs
    from ebm_platform.defs.backfill import run_backfill
    from ebm_platform.settings import get_settings

    if not os.environ.get("DAGSTER_HOME"):
        raise SystemExit("ebm backfill submits to the DAGSTER_HOME instance: set DAGSTER_HOME (the Makefile sets it)")
    codes = args.codes.split(",") if args.codes else conditions_partitions.get_partition_keys()
    unknown = sorted(set(codes) - set(conditions_partitions.get_partition_keys()))
    if unknown:
        raise SystemExit(f"unknown partitions: {', '.join(unknown)}")
    _progress(f"submitting a backfill of {args.job} over {len(codes)} partitions to {os.environ['DAGSTER_HOME']} ...")
    outcome = run_backfill(
        _instance(), defs, args.job, codes, LakeLayout(get_settings().lake).dagster / "daemon.log", _progress
    )
    result = {
        "backfill_id": outcome.backfill_id,
        "status": outcome.status,
        "runs": dict(outcome.runs),
        "failed_partitions": outcome.failed_partitions,
        "seconds": round(outcome.seconds, 1),
    }
    print(
        json.dumps(result)
        if args.json
        else f"backfill {outcome.backfill_id}: {outcome.status}, runs {dict(outcome.runs)}, "
        f"failed partitions {outcome.failed_partitions or 'none'}, {outcome.seconds:.0f}s"
    )
    return 1 if outcome.failed_partitions else 0


EXAMPLE_QUESTION = (
    "In adults with patellofemoral pain, does adding hip strengthening to knee exercise reduce pain "
    "more than knee exercise alone?"
)


def _tagger_line(lake: Path) -> str:
    """Which offline PICO extractor built the graph, with its validation figures."""
    from ebm_platform.pico.tagger import read_meta, tagger_path
    from ebm_platform.settings import get_settings

    meta = read_meta(tagger_path(lake))
    if get_settings().pico_extractor == "rules" or not meta.get("beats_rules"):
        return "PICO extraction: the offline rules (no usable learned tagger, or EBM_PICO_EXTRACTOR=rules)."
    report = meta["validation"]
    return (
        f"PICO extraction: the learned tagger (token macro F1 over I and O on Evidence Inference validation "
        f"{report['learned']['macro_f1']:.3f}, rules {report['rules']['macro_f1']:.3f}, same run) with the rules "
        "for everything else."
    )


def write_demo_report(lake: Path) -> Path:
    """The demo's report: corpus by condition, graph against the paper, one cited answer."""
    import polars as pl

    from ebm_platform.atomic import write_text_atomic
    from ebm_platform.graph.stats import graph_summary
    from ebm_platform.retrieval.ask import ask

    corpus = pl.read_csv(LakeLayout(lake).reports / "corpus_by_condition.csv")
    lines = [
        "# ebm-platform demo report",
        "",
        "## Corpus by condition",
        "",
        "| " + " | ".join(corpus.columns) + " |",
        "|" + "---|" * len(corpus.columns),
    ]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in corpus.iter_rows()]
    graph = graph_summary(LakeLayout(lake).graph_db)
    lines += [
        "",
        "## Knowledge graph (Kùzu)",
        "",
        f"{graph['entities']} entities, {graph['attributes']} attribute nodes, {graph['relations']} typed "
        f"relations, {graph['communities']} communities in the knowledge tree.",
        "",
        f"PICO-core share of entity + attribute nodes: {graph['pico_core_share']:.1%} "
        f"(paper: {graph['pico_core_share_paper']:.1%}).",
        "",
        f"PICO-core entity names: {graph['pico_core_names']['total']}, of which verb phrases "
        f"{graph['pico_core_names']['verb_phrases']} and lone abbreviations "
        f"{graph['pico_core_names']['lone_abbreviations']}.",
        "",
        _tagger_line(lake),
        "",
        "| core type | here | paper |",
        "|---|---|---|",
    ]
    lines += [f"| {t} | {graph['core_mix'][t]:.1%} | {p:.1%} |" for t, p in graph["core_mix_paper"].items()]
    answer = ask(EXAMPLE_QUESTION, lake=lake)
    lines += [
        "",
        "## Example answer (`ebm ask`, offline)",
        "",
        f"**Q:** {EXAMPLE_QUESTION}",
        "",
        f"_{answer['mode']}_",
        "",
    ]
    lines += [f"- {c['statement']} " + "".join(f"[{n}]" for n in c["citations"]) for c in answer["core_answer"]]
    lines += [""] + [
        f"[{c['n']}] {c['title']} (grade {c['grade']}, {c['condition']}) `{c['window_id']}`"
        for c in answer["citations"]
    ]
    evaluation = LakeLayout(lake).reports / "evaluation.md"
    if evaluation.exists():
        lines += ["", evaluation.read_text(encoding="utf-8").replace("# ", "## ", 1).replace("\n## ", "\n### ")]
    betr_report = LakeLayout(lake).reports / "betr_report.md"
    if betr_report.exists():
        lines += ["", betr_report.read_text(encoding="utf-8").replace("# BETR", "## BETR", 1)]
    path = LakeLayout(lake).reports / "demo_report.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path


def cmd_quarantine(args: argparse.Namespace) -> int:
    from ebm_platform.corpus.quarantine import connect_read_only, current_rows
    from ebm_platform.settings import get_settings

    settings = get_settings()
    if not settings.warehouse_path.exists():
        _say("no warehouse yet: nothing has been materialised")
        return 0
    with connect_read_only(settings.warehouse_path, settings.store_wait_s) as conn:
        rows = current_rows(conn, settings.assets_dir / "source_documents")
    for condition, file, reason in rows:
        _say(f"{condition:<7} {file}: {reason}")
    _say(f"{len(rows)} quarantined file(s)")
    return 0


def _graph_path() -> Path:
    from ebm_platform.settings import get_settings

    return LakeLayout(get_settings().lake).graph_db


def cmd_graph_stats(args: argparse.Namespace) -> int:
    from ebm_platform.graph.build import PAPER_CORE_MIX, PAPER_CORE_SHARE
    from ebm_platform.graph.stats import graph_summary

    summary = graph_summary(_graph_path())
    core_mix = summary["core_mix"]
    if args.json:
        _say(json.dumps(summary, indent=2))
        return 0
    _say(
        f"entities {summary['entities']}, attributes {summary['attributes']}, relations {summary['relations']}, "
        f"communities {summary['communities']}"
    )
    _say(f"PICO-core share of entity+attribute nodes: {summary['pico_core_share']:.1%} (paper {PAPER_CORE_SHARE:.1%})")
    _say("core mix (here / paper): " + ", ".join(f"{t} {core_mix[t]:.1%}/{p:.1%}" for t, p in PAPER_CORE_MIX.items()))
    _say("nodes by type: " + ", ".join(f"{t} {n}" for t, n in summary["nodes_by_type"].items()))
    _say("relations by type: " + ", ".join(f"{t} {n}" for t, n in summary["relations_by_type"].items()))
    names = summary["pico_core_names"]
    _say(
        f"PICO-core entity names: {names['total']}, of which verb phrases {names['verb_phrases']}, "
        f"lone abbreviations {names['lone_abbreviations']}"
    )
    for code, c in summary["per_condition"].items():
        _say(f"  {code:<7} entities {c['entities']:>6}  PICO-core {c['pico_core']:>6}")
    return 0


def cmd_graph_query(args: argparse.Namespace) -> int:
    from ebm_platform.graph.store import GraphStore

    with GraphStore(_graph_path(), read_only=True) as store:
        try:
            frame = store.query(args.cypher)
        except RuntimeError as exc:
            raise ValueError(f"Cypher error: {exc}") from exc
    if args.json:
        _say(frame.write_json())
    else:
        import polars as pl

        with pl.Config(tbl_rows=args.limit, fmt_str_lengths=80, tbl_width_chars=200):
            _say(str(frame.head(args.limit)))
    return 0


def cmd_graph_load_edges(args: argparse.Namespace) -> int:
    from ebm_platform.graph.release import load_into_kuzu, read_edges

    started = time.perf_counter()
    counts = load_into_kuzu(read_edges(Path(args.file)), Path(args.db))
    counts["seconds"] = round(time.perf_counter() - started, 2)
    _say(
        json.dumps(counts)
        if args.json
        else f"loaded {counts['edges']} edges between {counts['nodes']} nodes into {args.db} in {counts['seconds']}s"
    )
    return 0


def _pico_extractor(choice: str):
    """(name, texts -> spans) of the chosen extractor; default: the lake's tagger when usable."""
    from ebm_platform.pico.extractors import llm_extractor, rule_entities
    from ebm_platform.pico.tagger import PicoTagger, tagger_path
    from ebm_platform.settings import get_settings

    settings = get_settings()
    if choice in ("default", "learned"):
        folder = tagger_path(settings.lake)
        tagger = PicoTagger.usable(folder) if choice == "default" else PicoTagger.load(folder)
        if tagger is not None:
            from ebm_platform.index.embeddings import get_encoder

            encoder = get_encoder(settings.embedding_model, settings.embedding_backend)
            return "learned", lambda texts: tagger.tag(texts, encoder)
        _progress(f"no usable PICO tagger at {folder} (materialise pico_tagger: make demo); the rules extract")
    if choice == "llm":
        try:
            name, one = llm_extractor(settings)
        except ValueError as exc:
            raise SystemExit(str(exc)) from exc
        return name, lambda texts: [one(t) for t in texts]
    return "rules", lambda texts: [rule_entities(t) for t in texts]


def cmd_pico_tag(args: argparse.Namespace) -> int:
    """JSON lines in ({"id", "text"}), JSON lines out ({"id", "extractor", "entities"}), in order."""
    name, extract = _pico_extractor(args.extractor)
    batch: list[dict] = []

    def flush() -> None:
        for doc, entities in zip(batch, extract([d["text"] for d in batch])):
            sys.stdout.write(
                json.dumps(
                    {
                        "id": doc["id"],
                        "extractor": name,
                        "entities": [{k: e[k] for k in ("type", "text", "start", "end")} for e in entities],
                    }
                )
                + "\n"
            )
        sys.stdout.flush()
        batch.clear()

    for n, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict) or not isinstance(doc.get("text"), str) or "id" not in doc:
                raise ValueError('expected an object with "id" and a string "text"')
        except ValueError as exc:
            raise SystemExit(f"line {n}: {exc}") from exc
        batch.append(doc)
        if len(batch) == 64:
            flush()
    flush()
    return 0


def cmd_eval_pico(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.pico_eval import evaluate
    from ebm_platform.pico.training import token_evaluation
    from ebm_platform.settings import get_settings

    settings = get_settings()
    datasets = settings.require_datasets_dir()
    result = {
        "token_level": token_evaluation(datasets, settings, args.split, args.limit, args.llm, _progress),
        "span_overlap_rules": evaluate(datasets, args.split, args.limit, progress=_progress),
    }
    if args.json:
        _say(json.dumps(result, indent=2))
        return 0
    tokens = result["token_level"]
    _say(
        f"Token-level PICO (EBM-NLP classes) on Evidence Inference {args.split}: {tokens['articles']} articles, "
        f"{tokens['tokens']} words; gold: {tokens['gold']}"
    )
    _say(f"{'extractor':<20}{'class':>6}{'precision':>10}{'recall':>8}{'F1':>7}")
    names = ("learned", "learned_word_labels", "rules", *(k for k in tokens if k.startswith("llm:")), "majority_class")
    for name in (n for n in names if n in tokens):
        for c, m in tokens[name]["classes"].items():
            _say(
                f"{name:<20}{c + ('*' if c == 'P' else ''):>6}{m['precision']:>10.3f}{m['recall']:>8.3f}{m['f1']:>7.3f}"
            )
        bounds = tokens.get("macro_f1_interval_95", {}).get(name)
        ci = f" [{bounds[0]:.3f}, {bounds[1]:.3f}]" if bounds else ""
        _say(
            f"{name:<20}{'macro':>6}{'':>18}{tokens[name]['macro_f1']:>7.3f}{ci}   (I, O; P* is a proxy, not in the macro)"
        )
    _say("learned_word_labels: the tagger's head alone, without the entity selector (an ablation)")
    if "learned_minus_rules" in tokens.get("macro_f1_interval_95", {}):
        low, high = tokens["macro_f1_interval_95"]["learned_minus_rules"]
        _say(
            f"learned minus rules, macro F1 {tokens['learned_minus_rules_macro_f1']:+.3f} [{low:+.3f}, {high:+.3f}]; "
            f"intervals: {tokens['interval']}"
        )
    spans = result["span_overlap_rules"]
    _say(f"\nSpan overlap of the rules' names with the prompts ({spans['prompts']} prompts):")
    _say(f"{'field':<14}{'precision':>10}{'recall':>8}{'F1':>7}{'F1>=0.5':>9}")
    for field, m in spans["fields"].items():
        _say(f"{field:<14}{m['precision']:>10.3f}{m['recall']:>8.3f}{m['f1']:>7.3f}{m['match_rate_f1_ge_0.5']:>9.3f}")
    return 0


def cmd_eval_questions(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.question_eval import evaluate_questions
    from ebm_platform.settings import get_settings

    result = evaluate_questions(get_settings().require_datasets_dir(), args.split, args.limit, progress=_progress)
    if args.json:
        _say(json.dumps(result, indent=2))
        return 0
    _say(f"Question parsing on Evidence Inference {args.split} ({result['prompts']} prompts); {result['metric']}")
    _say(f"{'phrasing':<28}{'group':<13}{'I':>7}{'C':>7}{'O':>7}{'mean':>7}{'whole question':>16}")
    for name, m in result["phrasings"].items():
        p = m["parser"]
        _say(
            f"{name:<28}{m['group']:<13}{p['intervention']:>7.3f}{p['comparator']:>7.3f}{p['outcome']:>7.3f}"
            f"{p['mean']:>7.3f}{m['whole question']['mean']:>16.3f}"
        )
    for group, summary in result["summary"].items():
        parser, whole = summary["parser"], summary["whole question"]
        low, high = parser["interval_95"]
        _say(f"{group}: parser {parser['mean']:.3f} [{low:.3f}, {high:.3f}], whole question {whole['mean']:.3f}")
    return 0


def _print_answer(result: dict) -> None:
    """Human-readable rendering of an `ask` result."""
    line = result["bottom_line"]
    _say(f"Bottom line ({line['question_type']} question): {line['summary']}")
    _say(f"Q: {result['question']}  [strategy {result['strategy']}; {result['mode']}]")
    _say(result["ranking"])
    if result.get("message"):
        _say(result["message"])
    _say("\n1. Core answer")
    for item in result["core_answer"]:
        _say(f"   - {item['statement']} {''.join(f'[{n}]' for n in item['citations'])}")
    _say("\n2. Guideline and supporting evidence, by grade")
    for group in result["evidence_by_grade"]:
        _say(f"   Grade {group['grade']} ({group.get('label', '')})")
        for item in group["statements"]:
            _say(f"   - {item['statement']} {''.join(f'[{n}]' for n in item['citations'])}")
    _say("\n3. PICO comparison")
    comparison = result["pico_comparison"]
    for field, value in comparison.get("fields", {}).items():
        detail = (
            f"'{value['question']}' vs '{value['closest_evidence']}' [{value['citation']}] ({value['similarity']})"
            if "closest_evidence" in value
            else value.get("question") or ""
        )
        _say(f"   {field:<13} {value['status']}: {detail}")
    if comparison.get("summary"):
        _say(f"   {comparison['summary']}")
    for limitation in comparison.get("limitations", []):
        _say(f"   limitation: {limitation}")
    _say("\nCitations")
    for c in result["citations"]:
        _say(f"   [{c['n']}] {c['title']} (grade {c['grade']}, {c['condition']}, {c['year']}) window {c['window_id']}")
    _say(f"\nnotes: {result['notes']}\ntimings (s): {result['timings_s']}")
    for row in result.get("explain", []):
        _say(f"   {row}")
    for key, value in result.get("explain_strategy", {}).items():
        _say(f"   {key}: {json.dumps(value, default=str)}")


def cmd_ask(args: argparse.Namespace) -> int:
    from ebm_platform.retrieval.ask import ask

    result = ask(args.question, args.condition, args.strategy, args.explain)
    if args.json:
        _say(json.dumps(result, indent=2, default=str))
    else:
        _print_answer(result)
    return 0


def cmd_lake_build(args: argparse.Namespace) -> int:
    """Import one dataset into this lake (EBM_LAKE) and materialise its corpus, graph and index."""
    from ebm_platform.conditions import active_catalogue
    from ebm_platform.corpus.importers import import_dataset
    from ebm_platform.settings import get_settings

    settings = get_settings()
    ids = set(Path(args.ids).read_text(encoding="utf-8").split()) if args.ids else None
    report = import_dataset(
        args.dataset, settings.require_datasets_dir(), settings.landing_dir, active_catalogue(), ids=ids, progress=_say
    )
    _say(report.table())
    run_all_partitions(partition_job="corpus_index_job", global_job="graph_global_job", resume=args.resume)
    return 0


def shipped_reranker(retriever, lake: Path) -> dict:
    """Load the production lake's learned reranker (the one `ebm ask` ranks with) into `retriever`."""
    from ebm_platform.retrieval.learned import LearnedReranker, reranker_path

    model = LearnedReranker.load(reranker_path(lake))
    if model is None or not model.usable:
        raise ValueError(f"{lake} holds no learned reranker that passed its gate: run `make demo` first")
    retriever.reranker.learned = model
    return {**model.meta, "source": f"shipped: {reranker_path(lake)}"}


def _evaluation_setup(args: argparse.Namespace):
    """The lake (an evaluation lake, or the production lake for `generated`), its questions, a
    retriever with the lake's learned reranker, and the checked strategies."""
    from ebm_platform.conditions import load_catalogue
    from ebm_platform.evaluation.lakes import evaluation_lake
    from ebm_platform.evaluation.question_eval import template
    from ebm_platform.evaluation.retrieval_eval import ensure_reranker, questions
    from ebm_platform.llm.client import client_from_settings
    from ebm_platform.retrieval.pipeline import Retriever
    from ebm_platform.retrieval.strategies import strategy_list
    from ebm_platform.settings import DEFAULT_CATALOGUE, get_settings

    settings = get_settings()
    strategies = strategy_list(args.strategies)
    phrasing = getattr(args, "phrasing", None)
    if phrasing:  # checked before an evaluation lake is built
        if args.benchmark != "evidence-inference":
            raise ValueError("--phrasing applies to evidence-inference (its prompts name I, C and O)")
        template(phrasing)
    ids = None
    if args.benchmark == "generated":
        datasets, lake = None, Path(settings.lake)  # the platform's own benchmark, in the production lake
    else:
        datasets = settings.require_datasets_dir()
        if getattr(args, "corpus", "all") == "split":
            if args.benchmark != "evidence-inference":
                raise ValueError(
                    "--corpus split applies to evidence-inference (PubMedQA's corpus is its 500 abstracts)"
                )
            from ebm_platform.benchmark.evidence_inference import article_ids

            ids = article_ids(datasets, args.split)
        lake = evaluation_lake(args.benchmark, datasets, settings, rebuild=args.rebuild, progress=_progress, ids=ids)
    items, dropped = questions(args.benchmark, args.split, datasets, lake, phrasing)
    if args.limit:
        items = items[: args.limit]
    names = tuple(c.name.lower() for c in load_catalogue(DEFAULT_CATALOGUE).conditions)
    retriever = Retriever(
        lake,
        client_from_settings(),
        settings.embedding_model,
        settings.cross_encoder,
        names,
        embedding_backend=settings.embedding_backend,
    )
    if args.benchmark == "generated":
        reranker = (
            retriever.reranker.learned.meta
            if retriever.reranker.learned
            else {"source": "none: materialise reranker_model (make demo)"}
        )
    elif getattr(args, "reranker", "trained") == "shipped":
        reranker = shipped_reranker(retriever, Path(settings.lake))
    else:
        reranker = ensure_reranker(retriever, args.benchmark, datasets, args.train_questions, progress=_progress)
    _progress(
        f"{args.benchmark} {args.split}: {len(items)} questions kept"
        + (f"; dropped: {dict(dropped)}" if dropped else "; none dropped")
        + f"; corpus lake {lake}"
    )
    corpus = (
        "the platform lake's own corpus"
        if args.benchmark == "generated"
        else "every article of the dataset"
        if ids is None
        else f"the {len(ids)} {args.split} articles"
    )
    header = {
        "benchmark": args.benchmark,
        "split": args.split,
        "lake": str(lake),
        "corpus": corpus,
        "phrasing": phrasing or "the benchmark's template",
        "questions_kept": len(items),
        "dropped": dict(dropped),
        "corpus_windows": retriever.index.count(),
    }
    return retriever, items, strategies, reranker, header


def _reranker_summary(reranker: dict) -> dict:
    return {
        k: reranker.get(k)
        for k in ("source", "key", "trained_on", "rounds", "train_questions", "beats_hand_set", "validation", "gain")
        if k in reranker
    }


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.retrieval_eval import evaluate
    from ebm_platform.retrieval.strategies import retrieve

    retriever, items, strategies, reranker, header = _evaluation_setup(args)
    results, per_question = evaluate(
        retriever, items, strategies, args.k, progress=_progress, oracle_utility=args.oracle_utility
    )
    if args.oracle_utility and "med_r2" in results:
        results["med_r2 (oracle f_u)"] = results.pop("med_r2")
        per_question["med_r2 (oracle f_u)"] = per_question.pop("med_r2")
    notes = {}
    for name in strategies:
        probe = retrieve(retriever, items[0]["question"], name).notes if items else {}
        notes[name] = {k: v for k, v in probe.items() if k in ("fine_scorer", "betr")}
    summary = {
        **header,
        "k": args.k,
        "results": results,
        "notes": notes,
        "reranker": _reranker_summary(reranker),
        "per_question": per_question,
    }
    if args.json:
        _say(json.dumps(summary, indent=2))
        return 0
    _print_retrieval(results, args.k)
    if "validation" in reranker:
        _say("\nlearned reranker on the validation questions' candidates (same candidates for every row):")
        for name, m in reranker["validation"].items():
            recall = next(f"{k} {v:.3f}" for k, v in m.items() if k.startswith("R@"))
            _say(f"  {name:<34}{recall}  MRR {m['MRR']:.3f}")
    return 0


def _print_retrieval(results: dict[str, dict], k: int) -> None:
    """Strategy x metric with 95% intervals, then sr_rag minus each other strategy (paired)."""
    from ebm_platform.evaluation.retrieval_eval import metric_names

    names = metric_names(k)
    width = max(len(s) for s in results) + 2
    _say(
        f"{'strategy':<{width}}"
        + "".join(f"{n + ' [95% interval]':>25}" for n in names)
        + f"{'questions':>11}{'s/question':>12}"
    )
    for name, m in results.items():
        cells = "".join(f"{_with_interval(m[n], m['interval_95'][n]):>25}" for n in names)
        _say(f"{name:<{width}}{cells}{m['questions']:>11}{m['seconds_per_question']:>12.2f}")
    paired = {name: m["sr_rag_minus_this"] for name, m in results.items() if "sr_rag_minus_this" in m}
    if paired:
        _say(
            "\nsr_rag minus each strategy, same questions (paired bootstrap 95% interval; wins/ties/losses of sr_rag):"
        )
        _print_paired(paired, names)


def _with_interval(value: float, bounds: list[float]) -> str:
    return f"{value:.3f} [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _print_paired(paired: dict[str, dict], names: tuple[str, ...]) -> None:
    width = max(len(s) for s in paired) + 2
    for name, by_metric in paired.items():
        cells = "  ".join(
            f"{n} {d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] {d['wins']}/{d['ties']}/{d['losses']}"
            for n, d in ((n, by_metric[n]) for n in names)
        )
        _say(f"  {name:<{width}}{cells}  ({by_metric[names[0]]['n']} questions)")


def cmd_eval_compare(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.retrieval_eval import metric_names, paired_against

    runs = []
    for path in (args.first, args.second):
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if "per_question" not in data:
            raise SystemExit(f"{path} has no per-question values: write it with `ebm eval retrieval --json`")
        runs.append(data)
    first, second = runs
    if first["k"] != second["k"]:
        raise SystemExit(f"the two runs used different k ({first['k']} and {second['k']})")
    shared = [s for s in first["per_question"] if s in second["per_question"]]
    if not shared:
        raise SystemExit("the two runs have no strategy in common")
    paired = {s: paired_against(second["per_question"][s], first["per_question"][s], first["k"]) for s in shared}
    if args.json:
        _say(json.dumps({"first": args.first, "second": args.second, "second_minus_first": paired}, indent=2))
        return 0
    _say(
        f"second minus first, per strategy, on the questions both runs have (paired bootstrap 95% interval; "
        f"wins/ties/losses of the second):\n  first:  {args.first} ({first.get('lake')})\n  second: {args.second} "
        f"({second.get('lake')})"
    )
    _print_paired(paired, metric_names(first["k"]))
    return 0


def cmd_eval_tune(args: argparse.Namespace) -> int:
    from ebm_platform.evaluation.constant_tuning import TUNABLE, choose_constants, tuning_items

    tunable = TUNABLE[args.strategy]
    retriever, items, _, _, header = _evaluation_setup(args)
    items = tuning_items(items, args.questions)
    names = list(tunable.grid)
    _progress(
        f"choosing {args.strategy}'s {', '.join(names)} on {len(items)} train questions "
        f"({'x'.join(str(len(v)) for v in tunable.grid.values())} grid points) ..."
    )
    result = choose_constants(args.strategy, retriever, items, tunable.constants.from_settings(), progress=_progress)
    if args.json:
        _say(json.dumps({**header, "questions_kept": len(items), **result}, indent=2))
        return 0
    _say(f"{'':<12}" + "".join(f"{n:>12}" for n in names) + f"{'MRR':>8}{'R@10':>8}{'Hit@10':>8}")
    labelled = (
        [("chosen", result["chosen"])]
        + [(f"top {i}", row) for i, row in enumerate(result["top"][1:], 2)]
        + [("settings", result["baseline"]), ("worst", result["worst"])]
    )
    for label, row in labelled:
        _say(
            f"{label:<12}"
            + "".join(f"{row[n]:>12g}" for n in names)
            + f"{row['MRR']:>8.3f}{row['R@10']:>8.3f}{row['Hit@10']:>8.3f}"
        )
    prefix = f"EBM_{args.strategy.upper()}_"
    _say("\nto use the chosen values: " + " ".join(f"{prefix}{n.upper()}={result['chosen'][n]:g}" for n in names))
    return 0


def _answers_on_benchmark(args: argparse.Namespace) -> int:
    """The evaluation_report metrics over the production lake's benchmark split, summarised as
    evaluation_summary does (without writing anything)."""
    import polars as pl

    from ebm_platform.conditions import active_catalogue
    from ebm_platform.evaluation.report import describe, evaluate, pick_questions, summarise
    from ebm_platform.retrieval.ask import retriever_for
    from ebm_platform.retrieval.strategies import strategy_list
    from ebm_platform.settings import get_settings

    settings = get_settings()
    lake = Path(settings.lake)
    strategies = strategy_list(args.strategies or settings.eval_strategies)
    tables = _benchmark_tables(lake)
    codes = [active_catalogue().canonical(args.condition)] if args.condition else sorted(tables)
    splits_path = LakeLayout(lake).asset("benchmark_splits")
    if not splits_path.exists():
        raise FileNotFoundError(f"no benchmark_splits in {lake}: run `make demo` first")
    split = pl.read_parquet(splits_path).filter(pl.col("split") == (args.split or "test")).select("question_id")
    limit = settings.eval_max_questions if args.max_questions is None else args.max_questions
    questions = pl.concat(
        [
            pick_questions(tables[c].join(split, on="question_id"), limit, settings.eval_seed)
            for c in codes
            if c in tables
        ],
        how="diagonal_relaxed",
    )
    _progress(
        f"answering {questions.height} {args.split or 'test'} questions of {len(codes)} condition(s) with "
        f"{len(strategies)} strategies ..."
    )
    retriever = retriever_for(str(lake))
    rows = evaluate(retriever, questions, strategies, retriever.client, progress=_progress)
    summary = summarise(rows, settings.eval_seed)
    if args.json:
        _say(
            json.dumps(
                {
                    "lake": str(lake),
                    "split": args.split or "test",
                    "strategies": strategies,
                    "questions": questions.height,
                    "summary": summary.long().to_dicts(),
                    "paired_vs_sr_rag": summary.paired.to_dicts(),
                },
                indent=2,
            )
        )
    else:
        _say(summary.markdown(describe(rows, codes)))
    return 0


def cmd_eval_answers(args: argparse.Namespace) -> int:
    from ebm_platform.benchmark.evidence_inference import labelled_prompts
    from ebm_platform.evaluation.answers import evaluate_answers, majority
    from ebm_platform.evaluation.verdict_training import ensure_verdict_model
    from ebm_platform.settings import get_settings

    if args.benchmark == "generated":
        return _answers_on_benchmark(args)
    args.split = args.split or "validation"
    args.strategies = args.strategies or "sr_rag,naive"
    retriever, items, strategies, reranker, header = _evaluation_setup(args)
    retriever.verdict_model = ensure_verdict_model(
        Path(header["lake"]), get_settings().require_datasets_dir(), retriever.encoder, _progress
    )
    yes_no = args.benchmark == "pubmedqa"
    gold = [item["label"] for item in items]
    if yes_no:
        baseline = {**majority(gold, gold), "note": "majority of the evaluated questions' own labels (no train split)"}
    else:
        train = labelled_prompts(get_settings().require_datasets_dir(), "train")["label"].to_list()
        baseline = {**majority(train, gold), "note": "most frequent label of the train split"}
    results = evaluate_answers(retriever, items, strategies, yes_no=yes_no, progress=_progress)
    summary = {
        **header,
        "labels": dict(Counter(gold).most_common()),
        "majority_class": baseline,
        "results": results,
        "verdict": (
            "the answer's verdict mapped to yes/no/maybe (effect -> yes, no significant difference "
            "-> no, insufficient evidence -> maybe)"
        )
        if yes_no
        else "the answer's verdict",
        "verdict_model": retriever.verdict_model.meta,
        "reranker": _reranker_summary(reranker),
    }
    if args.json:
        _say(json.dumps(summary, indent=2))
        return 0
    width = max(len(s) for s in [*strategies, "majority class"]) + 2
    first = strategies[0]
    _say(
        f"{'strategy':<{width}}{'accuracy':>9} {'95% interval':<16}{'macro-F1':>9}{'R@10':>7}{'questions':>10}   "
        f"{first} minus this, accuracy [95%] (wins/ties/losses)"
    )
    _say(
        f"{'majority class':<{width}}{baseline['accuracy']:>9.3f} {'':<16}{baseline['macro_f1']:>9.3f}{'':>7}"
        f"{baseline['questions']:>10}   ({baseline['answer']})"
    )
    for name, m in results.items():
        low, high = m["accuracy_interval_95"]
        d = m.get(f"{first}_minus_this_accuracy")
        paired = (
            f"{d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] ({d['wins']}/{d['ties']}/{d['losses']})"
            if d
            else ""
        )
        _say(
            f"{name:<{width}}{m['accuracy']:>9.3f} [{low:.3f}, {high:.3f}]{m['macro_f1']:>10.3f}{m['R@10']:>7.3f}"
            f"{m['questions']:>10}   {paired}"
        )
    if results:
        _say(f"sentences quoted by: {next(iter(results.values()))['sentence_selection']}")
    return 0


def _benchmark_tables(lake: Path):
    import polars as pl

    files = LakeLayout(lake).asset_partitions("benchmark_qa")
    if not files:
        raise FileNotFoundError(f"no benchmark_qa in {lake}: run `make demo` (or materialise benchmark_qa) first")
    return {f.stem: pl.read_parquet(f) for f in files}


def cmd_benchmark_stats(args: argparse.Namespace) -> int:
    """Questions per condition and source, gold coverage, and the check rules re-run on each partition."""
    import polars as pl

    from ebm_platform.benchmark.quality import quality_rules, structural_rules
    from ebm_platform.index.embeddings import embed
    from ebm_platform.settings import get_settings

    lake = get_settings().lake
    stats = {}
    for code, bench in _benchmark_tables(lake).items():
        windows_path = LakeLayout(lake).asset("evidence_windows", code)
        windows = (
            pl.read_parquet(windows_path) if windows_path.exists() else pl.DataFrame({"window_id": [], "text": []})
        )
        rules = structural_rules(bench, set(windows["window_id"].to_list())) + quality_rules(
            bench, dict(zip(windows["window_id"].to_list(), windows["text"].to_list())), embed
        )
        stats[code] = {
            "questions": bench.height,
            "by_source": dict(sorted(bench.group_by("source").len().iter_rows())) if bench.height else {},
            "with_gold": bench.filter(pl.col("gold_window_ids").list.len() > 0).height,
            "checks": {r.name: {"passed": r.passed, "severity": r.severity, **r.metadata} for r in rules},
        }
    if args.json:
        _say(json.dumps(stats, indent=2, default=str))
        return 0
    _say(f"{'code':<8}{'questions':>10}{'gold':>6}  {'ERROR rules':<12}{'WARN rules failing':<40} sources")
    for code, s in stats.items():
        errors = [n for n, c in s["checks"].items() if c["severity"] == "ERROR" and not c["passed"]]
        warns = [n for n, c in s["checks"].items() if c["severity"] == "WARN" and not c["passed"]]
        _say(
            f"{code:<8}{s['questions']:>10}{s['with_gold']:>6}  {('FAIL ' + ','.join(errors)) if errors else 'pass':<12}"
            f"{','.join(warns) or '-':<40} {s['by_source']}"
        )
    total = sum(s["questions"] for s in stats.values())
    boiler = sum(s["checks"]["boilerplate_ground_truth"]["boilerplate_answers"] for s in stats.values())
    _say(f"total {total} questions; boilerplate ground truths (WARN): {boiler}")
    return 0


def cmd_benchmark_export_review(args: argparse.Namespace) -> int:
    import polars as pl

    from ebm_platform.benchmark.review import export_sheet, sheet_path, store_path
    from ebm_platform.settings import get_settings

    lake = get_settings().lake
    bench = pl.concat(list(_benchmark_tables(lake).values()), how="diagonal_relaxed")
    path = Path(args.out) if args.out else sheet_path(lake)
    rows = export_sheet(lake, bench, path)
    _say(
        f"wrote {rows} questions to {path} (decisions so far are kept in {store_path(lake)}); set decision to "
        f"keep or discard and save the sheet as {sheet_path(lake)}: the next benchmark_qa materialisation records "
        f"and honours it"
    )
    return 0


def cmd_embedder(args: argparse.Namespace) -> int:
    """Prepare the configured embedder (OpenVINO conversion, offline) and compare it with torch."""

    from ebm_platform.index.embeddings import get_encoder, load_embedder
    from ebm_platform.settings import get_settings

    settings = get_settings()
    started = time.perf_counter()
    encoder = get_encoder(settings.embedding_model, settings.embedding_backend)
    _say(f"embedder: {encoder.description}, ready in {time.perf_counter() - started:.1f}s")
    if args.check:
        texts = [
            "Hip and knee strengthening reduced pain more than knee exercise alone in patellofemoral pain.",
            "Eccentric loading for Achilles tendinopathy improved VISA-A scores at 12 weeks.",
            "No significant difference in disability was found between motor control and general exercise.",
        ]
        reference = load_embedder(settings.embedding_model).encode(texts, normalize_embeddings=True)
        cosine = (encoder.embed(texts) * reference).sum(axis=1)
        _say(f"cosine with sentence-transformers (torch): min {cosine.min():.5f}")
        if cosine.min() < 0.99:
            raise RuntimeError(
                f"{encoder.description} disagrees with torch (cosine {cosine.min():.4f}); "
                "set EBM_EMBEDDING_BACKEND=torch"
            )
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """Train (or find) the environment's PICO tagger and verdict model before any lake needs them."""
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.settings import get_settings
    from ebm_platform.trained_models import ensure_environment_models

    settings = get_settings()
    started = time.perf_counter()
    _say("the environment's models (trained once per environment, about 15-35 min on 2 cores; then reused) ...")

    def progress(message: str) -> None:
        _progress(f"  {message} ({time.perf_counter() - started:.0f} s)")

    encoder = get_encoder(settings.embedding_model, settings.embedding_backend)
    for line in ensure_environment_models(settings.require_datasets_dir(), encoder, progress):
        _say(line)
    _say(f"models ready in {time.perf_counter() - started:.0f} s")
    return 0


def cmd_betr_show(args: argparse.Namespace) -> int:
    from ebm_platform.betr.model import BetrParameters, parameters_path
    from ebm_platform.settings import get_settings

    path = parameters_path(get_settings().lake)
    params = BetrParameters.load(path)
    if params is None:
        raise FileNotFoundError(f"no fitted BETR parameters at {path}: materialise betr_parameters (make demo)")
    data = {"a": params.a, "u": params.u, "tau": params.tau, "provenance": params.provenance, "path": str(path)}
    if args.json:
        _say(json.dumps(data, indent=2))
        return 0
    _say(
        f"BETR r(q,d) = a*s(q,d) + u(grade): a = {params.a:.4f}, "
        + ", ".join(f"u_{g} = {v:.4f}" for g, v in params.u.items())
        + f", tau = {params.tau}"
    )
    _say("provenance: " + ", ".join(f"{k} {v}" for k, v in params.provenance.items()))
    return 0


PHRASING_HELP = (
    "evidence-inference: ask each prompt in this phrasing (names: `ebm eval questions`) instead of the "
    "template; the reranker still trains on the template"
)


def build_parser() -> argparse.ArgumentParser:
    from ebm_platform.corpus.importers import DATASETS

    parser = argparse.ArgumentParser(prog="ebm", description="ebm-platform: evidence-based GraphRAG (SR-RAG)")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="import the datasets and materialise every asset for every partition")
    demo.set_defaults(func=cmd_demo)
    backfill = sub.add_parser(
        "backfill",
        help="submit a partition backfill to the instance (daemon, queue, "
        "multiprocess executor, pools) and wait for it",
    )
    backfill.add_argument(
        "--job", default="conditions_job", choices=["conditions_job", "corpus_index_job", "evaluation_job"]
    )
    backfill.add_argument("--codes", help="comma-separated partitions (default: all)")
    backfill.add_argument("--json", action="store_true")
    backfill.set_defaults(func=cmd_backfill)
    imp = sub.add_parser("import", help="write normalised landing files from a public dataset")
    imp.add_argument(
        "dataset",
        choices=list(DATASETS),
        help="cochrane: Cochrane reviews (grade B); guidelines: guideline files (grade A, or B for an overview)",
    )
    imp.add_argument("--from", dest="source", help="datasets folder (default EBM_DATASETS_DIR)")
    imp.add_argument("--json", action="store_true")
    imp.set_defaults(func=cmd_import)
    quarantine = sub.add_parser("quarantine", help="list quarantined files and their reasons")
    quarantine.set_defaults(func=cmd_quarantine)

    ask = sub.add_parser("ask", help="answer a clinical question with cited, grade-ordered evidence")
    ask.add_argument("question")
    ask.add_argument("--condition", help="restrict to one condition code (e.g. PFP)")
    ask.add_argument(
        "--strategy",
        default="sr_rag",
        help="sr_rag (default), its ablations sr_rag_<lever>, naive / bm25 / dense / hybrid, "
        "med_r2, meta_rag, claims, kg_refine (and kg_refine_no_scorer|no_pruner|plain)",
    )
    ask.add_argument("--json", action="store_true")
    ask.add_argument("--explain", action="store_true", help="show every candidate's channel ranks and scores")
    ask.set_defaults(func=cmd_ask)

    graph = sub.add_parser("graph", help="the Kùzu knowledge graph").add_subparsers(dest="graph_command", required=True)
    stats = graph.add_parser("stats", help="nodes, relations, attributes and PICO-core shares per condition")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(func=cmd_graph_stats)
    query = graph.add_parser("query", help="run a read-only Cypher query")
    query.add_argument("cypher")
    query.add_argument("--json", action="store_true")
    query.add_argument("--limit", type=int, default=50)
    query.set_defaults(func=cmd_graph_query)
    edges = graph.add_parser("load-edges", help="load an SR-RAG release edge list into a fresh Kùzu database")
    edges.add_argument("file")
    edges.add_argument("--db", required=True)
    edges.add_argument("--json", action="store_true")
    edges.set_defaults(func=cmd_graph_load_edges)

    pico_cmd = sub.add_parser("pico", help="PICO extraction").add_subparsers(dest="pico_command", required=True)
    tag = pico_cmd.add_parser("tag", help="tag JSON lines {id, text} from stdin with typed character spans")
    tag.add_argument("--jsonl", action="store_true", required=True, help="JSON lines in and out (the only format)")
    tag.add_argument(
        "--extractor",
        default="default",
        choices=["default", "learned", "rules", "llm"],
        help="default: the lake's learned tagger when it passed its check, else the rules",
    )
    tag.set_defaults(func=cmd_pico_tag)

    evaluation = sub.add_parser("eval", help="evaluations").add_subparsers(dest="eval_command", required=True)
    pico = evaluation.add_parser("pico", help="PICO extraction (learned tagger, rules, LLM) vs Evidence Inference")
    pico.add_argument("--split", default="validation", choices=["validation"])
    pico.add_argument("--limit", type=int, help="at most this many articles")
    pico.add_argument("--llm", action="store_true", help="also score the LLM extraction (EBM_LLM_MODEL)")
    pico.add_argument("--json", action="store_true")
    pico.set_defaults(func=cmd_eval_pico)
    questions = evaluation.add_parser(
        "questions",
        help="question parsing (I, C, O anchors) on Evidence Inference "
        "prompts put into clinicians' phrasings (a proxy)",
    )
    questions.add_argument("--split", default="validation", choices=["train", "validation"])
    questions.add_argument("--limit", type=int, help="at most this many prompts")
    questions.add_argument("--json", action="store_true")
    questions.set_defaults(func=cmd_eval_questions)
    retrieval = evaluation.add_parser("retrieval", help="R@k / Hit@k / MRR per strategy on a real benchmark")
    retrieval.add_argument(
        "--benchmark",
        required=True,
        choices=["evidence-inference", "pubmedqa", "generated"],
        help="generated = the platform's benchmark_qa in the production lake",
    )
    retrieval.add_argument("--split", default="validation")
    retrieval.add_argument(
        "--strategies",
        default="sr_rag,naive,bm25,dense,hybrid",
        help="comma-separated; also med_r2, meta_rag, claims, kg_refine, and the ablations "
        "sr_rag_<lever> (no_graph, no_hyde, one_pool, hand_set, no_betr, no_colbert) and "
        "kg_refine_<flag> (no_scorer, no_pruner, plain)",
    )
    retrieval.add_argument(
        "--train-questions",
        type=int,
        help="train-split questions the lake's learned reranker is trained on (seeded sample; default 600)",
    )
    retrieval.add_argument(
        "--reranker",
        choices=["trained", "shipped"],
        default="trained",
        help="trained: the evaluation lake's own reranker (Evidence Inference train questions); "
        "shipped: the production lake's (multi-source, what `ebm ask` ranks with)",
    )
    retrieval.add_argument("--k", type=int, default=10)
    retrieval.add_argument(
        "--oracle-utility",
        action="store_true",
        help="evaluation only: Med-R2's f_u from the gold answer (the verdict model's loss drop)",
    )
    retrieval.add_argument("--limit", type=int, help="evaluate at most this many questions")
    retrieval.add_argument("--rebuild", action="store_true", help="rebuild the evaluation lake")
    retrieval.add_argument(
        "--corpus",
        choices=["all", "split"],
        default="all",
        help="all: every article of the dataset (default); split: only the split's own articles",
    )
    retrieval.add_argument("--json", action="store_true")
    retrieval.add_argument("--phrasing", help=PHRASING_HELP)
    retrieval.set_defaults(func=cmd_eval_retrieval)
    compare = evaluation.add_parser(
        "compare",
        help="two `eval retrieval --json` outputs (e.g. two builds), paired "
        "per question: second minus first with bootstrap 95% intervals",
    )
    compare.add_argument("first")
    compare.add_argument("second")
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(func=cmd_eval_compare)
    tune = evaluation.add_parser(
        "tune",
        help="choose a seed strategy's open constants on Evidence Inference train "
        "questions (those the lake's reranker trained on excluded)",
    )
    tune.add_argument("--strategy", required=True, choices=["meta_rag", "med_r2", "claims"])
    tune.add_argument("--questions", type=int, default=300, help="train questions to score each grid point on")
    tune.add_argument("--train-questions", type=int, help="as for `eval retrieval` (the lake's learned reranker)")
    tune.add_argument("--rebuild", action="store_true", help="rebuild the evaluation lake")
    tune.add_argument("--json", action="store_true")
    tune.set_defaults(
        func=cmd_eval_tune, benchmark="evidence-inference", split="train", limit=None, corpus="all", strategies="sr_rag"
    )
    answers = evaluation.add_parser(
        "answers",
        help="answer metrics: the platform's benchmark (default; the evaluation_summary table) or answer "
        "correctness (verdict) against Evidence Inference / PubMedQA gold in an evaluation lake",
    )
    answers.add_argument("--benchmark", default="generated", choices=["generated", "evidence-inference", "pubmedqa"])
    answers.add_argument("--split", help="default: test for the platform's benchmark, validation otherwise")
    answers.add_argument(
        "--strategies", help="default: EBM_EVAL_STRATEGIES for the platform's benchmark (all), sr_rag,naive otherwise"
    )
    answers.add_argument("--condition", help="the platform's benchmark: one condition code")
    answers.add_argument(
        "--max-questions",
        type=int,
        help="the platform's benchmark: questions per condition (default EBM_EVAL_MAX_QUESTIONS; 0 all)",
    )
    answers.add_argument("--train-questions", type=int, help="as for `eval retrieval` (the lake's learned reranker)")
    answers.add_argument("--limit", type=int, help="evaluate at most this many questions")
    answers.add_argument("--rebuild", action="store_true", help="rebuild the evaluation lake")
    answers.add_argument("--json", action="store_true")
    answers.add_argument("--phrasing", help=PHRASING_HELP)
    answers.set_defaults(func=cmd_eval_answers)

    bench = sub.add_parser("benchmark", help="the benchmark QA set").add_subparsers(
        dest="benchmark_command", required=True
    )
    bstats = bench.add_parser("stats", help="questions per condition and source, gold coverage, check results")
    bstats.add_argument("--json", action="store_true")
    bstats.set_defaults(func=cmd_benchmark_stats)
    review = bench.add_parser("export-review", help="write the human-review sheet (stage 4)")
    review.add_argument("--out", help="sheet path (default <lake>/review/review_sheet.csv)")
    review.set_defaults(func=cmd_benchmark_export_review)

    embedder = sub.add_parser("embedder", help="prepare the embedding backend (OpenVINO conversion, offline)")
    embedder.add_argument("--check", action="store_true", help="compare it with sentence-transformers on torch")
    embedder.set_defaults(func=cmd_embedder)

    models = sub.add_parser("models", help="train (or find) the environment's PICO tagger and verdict model")
    models.set_defaults(func=cmd_models)

    betr_cmd = sub.add_parser("betr", help="BETR parameters").add_subparsers(dest="betr_command", required=True)
    show = betr_cmd.add_parser("show", help="the fitted parameters and their provenance")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_betr_show)

    lake = sub.add_parser("lake", help="lake maintenance").add_subparsers(dest="lake_command", required=True)
    build = lake.add_parser("build", help="import one dataset into EBM_LAKE and materialise corpus, graph and index")
    build.add_argument("dataset", choices=["evidence-inference", "pubmedqa"])
    build.add_argument("--ids", help="file of document ids (PMC ids / PubMed ids) to import instead of all")
    build.add_argument(
        "--resume",
        action="store_true",
        help="reuse the corpus and extraction outputs an interrupted build of this lake left",
    )
    build.set_defaults(func=cmd_lake_build)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, FileExistsError, ValueError, RuntimeError) as exc:
        print(f"ebm: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
