"""Benchmark data-quality rules. Structural rules fail with ERROR (they block BETR and evaluation);
quality signals warn (WARN). Required fields and unique ids run as a Great Expectations (GX Core
1.x) suite on a pandas copy of the table; the rest are computed here.

Severity choices: exact or near-duplicate questions within a condition are a WARN (the SR-RAG
release itself repeats 33 questions verbatim, 1,604 distinct texts of 1,637; `benchmark_qa` keeps
one of each near-duplicate set, `drop_near_duplicates`, and cleans the release's answers of their
template clause, `without_boilerplate`, so the WARN rules speak of new defects); ids, required
fields, dangling gold windows and main-split questions without gold are ERRORs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ebm_platform.benchmark.fields import malformed, repeats_fields
from ebm_platform.benchmark.gold import fold

REQUIRED = ("question_id", "condition", "source", "question", "exact_answer", "split_kind")
GOLD_SOURCES = ("evidence_inference", "pubmedqa", "generated")
PICOT_SOURCES = ("evidence_inference", "generated")
PICOT_FLOOR = 0.5  # mean share of non-null gold P/I/C/O/T fields where the source provides them
NEAR_DUPLICATE = 0.95  # question embedding cosine within a condition
VERBATIM_TOKENS = 12  # longest run of question tokens found verbatim in its gold window
BOILERPLATE = re.compile(r"\bno specific\b.{0,80}?\b(?:reported|provided|available|given|stated)\b", re.I)
# the words that join a sentence's clauses; where its clauses meet (", but ...", "; ..."), a clause left
# opening with a joiner, and where its sentences meet
JOINERS = "but|and|though|although|while|whereas"
CLAUSE_BREAK = re.compile(rf"(,\s*(?:{JOINERS}|with)\s+|;\s*)", re.I)
LEADING_JOINER = re.compile(rf"^(?:however|{JOINERS}),?\s+", re.I)
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
VERBATIM_SOURCES = ("generated",)  # questions the platform writes; the datasets' own are as published


def without_boilerplate(text: str) -> str:
    """The text without the clauses that say what the evidence does not report ("No specific
    timepoints or numerical values are reported in the evidence", BOILERPLATE): the SR-RAG release's
    template, in 868 of its 1,637 answers, which states no finding. A sentence left with no clause is
    dropped."""
    kept = []
    for sentence in SENTENCE_BREAK.split(text.strip()):
        if not BOILERPLATE.search(sentence):
            kept.append(sentence)
            continue
        parts = CLAUSE_BREAK.split(sentence)  # clause, joiner, clause, joiner, ...
        out = ""
        for n, clause in enumerate(parts[0::2]):
            if not BOILERPLATE.search(clause) and clause.strip(" .,;"):
                out += (parts[2 * n - 1] if out else "") + clause
        out = LEADING_JOINER.sub("", out.strip()).rstrip(" ,;")
        if out:
            kept.append(out[0].upper() + out[1:] + ("" if out[-1] in ".!?" else "."))
    return " ".join(kept)


def near_duplicate_pairs(bench: pl.DataFrame, embed: Callable[[list[str]], np.ndarray]) -> list[dict]:
    """Pairs of questions of one condition whose embeddings' cosine is at least NEAR_DUPLICATE and
    that ask about the same outcome (a question that names none asks about any): an Evidence
    Inference trial's prompts differ only in their outcome and are different questions. `a` comes
    before `b` in the table."""
    pairs: list[dict] = []
    for condition in bench["condition"].unique(maintain_order=True).to_list():
        sub = bench.filter(pl.col("condition") == condition)
        if sub.height < 2:
            continue
        vectors = embed(sub["question"].to_list())
        sims = np.triu(vectors @ vectors.T, k=1)
        ids, questions = sub["question_id"].to_list(), sub["question"].to_list()
        outcomes = [fold(o) if o else None for o in sub["gold_o"].to_list()]
        for i, j in zip(*np.nonzero(sims >= NEAR_DUPLICATE)):
            if outcomes[i] and outcomes[j] and outcomes[i] != outcomes[j]:
                continue
            pairs.append(
                {"a": ids[i], "b": ids[j], "cosine": round(float(sims[i, j]), 3), "question": questions[i][:120]}
            )
    return pairs


def drop_near_duplicates(
    bench: pl.DataFrame, embed: Callable[[list[str]], np.ndarray]
) -> tuple[pl.DataFrame, list[dict]]:
    """The table with one question of each near-duplicate set (`near_duplicate_pairs`), and the
    pairs that dropped one: a question with gold windows is kept before one without, then the
    earlier. A row whose id is not unique is never dropped: `unique_ids` (ERROR) must see it."""
    repeated = set(bench.filter(pl.col("question_id").is_duplicated())["question_id"].to_list())
    pairs = [p for p in near_duplicate_pairs(bench, embed) if not {p["a"], p["b"]} & repeated]
    if not pairs:
        return bench, []
    with_gold = set(bench.filter(pl.col("gold_window_ids").list.len() > 0)["question_id"].to_list())
    order = sorted(bench["question_id"].to_list(), key=lambda q: q not in with_gold)  # stable: table order next
    twins: dict[str, set[str]] = {}
    for pair in pairs:
        twins.setdefault(pair["a"], set()).add(pair["b"])
        twins.setdefault(pair["b"], set()).add(pair["a"])
    kept: set[str] = set()
    dropped: set[str] = set()
    for question_id in order:
        (dropped if twins.get(question_id, set()) & kept else kept).add(question_id)
    return bench.filter(~pl.col("question_id").is_in(sorted(dropped))), [
        p for p in pairs if p["a"] in dropped or p["b"] in dropped
    ]


@dataclass
class RuleResult:
    name: str
    passed: bool
    severity: str  # "ERROR" or "WARN"
    metadata: dict = field(default_factory=dict)
    failing: list[dict] = field(default_factory=list)


def _gx_suite(bench: pl.DataFrame) -> list[RuleResult]:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    batch = (
        context.data_sources.add_pandas("benchmark")
        .add_dataframe_asset("benchmark_qa")
        .add_batch_definition_whole_dataframe("all")
        .get_batch(batch_parameters={"dataframe": bench.select(*REQUIRED).to_pandas()})
    )
    missing_rows: set[int] = set()
    observed = {}
    for column in REQUIRED:
        result = batch.validate(gx.expectations.ExpectColumnValuesToNotBeNull(column=column), result_format="COMPLETE")
        observed[column] = int(result.result.get("unexpected_count", 0)) + (not result.success)
        missing_rows |= set(result.result.get("unexpected_index_list") or [])
    kinds = batch.validate(
        gx.expectations.ExpectColumnValuesToBeInSet(column="split_kind", value_set=["main", "challenge"]),
        result_format="COMPLETE",
    )
    missing_rows |= set(kinds.result.get("unexpected_index_list") or [])
    unique = batch.validate(
        gx.expectations.ExpectColumnValuesToBeUnique(column="question_id"), result_format="COMPLETE"
    )
    duplicated = sorted(set(unique.result.get("unexpected_list") or []))
    structure_ok = not missing_rows and kinds.success and all(v == 0 for v in observed.values())
    return [
        RuleResult(
            "required_fields",
            structure_ok,
            "ERROR",
            {
                "missing_by_column": observed,
                "bad_split_kind": int(kinds.result.get("unexpected_count", 0)),
                "engine": f"great_expectations {gx.__version__}",
            },
            [bench.row(i, named=True) for i in sorted(missing_rows)][:50],
        ),
        RuleResult(
            "unique_ids",
            unique.success and not duplicated,
            "ERROR",
            {"duplicated_ids": len(duplicated)},
            [{"question_id": q} for q in duplicated][:50],
        ),
    ]


def _rows(bench: pl.DataFrame, mask: pl.Series, columns: tuple[str, ...] = ("question_id", "question")) -> list[dict]:
    return bench.filter(mask).select(*columns).head(50).to_dicts()


def structural_rules(bench: pl.DataFrame, window_ids: set[str]) -> list[RuleResult]:
    """The ERROR rules: required fields, unique ids, gold windows exist, main-split gold."""
    results = _gx_suite(bench)
    dangling = bench.select("question_id", "gold_window_ids").explode("gold_window_ids").drop_nulls()
    dangling = dangling.filter(~pl.col("gold_window_ids").is_in(sorted(window_ids)))
    results.append(
        RuleResult(
            "gold_windows_exist",
            dangling.height == 0,
            "ERROR",
            {"dangling_gold_ids": dangling.height},
            dangling.head(50).to_dicts(),
        )
    )
    no_gold = (
        (pl.col("split_kind") == "main")
        & pl.col("source").is_in(GOLD_SOURCES)
        & (pl.col("gold_window_ids").list.len() == 0)
    )
    n_no_gold = bench.filter(no_gold).height
    results.append(
        RuleResult(
            "main_split_has_gold",
            n_no_gold == 0,
            "ERROR",
            {"main_without_gold": n_no_gold},
            _rows(bench, no_gold, ("question_id", "source", "question")),
        )
    )
    return results


def quality_rules(
    bench: pl.DataFrame, window_text: dict[str, str], embed: Callable[[list[str]], np.ndarray]
) -> list[RuleResult]:
    """The WARN rules: PICOT completeness, near-duplicates (`near_duplicate_pairs`), verbatim copies of
    a gold window in the questions the platform writes (VERBATIM_SOURCES: an Evidence Inference
    prompt names the arms and outcome as the article words them, a PubMedQA question is its article's
    title), fields of those questions that repeat one another or are malformed (`repeats_fields`,
    `malformed`: "... on pain in pain?", "... in There?", "... in Kon et al19?"), boilerplate answers."""
    results: list[RuleResult] = []

    picot = bench.filter(pl.col("source").is_in(PICOT_SOURCES))
    share = (
        picot.select(
            [pl.col(c).is_not_null().cast(pl.Float64) for c in ("gold_p", "gold_i", "gold_c", "gold_o", "gold_t")]
        ).mean_horizontal()
        if picot.height
        else pl.Series([], dtype=pl.Float64)
    )
    mean_share = float(share.mean()) if picot.height else 1.0
    results.append(
        RuleResult(
            "picot_completeness",
            mean_share >= PICOT_FLOOR,
            "WARN",
            {"mean_share": round(mean_share, 3), "floor": PICOT_FLOOR, "rows": picot.height},
        )
    )

    near = near_duplicate_pairs(bench, embed)
    results.append(
        RuleResult(
            "near_duplicate_questions", not near, "WARN", {"pairs": len(near), "threshold": NEAR_DUPLICATE}, near[:50]
        )
    )

    copies = []
    written = bench.filter(pl.col("source").is_in(VERBATIM_SOURCES))
    for qid, question, gold in written.select("question_id", "question", "gold_window_ids").iter_rows():
        tokens = re.findall(r"\w+", question.lower())
        for window_id in gold or []:
            text = " ".join(re.findall(r"\w+", window_text.get(window_id, "").lower()))
            run = _longest_run(tokens, text)
            if run > VERBATIM_TOKENS:
                copies.append({"question_id": qid, "window_id": window_id, "run_tokens": run})
                break
    results.append(
        RuleResult(
            "no_verbatim_copy", not copies, "WARN", {"copies": len(copies), "max_tokens": VERBATIM_TOKENS}, copies[:50]
        )
    )

    unsound = [
        {"question_id": qid, "question": question}
        for qid, question, p, i, c, o, t in written.select(
            "question_id", "question", "gold_p", "gold_i", "gold_c", "gold_o", "gold_t"
        ).iter_rows()
        if (p and repeats_fields(p, (i, c, o))) or any(malformed(f) for f in (p, i, c, o, t) if f)
    ]
    results.append(
        RuleResult(
            "question_fields_sound",
            not unsound,
            "WARN",
            {"unsound": len(unsound), "of": written.height},
            unsound[:50],
        )
    )

    boiler = bench["exact_answer"].fill_null("").str.contains("(?i)" + BOILERPLATE.pattern)
    results.append(
        RuleResult(
            "boilerplate_ground_truth",
            int(boiler.sum()) == 0,
            "WARN",
            {"boilerplate_answers": int(boiler.sum()), "of": bench.height},
            _rows(bench, boiler, ("question_id", "exact_answer")),
        )
    )
    return results


def _longest_run(tokens: list[str], text: str) -> int:
    """Longest run of consecutive question tokens that appears verbatim in `text`."""
    best, n = 0, len(tokens)
    for start in range(n):
        length = best + 1
        while start + length <= n and f" {' '.join(tokens[start : start + length])} " in f" {text} ":
            best = length
            length += 1
    return best
