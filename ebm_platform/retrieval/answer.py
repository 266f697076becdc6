"""Answers in the paper's three parts: core answer; guideline and supporting evidence by grade
(A first) with a citation on every statement; PICO comparison of question and evidence.

Offline: extractive. Sentences of the final windows (with the vectors `window_index` stored for
them) are scored by the lake's learned evidence-sentence scorer (`evidence_sentences.py`: cosine
with the question's vector, result and statistics language, the question's outcome, intervention
and comparator words), or by cosine plus a small bonus for result language when the lake has no
scorer; nothing is embedded for this at query time. The best become the core
answer, each window contributes its best sentence to the graded evidence (findings only: results or
recommendations, never background, `findings.py`; guideline and review findings that name the
question's intervention or comparator lead), and the comparison
uses the offline PICO rules on question and windows. LLM mode: IRCoT, three rounds of
reason-then-retrieve, then a JSON answer whose citations must point at retrieved windows.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ebm_platform.corpus.model import GRADE_LABELS, GRADES
from ebm_platform.corpus.pdf_text import CONFIDENCE_LABEL, CONFIDENCE_LEVELS
from ebm_platform.corpus.windows import flatten
from ebm_platform.graph.pico_rules import extract
from ebm_platform.llm.client import LLMClient
from ebm_platform.llm.prompts import fill
from ebm_platform.retrieval.evidence_sentences import cosine_scores, sentence_features
from ebm_platform.retrieval.findings import (
    STRENGTH,
    about_arms,
    concludes_uncertain_whether_it_works,
    is_finding,
    less_specific,
    most_specific,
    names_question,
    other_stage,
    recommends,
    recommends_about_arms,
    within_one_arm,
    without_markers,
)
from ebm_platform.retrieval.lexical import stem, stems, terms
from ebm_platform.retrieval.verdict import INSUFFICIENT, VERDICTS, VerdictModel, arms_of, read_verdict
from ebm_platform.vectors import Embed
from ebm_platform.vocabulary import Anchors

SELECTED_BY_SCORER = "learned evidence-sentence scorer (verdict_model, Evidence Inference train prompts)"
SELECTED_BY_COSINE = "cosine with the question, +0.05 for result language (no sentence scorer in this lake)"
MISMATCH_BELOW = 0.5
# Words that qualify a PICO phrase without naming what it is about; a match need not repeat them.
QUALIFIERS = frozenset(
    "adding added addition plus alone only combined usual standard adult adults patient patients "
    "people participant participants individual individuals subject subjects".split()
)
# words that qualify a condition without naming an outcome measure ("chronic non-specific low back pain")
CONDITION_QUALIFIERS = frozenset(
    "chronic acute subacute non specific nonspecific persistent recurrent mechanical".split()
)
IRCOT_ROUNDS = 3


# the offline answer's mode, with evidence or without (a report lists the modes its answers ran in)
OFFLINE_MODE = "offline-extractive (sentences selected from the cited windows; no text was generated)"
LEAD_SOURCE = "the core and its verdict read the lead source (the top-ranked window's document) in full"
READ_IN_FULL = "read in full from the lead source"  # how a citation of a window that was not retrieved is shown


def citation(n: int, row: dict) -> dict:
    return {
        "n": n,
        "title": row["title"],
        "grade": row["grade"],
        "condition": row["condition"],
        "window_id": row["window_id"],
        "doc_id": row["doc_id"],
        "year": row.get("year"),
    }


def label_shared_windows(citations: list[dict], condition: str | None, in_condition: set[str]) -> None:
    """A cited window that several conditions share carries the question's condition when it is one of
    them (its first index row named another: a patellofemoral pain trial shown as "(grade C, MACL)")."""
    for cite in citations:
        if condition and cite["window_id"] in in_condition:
            cite["condition"] = condition


def missing_terms(anchor: str, evidence: str) -> list[str]:
    """Content terms of a question's PICO phrase absent from an evidence phrase (plural-insensitive)."""
    present = stems(evidence)
    return sorted(t for t in terms(anchor) - QUALIFIERS if stem(t) not in present)


def asked(anchors: Anchors, field: str) -> str | None:
    """The question's phrase for a P/I/C/O `field`; None for an outcome that is the condition treated,
    or that condition with words such as "chronic" or "non-specific" ("better than physiotherapy for
    femoroacetabular impingement" names no outcome measure: read against the evidence's outcomes it was
    an outcome "mismatch" with 'Hip arthroscopy', and the answer was downgraded for indirectness; "Are
    muscle relaxants effective for non-specific low back pain?", whose condition is low back pain, was
    downgraded for an outcome mismatch with 'pain intensity')."""
    value = getattr(anchors, field)
    if field == "outcome" and value and anchors.condition:
        condition, words = terms(anchors.condition), terms(value)
        if condition <= words and words - condition <= CONDITION_QUALIFIERS:
            return None
    return value


# how a population read from the question's condition is shown ("effective for chronic low back pain" asks about
# people with it; the answer said "population: not stated in the question")
FROM_CONDITION = "the question's condition"


def pico_comparison(anchors: Anchors, rows: list[dict], embed: Embed) -> dict:
    """Question anchors against the evidence's own P/I/C/O: matches, mismatches, limitations. A
    question that names no people but a condition asks about people with it: the condition is its
    population (the field says so in `from`)."""
    origin: dict[str, str] = {}  # where the population came from, when not from the question's people
    if anchors.population is None and anchors.condition:
        # in the question's words when its outcome phrase is the condition ("chronic low back pain")
        said = anchors.outcome if anchors.outcome and asked(anchors, "outcome") is None else anchors.condition
        anchors, origin = replace(anchors, population=said), {"from": FROM_CONDITION}
    fields = {
        "population": ("Population",),
        "intervention": ("Intervention", "Arm"),
        "comparator": ("Comparator",),
        "outcome": ("Outcome",),
    }
    found: dict[str, list[tuple[str, int]]] = {f: [] for f in fields}
    from_graph = bool(rows) and all("entities" in row for row in rows)
    for n, row in enumerate(rows, 1):
        for entity in row["entities"] if from_graph else extract(row["text"]).entities:
            for f, types in fields.items():
                if entity["type"] in types:
                    found[f].append((entity["name"], n))
    compared = [f for f in fields if asked(anchors, f) and found[f]]
    # every anchor and evidence name in one call to the encoder (a call for each made the comparison 0.12 s of an answer)
    texts = [t for f in compared for t in (getattr(anchors, f), *(name for name, _ in found[f]))]
    vectors = dict(zip(texts, embed(texts))) if texts else {}
    comparison: dict[str, dict] = {}
    for f in fields:
        anchor = asked(anchors, f)
        if not anchor:
            named = " (it names the condition)" if getattr(anchors, f) else ""
            comparison[f] = {"question": None, "status": f"not stated in the question{named}"}
            continue
        provenance = origin if f == "population" else {}
        names = found[f]
        if not names:
            comparison[f] = {
                "question": anchor,
                **provenance,
                "status": "not reported in the cited evidence",
            }
            continue
        sims = np.stack([vectors[name] for name, _ in names]) @ vectors[anchor]
        # the closest name that misses the fewest of the question's terms: "patients with low back pain" (0.916)
        # was shown for 'chronic low back pain' beside the review's "adults with chronic low-back pain"
        lacking = [missing_terms(anchor, name) for name, _ in names]
        near = [i for i in range(len(names)) if sims[i] >= MISMATCH_BELOW] or range(len(names))
        best = min(near, key=lambda i: (len(lacking[i]), -sims[i]))
        score, missing = float(sims[best]), lacking[best]
        status = "mismatch" if score < MISMATCH_BELOW else "partial match" if missing else "match"
        comparison[f] = {
            "question": anchor,
            **provenance,
            "closest_evidence": names[best][0],
            "citation": names[best][1],
            "similarity": round(score, 3),
            "status": status,
            "missing_terms": missing,
        }
    limitations = []
    grades = [row["grade"] for row in rows]
    if "A" not in grades and "B" not in grades:
        limitations.append("no guideline (A) or systematic-review (B) evidence among the cited windows")
    for f in ("population", "intervention"):
        if comparison[f].get("status") == "mismatch":
            limitations.append(
                f"{f} mismatch: the question asks about '{comparison[f]['question']}', the closest "
                f"evidence concerns '{comparison[f]['closest_evidence']}' [{comparison[f]['citation']}]"
            )
        elif comparison[f].get("status") == "partial match":
            limitations.append(
                f"{f} only partly matched: '{', '.join(comparison[f]['missing_terms'])}' from the "
                f"question is not in the closest evidence '{comparison[f]['closest_evidence']}' "
                f"[{comparison[f]['citation']}]"
            )
    if len({row["doc_id"] for row in rows}) == 1:
        limitations.append("all cited windows come from a single document")
    return {
        "fields": comparison,
        "limitations": limitations,
        "evidence_pico_from": "the knowledge graph's entities of each cited window"
        if from_graph
        else "the offline rules run on the cited text",
    }


CERTAINTY_LEVELS = CONFIDENCE_LEVELS  # GRADE's four levels, lowest first: the ones a guideline's discussion states
# a guideline's own GRADE rating of its evidence, stated with its recommendation ("conditional
# recommendation in favour of use, low certainty evidence") or in its discussion (VA/DoD: "Weak for,
# the Work Group's confidence in the quality of the evidence: low", `pdf_text.with_stated_confidence`);
# a strength alone ("Weak for") is not one
STATED_CERTAINTY = re.compile(
    rf"\b(very low|low|moderate|high)[- ](?:certainty|quality)\b|{CONFIDENCE_LABEL}: (very low|low|moderate|high)", re.I
)
# Cochrane's plain-language wording of its GRADE rating in a review's statement of an effect (its guidance for
# authors): "probably reduces" is moderate certainty, "may reduce" low; a rating stated outright comes first
WORDED_CERTAINTY = re.compile(
    r"\b(?:(probably)|may|might)\s+(?:\w+ly\s+)?(?:not\s+)?(?:reduce|improve|increase|decrease|lower|prevent|"
    r"lead|result|make|have|provide|be)\w*",
    re.I,
)
# a review's own words on how weak its evidence is, with no rating stated: low ("While not robust, the available
# evidence does not reveal any clear advantage of foot orthoses ..." started "high" in the demo's orthoses answer)
QUALIFIED_EVIDENCE = re.compile(r"\b(?:not robust|(?:limited|weak|sparse|little) evidence)\b", re.I)
# GRADE's starting points by study design: randomised evidence (trials and their systematic reviews)
# starts high, observational evidence low; a guideline's own recommendation strength is quoted.
START = {
    "A": (3, "a guideline recommendation"),
    "B": (3, "systematic reviews (randomised evidence)"),
    "C": (3, "randomised trials"),
    "D": (1, "observational studies"),
    "E": (0, "other research (case reports, narrative reviews, expert opinion)"),
}


def stated_level(rating: re.Match) -> int:
    """The index in CERTAINTY_LEVELS of a `STATED_CERTAINTY` match."""
    return CERTAINTY_LEVELS.index((rating.group(1) or rating.group(2)).lower())


def assess_certainty(
    answer: dict,
    condition: str | None,
    in_condition: set[str],
    unanswered: str | None = None,
    passages: dict[str, str] | None = None,
    inconsistent: str | None = None,
    undecided: str | None = None,
) -> None:
    """The answer's certainty, following GRADE's logic and naming every step: it starts from the
    design of the best-graded evidence that supports the bottom line (the statements `take_sides`
    marked; without any, what the core answer cites): randomised evidence high, observational low, a
    guideline's stated recommendation strength quoted (and, when it rates its own evidence, "low
    certainty evidence", that rating is the start); and it drops one level per downgrade,
    each listed with its reason: indirectness (most cited windows from other conditions than the
    question's, whose windows are `in_condition`; a population, intervention or outcome that does not
    match the question's; no cited statement that names the question's arms supports the bottom
    line), inconsistency (a core statement contradicts the verdict, or, in the graded evidence, a source graded as
    well as the best supporting one) and imprecision (the verdict
    rests on a single study). A supporting systematic review's own rating starts it too: stated in the
    quoted statement, or very low when that concludes the evidence is uncertain whether the intervention works,
    or as the statement words it (`WORDED_CERTAINTY`: "probably" moderate, "may" low; `QUALIFIED_EVIDENCE`: "not
    robust", "limited evidence" low), else the lowest that
    the review's cited windows state (`passages`: window id -> text). A bottom line that no cited finding answers
    (`unanswered`: why, `bottom_line.unnamed`) is very low; one left open because its best-graded sources
    disagree (`inconsistent`: why, `bottom_line.disagreeing`) is downgraded for it; one left open that no cited
    source supports (`undecided`: why, "the top-ranked review does not settle it") is very low, for imprecision:
    no finding gives it a direction to be certain of. Sets answer["certainty"]."""
    citations = answer.get("citations", [])
    by_n = {c["n"]: c for c in citations}
    core = answer.get("core_answer", [])
    cited = [by_n[n] for s in core for n in s.get("citations", []) if n in by_n]
    if not cited or unanswered:
        answer["certainty"] = {
            "level": CERTAINTY_LEVELS[0],
            "starts_from": "no cited finding about the question" if unanswered else "no cited finding",
            "downgraded_for": [
                f"indirectness: {unanswered}" if unanswered else "no cited window states a result about the question"
            ],
        }
        return
    if undecided:
        answer["certainty"] = {
            "level": CERTAINTY_LEVELS[0],
            "starts_from": "no cited finding that takes a side on the question",
            "downgraded_for": [f"imprecision: {undecided}"],
        }
        return
    shown = core + [s for group in answer.get("evidence_by_grade", []) for s in group.get("statements", [])]
    backing = [s for s in shown if s.get("stance") == "supports"]
    basis = [by_n[n] for s in backing for n in s.get("citations", []) if n in by_n] or cited
    best = min(c["grade"] for c in basis)
    start, design = START[best]
    side = ", the best grade supporting the bottom line" if backing else ""
    starts_from = f"{design} (grade {best}{side}): {CERTAINTY_LEVELS[start]}"
    if best == "A":
        # the strengths the supporting guidelines state; one that rates its own evidence is quoted first
        # (an exercise answer's certainty read "high" from the VA/DoD "Weak for" quoted before WHO's "low
        # certainty evidence", and "low" when the two came the other way round)
        strengths = [m.group(1).strip() for s in backing or core for m in [STRENGTH.search(s["statement"])] if m]
        quoted = next((q for q in strengths if STATED_CERTAINTY.search(q)), strengths[0] if strengths else None)
        rated = STATED_CERTAINTY.search(quoted or "")
        if rated:  # the guideline graded its own evidence: its rating, not the design's, is the start
            start = stated_level(rated)
            starts_from = f"{design} (grade {best}{side}): {CERTAINTY_LEVELS[start]}, the guideline's own rating"
        starts_from += f"; the guideline states: {quoted}" if quoted else "; the guideline states no strength here"
    elif best == "B":  # a supporting review's own GRADE rating, or its conclusion that the evidence is uncertain
        # (with none supporting, as when the reviews disagree, the core's reviews: the demo's TENS answer, "the grade B
        # findings about TENS disagree", started "high" beside a review's "very low-certainty evidence")
        reviews = [s for s in backing or core if any(by_n[n]["grade"] == "B" for n in s["citations"] if n in by_n)]
        own = [s["statement"] for s in reviews]
        rated = next((m for s in own for m in [STATED_CERTAINTY.search(s)] if m), None)
        documents = {
            by_n[n]["doc_id"] for s in reviews for n in s["citations"] if n in by_n and by_n[n]["grade"] == "B"
        }
        passage = [  # what the supporting reviews' cited windows state (the rating often sits in the conclusions)
            stated_level(m)
            for c in citations
            if c["doc_id"] in documents
            for m in STATED_CERTAINTY.finditer((passages or {}).get(c["window_id"], ""))
        ]
        if rated:
            start = stated_level(rated)
            starts_from = f"{design} (grade {best}{side}): {CERTAINTY_LEVELS[start]}, the review's own rating"
        elif any(concludes_uncertain_whether_it_works(s) for s in own):
            start = 0
            starts_from = (
                f"{design} (grade {best}{side}): very low, the review's own conclusion that the evidence is uncertain"
            )
        elif worded := [m for s in own if (m := WORDED_CERTAINTY.search(s))]:
            start = min(2 if m.group(1) else 1 for m in worded)  # the lowest the supporting statements word
            starts_from = (
                f"{design} (grade {best}{side}): {CERTAINTY_LEVELS[start]}, as the review words its finding "
                f'("{worded[0].group(0)}")'
            )
        elif qualified := [m for s in own if (m := QUALIFIED_EVIDENCE.search(s))]:
            start = 1
            starts_from = (
                f'{design} (grade {best}{side}): low, as the review qualifies its evidence ("{qualified[0].group(0)}")'
            )
        elif passage:
            start = min(passage)
            starts_from = (
                f"{design} (grade {best}{side}): {CERTAINTY_LEVELS[start]}, the lowest rating the review's cited "
                "windows state"
            )
    reasons = []
    comparison = answer.setdefault("pico_comparison", {})
    if condition:
        other = [c for c in citations if c["window_id"] not in in_condition]
        if 2 * len(other) > len(citations):
            mix = ", ".join(f"{code} {n}" for code, n in Counter(c["condition"] for c in other).most_common())
            reason = (
                f"condition mismatch: {len(other)} of {len(citations)} cited windows come from other conditions "
                f"than the question's {condition} ({mix})"
            )
            comparison.setdefault("limitations", []).append(reason)
            reasons.append(f"indirectness: {reason}")
    for f in ("population", "intervention", "outcome"):
        field = comparison.get("fields", {}).get(f, {})
        # a population read from the condition is judged by where the cited windows come from (above), not again
        if field.get("status") == "mismatch" and "from" not in field:
            reasons.append(
                f"indirectness: {f} mismatch (question '{field.get('question')}', evidence "
                f"'{field.get('closest_evidence')}')"
            )
    against = [s for s in core if s.get("stance") == "contradicts"]
    # sources at least as well graded as the best supporting one that contradict the bottom line in the graded
    # evidence, not in the core (the demo's NSAIDs answer read "certainty high; supported by 3 grade C ...;
    # contradicted by 2 grade C", downgraded for nothing)
    opposing = sorted(
        {
            n
            for s in shown
            if s.get("stance") == "contradicts" and s not in against
            for n in s.get("citations", [])
            if n in by_n and by_n[n]["grade"] <= best
        }
    )
    if inconsistent:
        reasons.append(f"inconsistency: {inconsistent}")
    if against:
        reasons.append(
            f"inconsistency: {len(against)} of {len(core)} core statements contradict the bottom line "
            f"({', '.join(f'[{n}]' for s in against for n in s.get('citations', []))})"
        )
    elif opposing and backing:
        reasons.append(
            f"inconsistency: cited grade {best} or better evidence contradicts the bottom line "
            f"({', '.join(f'[{n}]' for n in opposing)})"
        )
    if not backing:
        reasons.append(
            "indirectness: no cited statement that names the question's intervention or comparator supports "
            "the bottom line"
        )
    supporting = {by_n[n]["doc_id"] for s in backing for n in s.get("citations", []) if n in by_n}
    if len(supporting) == 1 and best not in ("A", "B"):
        reasons.append("imprecision: the verdict rests on a single study")
    answer["certainty"] = {
        "level": CERTAINTY_LEVELS[max(0, start - len(reasons))],
        "starts_from": starts_from,
        "downgraded_for": reasons,
    }


STANCES = ("supports", "contradicts", "neutral")  # a statement's side of the bottom line (bottom_line.take_sides)
CORE_STATEMENTS = 3  # the core answer's statements at most
CORE_POOL = 6  # the core answer's statements come from this many best-scored findings
REVIEW = "B"  # systematic reviews and overviews of guidelines, which may report guidelines' recommendations
LEADING_GRADES = ("A", "B")  # guideline and systematic-review findings that name the question lead the core


def certainty_line(certainty: dict) -> str:
    """The certainty as one line: its level, what it starts from and every downgrade (or none)."""
    downgrades = "; ".join(certainty.get("downgraded_for", [])) or "none"
    return (
        f"Certainty {certainty.get('level')}: starts from {certainty.get('starts_from')}; downgraded for: {downgrades}"
    )


def _verdict(
    statements: list[str], model: VerdictModel | None = None, anchors: Anchors | None = None, over: str = ""
) -> dict:
    """The verdict of ranked statements: the lake's learned classifier (read with the question's
    arms) when it has one, else the rules."""
    verdict, basis = read_verdict(statements, model, anchors)
    if model is None:
        method = "offline rules (retrieval/verdict.py)"
    else:
        read_with = ", read with the question's arms" if model.orientation is not None and arms_of(anchors) else ""
        method = f"learned classifier (verdict_model, Evidence Inference train spans{read_with})"
    method += over
    return {"verdict": verdict, "verdict_basis": {"method": method, "statement": basis}}


def _core_rank(row: dict, statement: str, anchors: Anchors) -> str:
    """A core statement's precedence: a guideline's recommendation about the question's arms first
    (`findings.about_arms`), then a grade A or B finding that (or whose source's title) names them, by
    grade; else last."""
    if row["grade"] == "A" and recommends_about_arms(statement, anchors):
        return "0"
    named = names_question(statement, anchors, row.get("title") or "")
    return row["grade"] if row["grade"] in LEADING_GRADES and named else "Z"


def compose_offline(
    question: str,
    question_vector: np.ndarray,
    anchors: Anchors,
    rows: list[dict],
    embed: Embed,
    verdict_model: VerdictModel | None = None,
    core: list[dict] | None = None,
    lead: list[dict] | None = None,
) -> dict:
    """The three-part answer, extractively, with a citation on every statement. Each row carries
    its quotable `sentences` and their `sentence_vectors` (Retriever.attach_evidence). `lead`: the
    lead source's other windows (`Retriever.lead_source`: the top-ranked window's document, read in
    full), whose findings the core answer and its verdict read beside the cited windows of that
    source; a lead window quoted in the core joins the citations. A strategy that composes its own
    core statements (CLAIMS' root summaries) passes them as `core` ({"statement", "window_ids"});
    they replace the selected sentences and are cited the same way."""
    if not rows:
        return {
            "mode": OFFLINE_MODE,
            "core_answer": [],
            "evidence_by_grade": [],
            "citations": [],
            "pico_comparison": {"fields": {}, "limitations": ["no evidence window matched the question"]},
            "verdict": INSUFFICIENT,
            "verdict_basis": {"method": "no evidence"},
            "message": "No evidence in this lake matched the question.",
        }
    read = rows + ([] if core else list(lead or []))  # numbered 1.. in this order; rows first
    sentences = [(flatten(s), n) for n, row in enumerate(read, 1) for s in row["sentences"]]
    if sentences:
        vectors = np.concatenate([row["sentence_vectors"] for row in read])
    else:  # no window has a quotable sentence: quote each window's opening, scored by its vector
        sentences = [(row["text"][:300], n) for n, row in enumerate(rows, 1)]
        vectors = np.stack([np.asarray(row["vector"]) for row in rows])
    texts, cosines = [s for s, _ in sentences], vectors.astype(np.float32) @ question_vector
    sections = [read[n - 1].get("section") for _, n in sentences]
    scorer = verdict_model.sentences if verdict_model else None
    if scorer:
        features = sentence_features(question, anchors, texts, cosines, sections)
        scores, how = scorer.scores(features), SELECTED_BY_SCORER
    else:
        scores, how = cosine_scores(texts, cosines), SELECTED_BY_COSINE
    order = np.argsort(-scores, kind="stable")
    # a finding about another stage of the condition does not answer the question ("In acute low-back pain,
    # exercise therapy is as effective as ..." was quoted for chronic low back pain)
    finding = [is_finding(text, section) and not other_stage(text, question) for text, section in zip(texts, sections)]
    # each window's best finding, quoted without its own citation markers; a sentence that overlapping
    # windows share is quoted once, for the best-scored of them (the demo once quoted a guideline's
    # recommendation twice in a row, from two of its windows)
    best_per_window: dict[int, tuple[int, str]] = {}  # window -> (its place in the score order, statement)
    # the lead source's findings, any window: statement -> (place, window)
    lead_findings: dict[str, tuple[int, int]] = {}
    quoted: set[str] = set()
    # a systematic review's window that states a finding about the question's arms is quoted by it, not by a
    # better-scored one that names neither (CD007005 was quoted as "It is uncertain whether this is better than
    # alternative interventions" beside its "arthrographic distension ... provides short-term benefits in pain").
    # Not a guideline's: its window then quoted a recommendation on the arms for another condition first (the LBP
    # guideline's TENS recommendation for a neck TENS question; NC_proxy over the demo's 230 questions 0.586 -> 0.581),
    # nor a review of something else whose title does not name the arms (a prolotherapy review's "When combined with
    # spinal manipulation, exercise, and other co-interventions, prolotherapy may improve ..." for exercise therapy).
    # The same holds for a review that leads: the lead source's findings, read from any of its windows, skip the
    # window's other statements too (the insoles review's "insufficient evidence to determine the best design of
    # such inserts" no longer joins its "shock absorbing inserts ... probably reduces the incidence of stress fractures")
    reviews_of_arms = {
        n for n, row in enumerate(read, 1) if row["grade"] == REVIEW and about_arms(row.get("title") or "", anchors)
    }
    about = {
        n
        for (text, n), found in zip(sentences, finding)
        if found and n in reviews_of_arms and about_arms(text, anchors)
    }
    for place, i in enumerate(order):
        n = sentences[i][1]
        if not finding[i]:
            continue
        statement = without_markers(sentences[i][0])
        if n in about and not about_arms(statement, anchors):
            continue
        if read[n - 1]["doc_id"] == rows[0]["doc_id"]:
            lead_findings.setdefault(statement, (place, n))
        if n not in best_per_window and statement not in quoted:
            best_per_window[n] = (place, statement)
            quoted.add(statement)
    selected, cited = _core(read, best_per_window, lead_findings, anchors), rows
    best_per_window = {n: statement for n, (_, statement) in best_per_window.items()}
    if core:
        number = {row["window_id"]: n for n, row in enumerate(rows, 1)}
        selected = [
            {"statement": c["statement"], "citations": [number[w] for w in c["window_ids"] if w in number]}
            for c in core
        ]
    else:  # a lead window quoted in the core is cited after the retrieved ones
        extra = list(dict.fromkeys(n for c in selected for n in c["citations"] if n > len(rows)))  # each window once
        renumber = {n: len(rows) + k for k, n in enumerate(extra, 1)}
        selected = [dict(c, citations=[renumber.get(n, n) for n in c["citations"]]) for c in selected]
        best_per_window = {renumber.get(n, n): s for n, s in best_per_window.items() if n <= len(rows) or n in renumber}
        cited = rows + [read[n - 1] for n in extra]
    # a change within one arm does not say which arm did better: the statements that compare them give the verdict
    reading = [c["statement"] for c in selected]
    verdict = _verdict([s for s in reading if not within_one_arm(s, anchors)] or reading, verdict_model, anchors)
    by_grade = []
    for grade in GRADES:
        statements = [
            {"statement": best_per_window[n], "citations": [n]}
            for n, row in enumerate(cited, 1)
            if row["grade"] == grade and n in best_per_window
        ]
        if statements:
            by_grade.append({"grade": grade, "label": GRADE_LABELS[grade], "statements": statements})
    citations = [citation(n, row) for n, row in enumerate(cited, 1)]
    for cite in citations[len(rows) :]:
        cite["read_in_full"] = True  # not retrieved: a window of the lead source, quoted in the core
    return {
        "mode": OFFLINE_MODE,
        "core_answer": selected,
        "sentence_selection": "core statements from CLAIMS"
        if core
        else f"{how}; findings only (results or recommendations, not background); {LEAD_SOURCE}",
        **verdict,
        "evidence_by_grade": by_grade,
        "citations": citations,
        "pico_comparison": pico_comparison(anchors, rows, embed),
    }


def _core(
    read: list[dict], best: dict[int, tuple[int, str]], lead: dict[str, tuple[int, int]], anchors: Anchors
) -> list[dict]:
    """The core answer's (at most three) statements. `read`: the cited rows, then the lead source's
    other windows; `best`: window number -> (place in the sentence scorer's order, the window's best
    finding); `lead`: the lead source's findings, any window, best-scored first -> (place, window).
    Eligible: every guideline recommendation about the question's arms (a recommendation states no
    result, so the sentence scorer ranks it low), the cited grade A or B findings among the CORE_POOL
    best windows that name the question's intervention or comparator, and the lead source's CORE_POOL
    best-scored findings, several from one window if they score so. The recommendations lead, then
    those A and B findings, best grade first, then the rest by score (a trial's result often names its
    arms "group A", so naming does not reorder them). Other sources' findings stay out of the core:
    read beside the lead source's, they changed its verdict more often than they confirmed it
    (docs/answers.md). When the lead source states no finding, the best findings of the CORE_POOL
    best windows take its place. A recommendation about the arms that names fewer of their words than
    another one does ("spinal cord stimulation" beside "spinal
    mobilization/manipulation" for spinal manipulation: `findings.less_specific`) stays out, and so does
    any recommendation not about the arms (a guideline read in full as the lead source recommends on much
    else)."""
    pool: dict[str, tuple[str, int, int]] = {}  # statement -> (precedence, place, window)
    specific = most_specific([*(s for _, s in best.values()), *lead], anchors)

    def add(entry: tuple[str, int, int], statement: str) -> None:
        if recommends(statement) and (
            not about_arms(statement, anchors) or less_specific(statement, anchors, specific)
        ):
            return  # a recommendation on something else (a guideline's lead: "we suggest against opioids")
        pool[statement] = min(pool.get(statement, entry), entry)

    for r, (n, (place, statement)) in enumerate(best.items()):
        rank = _core_rank(read[n - 1], statement, anchors)
        if rank == "0" or (r < CORE_POOL and (rank != "Z" or not lead)):
            add((rank, place, n), statement)
    for statement, (place, n) in list(lead.items())[:CORE_POOL]:
        add((_core_rank(read[n - 1], statement, anchors), place, n), statement)
    ranked = sorted(pool.items(), key=lambda item: item[1])[:CORE_STATEMENTS]
    return [{"statement": statement, "citations": [n]} for statement, (_, _, n) in ranked]


IRCOT_STEP = """Question: {question}
Evidence so far (numbered windows):
{evidence}
Reasoning so far: {thoughts}
Think one step about what the evidence establishes for the question's population, intervention,
comparator, outcome and time frame, then say what to search next (or null when enough).
JSON only: {{"thought": "...", "next_query": "..." or null}}"""
IRCOT_STEP_SCHEMA = {
    "type": "object",
    "properties": {"thought": {"type": "string"}, "next_query": {"type": ["string", "null"]}},
    "required": ["thought"],
}
IRCOT_ANSWER = """Question: {question}
Evidence (numbered windows, with grade A-E):
{evidence}
Reasoning: {thoughts}
Answer in three parts, citing window numbers on every statement:
1. core_answer: 1-3 statements; 2. evidence_by_grade: statements ordered by grade, A first;
3. pico_comparison: how the question's population/intervention/comparator/outcome match the
evidence, naming mismatches and limitations.
Quote or state findings (results, recommendations), never background. Mark each core statement's
side of your bottom line: "supports", "contradicts" or "neutral".
Also give the verdict your core answer states: "significantly increased", "significantly decreased",
"no significant difference" (the intervention's effect on the outcome against the comparator) or
"insufficient evidence"; and the bottom line first: the answer in the question's own terms (for a
yes/no question "yes", "no" or "uncertain"; otherwise which arm the evidence favours on the outcome,
"no difference" or "insufficient evidence") as `answer`, one sentence as `text`, and the window
numbers that support it and those that contradict it.
JSON only: {{"bottom_line": {{"answer": "...", "text": "...", "supports": [1], "contradicts": []}},
"core_answer": [{{"statement": "...", "citations": [1], "stance": "supports"}}],
"evidence_by_grade": [{{"grade": "A", "statements": [{{"statement": "...", "citations": [2]}}]}}],
"pico_comparison": {{"summary": "...", "limitations": ["..."]}}, "verdict": "..."}}"""
CITATION_LIST = {"type": "array", "items": {"type": "integer"}}
IRCOT_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "bottom_line": {
            "type": "object",
            "properties": {
                "answer": {"type": "string", "minLength": 1},
                "text": {"type": "string", "minLength": 1},
                "supports": CITATION_LIST,
                "contradicts": CITATION_LIST,
            },
            "required": ["answer", "text"],
        },
        "core_answer": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"stance": {"enum": list(STANCES)}},
                "required": ["statement", "citations"],
            },
        },
        "evidence_by_grade": {"type": "array"},
        "pico_comparison": {"type": "object"},
        "verdict": {"enum": list(VERDICTS)},
    },
    "required": ["bottom_line", "core_answer", "evidence_by_grade", "pico_comparison"],
}


def _evidence_block(rows: list[dict]) -> str:
    return "\n".join(f"[{n}] (grade {r['grade']}) {r['title']}: {r['text'][:1200]}" for n, r in enumerate(rows, 1))


def compose_llm(
    question: str,
    rows: list[dict],
    client: LLMClient,
    retrieve_more: Callable[[str], list[dict]],
    verdict_model: VerdictModel | None = None,
    anchors: Anchors | None = None,
) -> dict:
    """IRCoT: up to three reason-and-retrieve rounds, then a cited three-part answer (a verdict the
    LLM does not state is read from its statements with the question's `anchors`). Every round
    keeps the evidence budget (as many windows as the first retrieval gave) in BETR order (`score`):
    a follow-up window enters only by outscoring the weakest one held."""
    thoughts: list[str] = []
    evidence = list(rows)
    budget = len(rows)
    for _ in range(IRCOT_ROUNDS):
        step = client.complete_json(
            "ircot_step",
            fill(
                IRCOT_STEP,
                {"evidence": _evidence_block(evidence), "thoughts": " ".join(thoughts) or "none"},
                question=question,
            ),
            IRCOT_STEP_SCHEMA,
            offline=lambda: {"thought": "", "next_query": None},
        )
        thoughts.append(step.data["thought"])
        follow_up = step.data.get("next_query")
        if not follow_up:
            break
        seen = {r["window_id"] for r in evidence}
        fresh = [r for r in retrieve_more(follow_up) if r["window_id"] not in seen][:4]
        evidence = sorted(evidence + fresh, key=lambda r: -r["score"])[:budget]
    result = client.complete_json(
        "ircot_answer",
        fill(IRCOT_ANSWER, {"evidence": _evidence_block(evidence), "thoughts": " ".join(thoughts)}, question=question),
        IRCOT_ANSWER_SCHEMA,
        offline=lambda: {},
    )
    answer = result.data
    valid = set(range(1, len(evidence) + 1))
    for statement in answer["core_answer"]:
        statement["citations"] = [c for c in statement.get("citations", []) if c in valid]
    stated = answer.pop("bottom_line")
    answer["llm_bottom_line"] = {
        **stated,
        **{key: [c for c in stated.get(key, []) if c in valid] for key in ("supports", "contradicts")},
    }
    answer.update(
        mode=f"llm:{client.model} (IRCoT, {len(thoughts)} rounds)",
        reasoning=thoughts,
        citations=[citation(n, r) for n, r in enumerate(evidence, 1)],
    )
    if answer.get("verdict"):
        answer["verdict_basis"] = {"method": f"stated by llm:{client.model}"}
    else:
        answer.update(
            _verdict(
                [s["statement"] for s in answer["core_answer"]],
                verdict_model,
                anchors,
                " over the LLM's statements (it stated none)",
            )
        )
    return answer
