"""Med-R2 (seeds/med-r2.txt; methods.md section 2): the EBM workflow as retrieval.

1. Query classification on two axes: EBM category (diagnosis, therapy, prognosis, etiology,
   prevention, cost, other) and general question type (the paper's 12, Table 3). Offline by
   rules, with embedding prototypes of Table 3's descriptions when no rule fires; LLM when set.
2. Category-specific reformulation (Table 4): offline the question plus the category's own
   search terms (what Table 4 tells the reformulator to specify); LLM when set.
3. Dense + sparse retrieval of the reformulated query, coarse rerank by the fine scorer
   (scored_candidates), top coarse_k (MedR2Constants).
4. Fine score F(x) = f_h(x) * f_g(x) * (1 + alpha * f_u(x)), alpha = 1. f_h = 10 - e with e the
   document's rank on the 9-level hierarchy (1 meta-analysis ... 9 expert opinion), so a
   meta-analysis scores 9 and expert opinion 1 (corpus/grading.py document_type). f_g = the
   window's probability mass on the 16 general document categories (Table 5) that the question
   type expects (the paper's Fig. 8 projection: factual-like questions -> argumentation,
   definition, description, explanation, purpose, narration; directive/opinion/procedural ->
   purpose, instruction, command, problem-solving; comparative/evaluative/verification ->
   comparison, evaluation, classification; hypothetical -> condition, prediction, cause and
   effect). The category probabilities come from the window vector against embedding
   prototypes of Table 5's descriptions (softmax, MedR2Constants.temperature). f_u needs
   the gold answer, so it is 0 when answering; `ebm eval retrieval --oracle-utility` computes it
   (oracle_utility: the lake's verdict classifier as the paper's small proxy model, f_u = the drop
   in its loss on the gold answer when it reads the window). Coarse relevance does not enter F: it
   only breaks ties.
5. Evidence fills a TOKEN_BUDGET (4K word pieces) in F order. LLM mode iterates (T <= 5): a
   chain-of-thought step proposes a refined query; its candidates join the pool and F is
   re-applied, until the chosen set changes by less than ALTERATION or no query is proposed.
The paper leaves coarse_k and the prototype temperature open: both are in Settings
(EBM_MED_R2_COARSE_K, EBM_MED_R2_TEMPERATURE), chosen on Evidence Inference train questions by
`ebm eval tune --strategy med_r2` (evaluation/constant_tuning.py); steps 1-3 are gathered once
(gather_candidates) and step 4-5 re-applied per constant (choose).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ebm_platform.corpus.grading import evidence_rank
from ebm_platform.retrieval.features import QueryView
from ebm_platform.retrieval.pipeline import Candidate, Laps, Retrieval, Retriever, scored_candidates
from ebm_platform.retrieval.verdict import VerdictModel
from ebm_platform.settings import Settings, get_settings

ALPHA = 1.0
TOKEN_BUDGET = 4096
MAX_ROUNDS = 5
ALTERATION = 0.2  # stop iterating when under a fifth of the chosen windows changed
Utility = Callable[[str], float]  # f_u of a window's text

EBM_CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cost", re.compile(r"\bcost|\beconomic|\bafford|\bexpens", re.I)),
    (
        "diagnosis",
        re.compile(
            r"\bdiagnos|\bsensitivity\b|\bspecificity\b|\baccura(?:te|cy)\b|\bdetect|\bscreening test|"
            r"\bclinical test|\bimaging\b",
            re.I,
        ),
    ),
    ("prevention", re.compile(r"\bprevent|\bprophyla|\breduce the risk|\brisk reduction|\bavoid(?:ing)? injur", re.I)),
    ("etiology", re.compile(r"\bcaus(?:e|es|ed|ing)\b|\brisk factors?\b|\betiolog|\baetiolog|\bwhy do", re.I)),
    (
        "therapy",
        re.compile(
            r"\btreat|\btherap|\brehabilit|\bexercis|\bsurger|\binterven|\beffect|\befficacy|\bimprove|"
            r"\breduce|\bincrease|\bdecrease|\bprogram|\btraining\b|\bdrug|\bdose|\bcompared|\bversus\b|"
            r"\bvs\.?\b|\bdifference between",
            re.I,
        ),
    ),
    (
        "prognosis",
        re.compile(
            r"\bprognos|\blong-term|\brecovery\b|\breturn to (?:sport|play|work)|\bpredict|\bsurvival|"
            r"\bprogression|\bnatural history",
            re.I,
        ),
    ),
)
QUESTION_TYPES = {  # Table 3
    "factual": "Inquiring into specific and objective facts or data.",
    "referential": "Seeking answers by referencing specific documents, resources, or other information.",
    "definition": "Inquiring about the definition or explanation of a concept or entity.",
    "explanatory": "Seeking explanations for the causes of phenomena, processes, or events.",
    "descriptive": "Requesting a description of the characteristics, properties, and features of an entity.",
    "directive": "Seeking guidance or recommendations.",
    "opinion": "Pertaining to individual feelings, attitudes, or preferences.",
    "procedural": "Inquiring about the specific steps to complete a particular task or activity.",
    "comparative": "Inquiring comparison of the differences between two or more entities.",
    "evaluative": "Assessing the validity or quality of a statement or viewpoint.",
    "verification": "Confirming or verifying the authenticity or accuracy of certain information.",
    "hypothetical": "Presenting a hypothetical scenario and requesting predictions of outcomes.",
}
QUESTION_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "comparative",
        re.compile(
            r"\bcompared?\b|\bversus\b|\bvs\.?\b|\bthan\b|\bdifference between|\bsuperior|"
            r"\binferior|\bbetter\b|\bworse\b",
            re.I,
        ),
    ),
    ("hypothetical", re.compile(r"\bwhat (?:would|will) happen|\bwhat if\b|\bif\b.+\bwould\b", re.I)),
    (
        "procedural",
        re.compile(
            r"\bhow (?:to|do|does|should|can) (?:i |we |one |clinicians? )?(?:perform|do|carry|"
            r"implement|progress|administer)|\bsteps?\b|\bprotocol for",
            re.I,
        ),
    ),
    ("directive", re.compile(r"\bshould\b|\brecommend|\bbest (?:way|approach|treatment)|\bwhat is advised", re.I)),
    (
        "definition",
        re.compile(r"^\s*what (?:is|are) (?:an? |the )?[\w-]+(?:\s[\w-]+){0,2}\?\s*$|\bdefin|\bmeaning of", re.I),
    ),
    ("explanatory", re.compile(r"^\s*why\b|\bwhat causes|\bmechanism", re.I)),
    ("descriptive", re.compile(r"\bcharacteristics|\bfeatures of|\bsigns and symptoms|\bdescribe", re.I)),
    ("verification", re.compile(r"^\s*(?:does|do|did|is|are|was|were|can|could|has|have|will)\b", re.I)),
    ("factual", re.compile(r"^\s*(?:what|which|how many|how much|how long|when|who|where)\b", re.I)),
)
DOCUMENT_CATEGORIES = {  # Table 5
    "argumentation": "Presenting a viewpoint or argument, potentially accompanied by supporting evidence.",
    "definition": "Providing a clear definition of a term or concept.",
    "description": "Describing the characteristics or attributes of an object or event.",
    "explanation": "Explaining a concept, process, or cause.",
    "purpose": "Elucidating the purpose or intent behind a particular action or event.",
    "narration": "Providing a narrative account of an event, experience, or story.",
    "process": "Describing a process or a sequence of steps.",
    "instruction": "Providing steps or guidance for executing a task or operation.",
    "command": "Conveying a request that requires the listener to take action.",
    "problem-solving": "Proposing methods or strategies for addressing specific issues.",
    "comparison": "Comparing the similarities or differences between two or more entities.",
    "evaluation": "Articulating a judgment on a particular subject or behavior.",
    "classification": "Categorizing objects or concepts into specific categories systems.",
    "condition": "Describing the assumptions under which a particular event occurs.",
    "prediction": "Forecasting future events or trends.",
    "cause-and-effect": "Describing the causal relationships between events.",
}
PROJECTION = {  # Fig. 8: question group -> expected document categories
    "factual": ("argumentation", "definition", "description", "explanation", "purpose", "narration"),
    "procedural": ("purpose", "instruction", "command", "problem-solving"),
    "comparative": ("comparison", "evaluation", "classification"),
    "hypothetical": ("condition", "prediction", "cause-and-effect"),
}
QUESTION_GROUP = {
    "factual": "factual",
    "referential": "factual",
    "definition": "factual",
    "explanatory": "factual",
    "descriptive": "factual",
    "directive": "procedural",
    "opinion": "procedural",
    "procedural": "procedural",
    "comparative": "comparative",
    "evaluative": "comparative",
    "verification": "comparative",
    "hypothetical": "hypothetical",
}
REFORMULATION = {  # Table 4's instruction, and the offline reformulator's search terms for it
    "diagnosis": (
        "Specify the condition you need to diagnose and ask about the accuracy, sensitivity, or specificity "
        "of specific diagnostic tests.",
        "diagnostic accuracy sensitivity specificity test",
    ),
    "therapy": (
        "Specify the disease or symptom along with the therapy being considered, and inquire about its "
        "effectiveness, safety, or comparison with other therapies.",
        "effectiveness safety compared",
    ),
    "prognosis": (
        "Specify the disease or condition and ask about long-term outcomes such as survival rates, recovery "
        "chances, or disease progression.",
        "long-term outcome recovery progression",
    ),
    "etiology": (
        "Describe the health issue and ask about potential causes, including risk factors, pathogens, or "
        "genetic background.",
        "causes risk factors",
    ),
    "prevention": (
        "Specify the disease or health issue and ask about the effectiveness of preventive measures or "
        "recommendations.",
        "prevention preventive effectiveness",
    ),
    "cost": (
        "Specify the medical intervention or service and ask about cost-effectiveness analyses, including direct "
        "and indirect costs and cost-effectiveness ratios.",
        "cost-effectiveness costs",
    ),
}


def f_h(rank: int) -> float:
    """Hierarchy-of-evidence score f_h = 9 - (e - 1) = 10 - e (e = 1 most credible)."""
    return float(10 - rank)


def f_g(probabilities: dict[str, float], expected: tuple[str, ...]) -> float:
    """The document's probability mass on the expected document categories."""
    return float(sum(probabilities.get(c, 0.0) for c in expected))


def fine_score(h: float, g: float, u: float = 0.0, alpha: float = ALPHA) -> float:
    """F(x) = f_h(x) * f_g(x) * (1 + alpha * f_u(x))."""
    return h * g * (1.0 + alpha * u)


def fill_budget(tokens: list[int], budget: int = TOKEN_BUDGET) -> int:
    """How many items, in order, fit in `budget` tokens (at least one; an item that does not fit ends the fill)."""
    used = 0
    for n, t in enumerate(tokens):
        if used + t > budget and n:
            return n
        used += t
    return len(tokens)


def category_probabilities(vectors: np.ndarray, prototypes: np.ndarray, temperature: float) -> np.ndarray:
    """Softmax over cosine with each category prototype (rows: documents; columns: categories)."""
    logits = (vectors @ prototypes.T) / temperature
    logits -= logits.max(axis=1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=1, keepdims=True)


@lru_cache(maxsize=4)
def _prototypes(encoder, which: str) -> np.ndarray:
    texts = QUESTION_TYPES if which == "question" else DOCUMENT_CATEGORIES
    return encoder.embed([f"{name}: {text}" for name, text in texts.items()])


@dataclass
class QueryClass:
    category: str
    question_type: str
    basis: str


def classify_offline(question: str, encoder) -> QueryClass:
    """EBM category by rules (first match; 'other' when none fires); question type by rules, else
    the nearest Table 3 description."""
    category = next((name for name, pattern in EBM_CATEGORIES if pattern.search(question)), "other")
    rule = next((name for name, pattern in QUESTION_RULES if pattern.search(question)), None)
    if rule:
        return QueryClass(category, rule, "offline rules")
    sims = encoder.embed([question]) @ _prototypes(encoder, "question").T
    return QueryClass(
        category,
        list(QUESTION_TYPES)[int(np.argmax(sims[0]))],
        "offline rules (category); nearest Table 3 description (question type)",
    )


CLASSIFY_PROMPT = """Classify the clinical question on two axes.
EBM category: one of {categories}.
Question type: one of {types}.
Question: {question}
JSON only: {{"category": "...", "question_type": "..."}}"""
REWRITE_PROMPT = """Reformulate the clinical question for evidence retrieval. {instruction}
Question: {question}
JSON only: {{"query": "..."}}"""
STEP_PROMPT = """Question: {question}
Evidence so far:
{evidence}
Reason step by step about what this evidence establishes, then give a refined search query for what is
still missing, or null when the evidence suffices.
JSON only: {{"thought": "...", "refined_query": "..." or null}}"""


def classify(r: Retriever, question: str) -> QueryClass:
    categories = [name for name, _ in EBM_CATEGORIES] + ["other"]
    offline = classify_offline(question, r.encoder)
    result = r.client.complete_json(
        "med_r2_classify",
        CLASSIFY_PROMPT.format(categories=", ".join(categories), types=", ".join(QUESTION_TYPES), question=question),
        {
            "type": "object",
            "properties": {"category": {"enum": categories}, "question_type": {"enum": list(QUESTION_TYPES)}},
            "required": ["category", "question_type"],
        },
        offline=lambda: {"category": offline.category, "question_type": offline.question_type},
    )
    basis = offline.basis if result.mode == "offline" else f"llm:{r.client.model}"
    return QueryClass(result.data["category"], result.data["question_type"], basis)


def reformulate(r: Retriever, question: str, category: str) -> tuple[str, str]:
    """The category-specific query and how it was made."""
    if category not in REFORMULATION:
        return question, "unchanged (category 'other')"
    instruction, terms = REFORMULATION[category]
    result = r.client.complete_json(
        "med_r2_rewrite",
        REWRITE_PROMPT.format(instruction=instruction, question=question),
        {"type": "object", "properties": {"query": {"type": "string", "minLength": 3}}, "required": ["query"]},
        offline=lambda: {"query": f"{question} {terms}"},
    )
    return result.data["query"], (
        "offline: question + Table 4 terms" if result.mode == "offline" else f"llm:{r.client.model}"
    )


def oracle_utility(model: VerdictModel, gold: str) -> Utility:
    """Evaluation-only f_u with the gold answer at hand: the proxy model is the lake's verdict
    classifier, the loss its -log p(gold | text); f_u(x) = max(loss with no evidence - loss with
    the window's text, 0)."""
    classes = list(model.pipeline.classes_)
    if gold not in classes:
        raise ValueError(f"gold answer {gold!r} is not one of the verdict model's classes {classes}")
    column = classes.index(gold)

    def loss(text: str) -> float:
        return -math.log(max(float(model.stated_probabilities([text])[0][column]), 1e-12))

    without = loss("")
    return lambda text: max(without - loss(text), 0.0)


@dataclass(frozen=True)
class MedR2Constants:
    """What the paper leaves open: how many coarse candidates F re-orders, and the softmax
    temperature of the document-category prototypes behind f_g."""

    coarse_k: int
    temperature: float

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> MedR2Constants:
        s = settings or get_settings()
        return cls(s.med_r2_coarse_k, s.med_r2_temperature)


@dataclass
class CoarseCandidates:
    """Steps 1-3 for one question: its classes, the rewritten query and the coarse ranking."""

    question: str
    kind: QueryClass
    query: str
    rewrite_mode: str
    expected: tuple[str, ...]
    ranked: list[Candidate]
    view: QueryView
    scorer: str
    laps: Laps


def gather_candidates(r: Retriever, question: str, conditions: list[str] | None) -> CoarseCandidates:
    """Classification, reformulation and the coarse ranking of the hybrid channels."""
    laps = Laps()
    kind = classify(r, question)
    query, rewrite_mode = reformulate(r, question, kind.category)
    laps.lap("classify")
    ranked, view, scorer = scored_candidates(r, query, conditions, laps)
    return CoarseCandidates(
        question, kind, query, rewrite_mode, PROJECTION[QUESTION_GROUP[kind.question_type]], ranked, view, scorer, laps
    )


def _apply_f(
    r: Retriever, pool: list[Candidate], expected: tuple[str, ...], temperature: float, utility: Utility | None = None
) -> list[Candidate]:
    """Score each candidate with F and order by F, ties by coarse (fine-scorer) order."""
    types = r.document_types
    vectors = np.stack([np.asarray(c.row["vector"], dtype=np.float32) for c in pool])
    probs = category_probabilities(vectors, _prototypes(r.encoder, "document"), temperature)
    names = list(DOCUMENT_CATEGORIES)
    for c, p in zip(pool, probs):
        design, basis = types.get(c.row["doc_id"], ("expert opinion", "document not in the corpus table"))
        h = f_h(evidence_rank(design))
        g = f_g(dict(zip(names, p.tolist())), expected)
        u = utility(c.row["text"]) if utility else 0.0
        c.final = fine_score(h, g, u)
        c.scores.update(
            evidence_type=design,
            type_basis=basis,
            e=evidence_rank(design),
            f_h=h,
            document_category=names[int(np.argmax(p))],
            f_g=round(g, 4),
            f_u=round(u, 4) if utility else "0 (needs the gold answer: evaluation-only)",
            F=round(c.final, 4),
        )
    return sorted(pool, key=lambda c: (-c.final, -(c.s or 0.0), c.window_id))


def choose(
    r: Retriever,
    pool: list[Candidate],
    expected: tuple[str, ...],
    constants: MedR2Constants,
    utility: Utility | None = None,
) -> tuple[list[Candidate], list[Candidate]]:
    """Steps 4-5 over `pool`: (all ordered by F, those that fill the token budget)."""
    if not pool:
        return [], []
    ordered = _apply_f(r, pool, expected, constants.temperature, utility)
    return ordered, ordered[: fill_budget(_tokens(r, ordered))]


def med_r2(
    r: Retriever,
    question: str,
    conditions: list[str] | None,
    utility: Utility | None = None,
    constants: MedR2Constants | None = None,
) -> Retrieval:
    """Med-R2; `utility` is the evaluation-only oracle f_u (oracle_utility), else f_u = 0; the
    constants come from Settings unless given."""
    k = constants or MedR2Constants.from_settings()
    coarse = gather_candidates(r, question, conditions)
    laps, expected = coarse.laps, coarse.expected
    pool = coarse.ranked[: k.coarse_k]
    for rank, c in enumerate(pool, 1):
        c.scores["coarse_rank"] = rank
    ordered, chosen = choose(r, pool, expected, k, utility)
    rounds, thoughts = 1, []
    while not r.client.offline and chosen and rounds < MAX_ROUNDS:
        evidence = "\n".join(f"[{n}] {c.row['text'][:600]}" for n, c in enumerate(chosen, 1))
        step = r.client.complete_json(
            "med_r2_step",
            STEP_PROMPT.format(question=question, evidence=evidence),
            {"type": "object", "properties": {"thought": {"type": "string"}}, "required": ["thought"]},
            offline=lambda: {"thought": "", "refined_query": None},
        )
        thoughts.append(step.data["thought"])
        refined = step.data.get("refined_query")
        if not refined:
            break
        more, _, _ = scored_candidates(r, refined, conditions, laps)
        seen = {c.window_id for c in pool}
        pool += [c for c in more[: k.coarse_k] if c.window_id not in seen]
        before = {c.window_id for c in chosen}
        ordered, chosen = choose(r, pool, expected, k, utility)
        rounds += 1
        if len(before ^ {c.window_id for c in chosen}) / (2 * max(len(before), 1)) < ALTERATION:
            break
    laps.lap("fine (F) and budget")
    kind = coarse.kind
    return Retrieval(
        question,
        "med_r2",
        coarse.view.vector,
        coarse.view.anchors,
        chosen,
        ordered,
        laps.timings,
        {
            "fine_scorer": f"F = f_h * f_g * (1 + {ALPHA} f_u) over the top {k.coarse_k} by {coarse.scorer}",
            "f_u": "oracle: the verdict model's loss on the gold answer (evaluation only)"
            if utility
            else "0 (needs the gold answer; `ebm eval retrieval --oracle-utility` sets it)",
            "betr": "not applied (Med-R2 grades by f_h)",
            "classification": kind.basis,
            "reformulation": coarse.rewrite_mode,
            "iterations": f"{rounds} round(s)" + ("" if not r.client.offline else " (offline: no CoT loop)"),
        },
        details={
            "ebm_category": kind.category,
            "question_type": kind.question_type,
            "expected_document_categories": list(expected),
            "query": coarse.query,
            "token_budget": TOKEN_BUDGET,
            "reasoning": thoughts,
            "settings": {"coarse_k": k.coarse_k, "temperature": k.temperature},
        },
    )


def _tokens(r: Retriever, candidates: list[Candidate]) -> list[int]:
    """Word pieces per candidate window, by the embedder's own tokenizer."""
    encoded = r.encoder.tokenizer([c.row["text"] for c in candidates], add_special_tokens=False)["input_ids"]
    for c, ids in zip(candidates, encoded):
        c.scores["tokens"] = len(ids)
    return [len(ids) for ids in encoded]
