"""Retrieval assets: fused_candidates (every benchmark question's SR-RAG candidates with their
features) -> reranker_model (checked), the learned fine scorer of this lake; verdict_model
(checked), the learned verdict of the answers -> closed_answer_model (checked), the reader of
closed questions' yes / no / maybe."""

from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import dagster as dg
import polars as pl

from ebm_platform.benchmark.evidence_inference import labelled_prompts
from ebm_platform.benchmark.splits import SPLITS
from ebm_platform.defs.io import model_folder, promote_model
from ebm_platform.defs.partitions import AFTER_DEPS
from ebm_platform.defs.progress import reporter
from ebm_platform.defs.resources import (
    BenchmarkResource,
    EmbedderResource,
    LakeResource,
    LLMResource,
    build_retriever,
    retriever_key,
)
from ebm_platform.evaluation.retrieval_eval import benchmark_items
from ebm_platform.process import cores
from ebm_platform.retrieval.closed_answer import ClosedAnswerModel
from ebm_platform.retrieval.learned import (
    MIN_GATE_QUESTIONS,
    cross_validate,
    gate_line,
    passes_gate,
    reranker_path,
    save_out_of_fold,
    without_prompts,
)
from ebm_platform.retrieval.reranker_data import candidate_rows_in_workers
from ebm_platform.retrieval.verdict import VerdictModel
from ebm_platform.settings import training_limit
from ebm_platform.trained_models import cached_closed_model, cached_verdict_model


@dg.asset(
    group_name="retrieval",
    kinds={"polars"},
    automation_condition=AFTER_DEPS,
    deps=["window_index", "knowledge_graph", "knowledge_tree"],
    ins={
        "bench": dg.AssetIn("benchmark_qa", partition_mapping=dg.AllPartitionMapping()),
        "splits": dg.AssetIn("benchmark_splits"),
    },
)
def fused_candidates(
    context: dg.AssetExecutionContext,
    bench: pl.DataFrame,
    splits: pl.DataFrame,
    lake: LakeResource,
    llm: LLMResource,
    embedder: EmbedderResource,
) -> dg.Output[pl.DataFrame]:
    """SR-RAG up to the fine scorer for every benchmark question with gold windows, each split: the
    fused candidates with their features and gold flags. The reranker trains on the train and
    validation rows; candidate_pools scores all of them with the fine scorer it chose, so the
    retrieval pipeline runs once per question for both."""
    rows = candidate_rows_in_workers(
        partial(build_retriever, retriever_key(lake, llm, embedder)),
        {split: benchmark_items(bench, splits, split) for split in SPLITS},
        cores(),
        reporter(context),
    )
    return dg.Output(rows, metadata=candidate_metadata(rows))


def candidate_metadata(rows: pl.DataFrame) -> dict[str, dg.MetadataValue]:
    """Questions (per split), candidates and gold candidates of a (question, window) frame."""
    questions = rows.select("question_id", "split").unique()
    return {
        "questions": dg.MetadataValue.int(questions.height),
        "by_split": dg.MetadataValue.json(
            dict(questions.group_by("split").len().iter_rows()) if questions.height else {}
        ),
        "candidates": dg.MetadataValue.int(rows.height),
        "gold_candidates": dg.MetadataValue.int(int(rows["gold"].sum()) if rows.height else 0),
    }


@dg.asset(
    group_name="retrieval",
    kinds={"lightgbm"},
    pool="lake_writer",
    automation_condition=AFTER_DEPS,
    ins={"candidates": dg.AssetIn("fused_candidates")},
)
def reranker_model(
    context: dg.AssetExecutionContext, candidates: pl.DataFrame, lake: LakeResource, benchmark: BenchmarkResource
) -> dg.Output[pl.DataFrame]:
    """LambdaRank over the SR-RAG candidates' features (retrieval/features.py), learned from every
    labelled question of the benchmark's train and validation splits and gated on their
    out-of-fold scores against the hand-set scorer (retrieval/learned.py: cross_validate); kept in
    <lake>/models/reranker and used by the query path only when it passed. Evidence Inference's
    validation-split prompts are left out, so that `ebm eval retrieval --reranker shipped` can judge
    the shipped model on that split."""
    rows = without_prompts(
        candidates.filter(pl.col("split").is_in(["train", "validation"])),
        set(labelled_prompts(benchmark.root(), "validation")["prompt_id"].to_list()),
    )
    if not rows.height or not rows["gold"].any():
        raise dg.Failure(
            "no train or validation question has a gold window among its candidates: nothing to learn from",
            metadata={"rows": rows.height},
        )
    model, report = cross_validate(rows, context.run_id.split("-")[0])
    model.meta.update(
        trained_on="benchmark_qa train and validation splits",
        run_id=context.run_id,
        fitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    model.save(reranker_path(Path(lake.root)))
    save_out_of_fold(reranker_path(Path(lake.root)), report["out_of_fold"])
    context.log.info(gate_line(model.meta))
    table = pl.DataFrame(
        [
            {
                "source": source,
                "ranker": name,
                "R@10": m.get("R@10"),
                "Hit@10": m.get("Hit@10"),
                "MRR": m["MRR"],
                "questions": m["questions"],
            }
            for source, comparison in [("all", report["validation"]), *report["by_source"].items()]
            for name, m in comparison.items()
        ]
    )
    return dg.Output(
        table,
        metadata={
            "beats_hand_set": dg.MetadataValue.bool(model.usable),
            "gate": dg.MetadataValue.text(gate_line(model.meta)),
            "validation": dg.MetadataValue.md(table.to_pandas().to_markdown(index=False, floatfmt=".3f")),
            "train_questions": dg.MetadataValue.int(model.meta["train_questions"]),
            "rounds": dg.MetadataValue.int(model.meta["rounds"]),
            "feature_gain": dg.MetadataValue.json(dict(list(model.meta["gain"].items())[:12])),
        },
    )


@dg.asset_check(
    asset=reranker_model,
    blocking=True,
    description="the learned fine scorer's out-of-fold scores must beat the hand-set scorer's (MRR "
    "higher, R@10 not lower) on at least MIN_GATE_QUESTIONS train and validation questions; "
    "otherwise the query path keeps the hand-set scorer",
)
def reranker_beats_hand_set(reranker_model: pl.DataFrame) -> dg.AssetCheckResult:
    pooled = reranker_model.filter(pl.col("source") == "all")
    rows = {r["ranker"]: r for r in pooled.iter_rows(named=True)}
    learned, hand = rows.get("learned"), rows.get("hand_set")
    questions = learned["questions"] if learned else 0
    passed = passes_gate(learned, hand)
    return dg.AssetCheckResult(
        passed=passed,
        metadata={
            "questions": questions,
            "min_questions": MIN_GATE_QUESTIONS,
            "learned_MRR": learned["MRR"] if learned else None,
            "hand_set_MRR": hand["MRR"] if hand else None,
            "learned_R@10": learned["R@10"] if learned else None,
            "hand_set_R@10": hand["R@10"] if hand else None,
        },
    )


@dg.asset(group_name="retrieval", kinds={"sklearn"}, pool="lake_writer")
def verdict_model(
    context: dg.AssetExecutionContext, lake: LakeResource, benchmark: BenchmarkResource, embedder: EmbedderResource
) -> dg.Output[pl.DataFrame]:
    """TF-IDF + logistic regression trained on Evidence Inference's train-split evidence spans
    (label = the prompt's label), read with the question's arms by an orientation classifier, scored
    on the validation spans (as asked and with the arms exchanged) beside the sentence read alone,
    the offline rules and the majority class, and the evidence-sentence scorer that chooses the sentences an offline answer
    quotes (scored against the cosine choice on the validation prompts); staged in
    <lake>/staging/models/verdict until its blocking check promotes it to <lake>/models/verdict,
    which every offline answer reads (the rules answer while the lake holds no promoted model)."""
    model = cached_verdict_model(benchmark.root(), embedder.encoder(), reporter(context), training_limit())
    model.save(model_folder(lake.root, "verdict", staging=True))  # promoted by its blocking check
    report, quoted = model.meta["validation_spans"], model.meta["sentence_scorer"]["validation"]
    table = pl.DataFrame(
        [
            {"verdict": name, "accuracy": m["accuracy"], "macro_f1": m["macro_f1"], "spans": m["questions"]}
            for name, m in report.items()
        ]
        + [
            {
                "verdict": f"quoted sentences: {name}",
                "accuracy": quoted[name]["accuracy"],
                "macro_f1": quoted[name]["macro_f1"],
                "spans": quoted[name]["questions"],
            }
            for name in ("learned", "cosine")
        ]
    )
    return dg.Output(
        table,
        metadata={
            "train_spans": dg.MetadataValue.int(model.meta["trained_on_spans"]),
            **{f"{name} macro-F1": dg.MetadataValue.float(m["macro_f1"]) for name, m in report.items()},
            **{
                f"quoted sentences {name} P@1": dg.MetadataValue.float(quoted[name]["P@1"])
                for name in ("learned", "cosine")
            },
            "sentence scorer weights": dg.MetadataValue.json(model.sentences.weights()),
        },
    )


@dg.asset_check(
    asset=verdict_model,
    blocking=True,
    description="the learned verdict must beat the majority class and the rules on validation spans, read "
    "with the question it must beat the sentence alone when the question's arms are exchanged, and "
    "the verdict over the sentences the scorer quotes must match or beat the cosine choice "
    "(macro-F1); passing promotes the staged model to where answers read it, so a failed "
    "model never replaces the last good one and a lake without one answers with the rules",
)
def verdict_model_beats_baselines(verdict_model: pl.DataFrame, lake: LakeResource) -> dg.AssetCheckResult:
    f1 = dict(zip(verdict_model["verdict"].to_list(), verdict_model["macro_f1"].to_list()))
    passed = (
        f1.get("learned", 0.0) > max(f1.get("majority class", 0.0), f1.get("rules", 0.0))
        and f1.get("learned, the arms exchanged in the question", 0.0)
        > f1.get("sentence alone, the arms exchanged", 1.0)
        and f1.get("quoted sentences: learned", 0.0) >= f1.get("quoted sentences: cosine", 1.0)
    )
    promoted = passed and promote_model(lake.root, "verdict", VerdictModel.FILE)
    return dg.AssetCheckResult(
        passed=passed,
        metadata={**{k: dg.MetadataValue.float(v) for k, v in f1.items()}, "promoted": dg.MetadataValue.bool(promoted)},
    )


@dg.asset(group_name="retrieval", kinds={"sklearn"}, pool="lake_writer", deps=[verdict_model])
def closed_answer_model(
    context: dg.AssetExecutionContext, lake: LakeResource, benchmark: BenchmarkResource, embedder: EmbedderResource
) -> dg.Output[pl.DataFrame]:
    """The closed-question reader (yes / no / maybe from the question with its evidence) fitted on
    PubMedQA's 500 expert-labelled questions, each with its own abstract (not its conclusion), with
    the verdict model's span classifier (once per environment: trained_models.cached_closed_model);
    ten-fold cross-validated beside the verdict mapping and the majority class; staged in
    <lake>/staging/models/closed_answer until its blocking check promotes it (without one, closed
    questions are answered from the verdict and the question's direction)."""
    verdict = cached_verdict_model(benchmark.root(), embedder.encoder(), limit=training_limit())
    model = cached_closed_model(benchmark.root(), verdict, reporter(context))
    model.save(model_folder(lake.root, "closed_answer", staging=True))  # promoted by its blocking check
    report = model.meta["cross_validation"]
    names = ("learned", "verdict mapping", "majority class")
    context.log.info(
        "closed_answer_model, 10-fold cross-validated on %d PubMedQA questions: %s",
        report["questions"],
        "; ".join(f"{n} accuracy {report[n]['accuracy']:.3f} macro-F1 {report[n]['macro_f1']:.3f}" for n in names),
    )
    table = pl.DataFrame(
        [{"reader": n, "accuracy": report[n]["accuracy"], "macro_f1": report[n]["macro_f1"]} for n in names]
    )
    return dg.Output(
        table,
        metadata={
            "questions": dg.MetadataValue.int(report["questions"]),
            **{f"{n} accuracy": dg.MetadataValue.float(report[n]["accuracy"]) for n in names},
            **{f"{n} macro-F1": dg.MetadataValue.float(report[n]["macro_f1"]) for n in names},
            "learned confusion (gold -> predicted)": dg.MetadataValue.json(report["learned"]["confusion"]),
        },
    )


@dg.asset_check(
    asset=closed_answer_model,
    blocking=True,
    description="cross-validated, the reader must beat the majority class on accuracy and macro-F1 and the "
    "verdict mapping on macro-F1; passing promotes the staged reader to where answers read it",
)
def closed_answer_model_beats_baselines(closed_answer_model: pl.DataFrame, lake: LakeResource) -> dg.AssetCheckResult:
    rows = {r["reader"]: r for r in closed_answer_model.iter_rows(named=True)}
    learned, mapping, constant = rows["learned"], rows["verdict mapping"], rows["majority class"]
    passed = learned["accuracy"] > constant["accuracy"] and learned["macro_f1"] > max(
        constant["macro_f1"], mapping["macro_f1"]
    )
    promoted = passed and promote_model(lake.root, "closed_answer", ClosedAnswerModel.FILE)
    return dg.AssetCheckResult(
        passed=passed,
        metadata={
            **{f"{name} {m}": dg.MetadataValue.float(rows[name][m]) for name in rows for m in ("accuracy", "macro_f1")},
            "promoted": dg.MetadataValue.bool(promoted),
        },
    )
