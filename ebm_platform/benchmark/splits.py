"""Query-grouped train / validation / test splits (60/20/20), stratified by condition and source.

Questions that must not straddle splits form one group across the whole benchmark: the same
question text (folded) wherever it is filed, and every question about the same source article
(the seed window's document, else the gold windows' document; prompts about one Evidence
Inference article share gold windows). A group belongs to the (condition, source) stratum of its
first question. Groups are dealt one by one, largest first, then by stratum and a seeded hash, to
the split furthest behind its share of the questions dealt so far: a document with 50 generated
questions counts as 50, not one, and strata of one or two groups still give validation and test
their share (a per-stratum cut at 60% and 80% gave them none). Deterministic."""

from __future__ import annotations

import hashlib
import re

import networkx as nx
import polars as pl

RATIOS = (0.6, 0.2, 0.2)
SPLITS = ("train", "validation", "test")


def _text(question: str) -> str:
    return "text:" + re.sub(r"[^a-z0-9]+", " ", question.lower()).strip()


def source_article(seed_window_id: str | None, gold_window_ids: list[str] | None) -> str | None:
    """The document a question was written from (window ids are `<doc_id>-<suffix>`)."""
    window = seed_window_id or next(iter(gold_window_ids or []), None)
    return "article:" + window.split("-", 1)[0] if window else None


def question_groups(bench: pl.DataFrame) -> list[list[str]]:
    """Question ids grouped by shared folded text or shared source article, each group sorted."""
    graph = nx.Graph()
    for qid, question, seed, gold in bench.select(
        "question_id", "question", "seed_window_id", "gold_window_ids"
    ).iter_rows():
        graph.add_edge(qid, _text(question))
        if article := source_article(seed, gold):
            graph.add_edge(qid, article)
    ids = set(bench["question_id"].to_list())
    return sorted(sorted(n for n in component if n in ids) for component in nx.connected_components(graph))


def make_splits(bench: pl.DataFrame, seed: str = "ebm-platform") -> pl.DataFrame:
    """question_id, condition, source, split (train / validation / test)."""
    stratum_of = {qid: (c, s) for qid, c, s in bench.select("question_id", "condition", "source").iter_rows()}
    ordered = sorted(
        question_groups(bench),
        key=lambda g: (-len(g), stratum_of[g[0]], hashlib.sha256(f"{seed}|{g[0]}".encode()).hexdigest()),
    )
    share = dict(zip(SPLITS, RATIOS))
    split_of, dealt = {}, dict.fromkeys(SPLITS, 0)
    for group in ordered:
        total = sum(dealt.values()) + len(group)
        split = max(SPLITS, key=lambda s: share[s] * total - dealt[s])  # furthest behind its share
        split_of.update(dict.fromkeys(group, split))
        dealt[split] += len(group)
    return pl.DataFrame(
        [{"question_id": q, "condition": c, "source": s, "split": split_of[q]} for q, (c, s) in stratum_of.items()],
        schema={"question_id": pl.String, "condition": pl.String, "source": pl.String, "split": pl.String},
    )


def split_problems(bench: pl.DataFrame, splits: pl.DataFrame) -> dict[str, list]:
    """What makes the splits unusable across conditions (empty lists when sound): a question id in
    two conditions or twice, a benchmark question the splits lost, and one question text (folded)
    in two splits (a leak between training and test)."""
    ids = bench.group_by("question_id").agg(pl.col("condition").unique().sort(), pl.len().alias("rows"))
    repeated = ids.filter(pl.col("rows") > 1).sort("question_id")
    missing = sorted(set(bench["question_id"].to_list()) - set(splits["question_id"].to_list()))
    texts = (
        bench.select("question_id", pl.col("question").map_elements(_text, return_dtype=pl.String).alias("text"))
        .join(splits.select("question_id", "split"), on="question_id")
        .group_by("text")
        .agg(pl.col("split").unique().sort(), pl.col("question_id").sort())
    )
    leaks = texts.filter(pl.col("split").list.len() > 1).sort("text")
    return {
        "repeated_question_ids": repeated.select("question_id", "condition").to_dicts(),
        "questions_without_split": missing,
        "text_in_two_splits": leaks.select("question_id", "split").to_dicts(),
    }
