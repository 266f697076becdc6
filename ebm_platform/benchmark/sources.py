"""benchmark_qa sources: the SR-RAG release, Evidence Inference, PubMedQA, and generated questions.

One row schema for all (BENCHMARK_SCHEMA). Ids are stable; Evidence Inference and PubMedQA ids
carry the condition, because an article tagged with two conditions yields its questions in both. Gold P/I/C/O/T fields are null where the source does
not know them; gold window ids are empty where the source has none (the release).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl

from ebm_platform.benchmark.evidence_inference import labelled_prompts
from ebm_platform.benchmark.gold import fold, gold_for_spans
from ebm_platform.benchmark.quality import without_boilerplate
from ebm_platform.conditions import Catalogue
from ebm_platform.corpus.windows import SENTENCE_END
from ebm_platform.graph.pico_rules import extract

EI_QUESTION = re.compile(r"^ei-.+-([^-]+)$")  # an Evidence Inference question's id: ei-<code>-<prompt id>


def ei_prompt_of(question_id: str) -> str | None:
    """The Evidence Inference prompt an `ei-<code>-<prompt id>` question asks, else None."""
    match = EI_QUESTION.match(question_id)
    return match.group(1) if match else None


PUBMEDQA_QUESTION = re.compile(r"^pubmedqa-.+-([^-]+)$")  # a PubMedQA question's id: pubmedqa-<code>-<PMID>


def pubmedqa_pmid_of(question_id: str) -> str | None:
    """The PMID a `pubmedqa-<code>-<PMID>` question asks about, else None."""
    match = PUBMEDQA_QUESTION.match(question_id)
    return match.group(1) if match else None


def pubmedqa_path(datasets_dir: Path) -> Path:
    """PubMedQA's 500 expert-labelled questions outside its test set (PQA-L)."""
    return Path(datasets_dir) / "pubmedqa" / "ori_pqal_dev.json"


BENCHMARK_SCHEMA = {
    "question_id": pl.String,
    "condition": pl.String,
    "source": pl.String,
    "question": pl.String,
    "exact_answer": pl.String,
    "ideal_answer": pl.String,
    "nuggets_vital": pl.List(pl.String),
    "nuggets_okay": pl.List(pl.String),
    "nuggets_trivial": pl.List(pl.String),
    "gold_p": pl.String,
    "gold_i": pl.String,
    "gold_c": pl.String,
    "gold_o": pl.String,
    "gold_t": pl.String,
    "gold_window_ids": pl.List(pl.String),
    "seed_window_id": pl.String,
    "certainty": pl.String,
    "split_kind": pl.String,
}
SOURCES = ("sr_rag_release", "evidence_inference", "pubmedqa", "generated")
EI_ANSWERS = {
    "significantly increased": "{i} significantly increased {o} compared with {c}.",
    "significantly decreased": "{i} significantly decreased {o} compared with {c}.",
    "no significant difference": "There was no significant difference in {o} between {i} and {c}.",
}


def row(**fields: object) -> dict:
    """A benchmark row with every schema column present (null where not given)."""
    base = {k: ([] if isinstance(v, pl.List) else None) for k, v in BENCHMARK_SCHEMA.items()}
    base.update(fields)
    return base


def frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=BENCHMARK_SCHEMA) if rows else pl.DataFrame(schema=BENCHMARK_SCHEMA)


def release_rows(datasets_dir: Path, catalogue: Catalogue) -> pl.DataFrame:
    """The paper's 1,637 questions; codes follow file order and the summary's per-code counts
    (codes in alphabetical order), mapped to catalogue codes through their aliases. The answers and
    their nuggets lose the template clause that says what the evidence does not report
    (`quality.without_boilerplate`; a nugget that is nothing else is dropped)."""
    root = Path(datasets_dir) / "sr_rag_release" / "benchmark"
    counts = json.loads((root / "summary_benchmark_full.json").read_text(encoding="utf-8"))["per_code"]
    lines = [
        json.loads(line)
        for line in (root / "benchmark_1637.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    expected = sum(v["youtu_questions"] for v in counts.values())
    if expected != len(lines):
        raise ValueError(f"release has {len(lines)} questions but its summary counts {expected}")
    rows, start = [], 0
    for code in sorted(counts):
        n = counts[code]["youtu_questions"]
        canonical = catalogue.canonical(code)
        for offset, item in enumerate(lines[start : start + n]):
            nuggets = {
                level: [clean for fact in facts if (clean := without_boilerplate(fact))]
                for level, facts in (item.get("nuggets") or {}).items()
            }
            rows.append(
                row(
                    question_id=f"srrag-{start + offset + 1:04d}",
                    condition=canonical,
                    source="sr_rag_release",
                    question=item["question_en"].strip(),
                    exact_answer=without_boilerplate(item["ground_truth"]) or item["ground_truth"].strip(),
                    nuggets_vital=nuggets.get("vital", []),
                    nuggets_okay=nuggets.get("okay", []),
                    nuggets_trivial=nuggets.get("trivial", []),
                    split_kind="main",
                )
            )
        start += n
    return frame(rows)


def evidence_inference_rows(
    code: str, datasets_dir: Path, documents: pl.DataFrame, windows: pl.DataFrame
) -> pl.DataFrame:
    """Labelled prompts whose article is in this partition. Gold windows overlap the annotated
    evidence spans; P comes from the article's first extracted population; prompts whose
    evidence cannot be located go to the challenge split."""
    articles = {
        s.split(":", 1)[1]: d
        for s, d in documents.select("source", "doc_id").iter_rows()
        if s.startswith("evidence_inference:")
    }
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
        rows.append(
            row(
                question_id=f"ei-{code}-{p['prompt_id']}",
                condition=code,
                source="evidence_inference",
                question=f"What is the effect of {p['intervention']} compared with {p['comparator']} "
                f"on {p['outcome']}?",
                exact_answer=p["label"],
                ideal_answer=answer,
                nuggets_vital=[answer],
                nuggets_okay=p["evidence"][:2],
                gold_p=population[doc_id],
                gold_i=p["intervention"],
                gold_c=p["comparator"],
                gold_o=p["outcome"],
                gold_window_ids=gold,
                certainty="sufficient",
                split_kind="main" if gold else "challenge",
            )
        )
    return frame(rows)


def pubmedqa_rows(code: str, datasets_dir: Path, documents: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """PubMedQA records whose abstract is in this partition; gold = the abstract's windows."""
    pmids = {
        s.split(":", 1)[1]: d for s, d in documents.select("source", "doc_id").iter_rows() if s.startswith("pubmedqa:")
    }
    if not pmids:
        return frame([])
    records = json.loads(pubmedqa_path(datasets_dir).read_text(encoding="utf-8"))
    rows = []
    for pmid, doc_id in sorted(pmids.items()):
        record = records.get(pmid)
        if not record:
            continue
        gold = sorted(windows.filter(pl.col("doc_id") == doc_id)["window_id"].to_list())
        long_answer = record.get("LONG_ANSWER", "").strip()
        sentences = [s for s in SENTENCE_END.split(long_answer) if s.strip()]
        rows.append(
            row(
                question_id=f"pubmedqa-{code}-{pmid}",
                condition=code,
                source="pubmedqa",
                question=record["QUESTION"].strip(),
                exact_answer=record["final_decision"],
                ideal_answer=long_answer,
                nuggets_vital=sentences[:1],
                nuggets_okay=sentences[1:],
                gold_window_ids=gold,
                certainty="sufficient",
                split_kind="main" if gold else "challenge",
            )
        )
    return frame(rows)
