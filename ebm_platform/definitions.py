"""The one Dagster entry point (workspace.yaml loads this module)."""

import warnings

import dagster as dg

from ebm_platform.defs import STEP_MODULES
from ebm_platform.defs.attributes import with_operator_attributes
from ebm_platform.defs.automation import automation_sensor, landing_sensor
from ebm_platform.defs.benchmark import (
    benchmark_qa,
    benchmark_quality_signals,
    benchmark_splits,
    benchmark_structure,
    splits_unique_across_conditions,
)
from ebm_platform.defs.betr import betr_parameters, betr_parameters_sound, betr_report, candidate_pools
from ebm_platform.defs.corpus import corpus_report, evidence_windows, landing_files, landing_imports, source_documents
from ebm_platform.defs.evaluation import evaluation_report, evaluation_summary
from ebm_platform.defs.graph import (
    knowledge_graph,
    knowledge_tree,
    pico_extractions,
    pico_tagger,
    pico_tagger_beats_rules,
)
from ebm_platform.defs.index import window_index
from ebm_platform.defs.partitions import conditions_partitions
from ebm_platform.defs.resources import default_resources
from ebm_platform.defs.retrieval import (
    closed_answer_model,
    closed_answer_model_beats_baselines,
    fused_candidates,
    reranker_beats_hand_set,
    reranker_model,
    verdict_model,
    verdict_model_beats_baselines,
)
from ebm_platform.process import one_blas_thread
from ebm_platform.settings import get_settings

CORPUS_INDEX_ASSETS = [source_documents, evidence_windows, pico_extractions, knowledge_graph, window_index]
PARTITIONED_ASSETS = [*CORPUS_INDEX_ASSETS, benchmark_qa]
GLOBAL_ASSETS = [
    corpus_report,
    knowledge_tree,
    benchmark_splits,
    fused_candidates,
    reranker_model,
    candidate_pools,
    betr_parameters,
    betr_report,
]

conditions_job = dg.define_asset_job(
    "conditions_job",
    selection=dg.AssetSelection.assets(*PARTITIONED_ASSETS),
    partitions_def=conditions_partitions,
    description="Every per-condition asset for one partition (backfill it over all 23 codes).",
)
global_job = dg.define_asset_job("global_job", selection=dg.AssetSelection.assets(*GLOBAL_ASSETS))
# Models the per-condition assets read (trained once per lake, before the partitions).
models_job = dg.define_asset_job(
    "models_job", selection=dg.AssetSelection.assets(pico_tagger, verdict_model, closed_answer_model)
)
# Evaluation after the global assets: the per-condition reports, then their summary.
evaluation_job = dg.define_asset_job(
    "evaluation_job",
    selection=dg.AssetSelection.assets(evaluation_report),
    partitions_def=conditions_partitions,
    description="evaluation_report for one partition (backfill it over all 23 codes), then run evaluation_summary.",
)
evaluation_summary_job = dg.define_asset_job(
    "evaluation_summary_job", selection=dg.AssetSelection.assets(evaluation_summary)
)
# What an evaluation lake needs: the corpus, the graph and the index, without benchmark or BETR.
corpus_index_job = dg.define_asset_job(
    "corpus_index_job", selection=dg.AssetSelection.assets(*CORPUS_INDEX_ASSETS), partitions_def=conditions_partitions
)
graph_global_job = dg.define_asset_job(
    "graph_global_job", selection=dg.AssetSelection.assets(corpus_report, knowledge_tree)
)

# Two steps at a time within a run: after window_index a partition run has two branches
# (benchmark_qa and its checks; pico_extractions -> knowledge_graph), and one branch's process
# start-up and single-threaded Python overlap the other's work; the writer pools still admit one
# writer per store. Steps fork
# from a forkserver that has imported the definitions (~6 s per process) and the three libraries
# steps import lazily (GX, sentence-transformers, litellm: ~8 s together; they start no thread),
# which halved a small partition's run (AT: 24 s -> 13 s; in process 5 s). It also imports
# OpenVINO and the instance's SQLite storage and compute-log modules, which each step process
# otherwise imported again: a step's start went from 0.35 s to 0.21 s (PT's run 5.6 s -> 4.7 s).
# LanceDB warns in every child forked after its import that its runtime was reset (the step
# processes; the daemon `ebm backfill` starts, which execs at once). The forkserver only imports
# lancedb and never opens a table, so no LanceDB state is mid-operation when a step forks.
warnings.filterwarnings("ignore", message="lancedb fork support is experimental", category=RuntimeWarning)
# Every process that loads the definitions (the step server and the steps it forks, the code server) runs
# numpy's BLAS on one thread: its second thread spins between the steps' small matrix products (a partition run
# of NP 37.7 s -> 32.6 s on two cores, two such runs at a time in `ebm demo`).
one_blas_thread()


def step_executor() -> dg.ExecutorDefinition:
    """The multiprocess executor on this machine, or Celery workers (EBM_EXECUTOR=celery) that take
    steps from the broker; both claim the same instance concurrency pools."""
    settings = get_settings()
    if settings.executor == "celery":
        from dagster_celery import celery_executor

        return celery_executor.configured({"broker": settings.celery_broker, "backend": settings.celery_backend})
    return dg.multiprocess_executor.configured(
        {"max_concurrent": 2, "start_method": {"forkserver": {"preload_modules": list(STEP_MODULES)}}}
    )


defs = dg.Definitions(
    assets=with_operator_attributes(
        [
            landing_files,
            landing_imports,
            pico_tagger,
            verdict_model,
            closed_answer_model,
            *PARTITIONED_ASSETS,
            *GLOBAL_ASSETS,
            evaluation_report,
            evaluation_summary,
        ]
    ),
    asset_checks=[
        pico_tagger_beats_rules,
        benchmark_structure,
        benchmark_quality_signals,
        splits_unique_across_conditions,
        reranker_beats_hand_set,
        verdict_model_beats_baselines,
        closed_answer_model_beats_baselines,
        betr_parameters_sound,
    ],
    jobs=[
        models_job,
        conditions_job,
        global_job,
        evaluation_job,
        evaluation_summary_job,
        corpus_index_job,
        graph_global_job,
    ],
    sensors=[landing_sensor, automation_sensor],
    resources=default_resources(),
    executor=step_executor(),
)


def job_named(name: str) -> dg.JobDefinition:
    """One of the jobs above by name: how `ebm` rebuilds a job in the executor's step processes."""
    return defs.resolve_job_def(name)
