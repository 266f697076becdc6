"""Evaluation assets: evaluation_report[CODE] (every strategy on the condition's test questions,
run only when benchmark_structure passed for that partition) -> evaluation_summary (global)."""

import base64

import dagster as dg
import polars as pl

from ebm_platform.atomic import write_bytes_atomic, write_text_atomic
from ebm_platform.defs.benchmark import blocked_conditions, structure_verdicts
from ebm_platform.defs.partitions import AFTER_DEPS, conditions_partitions
from ebm_platform.defs.progress import reporter
from ebm_platform.defs.resources import (
    BenchmarkResource,
    EmbedderResource,
    EvaluationResource,
    LakeResource,
    LLMResource,
    lake_retriever,
    retriever_key,
)
from ebm_platform.evaluation.report import (
    PROXY_NOTE,
    describe,
    evaluate,
    figures,
    gold_rest,
    html,
    paired_markdown,
    pick_questions,
    strategies_for,
    summarise,
    summary_table,
    verdict_training_questions,
)


def _means(long: pl.DataFrame) -> dg.MetadataValue:
    """A strategy x metric table of means from summary_table's long rows."""
    wide = long.pivot(on="metric", index="strategy", values="mean") if long.height else pl.DataFrame({"strategy": []})
    columns = [c for c in wide.columns if c != "strategy"]
    schema = dg.TableSchema(
        columns=[dg.TableColumn("strategy", "string"), *[dg.TableColumn(c, "float") for c in columns]]
    )
    records = [  # every record has every column (Dagster requires it): a metric a strategy lacks is None
        dg.TableRecord({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()})
        for r in wide.iter_rows(named=True)
    ]
    return dg.MetadataValue.table(records, schema=schema)


@dg.asset(
    partitions_def=conditions_partitions,
    group_name="evaluation",
    kinds={"polars"},
    deps=[
        "window_index",
        "knowledge_graph",
        "reranker_model",
        "verdict_model",
        "closed_answer_model",
        "betr_parameters",
    ],
    ins={"splits": dg.AssetIn("benchmark_splits")},
    automation_condition=AFTER_DEPS
    & ~dg.AutomationCondition.any_deps_missing()
    & dg.AutomationCondition.all_deps_blocking_checks_passed(),
)
def evaluation_report(
    context: dg.AssetExecutionContext,
    benchmark_qa: pl.DataFrame,
    splits: pl.DataFrame,
    lake: LakeResource,
    llm: LLMResource,
    embedder: EmbedderResource,
    evaluation: EvaluationResource,
    benchmark: BenchmarkResource,
) -> dg.Output:
    """Every strategy in EBM_EVAL_STRATEGIES on this condition's test questions (at most
    EBM_EVAL_MAX_QUESTIONS; the strategies in EBM_EVAL_FULL_STRATEGIES also on every other test
    question with gold windows, so their paired comparison rests on all of them): one row per
    (question, strategy) with the ranked windows, the answer, its verdict and every metric. A run
    over a range of partitions opens the lake once and writes one file per partition; it runs only
    when no partition in it is blocked (`ebm demo` runs one per partition in its workers, which
    keep the lake open from run to run)."""
    codes = context.partition_keys
    blocked = {code: why for code, why in structure_verdicts(context.instance, codes).items() if why}
    if blocked:
        raise dg.Failure(
            description="evaluation_report not run: "
            + "; ".join(f"[{code}] {why}" for code, why in blocked.items())
            + " (see the check on benchmark_qa)",
            metadata={"blocked_by": dg.MetadataValue.json(blocked)},
        )
    test = (
        benchmark_qa.join(splits.filter(pl.col("split") == "test").select("question_id"), on="question_id")
        if benchmark_qa.height
        else benchmark_qa
    )
    strategies, full = evaluation.strategy_names(), evaluation.full_strategy_names()
    retriever = lake_retriever(retriever_key(lake, llm, embedder))
    trained = verdict_training_questions(benchmark.root())
    before = retriever.client.usage.as_metadata()
    progress = reporter(context)
    reports, counts = {}, {}
    for code in codes:
        mine = test.filter(pl.col("condition") == code) if test.height else test
        questions = pick_questions(mine, evaluation.max_questions, evaluation.seed)
        said = lambda line, code=code: progress(f"{code}: {line}")  # noqa: E731
        reports[code] = evaluate(
            retriever,
            questions,
            strategies_for(strategies, full, retriever.index.count(code)),
            retriever.client,
            said,
            trained,
        )
        rest = gold_rest(mine, questions)
        if full and rest.height:
            reports[code] = pl.concat([reports[code], evaluate(retriever, rest, full, retriever.client, said, trained)])
        counts[code] = {
            "test_questions": mine.height,
            "questions_answered": questions.height,
            "gold_questions_answered_by_full_strategies": questions.height + (rest.height if full else 0),
        }
    usage = {k: v - before[k] for k, v in retriever.client.usage.as_metadata().items()}
    rows = pl.concat(list(reports.values()))
    per_partition = {
        name: dg.MetadataValue.int(value)
        if len(codes) == 1
        else dg.MetadataValue.json({code: count[name] for code, count in counts.items()})
        for name, value in counts[codes[0]].items()
    }
    return dg.Output(
        reports[codes[0]] if len(codes) == 1 else reports,
        metadata={
            **per_partition,
            "strategies": dg.MetadataValue.json(strategies),
            "answer_modes": dg.MetadataValue.json(sorted(set(rows["mode"].to_list())) if rows.height else []),
            "means": _means(summary_table(rows, None, evaluation.seed)),
            "proxies": dg.MetadataValue.text(PROXY_NOTE),
            "llm_usage": dg.MetadataValue.json(usage),
        },
    )


@dg.asset(
    group_name="evaluation",
    kinds={"polars"},
    ins={"reports": dg.AssetIn("evaluation_report", partition_mapping=dg.AllPartitionMapping())},
    automation_condition=AFTER_DEPS,
)
def evaluation_summary(
    context: dg.AssetExecutionContext, reports: pl.DataFrame, lake: LakeResource, evaluation: EvaluationResource
) -> dg.Output[pl.DataFrame]:
    """Strategy x metric overall, per condition and per benchmark source with bootstrap 95%
    intervals, sr_rag paired against each other strategy, the paper's Table 2 beside them; written
    as metadata, data_lake/reports/evaluation.html with PNG plots, and parquet (this asset). A
    partition whose benchmark is blocked now is left out, even if an older report of it exists."""
    blocked = blocked_conditions(context.instance, set(reports["condition"].to_list()) if reports.height else set())
    reports = reports.filter(~pl.col("condition").is_in(sorted(blocked))) if reports.height else reports
    if not reports.height:
        raise dg.Failure(
            "no evaluation_report rows to summarise: materialise evaluation_report first",
            metadata={"blocked": dg.MetadataValue.json(blocked)},
        )
    tables = summarise(reports, evaluation.seed)
    missing = sorted(set(conditions_partitions.get_partition_keys()) - set(reports["condition"].to_list()))
    notes = describe(reports, conditions_partitions.get_partition_keys())
    if blocked:
        notes.insert(1, "Left out, benchmark blocked: " + "; ".join(f"{c} ({why})" for c, why in blocked.items()) + ".")
    summary = tables.markdown(notes)
    images = figures(tables.overall, tables.by_condition)
    reports_dir = lake.reports_dir
    for name, data in images.items():
        write_bytes_atomic(reports_dir / name, data)
    write_text_atomic(reports_dir / "evaluation.html", html(summary, images))
    write_text_atomic(reports_dir / "evaluation.md", summary)
    inline = "\n\n".join(f"![{n}](data:image/png;base64,{base64.b64encode(d).decode()})" for n, d in images.items())
    return dg.Output(
        tables.long(),
        metadata={
            "summary": dg.MetadataValue.md(inline + "\n\n" + summary),
            "strategy_x_metric": _means(tables.overall),
            "paired_vs_sr_rag": dg.MetadataValue.md(paired_markdown(tables.paired)),
            "html": dg.MetadataValue.path(str(reports_dir / "evaluation.html")),
            "questions": dg.MetadataValue.int(reports["question_id"].n_unique()),
            "conditions_missing": dg.MetadataValue.json(missing),
            "conditions_blocked": dg.MetadataValue.json(blocked),
        },
    )
