"""Benchmark assets: benchmark_qa[CODE] with blocking data-quality checks, benchmark_splits."""

import warnings
from pathlib import Path

import dagster as dg
import polars as pl
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from ebm_platform.atomic import write_text_atomic
from ebm_platform.benchmark.generation import QuestionGenerator
from ebm_platform.benchmark.quality import RuleResult, drop_near_duplicates, quality_rules, structural_rules
from ebm_platform.benchmark.review import discarded
from ebm_platform.benchmark.sources import evidence_inference_rows, frame, pubmedqa_rows, release_rows
from ebm_platform.benchmark.splits import make_splits, split_problems
from ebm_platform.defs.corpus import preview
from ebm_platform.defs.io import STAGED, latest_file, promote
from ebm_platform.defs.partitions import AFTER_DEPS, EAGER, conditions_partitions
from ebm_platform.defs.resources import BenchmarkResource, EmbedderResource, LakeResource, LLMResource
from ebm_platform.graph.extraction import entities_by_window
from ebm_platform.index.window_index import WindowIndex
from ebm_platform.lake_files import read_parquet
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.retrieval.findings import is_finding, states_about
from ebm_platform.retrieval.full_text import FullTextChannel
from ebm_platform.retrieval.fusion import top
from ebm_platform.retrieval.pipeline import fill_rows, hybrid_ranking

# Partitioned asset checks are a Dagster preview feature (1.13); they are what lets one condition's
# failed benchmark block only that condition's evaluation, so they are used and the notice silenced.
warnings.filterwarnings(
    "ignore", category=dg.PreviewWarning, message="Specifying a partitions_def on an AssetCheckSpec"
)


STRUCTURE_CHECK = dg.AssetCheckKey(dg.AssetKey("benchmark_qa"), "benchmark_structure")


def structure_verdicts(instance: dg.DagsterInstance, codes: list[str]) -> dict[str, str | None]:
    """Per partition code: None when benchmark_structure's latest evaluation passed and checked the
    latest benchmark_qa[code]; else why the partition's benchmark must not be used."""
    infos = {
        info.partition_key: info
        for info in instance.event_log_storage.get_asset_check_partition_info([STRUCTURE_CHECK], partition_keys=codes)
    }
    verdicts: dict[str, str | None] = {}
    for code in codes:
        info = infos.get(code)
        verdicts[code] = (
            "benchmark_structure has never run for this partition"
            if info is None
            else f"benchmark_structure's latest evaluation is {info.latest_execution_status.value}"
            if info.latest_execution_status != AssetCheckExecutionRecordStatus.SUCCEEDED
            else "benchmark_qa was materialised again after benchmark_structure last passed"
            if not info.is_current
            else None
        )
    return verdicts


def blocked_conditions(instance: dg.DagsterInstance, present: set[str]) -> dict[str, str]:
    """Every condition whose benchmark must stay out: those with data in hand (`present`) that the
    check has not passed, and those whose check ran and failed (their data never got promoted)."""
    return {
        code: why
        for code, why in structure_verdicts(instance, conditions_partitions.get_partition_keys()).items()
        if why and (code in present or "never run" not in why)
    }


@dg.asset(
    partitions_def=conditions_partitions,
    group_name="benchmark",
    kinds={"polars"},
    deps=["window_index"],
    automation_condition=EAGER,
    metadata={STAGED: True},
)
def benchmark_qa(
    context: dg.AssetExecutionContext,
    source_documents: pl.DataFrame,
    evidence_windows: pl.DataFrame,
    pico_extractions: pl.DataFrame,
    lake: LakeResource,
    embedder: EmbedderResource,
    benchmark: BenchmarkResource,
    llm: LLMResource,
) -> dg.Output[pl.DataFrame]:
    """One table schema for every source: the SR-RAG release (answer-level), Evidence Inference and
    PubMedQA (gold windows located in this partition) and generated questions (paper stages 1-3,
    with the configured LLM or offline; stage 1 reads each window's PICO from pico_extractions, the
    knowledge graph's extraction). Reviewer decisions (`discard`) are honoured; of near-duplicate
    questions about one outcome one is kept (`quality.drop_near_duplicates`). Written to
    staging: benchmark_structure promotes it when it passes, so a failed benchmark never replaces
    the last good one that downstream assets read."""
    code = context.partition_key
    parts = []
    generation = {"mode": "not run (source not selected or no windows)"}
    if "sr_rag_release" in benchmark.sources:
        parts.append(release_rows(benchmark.root(), lake.catalogue()).filter(pl.col("condition") == code))
    if "evidence_inference" in benchmark.sources:
        parts.append(evidence_inference_rows(code, benchmark.root(), source_documents, evidence_windows))
    if "pubmedqa" in benchmark.sources:
        parts.append(pubmedqa_rows(code, benchmark.root(), source_documents, evidence_windows))
    if "generated" in benchmark.sources and evidence_windows.height:
        index = WindowIndex(LakeLayout(lake.root).lancedb)
        full_text = FullTextChannel.of_condition(index, code)  # not the whole lake's: others may be half built
        seen: dict[str, dict] = {}  # rows of every retrieved window, read once

        def retrieve(question: str, n: int) -> list[str]:
            scores, _ = hybrid_ranking(index, full_text, question, embedder.embed([question])[0], n, [code], seen)
            return fill_rows(index, top(scores, n), [code], seen)

        generator = QuestionGenerator(llm.client(), retrieve, is_finding, states_about)
        entities = entities_by_window(pico_extractions)
        parts.append(generator.rows(code, evidence_windows, benchmark.per_grade, benchmark.seed, entities))
        generation = generator.log.as_metadata() | {"llm_usage": generator.client.usage.as_metadata()}
    bench = pl.concat(parts) if parts else frame([])
    dropped = discarded(Path(lake.root))
    bench = bench.filter(~pl.col("question_id").is_in(sorted(dropped)))
    before = bench.height
    bench, twins = drop_near_duplicates(bench, embedder.embed)
    by_source = dict(bench.group_by("source").len().iter_rows()) if bench.height else {}
    with_gold = bench.filter(pl.col("gold_window_ids").list.len() > 0).height
    return dg.Output(
        bench,
        metadata={
            "questions": dg.MetadataValue.int(bench.height),
            "by_source": dg.MetadataValue.json(by_source),
            "split_kinds": dg.MetadataValue.json(
                dict(bench.group_by("split_kind").len().iter_rows()) if bench.height else {}
            ),
            "with_gold_windows": dg.MetadataValue.int(with_gold),
            "discarded_by_review": dg.MetadataValue.int(len(dropped)),
            "near_duplicates_dropped": dg.MetadataValue.int(before - bench.height),
            "near_duplicate_pairs": dg.MetadataValue.json(twins[:20]),
            "generation_mode": dg.MetadataValue.text(generation["mode"]),
            "generation": dg.MetadataValue.json(generation),
            "preview": preview(bench, ["question_id", "source", "split_kind", "question"]),
        },
    )


def _check_result(
    rules: list[RuleResult],
    severity: dg.AssetCheckSeverity,
    bench: pl.DataFrame,
    extra: dict[str, dg.MetadataValue] | None = None,
) -> dg.AssetCheckResult:
    # The checks are partitioned like benchmark_qa: each judges one condition's questions against
    # that condition's windows, so one bad partition blocks only its own downstream work.
    conditions = sorted(bench["condition"].unique().to_list()) if bench.height else []
    metadata = {
        "scope.conditions": dg.MetadataValue.json(conditions),
        "scope.questions": dg.MetadataValue.int(bench.height),
        **(extra or {}),
    }
    for rule in rules:
        metadata[f"{rule.name}.passed"] = dg.MetadataValue.bool(rule.passed)
        for key, value in rule.metadata.items():
            metadata[f"{rule.name}.{key}"] = dg.MetadataValue.json(value) if isinstance(value, dict) else value
        if rule.failing:
            metadata[f"{rule.name}.failing_rows"] = dg.MetadataValue.json(rule.failing)
    return dg.AssetCheckResult(passed=all(r.passed for r in rules), severity=severity, metadata=metadata)


def _latest_benchmark(lake: LakeResource, code: str) -> pl.DataFrame:
    """The benchmark_qa[code] the checks judge: the staged write awaiting them, else the promoted one."""
    return read_parquet(latest_file(lake.root, "benchmark_qa", code))


@dg.asset_check(
    asset=benchmark_qa,
    blocking=True,
    partitions_def=conditions_partitions,
    additional_ins={"evidence_windows": dg.AssetIn("evidence_windows")},
    description="ERROR rules (Great Expectations suite + gold-window rules) on one condition's "
    "questions. Passing promotes the staged benchmark to where downstream assets read "
    "it; a failure leaves the last good one there, blocks what depends on the benchmark "
    "in the same run (benchmark_splits, BETR) and this partition's evaluation_report in "
    "any run.",
)
def benchmark_structure(
    context: dg.AssetCheckExecutionContext, evidence_windows: pl.DataFrame, lake: LakeResource
) -> dg.AssetCheckResult:
    code = context.partition_key
    bench = _latest_benchmark(lake, code)
    window_ids = set(evidence_windows["window_id"].to_list()) if evidence_windows.height else set()
    rules = structural_rules(bench, window_ids)
    promoted = all(r.passed for r in rules) and promote(lake.root, "benchmark_qa", code)
    return _check_result(rules, dg.AssetCheckSeverity.ERROR, bench, {"promoted": dg.MetadataValue.bool(promoted)})


@dg.asset_check(
    asset=benchmark_qa,
    partitions_def=conditions_partitions,
    additional_ins={"evidence_windows": dg.AssetIn("evidence_windows")},
    description="WARN signals: PICOT completeness, near-duplicates, verbatim copies, boilerplate answers.",
)
def benchmark_quality_signals(
    context: dg.AssetCheckExecutionContext,
    evidence_windows: pl.DataFrame,
    lake: LakeResource,
    embedder: EmbedderResource,
) -> dg.AssetCheckResult:
    benchmark_qa = _latest_benchmark(lake, context.partition_key)
    text = (
        dict(zip(evidence_windows["window_id"].to_list(), evidence_windows["text"].to_list()))
        if evidence_windows.height
        else {}
    )
    return _check_result(quality_rules(benchmark_qa, text, embedder.embed), dg.AssetCheckSeverity.WARN, benchmark_qa)


@dg.asset(
    group_name="benchmark",
    kinds={"polars"},
    ins={"bench": dg.AssetIn("benchmark_qa", partition_mapping=dg.AllPartitionMapping())},
    automation_condition=AFTER_DEPS,
)
def benchmark_splits(
    context: dg.AssetExecutionContext, bench: pl.DataFrame, lake: LakeResource
) -> dg.Output[pl.DataFrame]:
    """Query-grouped train / validation / test (60/20/20), stratified by condition and source, over
    the conditions whose current benchmark passed benchmark_structure (read from the instance, so
    this holds whichever run, backfill, sensor or CLI materialises it); the others are left out."""
    blocked = blocked_conditions(context.instance, set(bench["condition"].to_list()) if bench.height else set())
    for code, why in blocked.items():
        context.log.warning(f"benchmark_qa[{code}] left out of the splits: {why}")
    bench = bench.filter(~pl.col("condition").is_in(sorted(blocked))) if bench.height else bench
    splits = (
        make_splits(bench)
        if bench.height
        else pl.DataFrame(
            schema={"question_id": pl.String, "condition": pl.String, "source": pl.String, "split": pl.String}
        )
    )
    counts = splits.group_by("split", "source").len().sort("split", "source")
    lake.reports_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(lake.reports_dir / "benchmark_splits.csv", counts.write_csv())
    return dg.Output(
        splits,
        metadata={
            "questions": dg.MetadataValue.int(splits.height),
            "conditions_blocked": dg.MetadataValue.json(blocked),
            "by_split": dg.MetadataValue.json(
                dict(splits.group_by("split").len().iter_rows()) if splits.height else {}
            ),
            "by_split_and_source": preview(counts, counts.columns, rows=20),
        },
    )


@dg.asset_check(
    asset=benchmark_splits,
    blocking=True,
    additional_ins={"bench": dg.AssetIn("benchmark_qa", partition_mapping=dg.AllPartitionMapping())},
    description="Across conditions: every question id once, every admitted question in a split, "
    "no question text in two splits; a failure blocks candidate pools, BETR and the "
    "reranker in the same run.",
)
def splits_unique_across_conditions(benchmark_splits: pl.DataFrame, bench: pl.DataFrame) -> dg.AssetCheckResult:
    admitted = (
        bench.filter(pl.col("condition").is_in(sorted(set(benchmark_splits["condition"].to_list()))))
        if bench.height
        else bench
    )  # blocked conditions are out of the splits on purpose
    problems = split_problems(admitted, benchmark_splits) if admitted.height else {}
    return dg.AssetCheckResult(
        passed=not any(problems.values()),
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={k: dg.MetadataValue.json(v[:20]) for k, v in problems.items()}
        | {f"{k}.count": dg.MetadataValue.int(len(v)) for k, v in problems.items()},
    )
