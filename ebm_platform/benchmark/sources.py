"""benchmark_qa sources: the SR-RAG release, Evidence Inference, PubMedQA, and generated questions.

One row schema for all (BENCHMARK_SCHEMA). Ids are stable; Evidence Inference and PubMedQA ids
carry the condition, because an article tagged with two conditions yields its questions in both. Gold P/I/C/O/T fields are null where the source does
not know them; gold window ids are empty where the source has none (the release).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from ebm_platform.benchmark.evidence_inference import labelled_prompts
from ebm_platform.conditions import Catalogue
from ebm_platform.corpus.windows import SENTENCE_END
from ebm_platform.evaluation.retrieval_eval import fold, gold_for_spans
from ebm_platform.graph.pico_rules import extract

BENCHMARK_SCHEMA = {
    "question_id": pl.String, "condition": pl.String, "source": pl.String, "question": pl.String,
    "exact_answer": pl.String, "ideal_answer": pl.String, "nuggets_vital": pl.List(pl.String),
    "nuggets_okay": pl.List(pl.String), "nuggets_trivial": pl.List(pl.String),
    "gold_p": pl.String, "gold_i": pl.String, "gold_c": pl.String, "gold_o": pl.String, "gold_t": pl.String,
    "gold_window_ids": pl.List(pl.String), "seed_window_id": pl.String, "certainty": pl.String,
    "split_kind": pl.String,
}
SOURCES = ("sr_rag_release", "evidence_inference", "pubmedqa", "generated")
EI_ANSWERS = {"significantly increased": "{i} significantly increased {o} compared with {c}.",
              "significantly decreased": "{i} significantly decreased {o} compared with {c}.",
              "no significant difference": "There was no significant difference in {o} between {i} and {c}."}


def row(**fields: object) -> dict:
    """A benchmark row with every schema column present (null where not given)."""
    base = {k: ([] if isinstance(v, pl.List) else None) for k, v in BENCHMARK_SCHEMA.items()}
    base.update(fields)
    return base


def frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=BENCHMARK_SCHEMA) if rows else pl.DataFrame(schema=BENCHMARK_SCHEMA)


def release_rows(datasets_dir: Path, catalogue: Catalogue) -> pl.DataFrame:
    """The paper's 1,637 questions; codes follow file order and the summary's per-code counts
    (codes in alphabetical order), mapped to catalogue codes through their aliases."""
    root = Path(datasets_dir) / "sr_rag_release" / "benchmark"
    counts = json.loads((root / "summary_benchmark_full.json").read_text(encoding="utf-8"))["per_code"]
    lines = [json.loads(line) for line in (root / "benchmark_1637.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    expected = sum(v["youtu_questions"] for v in counts.values())
    if expected != len(lines):
        raise ValueError(f"release has {len(lines)} questions but its summary counts {expected}")
    rows, start = [], 0
    for code in sorted(counts):
        n = counts[code]["youtu_questions"]
        canonical = catalogue.canonical(code)
        for offset, item in enumerate(lines[start:start + n]):
            nuggets = item.get("nuggets") or {}
            rows.append(row(question_id=f"srrag-{start + offset + 1:04d}", condition=canonical,
                            source="sr_rag_release", question=item["question_en"].strip(),
                            exact_answer=item["ground_truth"].strip(), nuggets_vital=nuggets.get("vital", []),
                            nuggets_okay=nuggets.get("okay", []), nuggets_trivial=nuggets.get("trivial", []),
                            split_kind="main"))
        start += n
    return frame(rows)


def evidence_inference_rows(code: str, datasets_dir: Path, documents: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Labelled prompts whose article is in this partition. Gold windows overlap the annotated
    evidence spans; P comes from the article's first extracted population; prompts whose
    evidence cannot be located go to the challenge split."""
    articles = {s.split(":", 1)[1]: d for s, d in documents.select("source", "doc_id").iter_rows()
                if s.startswith("evidence_inference:")}
    if not articles:
        return frame([])
    prompts = pl.concat([labelled_prompts(datasets_dir, split) for split in ("train", "validation")])
    prompts = prompts.filter(pl.col("pmcid").is_in(sorted(articles)))
    by_doc: dict[str, list[tuple[str, str]]] = {}
    for window_id, doc_id, text in windows.select("window_id", "doc_id", "text").iter_rows():
        by_doc.setdefault(doc_id, []).append((window_id, fold(text)))
    population: dict[str, str | None] = {}
    rows = []
    for p in prompts.iter_rows(named=True):
        doc_id = articles[p["pmcid"]]
        if doc_id not in population:
            text = documents.filter(pl.col("doc_id") == doc_id)["text"][0][:4000]
            pops = extract(text).names("Population")
            population[doc_id] = pops[0] if pops else None
        gold = sorted(gold_for_spans(by_doc.get(doc_id, []), p["evidence"]))
        answer = EI_ANSWERS[p["label"]].format(i=p["intervention"], c=p["comparator"], o=p["outcome"])
        rows.append(row(question_id=f"ei-{code}-{p['prompt_id']}", condition=code, source="evidence_inference",
                        question=f"What is the effect of {p['intervention']} compared with {p['comparator']} "
                                 f"on {p['outcome']}?", exact_answer=p["label"], ideal_answer=answer,
                        nuggets_vital=[answer], nuggets_okay=p["evidence"][:2], gold_p=population[doc_id],
                        gold_i=p["intervention"], gold_c=p["comparator"], gold_o=p["outcome"],
                        gold_window_ids=gold, certainty="sufficient", split_kind="main" if gold else "challenge"))
    return frame(rows)


def pubmedqa_rows(code: str, datasets_dir: Path, documents: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """PubMedQA records whose abstract is in this partition; gold = the abstract's windows."""
    pmids = {s.split(":", 1)[1]: d for s, d in documents.select("source", "doc_id").iter_rows()
             if s.startswith("pubmedqa:")}
    if not pmids:
        return frame([])
    records = json.loads((Path(datasets_dir) / "pubmedqa" / "ori_pqal_dev.json").read_text(encoding="utf-8"))
    rows = []
    for pmid, doc_id in sorted(pmids.items()):
        record = records.get(pmid)
        if not record:
            continue
        gold = sorted(windows.filter(pl.col("doc_id") == doc_id)["window_id"].to_list())
        long_answer = record.get("LONG_ANSWER", "").strip()
        sentences = [s for s in SENTENCE_END.split(long_answer) if s.strip()]
        rows.append(row(question_id=f"pubmedqa-{code}-{pmid}", condition=code, source="pubmedqa",
                        question=record["QUESTION"].strip(), exact_answer=record["final_decision"],
                        ideal_answer=long_answer, nuggets_vital=sentences[:1], nuggets_okay=sentences[1:],
                        gold_window_ids=gold, certainty="sufficient", split_kind="main" if gold else "challenge"))
    return frame(rows)


# ---- generation (paper stages 1-3, offline) ----------------------------------------------------
RESULT = re.compile(r"\b(?:significant\w*|improv\w*|reduc\w*|increas\w*|decreas\w*|recommend\w*|no difference|"
                    r"effective|superior|inferior|p\s*[<=]\s*0?\.\d+|95%\s*CI)", re.I)
STATISTIC = re.compile(r"p\s*[<=]\s*0?\.\d+|95%\s*CI|confidence interval|significan", re.I)
# Stage-3 grading thresholds (offline): cosine of question and window, and PICO agreement =
# share of the question's gold fields found in the window (by containment or cosine >= 0.6).
STRONG, SUPPORTIVE, WEAK = (0.60, 0.75), (0.45, 0.5), 0.30


def _generation_pick(windows: pl.DataFrame, per_grade: int, seed: int) -> list[dict]:
    """Stage 1 sampling: per grade, windows with an intervention, an outcome and result language."""
    picked = []
    for grade in "ABCDE":
        pool = []
        for w in windows.filter(pl.col("grade") == grade).sort("window_id").iter_rows(named=True):
            if not RESULT.search(w["text"]):
                continue
            found = extract(w["text"])
            if found.names("Intervention") and found.names("Outcome"):
                pool.append((w, found))
        random.Random(f"{seed}:{grade}").shuffle(pool)
        picked.extend(pool[:per_grade])
    return picked


def _result_sentence(text: str) -> str:
    sentences = [s.strip() for s in SENTENCE_END.split(re.sub(r"\s+", " ", text)) if len(s.strip()) > 30]
    scored = sorted(sentences, key=lambda s: (-(bool(STATISTIC.search(s)) + bool(RESULT.search(s))), len(s)))
    return scored[0] if scored else text[:300]


def compose_question(found) -> tuple[str, dict[str, str | None]]:
    """A question from a window's own extracted PICO (no field from outside the window)."""
    fields = {"p": (found.names("Population") or [None])[0], "i": found.names("Intervention")[0],
              "c": (found.names("Comparator") or [None])[0], "o": found.names("Outcome")[0],
              "t": (found.names("Timepoint") or [None])[0]}
    question = f"What is the effect of {fields['i']}"
    question += f" compared with {fields['c']}" if fields["c"] else ""
    question += f" on {fields['o']}"
    question += f" in {fields['p']}" if fields["p"] else ""
    question += f" at {fields['t']}" if fields["t"] else ""
    return question + "?", fields


def generated_rows(code: str, windows: pl.DataFrame, retrieve: Callable[[str, int], list[str]],
                   embed: Callable[[list[str]], np.ndarray], per_grade: int = 3, seed: int = 7,
                   accessibility_k: int = 10, pool_size: int = 30) -> pl.DataFrame:
    """Stages 1-3 offline: sample, compose, check round-trip accessibility, grade gold windows."""
    text_of = dict(zip(windows["window_id"].to_list(), windows["text"].to_list()))
    rows = []
    for w, found in _generation_pick(windows, per_grade, seed):
        question, fields = compose_question(found)
        answer = _result_sentence(w["text"])
        ranked = retrieve(question, pool_size)
        accessible = w["window_id"] in ranked[:accessibility_k]
        pool = [x for x in ranked if x in text_of]
        vectors = embed([question] + [text_of[x] for x in pool]) if pool else np.zeros((1, 384))
        anchors = [v for v in fields.values() if v]
        anchor_vecs = embed(anchors)
        gold = [w["window_id"]]
        for x, vec in zip(pool, vectors[1:]):
            if x == w["window_id"]:
                continue
            cos = float(vec @ vectors[0])
            words = fold(text_of[x])
            agree = np.mean([fold(a) in words or float(av @ vec) >= 0.6 for a, av in zip(anchors, anchor_vecs)])
            if (cos >= STRONG[0] and agree >= STRONG[1]) or (cos >= SUPPORTIVE[0] and agree >= SUPPORTIVE[1]):
                gold.append(x)
        clauses = [c.strip() for c in re.split(r";|, and | whereas | but ", answer) if len(c.strip()) > 10]
        digest = hashlib.sha1(f"{code}|{w['window_id']}|{question}".encode()).hexdigest()[:12]
        rows.append(row(question_id=f"gen-{digest}", condition=code, source="generated", question=question,
                        exact_answer=answer, ideal_answer=f"(grade {w['grade']}) {answer}",
                        nuggets_vital=clauses[:1] or [answer], nuggets_okay=clauses[1:], gold_p=fields["p"],
                        gold_i=fields["i"], gold_c=fields["c"], gold_o=fields["o"], gold_t=fields["t"],
                        gold_window_ids=gold, seed_window_id=w["window_id"],
                        certainty="sufficient" if STATISTIC.search(w["text"]) else "uncertain",
                        split_kind="main" if accessible else "challenge"))
    return frame(rows)
