"""`ask`: the Python contract behind `ebm ask` (question in, cited grade-ordered answer out)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ebm_platform.conditions import active_catalogue
from ebm_platform.corpus.model import abstract_section
from ebm_platform.llm.client import client_from_settings
from ebm_platform.process import shared_instance
from ebm_platform.retrieval.answer import assess_certainty, compose_llm, compose_offline, label_shared_windows
from ebm_platform.retrieval.bottom_line import (
    UNCERTAIN,
    answering_evidence,
    bottom_line,
    stated_bottom_line,
    take_sides,
    undecided,
    with_certainty,
)
from ebm_platform.retrieval.closed_answer import MAYBE
from ebm_platform.retrieval.learned import gate_line
from ebm_platform.retrieval.pipeline import QuestionError, Retrieval, Retriever
from ebm_platform.retrieval.sr_rag import condition_named, question_condition
from ebm_platform.retrieval.strategies import retrieve
from ebm_platform.retrieval.verdict import read_verdict
from ebm_platform.settings import get_settings


@shared_instance
def retriever_for(lake: str) -> Retriever:
    """One Retriever per lake and process (opening stores and loading entity tables is costly)."""
    settings = get_settings()
    names = tuple(c.name.lower() for c in active_catalogue().conditions)
    return Retriever(
        Path(lake),
        client_from_settings(),
        settings.embedding_model,
        settings.cross_encoder,
        names,
        embedding_backend=settings.embedding_backend,
    )


def ask(
    question: object,
    condition: str | None = None,
    strategy: str = "sr_rag",
    explain: bool = False,
    lake: str | Path | None = None,
) -> dict:
    """Answer a clinical question from the lake's evidence; raises QuestionError on bad input."""
    from ebm_platform.retrieval.pipeline import validate_question

    text = validate_question(question)
    conditions = None
    if condition:
        try:
            conditions = [active_catalogue().canonical(condition)]
        except KeyError as exc:
            raise QuestionError(str(exc).strip('"')) from exc
    retriever = retriever_for(str(lake or get_settings().lake))
    return answer_with(retriever, text, conditions, strategy, explain)


def ranking_line(retriever: Retriever) -> str:
    """Which fine scorer ranked, in one line: the learned reranker and its gate, or why not."""
    reranker = retriever.reranker
    if reranker.cross_encoder:
        return f"ranking: {reranker.fine_name()}"
    if reranker.learned is None:
        return "ranking: hand-set scorer (this lake holds no learned reranker: run `make demo`)"
    return f"ranking: {gate_line(reranker.learned.meta)}"


def source_reader(
    retriever: Retriever, question: str, rows: list[dict], answer: dict, lead: Sequence[dict] = ()
) -> Callable[[int], str] | None:
    """Cited source n -> the closed-question reader's yes / no / uncertain for the question over the
    sentences of every cited window of n's document, and for the lead source every window of it
    (`lead`: its windows that were not retrieved); None when the lake holds no promoted reader."""
    model = retriever.closed_model
    if model is None:
        return None
    by_window = {row["window_id"]: row for row in [*rows, *lead]}
    document = {c["n"]: c["doc_id"] for c in answer.get("citations", [])}

    def read(n: int) -> str:
        cited = [
            by_window[c["window_id"]]
            for c in answer["citations"]
            if c["doc_id"] == document[n] and c["window_id"] in by_window
        ]
        seen = {row["window_id"] for row in cited}
        cited += [row for row in lead if row["doc_id"] == document[n] and row["window_id"] not in seen]
        retriever.attach_evidence([row for row in cited if "sentences" not in row])
        sentences = [(s, row.get("section")) for row in cited for s in row.get("sentences") or [row["text"]]]
        return {MAYBE: UNCERTAIN}.get(label := model.read(question, sentences)[0], label)

    return read


def answer_with(
    retriever: Retriever,
    text: str,
    conditions: list[str] | None = None,
    strategy: str = "sr_rag",
    explain: bool = False,
) -> dict:
    """Retrieve with `strategy` and compose the answer (offline extractive, or IRCoT with an LLM)."""
    return answer_from(retriever, retrieve(retriever, text, strategy, conditions), conditions, explain)


def answer_from(
    retriever: Retriever, retrieval: Retrieval, conditions: list[str] | None = None, explain: bool = False
) -> dict:
    """Compose the answer to one retrieval, with its certainty judged against the question's condition."""
    text, strategy = retrieval.question, retrieval.strategy
    rows = [dict(c.row, score=round(c.final, 4)) for c in retrieval.candidates]
    t0 = time.perf_counter()
    lead: list[dict] = []
    condition = question_condition(retrieval.anchors, conditions)
    anchors = condition_named(retrieval.anchors, condition)
    if retriever.client.offline or not rows:
        lead = [] if retrieval.core else retriever.lead_source(rows)
        answer = compose_offline(
            text,
            retrieval.question_vector,
            anchors,
            retriever.attach_evidence(rows),
            retriever._embed,
            retriever.verdict_model,
            retrieval.core,
            lead,
        )
    else:

        def more(query: str) -> list[dict]:  # a follow-up query searches where the question did
            return [
                dict(c.row, score=round(c.final, 4))
                for c in retrieve(retriever, query, strategy, retrieval.scope or conditions).candidates
            ]

        answer = compose_llm(text, rows, retriever.client, more, retriever.verdict_model, anchors)
    cited = [c["window_id"] for c in answer["citations"]]
    in_condition = (
        set(retriever.index.rows_for_windows(cited, [condition])["window_id"].to_list())
        if condition and cited
        else set()
    )
    label_shared_windows(answer["citations"], condition, in_condition)
    stated = answer.pop("llm_bottom_line", None)
    doc_of = {c["n"]: c.get("doc_id") for c in answer["citations"]}
    line = (
        stated_bottom_line(text, anchors, answer, stated, answer["mode"])
        if stated
        else bottom_line(
            text,
            anchors,
            answer,
            lambda statement: read_verdict([statement], retriever.verdict_model, anchors)[0],
            source_reader(retriever, text, rows, answer, lead),
            condition if condition in retriever.partitions else None,  # a condition this lake has a partition of
            in_condition,
            lambda n: abstract_section(retriever.documents.get(doc_of[n], {}).get("text") or ""),
        )
    )
    take_sides(answer, line["sides"])  # each statement's side is its source's side of the bottom line
    if not stated:  # the offline answer's graded evidence; an LLM chose its own
        answering_evidence(answer, line["sides"])
    assess_certainty(
        answer,
        condition,
        in_condition,
        line.get("unanswered"),
        {r["window_id"]: r["text"] for r in rows + lead},
        line.get("inconsistent"),
        undecided(line),
    )
    line = with_certainty(line, answer["certainty"]["level"])
    retrieval.timings["answer"] = time.perf_counter() - t0
    score = {row["window_id"]: row["score"] for row in rows}
    for cite in answer["citations"]:
        cite["score"] = score.get(cite["window_id"])
    result = {
        "bottom_line": line,
        "question": text,
        "strategy": strategy,
        "condition": condition,
        "ranking": ranking_line(retriever),
        "anchors": retrieval.anchors.as_dict(),
        **answer,
        "notes": retrieval.notes,
        "timings_s": {k: round(v, 3) for k, v in retrieval.timings.items()},
    }
    if explain:
        result["explain"] = [c.explain() for c in sorted(retrieval.considered, key=lambda c: -c.final)]
        if retrieval.details:
            result["explain_strategy"] = retrieval.details
    return result
