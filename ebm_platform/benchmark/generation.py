"""Generated benchmark questions: the paper's stages 1-3 (SR-RAG App. D.5), LLM or offline.

Stage 1: stratified sampling of windows by grade (windows with an intervention, an outcome and a
finding of their own source: a result or a recommendation, as the caller's `Finding` rule reads a
sentence with its section path; a window of background or methods has no core conclusion to ask
about), then one question per window with PICOT fields, an exact answer, atomic facts (nuggets) and
a certainty flag. LLM mode uses QUESTION_PROMPT; every PICOT field the model returns must be
grounded in the seed window (all its words occur there) or it is dropped and counted, and a question
left without an intervention or an outcome is rejected. Offline, the question is composed from the
window's own extracted PICO and the answer is its strongest finding that names the question's
intervention and outcome. A window's PICO is what the knowledge graph extracted from it
(`pico_extractions`: the learned EBM-NLP tagger's P/I/O spans with the rules for the rest), then what
the rules alone find; only names grounded in the window count, and a window qualifies when one of its
findings names a grounded intervention and outcome (`anchored_finding`): the question asks what that
finding answers.
Stage 2: round-trip accessibility with the hybrid BM25 + dense retriever (seed in top K -> main,
else challenge).
Stage 3: gold windows graded from a larger pool as strongly supportive / supportive / weakly
related / unrelated; the first two form the gold set. LLM mode uses GRADING_PROMPT; offline, the
window is read as GRADING_PROMPT asks (`offline_relation`): supportive when one of its findings is about
the question's intervention and outcome (the caller's `About` rule), strongly supportive when the window
also names the question's population, weakly related when it names a word of the intervention or the
outcome. The judge reads words, not the encoder's cosine: with a cosine judge the gold set is what a
cosine ranker puts first, and no reranker (BETR's grade offsets included) can be told apart from it.
The ideal answer is the gold evidence's findings ordered by grade (ideal_answer).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from ebm_platform.benchmark.fields import PEOPLE, VAGUE_WORDS, malformed, repeats_fields
from ebm_platform.benchmark.gold import fold
from ebm_platform.benchmark.sources import frame, row
from ebm_platform.corpus.windows import SENTENCE_END
from ebm_platform.graph.pico_rules import OUTCOME_SCALES, Extraction, extract
from ebm_platform.llm.client import LLMClient, LLMError
from ebm_platform.vocabulary import BODY_SITE_WORDS, Anchors

# (sentence, its window's section path) -> True when it states a result or a recommendation of its own
# source; the retrieval layer's findings rules, passed in by the asset that generates
Finding = Callable[[str, str | None], bool]
# (a finding, its source's title, the question's anchors) -> True when it is about the question's
# intervention and outcome; the retrieval layer's rule, passed in by the asset that generates
About = Callable[[str, str, Anchors], bool]

RESULT = re.compile(
    r"\b(?:significant\w*|improv\w*|reduc\w*|increas\w*|decreas\w*|recommend\w*|no difference|"
    r"effective|superior|inferior|p\s*[<=]\s*0?\.\d+|95%\s*CI)",
    re.I,
)
STATISTIC = re.compile(r"p\s*[<=]\s*0?\.\d+|95%\s*CI|confidence interval|significan", re.I)
PICOT = ("p", "i", "c", "o", "t")
RELATIONS = ("strongly supportive", "supportive", "weakly related", "unrelated")
GOLD_RELATIONS = RELATIONS[:2]
# Offline stage 3: a supportive window that names at least this share of the population's words is
# strongly supportive ("directly states the answer for the same population", GRADING_PROMPT)
POPULATION_SHARE = 0.5
GRADING_BATCH = 10
# An offline question's PICOT field is a name of the window of at most this many words: the tagger's
# longer spans run on into whole sentences ("Subjects] From among 120 male and female students, 22
# whose thoraxes opened ...") and a question made of them copies its window (quality.VERBATIM_TOKENS)
MAX_FIELD_WORDS = 6
# The names a finding may leave to its source's title ("Stabilization exercises for chronic low back pain")
NAMED_BY_TITLE = frozenset({"Population", "Condition", "Intervention", "Comparator"})

QUESTION_PROMPT = """You write benchmark questions for sports rehabilitation evidence retrieval.
Below is one evidence window (grade {grade}: A guideline/systematic review ... E expert opinion).
Write ONE clinical question that strictly corresponds to the window's core conclusion, and extract its
PICOT elements. Use only information present in the window: every PICOT value must be copied from the
window's wording, and null when the window does not state it. Do not add facts, numbers or populations
that the window does not contain.
Also give the exact answer (the window's core conclusion in one or two sentences), the answer's atomic
facts (each one verifiable statement; mark the facts a correct answer must contain as "vital", the
rest as "okay"), and the evidence certainty: "sufficient" when the window reports a clear result, else
"uncertain".

Window ({window_id}):
{text}

Answer with JSON only:
{{"question": "...", "picot": {{"p": "...|null", "i": "...", "c": "...|null", "o": "...", "t": "...|null"}},
 "exact_answer": "...", "nuggets": [{{"fact": "...", "importance": "vital|okay"}}],
 "certainty": "sufficient|uncertain"}}"""

QUESTION_SCHEMA = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 10},
        "picot": {
            "type": "object",
            "properties": {k: {"type": ["string", "null"]} for k in PICOT},
            "required": ["i", "o"],
        },
        "exact_answer": {"type": "string", "minLength": 5},
        "nuggets": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "fact": {"type": "string", "minLength": 3},
                    "importance": {"enum": ["vital", "okay", "trivial"]},
                },
                "required": ["fact", "importance"],
            },
        },
        "certainty": {"enum": ["sufficient", "uncertain"]},
    },
    "required": ["question", "picot", "exact_answer", "nuggets", "certainty"],
}

GRADING_PROMPT = """You grade how evidence windows relate to a clinical question and its reference answer.
For each numbered window answer one of: "strongly supportive" (directly states the answer for the same
population and intervention), "supportive" (supports the answer with closely matching PICO),
"weakly related" (same topic, does not support the answer), "unrelated".

Question: {question}
Reference answer: {answer}

{windows}

Answer with JSON only: {{"grades": [{{"n": <window number>, "relation": "..."}}, ...]}} with one entry per window."""

GRADING_SCHEMA = {
    "type": "object",
    "properties": {
        "grades": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 1}, "relation": {"enum": list(RELATIONS)}},
                "required": ["n", "relation"],
            },
        }
    },
    "required": ["grades"],
}


@dataclass
class GenerationLog:
    """What generation did, for the asset's metadata."""

    mode: str = "offline"
    sampled: int = 0
    rejected: Counter = field(default_factory=Counter)
    ungrounded_fields_dropped: int = 0
    relations: Counter = field(default_factory=Counter)

    def as_metadata(self) -> dict:
        return {
            "mode": self.mode,
            "sampled_windows": self.sampled,
            "rejected": dict(self.rejected),
            "ungrounded_fields_dropped": self.ungrounded_fields_dropped,
            "stage3_relations": dict(self.relations),
        }


# Names a question cannot ask about. An outcome made of evidence-rating words ("moderate quality evidence that CBT was
# better ... at reducing pain" asked "What is the effect of CBT on quality?"; "values and preferences"): what a review
# or guideline says of its evidence, not an outcome of care ("quality of life", "sleep quality" and "strength" stay).
RATING_WORDS = frozenset("quality evidence certainty confidence values preferences".split())
RATING_QUALIFIERS = frozenset("low moderate high very of the and".split())
# An intervention that names a kind of source ("What is the effect of RCT compared with placebo on AEs?"), or the
# issuer a (grade A) guideline's title names before "guideline", or a name that opens with one of the issuer's words
# ("What is the effect of VA/DoD on evidence?", "... of DoD LBP CPG on ODI?" of the "VA/DoD Clinical Practice
# Guideline for the Diagnosis and Treatment of Low Back Pain"; its "Treatment" is no issuer, nor are `KINDS`)
KINDS = frozenset("clinical practice consolidated national international joint".split())  # of guideline, not issuer
SOURCE_WORDS = frozenset(
    "guideline guidelines recommendation recommendations rct rcts trial trials study studies review reviews "
    "meta analysis analyses evidence".split()
)


# a count written out is no population ("What is the effect of paracetamol ... on adverse events in Seventeen?")
NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand".split()
)
# ... and, as an intervention or comparator, names of care in general or of how it is given; a body site alone
# (`vocabulary.BODY_SITE_WORDS`: an intervention named "lumbar" or "Low back") is as vague
VAGUE_CARE = frozenset(
    "intervention interventions treatment treatments therapy therapies program programs programme management care "
    "strategy strategies regimen technique techniques method methods combination combined outcome outcomes physical "
    "behavioural behavioral balanced included activation anterior posterior medial lateral proximal distal "
    "superior inferior".split()  # a direction alone ("What is the effect of posterior on translation?")
)
CONTROL_WORDS = frozenset("control controls placebo sham".split())
# an outcome instrument is no intervention ("What is the effect of SPADI ...")
INSTRUMENT = re.compile(
    "|".join(f"(?:{pattern})" for name, (pattern, _) in OUTCOME_SCALES.items() if name.isupper()), re.I
)


def askable(name: str, type_: str, window: dict) -> bool:
    """Whether an extracted name can be a question's field (`RATING_WORDS`, `SOURCE_WORDS`, `VAGUE_WORDS`); a name
    cut inside brackets ("type of acupuncture) versus usual care") or `malformed` is none."""
    if name.count("(") != name.count(")") or name.count("[") != name.count("]") or malformed(name):
        return False
    folded = fold(name)
    words = set(folded.split())
    specific = {w for w in words if not w.isdigit()} - VAGUE_WORDS
    if type_ == "Outcome":
        return bool(specific) and not (words & RATING_WORDS and words <= RATING_WORDS | RATING_QUALIFIERS)
    if type_ in ("Intervention", "Comparator"):
        title = fold((window.get("section") or "").split(">")[0])
        head = title.split("guideline")[0] if window.get("grade") == "A" and "guideline" in title else ""
        issuer = f" {folded} " in f" {head} " or bool(set(folded.split()[:1]) & (set(head.split()) - KINDS))
        control = CONTROL_WORDS if type_ == "Intervention" else frozenset()  # the control is a comparator
        vague = not specific - VAGUE_CARE - BODY_SITE_WORDS - control or bool(INSTRUMENT.search(name))
        return not (issuer or vague or words <= SOURCE_WORDS)
    return True


def window_extraction(window: dict, entities: Sequence[dict] = ()) -> Extraction:
    """A window's PICO for stage 1: the knowledge graph's `entities` of it ({name, type}) first, then
    the rules' (`pico_rules.extract`), each name once and only names grounded in the window that a question
    can ask about (`askable`; with the graph's entities 913 of the demo's finding windows qualify, 613 with
    the rules alone: the rules miss most systematic reviews' outcomes, "had less pain", "pain relief")."""
    found = Extraction()
    for entity in [*entities, *extract(window["text"]).entities]:
        if grounded(entity["name"], window["text"]) and askable(entity["name"], entity["type"], window):
            found.add_entity(entity["name"], entity["type"])
    return found


def sample_windows(
    windows: pl.DataFrame,
    per_grade: int,
    seed: int,
    finding: Finding,
    entities: Mapping[str, Sequence[dict]] | None = None,
) -> list[tuple[dict, Extraction]]:
    """Stage 1 sampling: per grade, windows with a finding stated with result language that names a
    concise intervention and outcome of the window (`anchored_finding` of `window_extraction`, with the
    graph's `entities` by window id when given), from as many documents as the grade has; each with its
    extraction narrowed to what that finding names."""
    picked = []
    for grade in "ABCDE":
        pool = []
        for w in windows.filter(pl.col("grade") == grade).sort("window_id").iter_rows(named=True):
            if not RESULT.search(w["text"]):
                continue
            anchored = anchored_finding(w, window_extraction(w, (entities or {}).get(w["window_id"], ())), finding)
            if anchored:
                pool.append((w, anchored[1]))
        random.Random(f"{seed}:{grade}").shuffle(pool)
        # one window per document before a second of any: questions about one document form one
        # split group, so distinct documents give the splits (and the test set) more independent groups
        seen: Counter[str] = Counter()
        turn = []
        for w, _ in pool:
            seen[w["doc_id"]] += 1
            turn.append(seen[w["doc_id"]])
        picked.extend(pool[i] for i in sorted(range(len(pool)), key=turn.__getitem__)[:per_grade])
    return picked


def findings(window: dict, finding: Finding) -> list[str]:
    """The window's sentences (over 30 characters) that state a finding of its own source."""
    sentences = [s.strip() for s in SENTENCE_END.split(re.sub(r"\s+", " ", window["text"])) if len(s.strip()) > 30]
    return [s for s in sentences if finding(s, window["section"])]


def strongest_first(sentences: Sequence[str]) -> list[str]:
    """Findings strongest first: statistics, then result wording, then shortest."""
    return sorted(sentences, key=lambda s: (-(bool(STATISTIC.search(s)) + bool(RESULT.search(s))), len(s)))


def result_sentence(window: dict, finding: Finding) -> str | None:
    """The window's strongest finding (`strongest_first`); None when it states none."""
    scored = strongest_first(findings(window, finding))
    return scored[0] if scored else None


def anchored_finding(window: dict, found: Extraction, finding: Finding) -> tuple[str, Extraction] | None:
    """The window's strongest finding with result wording that names a concise intervention and a concise
    outcome of `found` (the population and the arms may be named by its source's title instead, as a
    trial's result says "the experimental group"), with `found` narrowed to the names that finding (or the
    title, for NAMED_BY_TITLE) states: the question composed from them is the one the finding answers. A
    question composed from any of the window's names once asked "What is the effect of holistic and
    person-centred care on weight loss in person?" of the WHO guideline's "Twelve 'no recommendations' were
    made". None when no finding names both."""
    title = (window["section"] or "").split(">")[0]
    for sentence in strongest_first(findings(window, finding)):
        if not RESULT.search(sentence):
            continue
        narrowed = Extraction()
        for entity in found.entities:
            if grounded(entity["name"], f"{sentence} {title}" if entity["type"] in NAMED_BY_TITLE else sentence):
                narrowed.add_entity(entity["name"], entity["type"])
        fields = question_fields(narrowed)
        if fields["i"] and fields["o"]:
            return sentence, narrowed
    return None


def ideal_answer(exact_answer: str, seed: dict, gold: list[str], windows: dict[str, dict], finding: Finding) -> str:
    """The reference answer ordered by grade (paper stage 3): the seed window's exact answer and
    each other gold window's strongest finding (a gold window without one adds nothing), grade A
    first, each with its grade and id."""
    items = [(seed["grade"], seed["window_id"], exact_answer)]
    items += [
        (windows[w]["grade"], w, statement)
        for w in gold
        if w != seed["window_id"] and (statement := result_sentence(windows[w], finding))
    ]
    return " ".join(
        f"(grade {grade}) {statement} [{window_id}]"
        for grade, window_id, statement in sorted(items, key=lambda item: item[0])
    )


def concise(names: Sequence[str]) -> str | None:
    """The first of a field's names with at most MAX_FIELD_WORDS words; None when every one is longer."""
    return next((n for n in names if len(fold(n).split()) <= MAX_FIELD_WORDS), None)


def _specific(name: str | None) -> set[str]:
    """A name's words that say what it is: not `VAGUE_WORDS`, a number, a count written out or a letter ("B" of
    "group B")."""
    return {w for w in fold(name or "").split() if len(w) > 1 and not w.isdigit()} - VAGUE_WORDS - NUMBER_WORDS


def question_fields(found: Extraction) -> dict[str, str | None]:
    """A question's fields from a window's extracted PICO, each a concise name (`concise`): a comparator that
    names nothing the intervention does not is none ("Epley compared with Epley", "sham laser compared with
    sham laser over laser"), an outcome that names nothing but the arms is skipped for the next ("arthroscopy
    compared with controls on arthroscopy"). A population that names a count or a source instead of people ("in
    Seventeen", "in one trial", "in participants = 964"; "in patients" stays), a body site alone ("in neck"), one that
    the question's other fields name already ("What is the effect of coffee on pain in pain?"), or none, gives way
    to the condition the finding or its source's title names, unless the question names it already ("What is the
    effect of oral steroid compared with placebo on pain in adhesive capsulitis?", not "... on back pain in low back
    pain?")."""
    types = {"i": "Intervention", "t": "Timepoint"}
    fields = {key: concise(found.names(type_)) for key, type_ in types.items()}
    arm = _specific(fields["i"])
    fields["c"] = concise([n for n in found.names("Comparator") if _specific(n) - arm])
    arms = arm | _specific(fields["c"])
    fields["o"] = concise([n for n in found.names("Outcome") if _specific(n) - arms])
    population = concise(found.names("Population"))
    words = set(fold(population or "").split())
    if (
        words & SOURCE_WORDS
        or not (_specific(population) - BODY_SITE_WORDS or words & PEOPLE)
        or repeats_fields(population, (fields["i"], fields["c"], fields["o"]))
        or re.search(r"[=<>]", population or "")
    ):
        named = arms | _specific(fields["o"])
        population = concise([n for n in found.names("Condition") if not _specific(n) & named])
    return {"p": population, **fields}


def compose_question(found: Extraction) -> tuple[str, dict[str, str | None]]:
    """A question from a window's own extracted PICO (no field from outside the window), its fields
    `question_fields`."""
    fields = question_fields(found)
    question = f"What is the effect of {fields['i']}"
    question += f" compared with {fields['c']}" if fields["c"] else ""
    question += f" on {fields['o']}"
    question += f" in {fields['p']}" if fields["p"] else ""
    question += f" at {fields['t']}" if fields["t"] else ""
    return question + "?", fields


def offline_question(window: dict, found: Extraction, finding: Finding) -> dict:
    """Stage 1 without a model, in QUESTION_SCHEMA's shape."""
    anchored = anchored_finding(window, found, finding)
    question, fields = compose_question(anchored[1] if anchored else found)
    answer = anchored[0] if anchored else result_sentence(window, finding) or window["text"][:300]
    clauses = [c.strip() for c in re.split(r";|, and | whereas | but ", answer) if len(c.strip()) > 10] or [answer]
    return {
        "question": question,
        "picot": fields,
        "exact_answer": answer,
        "nuggets": [{"fact": c, "importance": "vital" if n == 0 else "okay"} for n, c in enumerate(clauses)],
        "certainty": "sufficient" if STATISTIC.search(window["text"]) else "uncertain",
    }


def grounded(value: str, window_text: str) -> bool:
    """Every word of `value` occurs in the window (case and punctuation folded)."""
    words = set(fold(window_text).split())
    return bool(fold(value)) and set(fold(value).split()) <= words


def _words(text: str) -> set[str]:
    """The text's folded words of more than three letters (no "with", "and", "of")."""
    return {w for w in fold(text).split() if len(w) > 3}


def offline_relation(window: dict, anchors: Anchors, finding: Finding, about: About) -> str:
    """Stage 3 without a model, as GRADING_PROMPT asks: supportive when one of the window's findings is
    `about` the question's intervention and outcome, strongly supportive when the window also names
    POPULATION_SHARE of the population's words (or the question has none), weakly related when it
    names a word of the intervention or the outcome, else unrelated."""
    words = _words(window["text"])
    title = (window["section"] or "").split(">")[0]
    if any(about(sentence, title, anchors) for sentence in findings(window, finding)):
        population = _words(anchors.population or "")
        named = len(population & words) / len(population) if population else 1.0
        return "strongly supportive" if named >= POPULATION_SHARE else "supportive"
    topic = _words(f"{anchors.intervention or ''} {anchors.outcome or ''}")
    return "weakly related" if topic & words else "unrelated"


class QuestionGenerator:
    """Stages 1-3 for one partition's windows, with an LLM client or offline."""

    def __init__(
        self,
        client: LLMClient,
        retrieve: Callable[[str, int], list[str]],
        finding: Finding,
        about: About,
        accessibility_k: int = 10,
        pool_size: int = 30,
    ) -> None:
        """`finding` reads whether a sentence states a finding of its own source, `about` whether a
        finding is about a question's intervention and outcome (the offline stage-3 judge)."""
        self.client, self.retrieve, self.finding, self.about = client, retrieve, finding, about
        self.accessibility_k, self.pool_size = accessibility_k, pool_size
        self.log = GenerationLog(
            mode="offline (composed from the seed window's extracted PICO)" if client.offline else f"llm:{client.model}"
        )

    def question(self, window: dict, found: Extraction) -> dict | None:
        """Stage 1 for one window; None (and counted) when the answer is unusable."""
        prompt = QUESTION_PROMPT.format(grade=window["grade"], window_id=window["window_id"], text=window["text"])
        try:
            data = self.client.complete_json(
                "benchmark_question",
                prompt,
                QUESTION_SCHEMA,
                offline=lambda: offline_question(window, found, self.finding),
            ).data
        except LLMError as exc:  # one unusable answer costs one question, not the partition
            self.log.rejected[f"no valid model answer: {str(exc)[:120]}"] += 1
            return None
        picot = {k: (data["picot"].get(k) or None) for k in PICOT}
        for k, value in picot.items():
            if value and not grounded(value, window["text"]):
                picot[k] = None
                self.log.ungrounded_fields_dropped += 1
        if not picot["i"] or not picot["o"]:
            self.log.rejected["no grounded intervention or outcome"] += 1
            return None
        return {**data, "picot": picot}

    def relations(
        self, question: str, answer: str, fields: dict[str, str | None], pool: list[str], windows: dict[str, dict]
    ) -> dict[str, str]:
        """Stage 3: the relation of each pool window to the question, in batches of GRADING_BATCH."""
        anchors = Anchors(population=fields["p"], intervention=fields["i"], comparator=fields["c"], outcome=fields["o"])
        out: dict[str, str] = {}
        for start in range(0, len(pool), GRADING_BATCH):
            batch = pool[start : start + GRADING_BATCH]

            def offline(batch: list[str] = batch) -> dict:
                return {
                    "grades": [
                        {"n": n, "relation": offline_relation(windows[w], anchors, self.finding, self.about)}
                        for n, w in enumerate(batch, 1)
                    ]
                }

            listing = "\n\n".join(f"[{n}] {windows[w]['text']}" for n, w in enumerate(batch, 1))
            prompt = GRADING_PROMPT.format(question=question, answer=answer, windows=listing)
            try:
                data = self.client.complete_json("benchmark_grading", prompt, GRADING_SCHEMA, offline=offline).data
            except LLMError:  # windows left ungraded never enter the gold set
                self.log.relations["ungraded (no valid model answer)"] += len(batch)
                continue
            for grade in data["grades"]:
                if 1 <= grade["n"] <= len(batch):
                    out[batch[grade["n"] - 1]] = grade["relation"]
        self.log.relations.update(out.values())
        return out

    def rows(
        self,
        code: str,
        windows: pl.DataFrame,
        per_grade: int = 3,
        seed: int = 7,
        entities: Mapping[str, Sequence[dict]] | None = None,
    ) -> pl.DataFrame:
        """Benchmark rows for the sampled windows of one partition (`entities`: the knowledge graph's
        {name, type} entities by window id, `sample_windows`)."""
        by_id = {
            w["window_id"]: w for w in windows.select("window_id", "grade", "section", "text").iter_rows(named=True)
        }
        rows = []
        sampled = sample_windows(windows, per_grade, seed, self.finding, entities)
        self.log.sampled += len(sampled)
        for window, found in sampled:
            generated = self.question(window, found)
            if generated is None:
                continue
            question, fields, answer = generated["question"], generated["picot"], generated["exact_answer"]
            ranked = self.retrieve(question, self.pool_size)
            accessible = window["window_id"] in ranked[: self.accessibility_k]
            pool = [w for w in ranked if w in by_id and w != window["window_id"]]
            relations = self.relations(question, answer, fields, pool, by_id) if pool else {}
            gold = [window["window_id"]] + [w for w in pool if relations.get(w) in GOLD_RELATIONS]
            nuggets = {
                level: [n["fact"] for n in generated["nuggets"] if n["importance"] == level]
                for level in ("vital", "okay", "trivial")
            }
            digest = hashlib.sha1(f"{code}|{window['window_id']}|{question}".encode()).hexdigest()[:12]
            rows.append(
                row(
                    question_id=f"gen-{digest}",
                    condition=code,
                    source="generated",
                    question=question,
                    exact_answer=answer,
                    ideal_answer=ideal_answer(answer, window, gold, by_id, self.finding),
                    nuggets_vital=nuggets["vital"] or [answer],
                    nuggets_okay=nuggets["okay"],
                    nuggets_trivial=nuggets["trivial"],
                    gold_p=fields["p"],
                    gold_i=fields["i"],
                    gold_c=fields["c"],
                    gold_o=fields["o"],
                    gold_t=fields["t"],
                    gold_window_ids=gold,
                    seed_window_id=window["window_id"],
                    certainty=generated["certainty"],
                    split_kind="main" if accessible else "challenge",
                )
            )
        return frame(rows)
