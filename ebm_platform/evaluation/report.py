"""Evaluation reports: every strategy on a benchmark split, one row per (question, strategy), and
the summary tables over them (strategy x metric with bootstrap 95% intervals, per condition and per
source, sr_rag paired against each other strategy, the paper's Table 2 beside them).

Metrics per row (answer_metrics.py): R@10 on questions with gold windows; NC / NC_proxy on
questions with nuggets; Faith / Faith_proxy; SS on questions with a reference answer; PM_proxy
on questions with gold P/I/C/O/T fields; `verdict_correct` on Evidence Inference (label) and
PubMedQA (yes / no / maybe: the bottom line's closed answer; not scored while the closed-question
reader is fitted on them) questions. A metric a question cannot have is
null, and every mean says over how many questions it was taken.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ebm_platform.benchmark.evidence_inference import prompts
from ebm_platform.benchmark.sources import ei_prompt_of, pubmedqa_path, pubmedqa_pmid_of
from ebm_platform.evaluation.answer_metrics import (
    answer_statements,
    faithfulness,
    nugget_coverage,
    pico_match,
    semantic_similarity,
)
from ebm_platform.evaluation.answers import yes_no_maybe
from ebm_platform.intervals import interval, paired_difference
from ebm_platform.llm.client import LLMClient
from ebm_platform.retrieval.ask import answer_from
from ebm_platform.retrieval.pipeline import Retriever
from ebm_platform.retrieval.strategies import retrieve

K = 10
PROXY_NOTE = (
    "Metrics named *_proxy are offline stand-ins for the paper's LLM judges (answer_metrics.py), never "
    "the paper's NC / Faith / PM. The offline answer is extractive: it quotes its cited windows, so "
    "Faith_proxy near 1 is true by construction, not an achievement. SS uses the platform's MiniLM."
)
METRICS = ("R@10", "NC", "NC_proxy", "Faith", "Faith_proxy", "SS", "PM_proxy", "verdict_accuracy")
REFERENCE = "sr_rag"
GOLD_VERDICT_SOURCES = ("evidence_inference", "pubmedqa")
# SR-RAG paper, Table 2 (R@10 / NC / Faith / SS / PM), methods.md.
PAPER_TABLE2 = {
    "Naive RAG": (0.643, 0.718, 0.769, 0.841, 0.582),
    "MS GraphRAG": (0.698, 0.749, 0.784, 0.856, 0.621),
    "LightRAG": (0.721, 0.762, 0.791, 0.862, 0.643),
    "Youtu-GraphRAG": (0.741, 0.773, 0.798, 0.868, 0.659),
    "Med-R2": (0.724, 0.758, 0.803, 0.861, 0.678),
    "SR-RAG (DeepSeek-V3)": (0.812, 0.830, 0.819, 0.882, 0.788),
}
PAPER_ABLATIONS = {
    "w/o HyDE": "R@10 0.764",
    "w/o ColBERT": "R@10 0.748",
    "w/o PICO schema": "R@10 0.753, PM 0.701",
    "w/o BETR": "R@10 0.810, PM 0.768",
}
ROW_SCHEMA = {
    "question_id": pl.String,
    "condition": pl.String,
    "source": pl.String,
    "strategy": pl.String,
    "mode": pl.String,
    "question": pl.String,
    "ranked_window_ids": pl.List(pl.String),
    "answer": pl.String,
    "verdict": pl.String,
    "gold_verdict": pl.String,
    "certainty": pl.String,
    **{m: pl.Float64 for m in METRICS},
    "seconds": pl.Float64,
}


def gold_verdict(row: dict, trained_verdicts: frozenset[str] = frozenset()) -> str | None:
    """The label an Evidence Inference or PubMedQA question carries as its exact answer; None for an
    Evidence Inference prompt in `trained_verdicts` (its evidence spans trained the verdict model, so
    its verdict is not evaluated)."""
    if row["source"] not in GOLD_VERDICT_SOURCES:
        return None
    if row["source"] == "evidence_inference" and ei_prompt_of(row["question_id"]) in trained_verdicts:
        return None
    if row["source"] == "pubmedqa" and f"pubmedqa:{pubmedqa_pmid_of(row['question_id'])}" in trained_verdicts:
        return None
    return row["exact_answer"]


def verdict_training_questions(datasets_dir: Path) -> frozenset[str]:
    """The questions whose evidence trained the answer's readers: the Evidence Inference prompt ids
    of the verdict model's train spans and, as `pubmedqa:<PMID>`, every PubMedQA question the
    closed-question reader is fitted on. The platform benchmark admits them; their verdicts are not
    evaluated (`ebm eval answers --benchmark pubmedqa` scores PubMedQA with held-out fold readers)."""
    pubmedqa = pubmedqa_path(datasets_dir)
    pmids = json.loads(pubmedqa.read_text(encoding="utf-8")) if pubmedqa.is_file() else {}
    return frozenset(prompts(datasets_dir, "train")["prompt_id"].to_list()) | {f"pubmedqa:{p}" for p in pmids}


def pick_questions(bench: pl.DataFrame, limit: int, seed: int) -> pl.DataFrame:
    """At most `limit` questions (0: all), taken round-robin over sources in a seeded order, so a
    capped run still sees every kind of question the partition has."""
    if not limit or bench.height <= limit:
        return bench
    ranked = bench.with_columns(
        pl.col("question_id")
        .map_elements(lambda q: hashlib.sha256(f"{seed}|{q}".encode()).hexdigest(), return_dtype=pl.String)
        .alias("_h")
    )
    ranked = ranked.sort("_h").with_columns(pl.int_range(pl.len()).over("source").alias("_turn"))
    return ranked.sort("_turn", "source").head(limit).drop("_h", "_turn")


def gold_rest(bench: pl.DataFrame, picked: pl.DataFrame) -> pl.DataFrame:
    """The questions of `bench` with gold windows that `picked` does not hold (what the full
    strategies answer beyond the capped sample)."""
    if not bench.height:
        return bench
    return bench.filter(
        (pl.col("gold_window_ids").list.len() > 0) & ~pl.col("question_id").is_in(picked["question_id"].to_list())
    )


def evaluate_question(
    retriever: Retriever, row: dict, strategy: str, client: LLMClient, trained_verdicts: frozenset[str] = frozenset()
) -> dict:
    """One question answered by one strategy, with every metric it can have."""
    started = time.perf_counter()
    retrieval = retrieve(retriever, row["question"], strategy)
    answer = answer_from(retriever, retrieval)
    seconds = time.perf_counter() - started
    ranked = [c["window_id"] for c in answer["citations"]]
    statements = answer_statements(answer)
    embed = retriever._embed
    sentences = {w: d["sentences"] for w, d in retriever.index.late_interaction(ranked).items()} if ranked else {}
    out = {m: None for m in METRICS}
    gold = set(row["gold_window_ids"] or [])
    if gold:
        out["R@10"] = len(gold & set(ranked[:K])) / len(gold)
    for result in (
        nugget_coverage(list(row["nuggets_vital"] or []), list(row["nuggets_okay"] or []), statements, embed, client),
        faithfulness(statements, sentences, embed, client),
    ):
        if result:
            out[result[0]] = result[1]
    out["SS"] = semantic_similarity(
        statements,
        row["exact_answer"] or row["ideal_answer"] if row["source"] not in GOLD_VERDICT_SOURCES else None,
        embed,
    )
    out["PM_proxy"] = pico_match({f: row[f"gold_{f.lower()}"] for f in "PICOT"}, statements, embed)
    label = gold_verdict(row, trained_verdicts)
    verdict = yes_no_maybe(answer) if row["source"] == "pubmedqa" else answer["verdict"]
    if label:
        out["verdict_accuracy"] = float(verdict == label)
    return {
        "question_id": row["question_id"],
        "condition": row["condition"],
        "source": row["source"],
        "strategy": strategy,
        "mode": answer["mode"],
        "question": row["question"],
        "ranked_window_ids": ranked,
        "answer": " ".join(s.text for s in statements),
        "verdict": verdict,
        "gold_verdict": label,
        "certainty": answer.get("certainty", {}).get("level"),
        **out,
        "seconds": seconds,
    }


def evaluate(
    retriever: Retriever,
    questions: pl.DataFrame,
    strategies: Iterable[str],
    client: LLMClient,
    progress: Callable[[str], None] | None = None,
    trained_verdicts: frozenset[str] = frozenset(),
) -> pl.DataFrame:
    """Every (question, strategy) row of one report (`trained_verdicts`: see `gold_verdict`)."""
    rows = []
    strategies = list(strategies)
    for s, strategy in enumerate(strategies, 1):
        for n, row in enumerate(questions.iter_rows(named=True), 1):
            rows.append(evaluate_question(retriever, row, strategy, client, trained_verdicts))
            if progress and (n % 10 == 0 or n == questions.height):
                progress(f"{strategy} ({s}/{len(strategies)}): {n}/{questions.height} questions")
    return pl.DataFrame(rows, schema=ROW_SCHEMA) if rows else pl.DataFrame(schema=ROW_SCHEMA)


def present_metrics(rows: pl.DataFrame) -> list[str]:
    """The metrics some row has a value for, in METRICS order."""
    return [m for m in METRICS if m in rows.columns and rows[m].null_count() < rows.height]


def summary_table(rows: pl.DataFrame, by: str | None, seed: int) -> pl.DataFrame:
    """Long table: scope value, strategy, metric, n, mean and its bootstrap 95% interval."""
    out = []
    keys = ["strategy"] + ([by] if by else [])
    for key, group in rows.group_by(keys, maintain_order=True):
        for metric in present_metrics(group):
            values = group[metric].drop_nulls().to_numpy().astype(float)
            low, high = interval(values, seed)
            out.append(
                {
                    "scope": by or "overall",
                    "group": key[1] if by else "all",
                    "strategy": key[0],
                    "metric": metric,
                    "n": len(values),
                    "mean": float(values.mean()),
                    "low": low,
                    "high": high,
                }
            )
    return pl.DataFrame(
        out,
        schema={
            "scope": pl.String,
            "group": pl.String,
            "strategy": pl.String,
            "metric": pl.String,
            "n": pl.Int64,
            "mean": pl.Float64,
            "low": pl.Float64,
            "high": pl.Float64,
        },
    )


def paired_comparison(rows: pl.DataFrame, seed: int, reference: str = REFERENCE) -> pl.DataFrame:
    """`reference` minus each other strategy on the questions both answered, per metric: mean
    difference, paired bootstrap 95% interval, and wins / ties / losses of the reference."""
    out = []
    base = rows.filter(pl.col("strategy") == reference)
    for other in [s for s in rows["strategy"].unique(maintain_order=True).to_list() if s != reference]:
        pair = base.join(rows.filter(pl.col("strategy") == other), on="question_id", suffix="_other")
        for metric in present_metrics(base):
            both = pair.filter(pl.col(metric).is_not_null() & pl.col(f"{metric}_other").is_not_null())
            if not both.height:
                continue
            out.append(
                {
                    "strategy": other,
                    "metric": metric,
                    **paired_difference(both[metric].to_numpy(), both[f"{metric}_other"].to_numpy(), seed),
                }
            )
    return pl.DataFrame(
        out,
        schema={
            "strategy": pl.String,
            "metric": pl.String,
            "n": pl.Int64,
            "difference": pl.Float64,
            "low": pl.Float64,
            "high": pl.Float64,
            "wins": pl.Int64,
            "ties": pl.Int64,
            "losses": pl.Int64,
        },
    )


@dataclass
class Summary:
    """The summary tables of one set of report rows."""

    overall: pl.DataFrame
    by_condition: pl.DataFrame
    by_source: pl.DataFrame
    paired: pl.DataFrame

    def long(self) -> pl.DataFrame:
        return pl.concat([self.overall, self.by_condition, self.by_source])

    def markdown(self, notes: list[str]) -> str:
        return markdown(self.overall, self.paired, self.by_source, self.by_condition, notes)


def summarise(rows: pl.DataFrame, seed: int) -> Summary:
    """Every summary table of `rows` (one bootstrap seed for all)."""
    return Summary(
        summary_table(rows, None, seed),
        summary_table(rows, "condition", seed),
        summary_table(rows, "source", seed),
        paired_comparison(rows, seed),
    )


def strategies_for(strategies: list[str], full: list[str], windows: int) -> list[str]:
    """The strategies a condition's sampled test questions are answered by: all of them, or only the
    full strategies (sr_rag and naive in the demo) when the condition's corpus holds no evidence window
    (`windows` = 0): every system would answer from other conditions' evidence, and comparing them
    there measures nothing about the condition."""
    return strategies if windows or not full else [s for s in strategies if s in full]


def describe(rows: pl.DataFrame, expected_conditions: Iterable[str]) -> list[str]:
    """The summary's opening notes: what was evaluated, what is missing, what the proxies are."""
    reported = set(rows["condition"].unique().to_list())
    missing = sorted(set(expected_conditions) - reported)
    answered = rows.group_by("condition").agg(pl.col("strategy").n_unique())
    fewer = sorted(answered.filter(pl.col("strategy") < rows["strategy"].n_unique())["condition"].to_list())
    return [
        f"{rows['question_id'].n_unique()} test questions from {len(reported)} conditions; {rows.height} "
        f"(question, strategy) rows; answer modes: {', '.join(sorted(set(rows['mode'].to_list())))}.",
        f"Conditions without a report row (no test questions, or blocked): {', '.join(missing) or 'none'}.",
        f"Conditions whose corpus holds no evidence window, answered by the full strategies only (the other "
        f"systems would answer from other conditions' evidence): {', '.join(fewer) or 'none'}.",
        "",
        PROXY_NOTE,
        "",
        "Intervals: percentile bootstrap of the mean, 2,000 resamples, seeded; paired intervals resample the "
        "same questions for both strategies.",
    ]


def _cell(mean: float, low: float, high: float) -> str:
    return f"{mean:.3f}" + ("" if np.isnan(low) else f" [{low:.3f}, {high:.3f}]")


def paired_markdown(paired: pl.DataFrame) -> str:
    """The paired comparison as a Markdown table."""
    lines = ["| strategy | metric | n | difference [95% interval] | wins / ties / losses |", "|---|---|---|---|---|"]
    lines += [
        f"| {r['strategy']} | {r['metric']} | {r['n']} | {_cell(r['difference'], r['low'], r['high'])} | "
        f"{r['wins']} / {r['ties']} / {r['losses']} |"
        for r in paired.iter_rows(named=True)
    ]
    return "\n".join(lines)


def wide_markdown(table: pl.DataFrame, metrics: list[str]) -> list[str]:
    """One row per (group, strategy), one column per metric: `mean (n)`."""
    lines = [f"| {table['scope'][0]} | strategy | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 2) + "|"]
    cells = {(r["group"], r["strategy"], r["metric"]): r for r in table.iter_rows(named=True)}
    for group, strategy in (
        table.select("group", "strategy").unique(maintain_order=True).sort("group", maintain_order=True).iter_rows()
    ):
        row = [f"{c['mean']:.3f} ({c['n']})" if (c := cells.get((group, strategy, m))) else "-" for m in metrics]
        lines.append(f"| {group} | {strategy} | " + " | ".join(row) + " |")
    return lines


def markdown(
    overall: pl.DataFrame, paired: pl.DataFrame, by_source: pl.DataFrame, by_condition: pl.DataFrame, notes: list[str]
) -> str:
    """The summary as Markdown: strategy x metric with intervals, the paired table, the tables by
    source and by condition, the paper's Table 2."""
    metrics = [m for m in METRICS if m in set(overall["metric"].to_list())]
    lines = [
        "# Evaluation summary",
        "",
        *notes,
        "",
        "## Strategy x metric (mean [bootstrap 95% interval], n)",
        "",
        "| strategy | " + " | ".join(metrics) + " |",
        "|---" * (len(metrics) + 1) + "|",
    ]
    cells = {(r["strategy"], r["metric"]): r for r in overall.iter_rows(named=True)}
    for strategy in overall["strategy"].unique(maintain_order=True).to_list():
        row = [
            (_cell(c["mean"], c["low"], c["high"]) + f" n={c['n']}") if (c := cells.get((strategy, m))) else "-"
            for m in metrics
        ]
        lines.append(f"| {strategy} | " + " | ".join(row) + " |")
    if paired.height:
        lines += [
            "",
            f"## {REFERENCE} minus each strategy, paired over the same questions",
            "",
            paired_markdown(paired),
        ]
    for title, table in (("benchmark source", by_source), ("condition", by_condition)):
        if table.height:
            lines += ["", f"## By {title} (mean, questions)", "", *wide_markdown(table, metrics)]
    lines += [
        "",
        "## The paper's Table 2 (SR-RAG benchmark test split, n = 327, LLM judges)",
        "",
        "| system | R@10 | NC | Faith | SS | PM |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {name} | " + " | ".join(f"{v:.3f}" for v in values) + " |" for name, values in PAPER_TABLE2.items()]
    lines += ["", "Paper ablations (SR-RAG): " + "; ".join(f"{k} {v}" for k, v in PAPER_ABLATIONS.items()) + "."]
    return "\n".join(lines) + "\n"


def _png(fig) -> bytes:
    import io

    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def figures(overall: pl.DataFrame, by_condition: pl.DataFrame) -> dict[str, bytes]:
    """PNG plots: per-strategy bars with 95% intervals for every metric, and a condition x strategy
    heat map of the metric most questions have."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, bytes] = {}
    if not overall.height:
        return out
    metrics = [m for m in METRICS if m in set(overall["metric"].to_list())]
    strategies = overall["strategy"].unique(maintain_order=True).to_list()
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(metrics)), 4))
    width = 0.8 / len(strategies)
    for i, strategy in enumerate(strategies):
        part = {r["metric"]: r for r in overall.filter(pl.col("strategy") == strategy).iter_rows(named=True)}
        means = np.array([part[m]["mean"] if m in part else np.nan for m in metrics])
        low = np.array([part[m]["low"] if m in part else np.nan for m in metrics])
        high = np.array([part[m]["high"] if m in part else np.nan for m in metrics])
        errors = np.nan_to_num(np.vstack([means - low, high - means]))
        ax.bar(np.arange(len(metrics)) + i * width, means, width, yerr=errors, capsize=2, label=strategy)
    ax.set_xticks(np.arange(len(metrics)) + 0.4 - width / 2, metrics)
    ax.set_ylabel("mean (bootstrap 95% interval)")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, ncol=2)
    out["evaluation_bars.png"] = _png(fig)
    counts = overall.group_by("metric").agg(pl.col("n").sum())
    metric = counts.sort("n", descending=True)["metric"][0]
    cells = by_condition.filter(pl.col("metric") == metric)
    if cells.height:
        conditions = sorted(cells["group"].unique().to_list())
        grid = np.full((len(conditions), len(strategies)), np.nan)
        for r in cells.iter_rows(named=True):
            grid[conditions.index(r["group"]), strategies.index(r["strategy"])] = r["mean"]
        fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(strategies) + 2), max(3, 0.3 * len(conditions) + 1)))
        image = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(len(strategies)), strategies, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(conditions)), conditions, fontsize=7)
        ax.set_title(f"{metric} by condition and strategy")
        fig.colorbar(image, ax=ax)
        out["evaluation_heatmap.png"] = _png(fig)
    return out


def html(summary_markdown: str, images: dict[str, bytes]) -> str:
    """A standalone HTML page: the summary's tables and the plots (files beside it)."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(summary_markdown)
    plots = "".join(f'<p><img src="{name}" alt="{name}"></p>' for name in images)
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>ebm-platform evaluation</title><style>'
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}</style></head><body>"
        f"{plots}{body}</body></html>"
    )
