"""End-to-end answer metrics (methods.md, SR-RAG 3.6 and App. E), one question at a time.

- NC: share of the reference nuggets the answer covers, vital weighted 1 and okay 1/2 (trivial
  nuggets are not scored). With an LLM the paper's judge decides each nugget; offline a nugget
  counts as covered when most of its content terms are in the answer or an answer statement is
  close to it in embedding space: that is a proxy and is named `NC_proxy`.
- Faith: share of the answer's statements supported by the windows they cite. With an LLM a judge
  decides each statement (the answer's statements are its claims, RAGAS's first step); offline a
  statement is supported when its content terms are in a cited window or it is close to one of
  that window's sentences (`Faith_proxy`). An extractive answer quotes its windows, so it is
  faithful by construction: the figure checks the citations, not the writing.
- SS: cosine of the answer's and the reference answer's embeddings (the platform's MiniLM).
- PM: per question, the share of non-null gold P/I/C/O/T fields matched by the answer's fields
  (PICO phrases the offline extractor finds in the answer; intervention and comparator are both
  trial arms, so they are matched against each other's pool too). Matching is by embedding or term
  overlap, not by the paper's LLM judge: `PM_proxy`.

The thresholds below were set once, before any evaluation run, and not tuned: there are no
judge labels in the shared data to tune them on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ebm_platform.graph.pico_rules import extract
from ebm_platform.llm.client import LLMClient
from ebm_platform.llm.prompts import fill
from ebm_platform.retrieval.lexical import stems
from ebm_platform.vectors import Embed

NUGGET_WEIGHTS = {"vital": 1.0, "okay": 0.5}
TERM_COVERAGE = 0.6  # share of a phrase's content terms found in the text it is checked against
COSINE_MATCH = 0.75  # cosine of a nugget / statement with its closest answer statement / window sentence
PM_COSINE = 0.6  # cosine of a gold PICO field with the answer's phrase of the same field
PICO_FIELDS = {
    "P": ("Population",),
    "I": ("Intervention", "Arm"),
    "C": ("Comparator", "Arm"),
    "O": ("Outcome",),
    "T": ("Timepoint",),
}

NUGGET_JUDGE = """You judge whether a clinical answer covers reference facts ("nuggets").
Answer:
{answer}

Nuggets (numbered):
{nuggets}

For each nugget, in order, say true if the answer states it (paraphrase allowed) and false otherwise.
JSON only: {{"covered": [true or false, one per nugget]}}"""
FAITH_JUDGE = """You check an answer's statements against the evidence each one cites.
{items}

For each statement, in order, say true if the cited evidence supports it and false otherwise.
JSON only: {{"supported": [true or false, one per statement]}}"""


@dataclass(frozen=True)
class Statement:
    """One answer statement and the window ids it cites."""

    text: str
    window_ids: tuple[str, ...]


def answer_statements(answer: dict) -> list[Statement]:
    """The core answer's and the graded evidence's statements (each once), with cited window ids."""
    window = {c["n"]: c["window_id"] for c in answer.get("citations", [])}
    seen, out = set(), []
    parts = [
        *answer.get("core_answer", []),
        *(s for group in answer.get("evidence_by_grade", []) for s in group["statements"]),
    ]
    for part in parts:
        text = part["statement"].strip()
        if text and text not in seen:
            seen.add(text)
            out.append(Statement(text, tuple(window[n] for n in part["citations"] if n in window)))
    return out


def term_coverage(phrase: str, text_stems: set[str]) -> float:
    """Share of `phrase`'s content terms present in `text_stems` (0 when it has none)."""
    own = stems(phrase)
    return len(own & text_stems) / len(own) if own else 0.0


def _closest(queries: list[str], targets: list[str], embed: Embed) -> np.ndarray:
    """Each query's best cosine with any target (zeros when there are no targets)."""
    if not queries or not targets:
        return np.zeros(len(queries), dtype=np.float32)
    return (embed(queries) @ embed(targets).T).max(axis=1)


def covered_offline(phrases: list[str], statements: list[str], embed: Embed) -> list[bool]:
    """Whether each phrase is covered by the statements: term coverage or cosine (the proxy rule)."""
    text = stems(" ".join(statements))
    flags = [term_coverage(p, text) >= TERM_COVERAGE for p in phrases]
    rest = [i for i, f in enumerate(flags) if not f]  # embed only what the terms did not settle
    for i, cos in zip(rest, _closest([phrases[i] for i in rest], statements, embed)):
        flags[i] = float(cos) >= COSINE_MATCH
    return flags


def _weighted(flags: list[bool], kinds: list[str]) -> float:
    total = sum(NUGGET_WEIGHTS[k] for k in kinds)
    return sum(NUGGET_WEIGHTS[k] for f, k in zip(flags, kinds) if f) / total


def _flags_schema(key: str, n: int) -> dict:
    return {
        "type": "object",
        "required": [key],
        "properties": {key: {"type": "array", "items": {"type": "boolean"}, "minItems": n, "maxItems": n}},
    }


def nugget_coverage(
    vital: list[str], okay: list[str], statements: list[Statement], embed: Embed, client: LLMClient
) -> tuple[str, float] | None:
    """(metric name, value): `NC` when the LLM judged, `NC_proxy` offline; None without nuggets."""
    nuggets = [*vital, *okay]
    if not nuggets:
        return None
    kinds = ["vital"] * len(vital) + ["okay"] * len(okay)
    texts = [s.text for s in statements]
    prompt = fill(
        NUGGET_JUDGE,
        {
            "answer": "\n".join(texts) or "(no answer)",
            "nuggets": "\n".join(f"{i}. {n}" for i, n in enumerate(nuggets, 1)),
        },
    )
    result = client.complete_json(
        "judge_nuggets",
        prompt,
        _flags_schema("covered", len(nuggets)),
        offline=lambda: {"covered": covered_offline(nuggets, texts, embed)},
    )
    name = "NC_proxy" if result.mode == "offline" else "NC"
    return name, _weighted(result.data["covered"], kinds)


def _supported_offline(statements: list[Statement], sentences: dict[str, list[str]], embed: Embed) -> list[bool]:
    flags = []
    for s in statements:
        cited = [x for w in s.window_ids for x in sentences.get(w, [])]
        flags.append(bool(cited) and covered_offline([s.text], cited, embed)[0])
    return flags


def faithfulness(
    statements: list[Statement], sentences: dict[str, list[str]], embed: Embed, client: LLMClient
) -> tuple[str, float] | None:
    """(metric name, share of statements their cited windows support): `Faith` with the LLM judge,
    `Faith_proxy` offline; None for an answer without statements. `sentences` maps window id to
    its sentences."""
    if not statements:
        return None
    items = "\n".join(
        f"{i}. Statement: {s.text}\n   Cited evidence: "
        + (" ".join(x for w in s.window_ids for x in sentences.get(w, [])) or "(none)")
        for i, s in enumerate(statements, 1)
    )
    result = client.complete_json(
        "judge_faithfulness",
        fill(FAITH_JUDGE, {"items": items}),
        _flags_schema("supported", len(statements)),
        offline=lambda: {"supported": _supported_offline(statements, sentences, embed)},
    )
    name = "Faith_proxy" if result.mode == "offline" else "Faith"
    flags = result.data["supported"]
    return name, sum(flags) / len(flags)


def semantic_similarity(statements: list[Statement], reference: str | None, embed: Embed) -> float | None:
    """Cosine of the answer's and the reference's embeddings (None without either)."""
    if not statements or not reference or not reference.strip():
        return None
    vectors = embed([" ".join(s.text for s in statements), reference])
    return float(vectors[0] @ vectors[1])


def answer_fields(statements: list[Statement]) -> dict[str, list[str]]:
    """P/I/C/O/T phrases the offline PICO rules find in the answer's statements."""
    fields: dict[str, list[str]] = {f: [] for f in PICO_FIELDS}
    for s in statements:
        for entity in extract(s.text).entities:
            for f, types in PICO_FIELDS.items():
                if entity["type"] in types and entity["name"] not in fields[f]:
                    fields[f].append(entity["name"])
    return fields


def pico_match(gold: dict[str, str | None], statements: list[Statement], embed: Embed) -> float | None:
    """PM_proxy for one question: matched share of its non-null gold fields (None when it has none).
    A gold field matches when an answer phrase of that field is close to it (cosine) or covers most
    of its terms, or, if the answer has no phrase of that field, when the answer's text covers it."""
    wanted = {f: v for f, v in gold.items() if v and v.strip()}
    if not wanted:
        return None
    fields = answer_fields(statements)
    text = stems(" ".join(s.text for s in statements))
    matched = 0
    for f, value in wanted.items():
        phrases = fields[f]
        if phrases:
            cos = float(_closest([value], phrases, embed)[0])
            matched += cos >= PM_COSINE or any(term_coverage(value, stems(p)) >= TERM_COVERAGE for p in phrases)
        else:
            matched += term_coverage(value, text) >= TERM_COVERAGE
    return matched / len(wanted)
