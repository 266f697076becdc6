"""A clinical question's P/I/C/O/T anchors, from its own words only (a missing field stays None).

Clinicians phrase one question many ways ("Does I improve O compared with C?", "Is I better than
C for O?", "Compared with C, does I change O?", "Is there a difference in O between I and C?").
The parser reads them in steps:

1. the timepoint ("at 12 weeks", "at 3-month follow-up") and the population ("in adults with ...", or
   the subject of "Should patients with ... take ...") are taken out first, so they never end up inside
   another field;
2. a fronted clause ("Compared with C, ...", "For O, ...") gives the comparator or the outcome;
3. the question frame ("What is the effect of", "Does", "How does", a guideline's "Should clinicians
   suggest") is dropped;
4. the rest is cut at the comparison cue (compared with, versus, than, ...): on the left the
   intervention, on the right the comparator; an effect verb ("improve", "result in greater")
   or an outcome preposition ("on", "for") on either side starts the outcome;
5. "difference in O between I and C" and "I and C have comparable effects on O" are read whole.

`ebm eval questions` measures it on Evidence Inference prompts put into such phrasings.
"""

from __future__ import annotations

import re

from ebm_platform.graph.pico_rules import _CONDITION, _FOLLOW_UP, _SCALES, _TIMEPOINT, MAX_NAME
from ebm_platform.vocabulary import Anchors

_PERSONS = (
    r"patients?|participants?|adults?|child|children|adolescents?|women|woman|men|man|athletes?|individuals?|"
    r"people|runners?|players?|subjects|volunteers|infants?|girls?|boys?|elderly|workers|soldiers|students"
)
# "than" before a length or a time states a quantity, not a comparator ("masses larger than 7 cm", "pain
# for more than 3 months"; "than 5 mg morphine" or "than 0.5% ropivacaine" is one)
_QUANTITY = r"\d+(?:\.\d+)?\s*(?:cm\b|mm\b|(?:second|minute|hour|day|week|month|year)s?\b)"
# "as effective as", "non-inferior to": an equivalence question names its comparator as a comparison does
_EQUIVALENCE = (
    r"(?:just |equally )?as (?:effective|efficacious|good|beneficial|useful|helpful|safe) as|"
    r"(?:non-?inferior|equivalent) to"
)
_COMPARISON = (
    rf"compared (?:with|to)|in comparison (?:with|to)|versus|vs\.?|relative to|rather than|than(?!\s+{_QUANTITY})|"
    rf"compare (?:with|to)|{_EQUIVALENCE}"
)
# a population clause ends at a comparison, a time, a new clause after a comma, or the end
_STOP_CLAUSE = (
    rf"(?=\s+(?:{_COMPARISON}|at \d|after \d|over \d|within \d|when|who (?:are|were) not)\b|\s*[;:]"
    rf"|,\s*(?:does|do|did|is|are|was|were|can|could|should|will|would|what|how|which|compared)\b|$)"
)
_POPULATION = re.compile(
    rf"\b(?:in|among|for)\s+((?:(?!(?:{_COMPARISON}|in|of|for|among|on|with|at|to|and|or)\b)[\w<>=-]+\s){{0,4}}(?:{_PERSONS})"
    rf"(?:\s+(?:with|after|who|aged|older|younger|following|undergoing|receiving|without|from|in)\s+.{{2,120}}?)?){_STOP_CLAUSE}",
    re.I,
)
# the population as the subject of a closed question: "Should patients with LBP take opioids?", "Do athletes
# with ankle sprain benefit from bracing?"; the question keeps its frame, the subject's verb goes with it,
# unless the verb is the intervention itself: "Should patients with acute low back pain stay in bed?" asks
# about staying in bed, "Should adults with neck pain exercise?" about exercise, "Should athletes with an
# ankle sprain be immobilised?" about immobilising
_SUBJECT_POPULATION = re.compile(
    rf"^(?P<frame>should|do|does|can|could|would|will|must|may)\s+"
    rf"(?P<population>(?:[\w-]+\s){{0,3}}?(?:{_PERSONS})(?:\s+(?:with|after|who have|aged|following|undergoing)\s+.{{2,120}}?)?)\s+"
    r"(?:(?:take|use|receive|get|wear|undergo|try|start|avoid|be (?:given|offered|treated with|prescribed)|"
    r"benefit from)\s+|be\s+(?=[a-z]+(?:ed|en)\b)|(?=(?:stay|rest|remain|keep|continue|stop|return|resume|exercise|walk|run|train|"
    r"perform|practi[cs]e|sleep|lie|sit|stretch|immobili[sz]e)\b))",
    re.I,
)
_FOLLOW_UP_AT = re.compile(
    r"\b(?:at|after)\s+(?:the\s+)?\d+(?:\.\d+)?[- ](?:day|week|month|year)s?(?:[- ]follow[- ]?up)?\b"
    r"|\bin the (?:short|medium|long)[- ]term\b|\bat (?:short|medium|long)[- ]term follow[- ]?up\b",
    re.I,
)
_FRONT_COMPARATOR = re.compile(rf"^(?:{_COMPARISON})\s+([^,]{{2,120}}),\s*(.+)$", re.I)
_FRONT_OUTCOME = re.compile(r"^(?:for|regarding|in terms of|with respect to)\s+([^,]{2,120}),\s*(.+)$", re.I)
_FRAME = re.compile(
    r"^(?:what (?:is|are|was|were)\s+(?:the\s+)?(?:reported\s+|relative\s+|overall\s+|comparative\s+)?"
    r"(?P<of>effects?|efficacy|effectiveness|impact|benefits?|role|influence)\s+of"
    r"|how (?:does|do|did|is|are)|(?:does|do|did|is|are|was|were|can|could|should|will|would|may|might))\s+",
    re.I,
)
# a guideline's question asks whether its readers should recommend I ("Should clinicians suggest I for P?"):
# the recommender and the verb frame the question, I follows them
_RECOMMENDER = (
    r"(?:(?:clinicians?|physicians?|doctors?|therapists?|physiotherapists?|providers?|practitioners?|we|you)\s+)?"
    r"(?:suggest|recommend|offer|prescribe|advise)\s+"
)
_LEAD = re.compile(
    rf"^(?:{_RECOMMENDER})?(?:(?:the|a|an)\s+)?(?:(?:use|addition|application) of\s+|adding\s+|using\s+|giving\s+)?",
    re.I,
)
_BETWEEN = re.compile(r"\b(?:difference|differences)\s+(?:in|of)\s+(.+?)\s+between\s+(.+?)\s+and\s+(.+)$", re.I)
_COMPARABLE = re.compile(
    r"^(.+?)\s+and\s+(.+?)\s+(?:have|has|show|produce|yield)\s+(?:comparable|similar|different|"
    r"equivalent|the same)\s+(?:effects?|outcomes?|results?)\s+(?:on|in|for)\s+(.+)$",
    re.I,
)
_CUE = re.compile(rf"\s+(?:{_COMPARISON})\s+", re.I)
_VERB = re.compile(
    r"\s+(?:(?:significantly|statistically significantly|also|further|more effectively|better)\s+)?"
    r"(?:improve[sd]?|reduce[sd]?|increase[sd]?|decrease[sd]?|raise[sd]?|affect(?:s|ed)?|"
    # "lower" the verb, not the body's ("Are insoles effective for preventing lower limb stress fractures?")
    r"lower(?:s|ed)?(?!\s+(?:limbs?|legs?|back|extremit(?:y|ies))\b)|"
    r"change[sd]?|prevent(?:s|ed)?|relieve[sd]?|alleviate[sd]?|enhance[sd]?|shorten(?:s|ed)?|help(?:s|ed)?|"
    r"influence[sd]?|modif(?:y|ies|ied)|"
    r"(?:lead|leads|led|result|results|resulted) (?:to|in)|be|(?:have|has|had|provide|provides|show|shows|produce|"
    r"produces|yield|yields|demonstrate|demonstrates|achieve|achieves|cause|causes|offer|offers))\s+",
    re.I,
)
_OUTCOME_PREP = re.compile(
    r"\s+(?:on|for|in terms of|regarding|with respect to|at (?=reducing|improving|preventing)|"
    r"in (?=reducing|improving|increasing|decreasing|preventing|lowering))\b\s*",
    re.I,
)
_OUTCOME_FILLER = re.compile(
    r"^(?:(?:a|an|the|any|greater|better|larger|bigger|more|less|lower|higher|faster|slower|fewer|different|"
    r"similar|comparable|significant|significantly|clinically|statistically|meaningful|important|superior|"
    r"inferior|non-inferior|noninferior|equivalent|additional|short-term|long-term|improvements?|reductions?|"
    r"increases?|decreases?|changes?|effects?|benefits?|differences?|outcomes? in|reducing|improving|"
    r"increasing|decreasing|preventing|lowering|in|on|of|for)\s+)+",
    re.I,
)
_COMPARATIVE_TAIL = re.compile(
    r"\s+(?:(?:be|is|are|was|were)\s+)?(?:(?:more|less|as)\s+(?:effective|efficacious|beneficial|useful|helpful)|better|worse|"
    r"superior|inferior|more|less|greater|different|effective|efficacious|beneficial|useful|helpful|safe|"
    r"recommended|indicated|worthwhile)(?:\s+(?:effects?|results?|outcomes?))?$",
    re.I,
)
_WHICH = re.compile(
    r"^(?:which|what) (?:is|works|is more effective|works better) (?:better|more effective|best)?\s*"
    r"(?:for\s+(?P<o>[^,]+?))?,?\s+(?P<i>[^,]+?),?\s+or\s+(?P<c>[^,]+)$"
    r"|^(?P<i2>[^,:]+?)\s+or\s+(?P<c2>[^,:]+?)\s*:\s*which (?:is|works) (?:better|more effective|best)"
    r"(?:\s+for\s+(?P<o2>.+))?$",
    re.I,
)
_EDGE_WORDS = {
    "the",
    "a",
    "an",
    "of",
    "and",
    "or",
    "with",
    "in",
    "on",
    "for",
    "to",
    "by",
    "at",
    "as",
    "than",
    "those",
    "receiving",
    "group",
    "groups",
    "arm",
    "arms",
    "is",
    "are",
    "be",
}


def _name(text: str | None) -> str | None:
    """A captured phrase without edge function words or punctuation ('no' and 'usual' stay: 'no
    treatment' and 'usual care' are comparators)."""
    if not text:
        return None
    words = re.sub(r"\s+", " ", text).strip(" ,.;:?!-\"'").split()
    while words and words[0].lower() in _EDGE_WORDS:
        words.pop(0)
    while words and words[-1].lower().strip("?.,;:") in _EDGE_WORDS:
        words.pop()
    name = " ".join(words).strip(" ,.;:?!\"'")
    return name[:MAX_NAME] or None


def _outcome(text: str | None) -> str | None:
    """An outcome phrase without the comparison words around it ('greater improvement in X' -> 'X')."""
    if not text:
        return None
    text = _OUTCOME_FILLER.sub("", text.strip())
    return _name(_COMPARATIVE_TAIL.sub("", text))


def _split(text: str, *patterns: re.Pattern) -> tuple[str, str | None]:
    """Cut at the earliest effect verb or outcome preposition among `patterns`: 'I improve O' ->
    ('I', 'O'), 'C on O' -> ('C', 'O'); without one the text is left whole."""
    padded = f" {text} "
    hits = [h for h in (p.search(padded) for p in patterns) if h and h.start() > 0]
    if not hits:
        return text, None
    hit = min(hits, key=lambda h: h.start())
    return padded[: hit.start()].strip(), padded[hit.end() :].strip()


def _take(pattern: re.Pattern, text: str) -> tuple[re.Match | None, str]:
    """The first match of `pattern` and the text with it cut out."""
    hit = pattern.search(text)
    return (hit, re.sub(r"\s+", " ", f"{text[: hit.start()]} {text[hit.end() :]}").strip()) if hit else (None, text)


def _arms_and_outcome(text: str) -> tuple[str | None, str | None, str | None]:
    """Intervention, comparator and outcome of a question with its timepoint and population taken
    out (steps 2-5 of the module doc)."""
    intervention = comparator = outcome = None
    front = _FRONT_COMPARATOR.match(text)
    if front:
        comparator, text = front.group(1), front.group(2)
    front = _FRONT_OUTCOME.match(text)
    if front:
        outcome, text = front.group(1), front.group(2)
    frame = _FRAME.match(text)
    effect_of = bool(frame and frame.group("of"))
    text = _LEAD.sub("", text[frame.end() :] if frame else text)
    which, between, comparable = _WHICH.match(text), _BETWEEN.search(text), _COMPARABLE.match(text)
    if which:
        return (
            which.group("i") or which.group("i2"),
            which.group("c") or which.group("c2"),
            outcome or which.group("o") or which.group("o2"),
        )
    if between:
        return between.group(2), between.group(3), between.group(1)
    if comparable:
        return comparable.group(1), comparable.group(2), comparable.group(3)
    cue = _CUE.search(text)
    if frame is None and cue is None and comparator is None:  # a title, not a question: no arms to read
        return None, None, outcome
    left, right = (text[: cue.start()], text[cue.end() :]) if cue else (text, None)
    if effect_of:  # "effect of I on O"; with a comparator after it, 'on' may be inside I ("a workshop on EBM")
        left, left_outcome = _split(left, _OUTCOME_PREP) if cue is None else (left, None)
    else:
        left, left_outcome = _split(left, _VERB)
        if left_outcome is None and cue is None:  # "Is ice effective for pain?"
            left, left_outcome = _split(left, _OUTCOME_PREP)
    intervention, outcome = _COMPARATIVE_TAIL.sub("", left), outcome or left_outcome
    if right is not None:
        right, right_outcome = _split(right, _VERB, _OUTCOME_PREP)
        comparator, outcome = comparator or right, outcome or right_outcome
    return intervention, comparator, outcome


def question_anchors(question: str, condition_names: tuple[str, ...] = ()) -> Anchors:
    """P/I/C/O/T anchors of a clinical question, from its own words only (see module doc)."""
    anchors = Anchors()
    text = re.sub(r"\s+", " ", question).strip().rstrip("?.! ")
    time, text = _take(_TIMEPOINT, text)
    if time is None:
        time, text = _take(_FOLLOW_UP, text)
    if time is None:
        time, text = _take(_FOLLOW_UP_AT, text)
    anchors.timepoint = _name(time.group(0)) if time else None
    pop, text = _take(_POPULATION, text)
    anchors.population = _name(pop.group(1)) if pop else None
    subject = _SUBJECT_POPULATION.match(text) if pop is None else None
    if subject:
        anchors.population = _name(subject.group("population"))
        text = f"{subject.group('frame')} {text[subject.end() :]}"
    intervention, comparator, outcome = _arms_and_outcome(re.sub(r"\s+,", ",", text).strip(" ,"))
    anchors.intervention, anchors.comparator, anchors.outcome = (
        _name(intervention),
        _name(comparator),
        _outcome(outcome),
    )
    if anchors.outcome is None:
        scales = [name for name, pattern, _ in _SCALES if pattern.search(question)]
        anchors.outcome = scales[0] if scales else None
    for name in condition_names:
        if re.search(re.escape(name), question, re.I):
            anchors.condition = name
            break
    if anchors.condition is None:
        cond = _CONDITION.search(question)
        anchors.condition = _name(cond.group(1)) if cond else None
    if anchors.condition:  # "pain in patellar tendinopathy" -> "pain": the condition is its own anchor
        tail = re.compile(
            rf"\s+(?:in|among|for|with|after)\s+(?:(?:patients|people|adults|athletes) with\s+)?"
            rf"{re.escape(anchors.condition)}$",
            re.I,
        )
        for name in ("intervention", "comparator", "outcome"):
            value = getattr(anchors, name)
            setattr(anchors, name, _name(tail.sub("", value)) if value else None)
    anchors.terms = [
        v
        for v in (
            anchors.population,
            anchors.intervention,
            anchors.comparator,
            anchors.outcome,
            anchors.timepoint,
            anchors.condition,
        )
        if v
    ]
    return anchors
