"""Query-grouped train / validation / test splits (60/20/20), stratified by condition and source, and
stable: a change to some questions moves only them and the groups at the quota's edge.

Questions that must not straddle splits form one group across the whole benchmark: the same
question text (folded) wherever it is filed, and every question about the same source article
(the seed window's document, else the gold windows' document; prompts about one Evidence
Inference article share gold windows). A group belongs to the (condition, source) stratum of its
first question and is keyed by its source article (else its folded text), which a question's new
wording does not change. Each stratum of at least `MIN_STRATUM` questions, and the small strata
pooled as one, fill test and then validation with their groups in the order of a seeded hash of
their keys (a group that would leave the split further from its share of the questions, not the
groups, than it is passed over), and give the rest to train: a document with 50 generated questions counts as 50, strata of
one or two groups still give validation and test their share through the pool, and one group that
changes moves no other group but the ones its change pushes across a quota. (Until 2026-12-07 the
groups were dealt one by one, largest first, to the split furthest behind its share: 15 changed
questions moved 1,038 of 2,251 to another split.) Deterministic."""

from __future__ import annotations

import hashlib
import re

import networkx as nx
import polars as pl

RATIOS = (0.6, 0.2, 0.2)
SPLITS = ("train", "validation", "test")
MIN_STRATUM = 10  # questions: a smaller stratum is filled in one pool with the other small ones


def _text(question: str) -> str:
    return "text:" + re.sub(r"[^a-z0-9]+", " ", question.lower()).strip()


def source_article(seed_window_id: str | None, gold_window_ids: list[str] | None) -> str | None:
    """The document a question was written from (window ids are `<doc_id>-<suffix>`)."""
    window = seed_window_id or next(iter(gold_window_ids or []), None)
    return "article:" + window.split("-", 1)[0] if window else None


def question_groups(bench: pl.DataFrame) -> list[tuple[str, list[str]]]:
    """(key, question ids) of the questions grouped by shared folded text or shared source article, each
    group sorted; the key is the group's first source article, else its first folded text."""
    graph = nx.Graph()
    for qid, question, seed, gold in bench.select(
        "question_id", "question", "seed_window_id", "gold_window_ids"
    ).iter_rows():
        graph.add_edge(qid, _text(question))
        if article := source_article(seed, gold):
            graph.add_edge(qid, article)
    ids = set(bench["question_id"].to_list())
    return sorted(
        (min(n for n in component if n not in ids), sorted(n for n in component if n in ids))
        for component in nx.connected_components(graph)
    )


def _fill(groups: list[tuple[str, list[str]]], seed: str) -> dict[str, str]:
    """question id -> split for one stratum's groups: test, then validation, filled to their share of the
    questions in the order of the groups' hashed keys (a group that would leave a split further from its
    share than it is is passed over), the rest train."""
    order = sorted(groups, key=lambda g: hashlib.sha256(f"{seed}|{g[0]}".encode()).hexdigest())
    total = sum(len(ids) for _, ids in groups)
    split_of: dict[str, str] = {}
    shares = dict(zip(SPLITS, RATIOS))
    for split in ("test", "validation"):
        room = round(shares[split] * total)
        for _, ids in order:
            if room <= 0:
                break
            if ids[0] not in split_of and len(ids) < 2 * room:  # it leaves the split nearer its share
                split_of.update(dict.fromkeys(ids, split))
                room -= len(ids)
    return {q: split_of.get(q, "train") for _, ids in groups for q in ids}


def make_splits(bench: pl.DataFrame, seed: str = "ebm-platform") -> pl.DataFrame:
    """question_id, condition, source, split (train / validation / test)."""
    stratum_of = {qid: (c, s) for qid, c, s in bench.select("question_id", "condition", "source").iter_rows()}
    strata: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}
    for key, ids in question_groups(bench):
        strata.setdefault(stratum_of[ids[0]], []).append((key, ids))
    small = [groups for groups in strata.values() if sum(len(ids) for _, ids in groups) < MIN_STRATUM]
    split_of = _fill([g for groups in small for g in groups], seed)
    for groups in strata.values():
        if groups not in small:
            split_of.update(_fill(groups, seed))
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
