"""BETR assets: candidate_pools (fused_candidates scored by the fine scorer) -> betr_parameters
(checked) -> betr_report."""

import base64
import io
import math
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl

from ebm_platform.atomic import write_bytes_atomic, write_text_atomic
from ebm_platform.betr.fit import GRADES, build_pairs, select_tau
from ebm_platform.betr.model import BetrParameters, parameters_path
from ebm_platform.defs.partitions import AFTER_DEPS
from ebm_platform.defs.resources import EmbedderResource, LakeResource
from ebm_platform.defs.retrieval import candidate_metadata
from ebm_platform.evaluation.betr_metrics import PAPER, betr, ceiling, evaluate, heuristic, semantic, tune_heuristic
from ebm_platform.index.window_index import WindowIndex
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.retrieval.learned import LearnedReranker, out_of_fold_scores, reranker_path
from ebm_platform.retrieval.pipeline import PipelineParams
from ebm_platform.retrieval.pools import candidate_pools as build_pools
from ebm_platform.retrieval.pools import fitted_scorer
from ebm_platform.retrieval.rerank import Reranker


@dg.asset(
    group_name="betr",
    kinds={"polars"},
    deps=["window_index", "reranker_model"],
    automation_condition=AFTER_DEPS,
    ins={
        "candidates": dg.AssetIn("fused_candidates"),
        "bench": dg.AssetIn("benchmark_qa", partition_mapping=dg.AllPartitionMapping()),
    },
)
def candidate_pools(
    candidates: pl.DataFrame, bench: pl.DataFrame, lake: LakeResource, embedder: EmbedderResource
) -> dg.Output[pl.DataFrame]:
    """Cand(q) before BETR for every benchmark question with gold windows, with s(q, d), grade,
    gold flag and the question's split: fused_candidates scored by the fine scorer the query path
    runs (the learned reranker when it passed its check; for the questions it learned from, its
    out-of-fold scores); the scorer is recorded in column `scorer`."""
    folder = reranker_path(Path(lake.root))
    learned = LearnedReranker.load(folder)
    reranker = Reranker(embedder.cross_encoder, None, learned)
    index = WindowIndex(LakeLayout(lake.root).lancedb)

    def texts(window_ids: list[str]) -> list[str]:
        text = dict(index.rows_for_windows(window_ids).select("window_id", "text").iter_rows())
        return [text[w] for w in window_ids]

    pools = build_pools(candidates, bench, reranker, texts, out_of_fold_scores(folder, learned))
    return dg.Output(
        pools,
        metadata={
            **candidate_metadata(pools),
            "grades_in_pools": dg.MetadataValue.json(
                dict(pools.group_by("grade").len().sort("grade").iter_rows()) if pools.height else {}
            ),
            "fine_scorer": dg.MetadataValue.text(reranker.fine_name()),
        },
    )


def parameter_problems(params: BetrParameters) -> list[str]:
    """Why a parameter set must not be used at query time (empty when it is sound)."""
    problems = []
    values = [params.a, *params.u.values()]
    if not all(math.isfinite(v) for v in values):
        problems.append("non-finite parameter")
    if not params.a > 0:
        problems.append(f"scale a = {params.a} is not positive")
    us = [params.u[g] for g in GRADES]
    if any(later > earlier + 1e-12 for earlier, later in zip(us, us[1:])) or us[0] != 0:
        problems.append(f"grade biases are not monotone from u_A = 0: {us}")
    return problems


def _curve_png(curve: list[float]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(range(1, len(curve) + 1), curve)
    ax.set_xlabel("epoch (Adam, lr 0.05)")
    ax.set_ylabel("MAP objective (eq. B.6)")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


@dg.asset(
    group_name="betr",
    kinds={"pytorch"},
    pool="lake_writer",
    automation_condition=AFTER_DEPS,
    ins={"pools": dg.AssetIn("candidate_pools")},
)
def betr_parameters(context: dg.AssetExecutionContext, pools: pl.DataFrame, lake: LakeResource) -> dg.MaterializeResult:
    """Fits a = exp(alpha) and u_A = 0 >= u_B >= ... >= u_E by MAP (eq. B.6, sigma_a = 5); tau by grid
    search on the validation split (criterion: query-normalised validation log-likelihood)."""
    train = build_pairs(pools.filter(pl.col("split") == "train"))
    validation = build_pairs(pools.filter(pl.col("split") == "validation"))
    if not len(train):
        raise dg.Failure(
            "no training pairs: the benchmark has no train question whose pool holds both gold and non-gold windows",
            metadata={"pool_rows": pools.height},
        )
    fitted, tau_scores = select_tau(train, validation) if len(validation) else (select_tau(train, train)[0], {})
    params = BetrParameters(
        a=fitted.a,
        u=fitted.u,
        tau=fitted.tau,
        provenance={
            "run_id": context.run_id,
            "fitted_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "benchmark_sources": sorted(set(pools["question_id"].str.split("-").list.first().to_list())),
            "train_queries": train.n_queries,
            "train_pairs": len(train),
            "validation_pairs": len(validation),
            "tau_selection": "validation log-likelihood" if tau_scores else "no validation pairs: train log-likelihood",
            "scorer": fitted_scorer(pools),
            "pool_settings": PipelineParams().settings(),
        },
    )
    problems = parameter_problems(params)
    if problems:
        raise dg.Failure(f"refusing to store BETR parameters: {problems}")
    params.save(parameters_path(Path(lake.root)))
    grade_counts = {g: int(np.sum(train.grade_pos == i) + np.sum(train.grade_neg == i)) for i, g in enumerate(GRADES)}
    at_prior = [g for g in GRADES[1:] if grade_counts[g] == 0]
    png = _curve_png(fitted.curve)
    lake.reports_dir.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(lake.reports_dir / "betr_training_curve.png", base64.b64decode(png))
    return dg.MaterializeResult(
        metadata={
            "a": dg.MetadataValue.float(round(params.a, 4)),
            **{f"u_{g}": dg.MetadataValue.float(round(params.u[g], 4)) for g in GRADES},
            "tau": dg.MetadataValue.float(params.tau),
            "tau_grid_validation_loglik": dg.MetadataValue.json({str(t): round(v, 5) for t, v in tau_scores.items()}),
            "paper": dg.MetadataValue.json({"a": 1.0348, "u": [0, -0.1287, -0.2575, -0.3863, -0.5151], "tau": 1.0}),
            "train_queries": dg.MetadataValue.int(train.n_queries),
            "train_pairs": dg.MetadataValue.int(len(train)),
            "pairs_by_grade": dg.MetadataValue.json(train.grade_pair_counts()),
            "grades_without_pairs_stay_at_prior": dg.MetadataValue.json(at_prior),
            "adam_vs_lbfgs_objective_gap": dg.MetadataValue.float(fitted.gap),
            "fit_seconds": dg.MetadataValue.float(round(fitted.seconds, 2)),
            "training_curve": dg.MetadataValue.md(f"![training curve](data:image/png;base64,{png})"),
        }
    )


@dg.asset_check(
    asset=betr_parameters, blocking=True, description="rejects non-monotone, non-finite or a <= 0 parameters"
)
def betr_parameters_sound(lake: LakeResource) -> dg.AssetCheckResult:
    params = BetrParameters.load(parameters_path(Path(lake.root)))
    problems = ["no stored parameters"] if params is None else parameter_problems(params)
    return dg.AssetCheckResult(
        passed=not problems,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"problems": dg.MetadataValue.json(problems)},
    )


def _table(rows: dict[str, dict], with_paper: bool) -> list[str]:
    metrics = ("AvgGrade", "HGSR", "SA-NDCG", "PrefAcc")
    lines = [
        "| ranker | "
        + " | ".join(metrics)
        + " | queries |"
        + (" paper (AvgGrade/HGSR/SA-NDCG/PrefAcc) |" if with_paper else ""),
        "|---" * (len(metrics) + 2 + with_paper) + "|",
    ]
    for name, m in rows.items():
        paper = "/".join(str(PAPER[name][k]) for k in metrics) if name in PAPER else "-"
        cells = " | ".join("n/a" if isinstance(m[k], float) and math.isnan(m[k]) else f"{m[k]:.3f}" for k in metrics)
        lines.append(f"| {name} | {cells} | {m['queries']} |" + (f" {paper} |" if with_paper else ""))
    return lines


CEILING = "Ceiling (gold first, higher grade first)"


@dg.asset(
    group_name="betr",
    kinds={"polars"},
    deps=["betr_parameters"],
    automation_condition=AFTER_DEPS,
    ins={"pools": dg.AssetIn("candidate_pools")},
)
def betr_report(pools: pl.DataFrame, lake: LakeResource) -> dg.MaterializeResult:
    """Semantic-only, Heuristic (c tuned on validation) and BETR on the test split at K = 12,
    overall and per condition, beside the paper's Table 1."""
    params = BetrParameters.load(parameters_path(Path(lake.root)))
    test, validation = pools.filter(pl.col("split") == "test"), pools.filter(pl.col("split") == "validation")
    c = tune_heuristic(validation) if validation.height else 0.1
    rankers = {"Semantic-only": semantic, "Heuristic": heuristic(c), "BETR": betr(params.a, params.u)}
    overall = {name: evaluate(test, r) for name, r in rankers.items()} | {CEILING: ceiling(test)}
    lines = [
        "# BETR reranking quality (test split, K = 12)",
        "",
        f"Parameters: a = {params.a:.4f}, u = {', '.join(f'{g} {params.u[g]:.4f}' for g in GRADES)}, "
        f"tau = {params.tau} (paper: a = 1.0348, u = 0 / -0.1287 / -0.2575 / -0.3863 / -0.5151, tau = 1.0). "
        f"Heuristic c = {c} (tuned on validation SA-NDCG).",
        "",
    ]
    lines += _table(overall, with_paper=True)
    grade_mix = dict(test.group_by("grade").len().sort("grade").iter_rows()) if test.height else {}
    gold_mix = (
        dict(test.filter(pl.col("gold")).group_by("grade").len().sort("grade").iter_rows()) if test.height else {}
    )
    pairs = build_pairs(test)
    graded_queries = test.filter(pl.col("gold") & pl.col("grade").is_in(["A", "B"]))["question_id"].n_unique()
    lines += [
        "",
        f"{CEILING}: the ideal order of these pools. {graded_queries} of {test['question_id'].n_unique()} "
        f"test questions have a grade A or B gold window; with every gold window in the top 12, HGSR is "
        f"{overall[CEILING]['HGSR']:.3f} against Semantic-only's {overall['Semantic-only']['HGSR']:.3f} (the "
        f"paper's BETR gained 0.111 over Semantic-only). A ranker that pushes lower-grade gold windows out "
        f"of the top 12 raises HGSR and loses SA-NDCG.",
        "",
        f"Grades in the test pools: {grade_mix or 'none'}; among gold windows: {gold_mix or 'none'}. "
        f"Absent grades cannot be calibrated or rewarded here.",
        f"Test pairs by grade pair (gold>non-gold): {pairs.grade_pair_counts() or 'none'}.",
        "",
        "Metric definitions: see ebm_platform/evaluation/betr_metrics.py (AvgGrade = mean A5..E1 score of "
        "gold windows in the top 12; HGSR = share of those that are A or B; SA-NDCG = NDCG@12 with gain "
        "gold x grade score / 5; PrefAcc = share of gold/non-gold pool pairs ordered gold first).",
        "",
        "## Per condition",
        "",
    ]
    for (condition,), group in sorted(test.group_by("condition"), key=lambda kv: kv[0]):
        rows = {n: evaluate(group, r) for n, r in rankers.items()} | {CEILING: ceiling(group)}
        lines += [f"### {condition}", ""] + _table(rows, False) + [""]
    report = "\n".join(lines) + "\n"
    lake.reports_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(lake.reports_dir / "betr_report.md", report)
    return dg.MaterializeResult(
        metadata={
            "report": dg.MetadataValue.md(report),
            "test_queries": dg.MetadataValue.int(overall["BETR"]["queries"]),
            "hgsr_ceiling": dg.MetadataValue.float(float(overall[CEILING]["HGSR"])),
            **{
                f"{n}.{k}": dg.MetadataValue.float(float(v))
                for n, m in overall.items()
                if n in rankers
                for k, v in m.items()
                if k != "queries"
            },
        }
    )
