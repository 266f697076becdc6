"""The answer's bottom line: what kind of question was asked, and the answer in its own terms,
with the certainty and how many cited sources of which grade support or contradict it.

Question types: comparative (an intervention and a comparator: I vs C on O), effect (does I change
O), yes/no (any other closed question) and open. The bottom line restates the answer's verdict in
the question's words: for a comparative or effect question which way the evidence points on the
outcome (or no difference, or insufficient evidence); for a closed question yes / no / uncertain,
where the verdict's direction is read against the question's own direction ("Does I reduce O?"
answered "significantly decreased" is yes, "significantly increased" is no; a question with no
direction, "Is I effective?", is yes for any significant effect). A cited guideline recommendation
about the question's arms answers a closed question by its stance (for: yes; against: no; neither /
no recommendation: uncertain), read from its stated strength or its recommending words. For a
comparative question it reads as the direction on the outcome that favours the arm it recommends
(`recommended_verdict`): a recommendation for exercise on a pain outcome is a decrease.
Findings about other interventions or other conditions answer nothing: when no cited finding of the
question's condition, nor its source's title, names a word that tells the question's arms apart,
the answer is insufficient evidence. A comparative question is answered only by the sources that
compare its arms (`findings.compares_arms`: both arms named, or one and a control arm when the other
is a control) and by recommendations on them: a trial of two kinds of acupuncture takes no side on
acupuncture against usual care, and when no cited source compares the arms the answer is insufficient
evidence (GRADE's indirectness of comparison).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable

from ebm_platform.abbreviations import abbreviations, spell_out
from ebm_platform.conditions import active_catalogue
from ebm_platform.graph.pico_rules import extract
from ebm_platform.retrieval.answer import CORE_STATEMENTS, REVIEW, STANCES
from ebm_platform.retrieval.findings import (
    ADDED_TO_CONTROL,
    COMPARISON_STATED,
    CONCLUDES_BENEFIT,
    CONCLUDES_NO_BENEFIT,
    CONCLUDES_UNCERTAIN,
    CONTROL_NAMED,
    HEALTHY_SAMPLE,
    HEDGED,
    NEGATED_WORD,
    PREVENTION,
    REPORTED_RECOMMENDATION,
    adds_to,
    against_active,
    arm_words,
    beats_named_control,
    compares_arms,
    compares_forms,
    concludes_uncertain_whether_it_works,
    favoured_arm,
    favours_another_arm_over,
    is_protocol,
    less_specific,
    most_specific,
    names_condition,
    names_every_arm_word,
    names_question,
    naming_words,
    other_stage,
    recommendation_stance,
    recommends,
    recommends_about_arms,
    tests_another,
    within_one_arm,
)
from ebm_platform.retrieval.lexical import stems
from ebm_platform.retrieval.verdict import DECREASED, INCREASED, INSUFFICIENT, NO_DIFFERENCE
from ebm_platform.vocabulary import Anchors

QUESTION_TYPES = ("comparative", "effect", "yes/no", "open")
CLOSED_KINDS = ("yes/no", "effect")  # the question types answered yes / no / uncertain
CLOSED = re.compile(r"^\W*(?:is|are|does|do|did|can|could|should|will|would|has|have|was|were|may|might)\b", re.I)
WH = re.compile(r"^\W*(?:what|which|how|why|when|where|who|whom|whose)\b", re.I)
CLAUSES = re.compile(r":|\.\s|--|\s-\s|;")
DOWN_WORDS = re.compile(
    r"\b(?:reduc\w*|decreas\w*|lower\w*|reliev\w*|prevent\w*|alleviat\w*|less|fewer|"
    r"shorten\w*|ameliorat\w*)\b",
    re.I,
)
UP_WORDS = re.compile(
    r"\b(?:increas\w*|improv\w*|rais\w*|enhanc\w*|higher|greater|more|boost\w*|speed\w* up|"
    r"accelerat\w*|restor\w*)\b",
    re.I,
)
EFFECT_WORDS = re.compile(r"\b(?:effect\w*|efficacy|impact|benefi\w*|help\w*|work|useful|influenc\w*|chang\w*)\b", re.I)
# a question whether a treatment works ("Are corticosteroid injections effective ...?"), not whether a factor matters
WORKS = re.compile(r"\b(?:effective\w*|efficac\w*|benefi\w*|help\w*|work|useful)\b", re.I)
YES, NO, UNCERTAIN = "yes", "no", "uncertain"
# what the core statements are when no cited finding answers the question (the bottom line's `unanswered`)
NEAREST_FINDINGS = "no cited finding answers the question: the findings nearest to it"
GUIDELINE = "A"  # the grade whose sources state recommendations; the closed-question reader reads studies
# Outcomes a treatment should lower (harms, symptoms, time lost) and those it should raise: which way
# on the outcome a recommended arm is expected to move it.
LOWER_IS_BETTER = re.compile(
    r"\b(?:pain\w*|disabilit\w*|(?:re-?)?injur\w*|recurren\w*|risks?|mortality|deaths?|adverse|complications?|"
    r"symptoms?|swelling|o?edema|stiffness|fatigue|fear\w*|anxiety|depressi\w*|kinesiophobia|instability|"
    r"sick(?:ness)? (?:leave|absence)|absenteeism|opioid\w*|analgesic\w*|failures?|(?:re-?)?ruptures?|falls?|"
    r"fractures?|tenderness|spasms?)\b",
    re.I,
)
HIGHER_IS_BETTER = re.compile(
    r"\b(?:function\w*|strength|range of (?:motion|movement)|mobility|quality of life|returns? to|recover\w*|"
    r"satisfaction|performance|balance|endurance|healing|activit(?:y|ies)|well-?being|flexibility|capacity)\b",
    re.I,
)
EXAMPLES = re.compile(r"\((?:e\.g\.|eg\b|for example|such as|including)[^)]*\)", re.I)  # "(e.g., a, b, c)"
TIME_TO = re.compile(r"\b(?:time|days|weeks|months) (?:to|until)\b", re.I)  # the time until an event


def is_closed(question: str) -> bool:
    """A yes/no question: one of its clauses opens with an auxiliary verb ("Therapeutic
    anticoagulation in the trauma patient: is it safe?"), or it ends in a question mark and none
    opens with a question word (a title asked as a question: "Aripiprazole: a new risk factor for
    pathological gambling?")."""
    clauses = CLAUSES.split(question)
    if any(CLOSED.match(c) for c in clauses):
        return True
    return question.rstrip().endswith("?") and not any(WH.match(c) for c in clauses)


def question_type(question: str, anchors: Anchors) -> str:
    """comparative (I and C named), effect (I and O, asked as a closed question or about an effect),
    yes/no (any other closed question) or open."""
    if anchors.intervention and anchors.comparator:
        return "comparative"
    closed = is_closed(question)
    if anchors.intervention and anchors.outcome and (closed or EFFECT_WORDS.search(question)):
        return "effect"
    return "yes/no" if closed else "open"


def question_direction(question: str) -> str | None:
    """The direction a closed question asks about: 'down' (reduce, prevent ...), 'up' (improve,
    increase ...) or None when it names none (effective, better, beneficial)."""
    down, up = len(DOWN_WORDS.findall(question)), len(UP_WORDS.findall(question))
    return "down" if down > up else "up" if up > down else None


def asks_if_it_works(question: str, anchors: Anchors, kind: str) -> bool:
    """Whether an effect question asks if its one intervention works (reduces, improves, prevents, is
    effective), against no comparator it names: not whether a factor matters ("Does patella position influence
    ligament balancing?" compares two positions), nor a comparison the parser left inside the intervention
    ("gastric electrical stimulation superior to standard pharmacologic therapy")."""
    works = question_direction(question) is not None or bool(WORKS.search(question))
    intervention = anchors.intervention or ""
    return kind == "effect" and not anchors.comparator and works and not COMPARISON_STATED.search(intervention)


def as_closed_answer(verdict: str, direction: str | None) -> str:
    """yes / no / uncertain for a closed question, from a verdict read against its direction."""
    if verdict == NO_DIFFERENCE:
        return NO
    if verdict in (INCREASED, DECREASED):
        if direction is None:
            return YES
        return YES if (verdict == DECREASED) == (direction == "down") else NO
    return UNCERTAIN


def directed(read: str, verdict: str, direction: str | None, add_on: bool = False) -> str:
    """A reader's yes for a question that asks about one direction, overruled to no when the
    source's verdict is a significant effect the other way (`verdict`: read from a statement about the
    question's intervention and outcome, `arm_outcome_verdict`), or no difference from a control arm that
    has all the other arm has but the intervention (`add_on`: an add-on trial): both arms improving is
    no effect of the intervention (the demo read "Yes" to "Does manual therapy improve function in frozen shoulder?"
    from "exercises with manual therapy and exercises alone are equally effective")."""
    opposite = verdict in (INCREASED, DECREASED) and as_closed_answer(verdict, direction) == NO
    no_effect = add_on and verdict == NO_DIFFERENCE
    return NO if read == YES and ((direction and opposite) or no_effect) else read


def names_outcome(text: str, anchors: Anchors) -> bool:
    """Whether the text names a word of the question's outcome (False when the question names none)."""
    return bool(anchors.outcome) and bool(stems(anchors.outcome) & stems(text))


def outcome_verdict(statement: str, anchors: Anchors, verdict_of: Callable[[str], str]) -> str:
    """The statement's verdict when it names the question's outcome, else insufficient: a direction
    read from another outcome says nothing of the question's ("Do hospitals provide lower quality care on
    weekends?" is not answered no by a rise in weekend mortality)."""
    return verdict_of(statement) if names_outcome(statement, anchors) else INSUFFICIENT


def arm_outcome_verdict(statement: str, anchors: Anchors, verdict_of: Callable[[str], str]) -> str:
    """`outcome_verdict` of a statement that also names every word of the question's intervention, else
    insufficient: which way a statement's groups differ says which way the question's intervention acts
    only when the statement is about it. On PubMedQA's 500 questions every override of the reader by a
    statement that does not name it was wrong (5 of 5: "Does tranexamic acid reduce desmopressin-induced
    hyperfibrinolysis?" read "No ... increased" from "fibrin split product, 21.2 ... versus 13.5 ... in
    the isolated desmopressin group")."""
    return outcome_verdict(statement, anchors, verdict_of) if names_every_arm_word(statement, anchors) else INSUFFICIENT


def statement_answer(
    statement: str, verdict_of: Callable[[str], str], direction: str | None, anchors: Anchors | None = None
) -> str:
    """One cited statement's answer to a closed question (a recommendation by its strength, read
    against the question's arms when `anchors` are given: `findings.recommendation_stance`)."""
    stance = recommendation_stance(statement, anchors)
    if stance is not None:
        return {"for": YES, "against": NO}.get(stance, UNCERTAIN)
    return as_closed_answer(verdict_of(statement), direction)


def outcome_polarity(outcome: str) -> str | None:
    """'down' when a treatment should lower the outcome (pain, injury, risk ...), 'up' when it should
    raise it (function, strength, return to sport ...), None when the outcome names neither or both. The
    time until an event goes the other way from the event (time to return to sport: down)."""
    timed = TIME_TO.search(outcome)
    if timed:
        return {"up": "down", "down": "up"}.get(outcome_polarity(outcome[timed.end() :]) or "")
    down, up = bool(LOWER_IS_BETTER.search(outcome)), bool(HIGHER_IS_BETTER.search(outcome))
    return "down" if down and not up else "up" if up and not down else None


def _arm_stems(text: str) -> frozenset[str]:
    """`stems` with a negated word kept apart from the word ("non-opioid" -> "nonopioid")."""
    return stems(NEGATED_WORD.sub(r"non\1", text))


def recommended_arm(statement: str, anchors: Anchors) -> str | None:
    """Which of the question's arms a statement is about: the one more than half of whose own words
    (those the other arm lacks) it names and more of them than of the other's ("exercise therapy ...
    as part of care" names both words of exercise therapy, one of usual care); None otherwise. Words in a
    list of examples do not count: "we suggest a structured clinician-directed exercise program (e.g., ...
    mechanical diagnosis and therapy, ... Pilates ...)" recommends a kind of care that holds both Pilates
    and McKenzie's method, not Pilates over McKenzie training."""
    intervention, comparator = _arm_stems(anchors.intervention or ""), _arm_stems(anchors.comparator or "")
    words = _arm_stems(EXAMPLES.sub("", statement))
    own_i, own_c = intervention - comparator, comparator - intervention
    share_i = len(words & own_i) / len(own_i) if own_i else 0.0
    share_c = len(words & own_c) / len(own_c) if own_c else 0.0
    if max(share_i, share_c) <= 0.5 or share_i == share_c:
        return None
    return "intervention" if share_i > share_c else "comparator"


def recommended_verdict(statement: str, anchors: Anchors) -> str:
    """A recommendation as a comparative verdict: for (against) the arm it names favours (disfavours)
    that arm, so the intervention moves the outcome the better (worse) way (`outcome_polarity`).
    Insufficient evidence when it recommends neither, is about neither arm (`recommended_arm`) or the
    outcome's better direction cannot be told."""
    stance = recommendation_stance(statement, anchors)
    arm, better = recommended_arm(statement, anchors), outcome_polarity(anchors.outcome or "")
    if stance not in ("for", "against") or arm is None or better is None:
        return INSUFFICIENT
    favours_intervention = (stance == "for") == (arm == "intervention")
    return INCREASED if (better == "up") == favours_intervention else DECREASED


def measured_outcome(statement: str | None) -> str | None:
    """The outcome a finding measured, as the PICO rules name it (their longest Outcome name), or None."""
    names = [e["name"] for e in extract(statement).entities if e["type"] == "Outcome"] if statement else []
    return max(names, key=len) if names else None


def _phrase(verdict: str, anchors: Anchors, basis: str | None = None) -> str:
    """The verdict in the question's terms; `basis`: the finding that gave it, whose outcome names what was
    measured when the question names only its condition."""
    intervention = anchors.intervention or "the intervention"
    outcome = anchors.outcome or "the outcome"
    against = f" compared with {anchors.comparator}" if anchors.comparator else ""
    if anchors.condition and outcome.lower() == anchors.condition.lower() and outcome_polarity(outcome) is None:
        # "Is I better than C for lateral epicondylitis?" names no outcome: a verdict moves the outcome the
        # evidence measured, not the condition ("increased lateral epicondylitis" said the opposite of a
        # benefit); a condition that is its own measure (neck pain) stays the outcome. The finding's own
        # outcome is named when the rules find one ("the outcome measured (iHOT-33 scores)")
        # a finding that says which arm came out better names it ("NSAIDs increased the outcome measured compared
        # with acetaminophen" from "NSAIDs are superior to acetaminophen for improving knee and hip pain")
        favoured = favoured_arm(basis, anchors) if basis and verdict in (INCREASED, DECREASED) else None
        if favoured:
            better, worse = (
                (intervention, anchors.comparator) if favoured == "intervention" else (anchors.comparator, intervention)
            )
            return f"the evidence favours {better} over {worse} for {anchors.condition}"
        measured = measured_outcome(basis)
        outcome = f"the outcome measured ({measured})" if measured else "the outcome measured"
        against = f"{against} for {anchors.condition}"
    if verdict == INCREASED:
        return f"{intervention} increased {outcome}{against}"
    if verdict == DECREASED:
        return f"{intervention} decreased {outcome}{against}"
    if verdict == NO_DIFFERENCE:
        between = f"between {intervention} and {anchors.comparator}" if anchors.comparator else f"with {intervention}"
        return f"no significant difference in {outcome} {between}"
    return "insufficient evidence to answer"


def _majority(votes: Counter, tie: str) -> str | None:
    """The most common vote, `tie` when two lead equally; None without votes."""
    if not votes:
        return None
    (top, count), *rest = votes.most_common()
    return tie if rest and rest[0][1] == count else top


def _best_grade(stances: dict[int, str], grade: dict[int, str], neutral: str) -> str:
    """The best grade among the sources that take a side ("" when none does)."""
    return min((grade[n] for n, st in stances.items() if st != neutral), default="")


def _best_grade_answer(stances: dict[int, str], grade: dict[int, str], neutral: str) -> str | None:
    """The answer the best-graded sources with a stance give (the majority within that grade; a tie
    is `neutral`); None when no source takes a stance."""
    best = _best_grade(stances, grade, neutral)
    return _majority(Counter(st for n, st in stances.items() if grade[n] == best and st != neutral), neutral)


def _by_recommendation(
    stances: dict[int, str], document: dict[int, object], speaking: set[int], neutral: str
) -> dict[int, str]:
    """A guideline speaks through its recommendation: when one of its cited windows (`speaking`, the
    sources whose statement recommends on the question's arms) does, its other windows (its discussion
    of the studies) take no side (the demo's structured exercise answer read "supported by 2 grade A;
    contradicted by 1 grade A", the VA/DoD guideline on both sides)."""
    spoken = {document[n] for n in speaking}
    return {n: neutral if document[n] in spoken and n not in speaking else st for n, st in stances.items()}


def _recommends_on_arms(n: int, first: dict[int, str], grade: dict[int, str], anchors: Anchors) -> bool:
    """Whether cited source n is a guideline whose statement recommends on the question's arms, or a
    review whose statement reports what guidelines recommend on them (an overview of guidelines: "the
    guidelines recommend ..., avoiding bed rest"; a trial that cites guidelines states its background)."""
    reported = grade[n] == REVIEW and bool(REPORTED_RECOMMENDATION.search(first[n]))
    return (grade[n] == GUIDELINE or reported) and recommends_about_arms(first[n], anchors)


def _documents(citations: list[dict]) -> dict[int, object]:
    """Each citation's document (its doc_id; the citation itself when it names none)."""
    return {c["n"]: c.get("doc_id") or c["n"] for c in citations}


def unquoted_lead_study(
    first: dict[int, str],
    direct: set[int],
    grade: dict[int, str],
    titles: dict[int, str],
    document: dict[int, object],
    anchors: Anchors,
) -> int | None:
    """The top-ranked cited study when no statement of it was quoted (none of its sentences read as a
    finding, "Statistical analysis revealed that WBC was correlated positively with ISS"), it is the question's
    condition's, and its title names every word of the question's arms: the closed-question reader reads it
    whole all the same. Not a guideline (its recommendations speak for it) nor a trial protocol (it has no
    results)."""
    top = min(direct, default=None)
    if top is None or grade[top] == GUIDELINE or document[top] in {document[n] for n in first}:
        return None
    return top if not is_protocol(titles[top]) and names_every_arm_word(titles[top], anchors) else None


def _recommended(stances: dict[int, str], speaking: set[int], tie: str) -> str | None:
    """What the cited guidelines' recommendations about the question's arms (`speaking`) answer: the
    majority of those that take a side (`tie`, neither for nor against, is none: "Does ultrasound therapy
    reduce pain in chronic low back pain?" read "the guideline recommends neither for nor against it" from
    the VA/DoD guideline's "insufficient evidence to recommend for or against" beside the WHO guideline's
    "should not be used"), a tie between sides `tie`; `tie` when none takes a side, None when none is about
    them."""
    votes = Counter(stances[n] for n in speaking)
    return _majority(Counter({st: c for st, c in votes.items() if st != tie}) or votes, tie)


def bottom_line(
    question: str,
    anchors: Anchors,
    answer: dict,
    verdict_of: Callable[[str], str],
    read_source: Callable[[int], str] | None = None,
    condition: str | None = None,
    in_condition: frozenset[str] | set[str] = frozenset(),
    abstract_of: Callable[[int], str] | None = None,
) -> dict:
    """The bottom line of a composed answer (its verdict, core statements, graded evidence and certainty): the
    question type, one sentence in the question's terms, and the cited sources by grade that support or
    contradict it (each document counted once; each window by its first statement that names a word telling
    the question's arms apart, `findings.arm_words`, in itself or in its source's title; a source about
    something else counts neither way, and so does, when the question has a `condition`, a source whose cited
    window is not that condition's (`in_condition`): GRADE's population indirectness). When no cited source
    is left, or none of the cited windows is the question's condition's (the demo answered "Does eccentric
    training reduce pain in patellar tendinopathy?" "Yes" from a shoulder trial's protocol, its lake holding
    no patellar tendinopathy document), the answer is insufficient evidence (uncertain for a closed question)
    whatever the quoted findings say. A closed question is answered as the best-graded cited
    sources answer it (a guideline recommendation by its strength), which may overrule the verdict of the
    core statements; a comparative or open question states that verdict when a source that names the arms
    supports it, else what the best-graded such sources find (a verdict read from trials of other arms does
    not answer it). `read_source(n)`, when given, is the closed-question reader's yes / no / uncertain for
    cited study n (not a guideline) read with the question: then the reading of the top-ranked study that
    names the question's arms answers a closed question, or of a systematic review that names them ranked below
    it (a review above single studies, whatever their rank), each study's
    reading gives its side, and a yes to a question asking about one direction becomes no when the study's
    verdict is a significant effect the other way; before anything else the cited recommendations about the
    question's arms decide. A guideline's other sentences (its discussion of studies) count as support or
    contradiction but do not overrule the reader: read out of context they once answered "Does spinal
    manipulation reduce neck pain?" with no from "benefits ... slightly outweighed the potential harm".
    `abstract_of(n)`, when given, is cited source n's abstract: with its quoted statements and title it tells
    whether the source compares a comparative question's arms (`findings.compares_arms`)."""
    kind = question_type(question, anchors)
    direction = question_direction(question)
    verdict = answer.get("verdict", INSUFFICIENT)
    grade = {c["n"]: c["grade"] for c in answer.get("citations", [])}
    statements = [(s["statement"], n) for s in answer.get("core_answer", []) for n in s.get("citations", [])]
    statements += [
        (s["statement"], n)
        for group in answer.get("evidence_by_grade", [])
        for s in group.get("statements", [])
        for n in s.get("citations", [])
    ]
    cited = answer.get("citations", [])
    titles = {c["n"]: c.get("title") or "" for c in cited}
    document = _documents(cited)
    if cited and condition and not any(c["window_id"] in in_condition for c in cited):
        # nothing cited comes from the question's condition
        return _unanswered(
            kind, f"no cited finding comes from {condition_label(condition)}, the question's condition", answer, grade
        )
    # with a condition, the other conditions' sources are indirect
    direct = {c["n"] for c in cited if not condition or c["window_id"] in in_condition}
    if (condition or anchors.condition) and not PREVENTION.search(question):
        # a study of healthy people does not answer a question about treating patients (the demo answered "does adding
        # hip strengthening to knee exercise reduce pain more than knee exercise alone?" in patellofemoral pain "No
        # significant difference" from an EMG study "in healthy subjects"); preventing the condition is asked of them
        healthy = {n for n in direct if HEALTHY_SAMPLE.search(titles[n])}
        direct -= healthy
        naming = {n for st, n in statements if names_question(st, anchors, titles[n])}
        if naming & healthy and not naming & direct:
            return _unanswered(kind, of_healthy_people(anchors, condition), answer, grade)
    if not condition and anchors.condition and not in_catalogue(anchors.condition):
        # a condition the catalogue does not hold: only the sources that name it, in their quoted statements or
        # title, are direct (the demo answered "Does early weight bearing improve outcomes after Achilles tendon
        # rupture?" "No ... (certainty high; supported by 1 grade A)" from a low back pain guideline's "early
        # imaging is associated with ... worse clinical outcomes")
        texts = {n: [titles[n]] for n in direct}
        for statement, n in statements:
            if n in texts:
                texts[n].append(statement)
        direct = {n for n in direct if names_condition(" ".join(texts[n]), anchors.condition)}
        if cited and not direct:
            return _unanswered(
                kind, f"no cited finding (nor the title of its source) names {anchors.condition}", answer, grade
            )
    first: dict[int, str] = {}  # each direct source's first statement that (or whose title) names the arms
    # the cited recommendations about the arms that name the most of their words: a recommendation that names
    # fewer is about something else (the demo answered "Does spinal manipulation reduce pain in chronic low back
    # pain?" "No: the guideline recommends against it" from "we suggest against spinal cord stimulation", beside
    # "we suggest spinal mobilization/manipulation")
    specific = most_specific([s for s, n in statements if n in direct], anchors)
    for statement, n in statements:  # a guideline's recommendation before its other statements
        # (a comparative question's: also a recommendation about one of its arms, "we suggest against opioids"
        # for opioids vs non-opioid medication, whose only word of its own is "medication")
        recommending = (
            kind == "comparative" and recommends(statement) and recommended_arm(statement, anchors) is not None
        )
        if recommends(statement) and other_stage(statement, question):  # a recommendation for chronic pain
            continue  # does not answer a question about acute pain (the guideline's acute one may)
        if less_specific(statement, anchors, specific):
            continue
        if n in direct and (names_question(statement, anchors, titles[n]) or recommending):
            if n not in first or (grade[n] == GUIDELINE and recommends(statement) and not recommends(first[n])):
                first[n] = statement
    closed = kind in CLOSED_KINDS
    on_arms = {n for n in first if _recommends_on_arms(n, first, grade, anchors)}  # guidelines recommending on the arms
    quoted: dict[object, list[str]] = {}  # each document's quoted statements
    for statement, n in statements:
        quoted.setdefault(document[n], []).append(statement)
    reader = read_source if closed else None
    if (
        reader is not None
        and (lead := unquoted_lead_study(first, direct, grade, titles, document, anchors)) is not None
    ):
        first[lead] = ""  # read by the reader alone: no quoted statement gives it a verdict
    if grade and not first and (arm_words(anchors) or condition):  # the findings cited are about something else
        return _unanswered(kind, unnamed(anchors, condition), answer, grade)
    read_from = (answer.get("verdict_basis") or {}).get("statement")  # the finding that gave the core's verdict
    if asks_if_it_works(question, anchors, kind):
        # an effect is measured against a control: a study of two forms of the intervention (intramuscular
        # against intralesional steroid injections) takes no side on whether it works (GRADE's indirectness of
        # comparison; the demo read "Yes" to "Are corticosteroid injections effective ...?" from such a trial)
        two_forms = {
            n
            for n, s in first.items()
            if not recommends(s)
            and compares_forms(
                [*quoted.get(document[n], []), titles[n]],
                anchors.intervention or "",
                abstract_of(n) if abstract_of else "",
            )
        }
        # so does a trial of it against another treatment (the demo read "Yes" to the same question from "autologous
        # blood injection versus local corticosteroid injection" once the two forms took no side), and a trial that
        # gives it in both arms, adding another treatment to it in one (`findings.adds_to`)
        intervention = anchors.intervention or ""
        against_other = {
            n
            for n, s in first.items()
            if not recommends(s)
            and (
                against_active(titles[n], intervention)
                or adds_to(titles[n], intervention)
                or tests_another(titles[n], intervention)
            )
        }
        uncontrolled_sources = two_forms | against_other
        if uncontrolled_sources and uncontrolled_sources == set(first):
            # the core quotes them, not the lead source's findings about something else (the demo's functional
            # bracing answer quoted a diclofenac gel trial beside "the cited findings compare forms of ...")
            return _unanswered(kind, uncontrolled(anchors), answer, grade, first)
        first = {n: s for n, s in first.items() if n not in uncontrolled_sources}
    if closed:
        neutral = UNCERTAIN

        def concludes_unsettled(n: int, statement: str) -> bool:
            """Whether source n is a systematic review (grade B) whose statement concludes that the
            evidence does not settle the question: its authors' conclusion, not a reading of its results; or
            one of its other quoted statements does and none of them finds an effect of the question's
            intervention (`findings.names_every_arm_word`: the demo's Nordic hamstring question read "Yes" from a
            review quoted as "no statistically significant effect", "insufficient evidence ... to draw
            conclusions" and "some evidence that manual therapy may prevent lower-limb muscle strain")."""
            if grade[n] != REVIEW or recommends(statement):
                return False
            others = quoted.get(document[n], [])
            return concludes_uncertain_whether_it_works(statement) or (
                any(concludes_uncertain_whether_it_works(o) for o in others)
                and not any(verdict_of(o) in (INCREASED, DECREASED) for o in others if names_every_arm_word(o, anchors))
            )

        unsettled = {n for n, s in first.items() if concludes_unsettled(n, s)}  # read once per source

        def reviews_stating(says: Callable[[str], bool]) -> set[int]:
            """The systematic reviews whose quoted statement, no recommendation, `says` so (those that conclude
            the evidence is uncertain aside)."""
            return {
                n
                for n, s in first.items()
                if grade[n] == REVIEW and n not in unsettled and not recommends(s) and says(s)
            }

        # a systematic review whose quoted statement concludes that the question's intervention brings no benefit
        # answers no, whatever the reader makes of it: the reader learned from results sentences, not from authors'
        # conclusions (the demo read "Yes" to "Does shockwave therapy reduce pain in lateral elbow tendinopathy?"
        # from a review concluding that "shock wave therapy provides little or no benefit in terms of pain")
        no_benefit = reviews_stating(
            lambda s: bool(CONCLUDES_NO_BENEFIT.search(s)) and names_every_arm_word(s, anchors)
        )
        # and one whose quoted statement concludes, unhedged, that it works answers yes (the demo read "No: the
        # top-ranked review reports no such effect" to "Does viscosupplementation reduce knee osteoarthritis pain?"
        # from CD005321's "viscosupplementation is an effective treatment for OA of the knee with beneficial effects:
        # on pain", which names no direction the verdict reads)
        # (a question asking about harm, "Does X increase pain?", is not answered by it)
        asks_benefit = direction is None or direction == outcome_polarity(anchors.outcome or "")
        benefit = (
            reviews_stating(
                lambda s: (
                    bool(CONCLUDES_BENEFIT.search(s)) and not HEDGED.search(s) and names_every_arm_word(s, anchors)
                )
            )
            if asks_benefit
            else set()
        )

        # a systematic review whose quoted finding is a significant effect of the question's intervention against a
        # control, the question's way, answers yes where the reader reads the review's results as maybe (the demo's
        # "Are topical NSAIDs effective for knee osteoarthritis pain?" read "Uncertain: the top-ranked review does
        # not settle it" beside CD007400's "topical diclofenac and topical ketoprofen were significantly more
        # effective than carrier for reducing pain"); as with no benefit, the reader never saw a review. These are the
        # reviews whose statement names a control; `reader_answer` reads its effect
        against_control = reviews_stating(lambda s: bool(CONTROL_NAMED.search(s)))

        # a question that names a clinical outcome besides its condition ("pain" in patellofemoral pain; one whose
        # better direction is known, `outcome_polarity`: the parser reads "stabilised surgically" as an outcome)
        # is answered by sources about that outcome: "no differences in EMG activity" says nothing of pain
        own_outcome = (
            bool(anchors.outcome)
            and anchors.outcome != anchors.condition
            and outcome_polarity(anchors.outcome) is not None
        )
        stated = (lambda s: outcome_verdict(s, anchors, verdict_of)) if own_outcome else verdict_of

        def about_outcome(n: int) -> bool:
            """Whether source n's quoted statements or title name the question's own outcome (any source
            when the question names none besides its condition)."""
            return not own_outcome or names_outcome(" ".join([*quoted.get(document[n], []), titles[n]]), anchors)

        def read(n: int, statement: str) -> bool:
            """Whether the reader answers for source n: a study, not a guideline (grade A), nor a review
            that concludes the evidence is uncertain, that names the question's outcome (the demo's "Does hip
            strengthening reduce pain in patellofemoral pain?" read "No" from an EMG study of hip abduction)."""
            return (
                reader is not None
                and grade[n] != GUIDELINE
                and not recommends(statement)
                and n not in unsettled
                and about_outcome(n)
            )

        def adds_to_control(n: int) -> bool:
            """Whether an effect question's source n is an add-on trial: its quoted statements or title give
            the control arm what the other arm adds the intervention to ("exercises alone", "with and
            without mobilisation"). Not any control arm: on PubMedQA's 500 questions, a no difference from
            placebo or a control group overruled two right yes answers, both read from statements the verdict
            model misread (a dose group's interval; "a significant difference ... treated with telmisartan")."""
            texts = [*quoted.get(document[n], []), titles[n]]
            return not anchors.comparator and any(ADDED_TO_CONTROL.search(t) for t in texts)

        def effect_asked(found: str) -> bool:
            """Whether a verdict is a significant effect the way the question asks about."""
            return found in (INCREASED, DECREASED) and as_closed_answer(found, direction) == YES

        def spelled_out(statement: str, n: int) -> str:
            """The statement with the abbreviations its source defines in its title or abstract spelled out
            ("ESWT" as "extracorporeal shock wave therapy"), so that it names the arms as the question does."""
            defined = abbreviations(f"{titles[n]} {abstract_of(n) if abstract_of else ''}")
            return spell_out(statement, defined)

        def reader_answer(n: int, statement: str) -> str:
            """The reader's answer for source n (`directed`), or yes when n is a review whose finding is an effect of
            the question's intervention on its outcome the question's way, for the reader's no, or for its maybe when
            the finding is against a control (`against_control`): the reader learned from trials' results, and a
            review's finding is its answer (the demo's "Does exercise reduce pain in knee osteoarthritis?" read "No"
            from Cochrane's CD004376, "platinum level evidence that land-based therapeutic exercise has at least
            short term benefit in terms of reduced knee pain", its results read beside its withdrawals' "not
            significant"); yes, too, for the reader's no when n is a study whose statement reports a significant effect
            the question's way against a control it names, read with its source's abbreviations spelled out."""
            said, found = reader(n), arm_outcome_verdict(statement, anchors, verdict_of)
            if (
                grade[n] == REVIEW
                and effect_asked(found)
                and (said == NO or (said == UNCERTAIN and n in against_control))
            ):
                return YES
            if (
                said == NO
                and grade[n] != REVIEW
                and beats_named_control(statement)
                and effect_asked(arm_outcome_verdict(spelled_out(statement, n), anchors, verdict_of))
            ):
                # a study's significant effect the question's way against the control it names ("pain scores were
                # significantly more reduced in the ESWT than the sham group") overrules the reader's no: the demo's
                # "Is shock wave therapy effective for plantar heel pain?" read "No" from that very trial
                return YES
            return directed(said, found, direction, adds_to_control(n))

        # a yes/no question's intervention that a source finds worse than something else: no (the demo's "Should
        # patients with acute low back pain stay in bed?" counted a review favouring advice to stay active over bed
        # rest as contradicting its "No"); an effect question's is a comparison with another treatment, as before
        worse = {
            n
            for n, s in first.items()
            if kind == "yes/no" and not recommends(s) and favours_another_arm_over(s, anchors)
        }
        stances = {
            n: UNCERTAIN
            if n in unsettled
            else NO
            if n in no_benefit or n in worse
            else YES
            if n in benefit
            else reader_answer(n, s)
            if read(n, s)
            else statement_answer(s, stated, direction, anchors)
            for n, s in first.items()
        }
        stances = _by_recommendation(stances, document, on_arms, neutral)

        def speaking_review(n: int) -> bool:
            """Whether source n is a systematic review that answers: read by the reader, or concluding that
            the evidence is uncertain."""
            return grade[n] == REVIEW and (n in unsettled or read(n, first[n]))

        # the source that answers: a systematic review that names the question's arms and answers, above the
        # single studies ranked before it (the evidence hierarchy: the demo answered "Should patients with neck
        # pain receive massage?" "No" from an observational study ranked second, above the Cochrane review,
        # ranked fourth, that concludes "the effectiveness of massage for neck pain remains uncertain"); else the
        # top-ranked source that names the arms (one that does not answers nothing: the demo's "Does
        # neuromuscular training prevent anterior cruciate ligament injuries?" read "No ... supported by none"
        # from a trial of something else that ranked first)
        top = min(first, key=lambda n: (not speaking_review(n), n), default=None)
        ranked_first = top == min(first, default=None)
        readers_answer = top is not None and read(top, first[top])
        # a systematic review that finds the evidence uncertain: its conclusion stands (the demo read "Yes" to the
        # massage question from the results of that review)
        review_unsettled = top in unsettled
        # the reviews that conclude the evidence is uncertain support the "Uncertain" they decide
        concluding = unsettled if review_unsettled else set()
        # without a source that answers, the core's verdict; uncertain when no source that names the question
        # reports a direction on its outcome
        target = as_closed_answer(verdict, direction) if any(st != neutral for st in stances.values()) else neutral
        if readers_answer or review_unsettled:  # that source's answer
            target = stances[top]
        best = _best_grade_answer(stances, grade, neutral)
        placed = "top-ranked" if ranked_first else f"grade {REVIEW}"  # a review above the studies ranked before it
        generic = (
            f"the {placed} systematic review concludes that the evidence is uncertain"
            if review_unsettled
            else (
                f"the {placed} {'review' if grade[top] == REVIEW else 'study'} "
                if readers_answer
                else "the cited evidence "
            )
            + {YES: "reports the effect asked about", NO: "reports no such effect", UNCERTAIN: "does not settle it"}[
                target
            ]
        )
        # the verdict is phrased in the question's terms unless read from a source that does not name its arms
        # (the demo once read "Yes: exercises decreased risk of recurrent ankle sprain" from a gel trial)
        on_question = read_from is None or any(n in first for s, n in statements if s == read_from)
        # and only when it says the same as the answer, read as the question asks and, when the question states no
        # direction, against the outcome's better one too (the demo read "Yes: foot orthoses increased patellofemoral
        # pain" from "patients treated with orthoses are more likely to complain of mild adverse effects")
        # nor when neither the question nor its outcome says which way is better: "Yes: kinesio taping increased the
        # outcome measured for rotator cuff disease" says no more than the generic line
        better = direction or outcome_polarity(anchors.outcome or "")
        basis = (
            _phrase(verdict, anchors, read_from)
            if kind == "effect"
            and on_question
            and better is not None
            and all(as_closed_answer(verdict, d) == target for d in {direction, better})
            else generic
        )
        # a guideline's own recommendation outranks what an overview reports guidelines recommend (the demo's
        # antidepressants question read "Yes" from an overview's "most current guidelines recommend antidepressants"
        # beside the VA/DoD guideline's "insufficient evidence" and the WHO guideline's "should not be used")
        guidelines = {n for n in on_arms if grade[n] == GUIDELINE}
        speaking = guidelines or on_arms
        recommended = _recommended(stances, speaking, UNCERTAIN)
        if (
            recommended is None
            and readers_answer
            and grade[top] == REVIEW
            and target != UNCERTAIN
            and unsettled - {top}
        ):
            # a systematic review that reports an effect (or none) beside another that concludes the evidence is
            # uncertain: the reviews disagree, as they do for a comparative question (the demo's "Is TENS effective for
            # neck pain?" read "Yes" from an electrotherapy review's "might be more effective than placebo", ranked
            # above the TENS review's "very low-certainty evidence ... we are unsure about the effect estimate")
            return _disagreement(kind, anchors, REVIEW, answer, stances, grade)
        if recommended is not None:  # the guideline's own recommendations decide, not its discussion
            # the recommendations neither way beside those that decide are named, not counted
            neither = sum(stances[n] == UNCERTAIN for n in speaking) if recommended != UNCERTAIN else 0
            others = "another recommends" if neither == 1 else f"{neither} others recommend"
            subject, verb = (
                ("a guideline" if neither else "the guideline", "recommends")
                if guidelines
                else (f"the guidelines that a grade {min(grade[n] for n in on_arms)} source reports", "recommend")
            )
            basis = (
                f"{subject} {verb} "
                + {YES: "it", NO: "against it", UNCERTAIN: "neither for nor against it"}[recommended]
                + (f" ({others} neither for nor against it)" if neither else "")
            )
            target = recommended
        elif best is not None:
            g = _best_grade(stances, grade, neutral)
            if best != target and not readers_answer and not review_unsettled:
                # a guideline's discussion overrules neither the reader nor a review's uncertain conclusion
                basis = {
                    YES: f"the grade {g} evidence supports it",
                    NO: f"the grade {g} evidence speaks against it",
                    UNCERTAIN: f"the grade {g} evidence disagrees with itself",
                }[best]
                target = best
        text = f"{target.capitalize()}: {basis}"
    else:  # the cited recommendations on the arms, else the core's verdict unless no source that names the arms
        # supports it: then the best-graded ones decide
        neutral = INSUFFICIENT
        concluding = set()
        # a comparative question is answered by the sources that compare its arms (and the recommendations on
        # them); a trial of two kinds of the intervention takes no side (GRADE's indirectness of comparison)
        comparing = {
            n
            for n, s in first.items()
            if recommends(s)
            or compares_arms([*quoted.get(document[n], []), titles[n]], anchors, abstract_of(n) if abstract_of else "")
        }
        # a review that compares the arms and concludes the evidence does not settle it takes no side: "we cannot
        # draw firm conclusions about the effectiveness or safety of surgery" is no "no significant difference"
        unsettled = {
            n
            for n in comparing
            if grade[n] == REVIEW and not recommends(first[n]) and CONCLUDES_UNCERTAIN.search(first[n])
        }
        stances = {  # a change within one arm (`findings.within_one_arm`) takes no side either
            n: neutral
            if n not in comparing or n in unsettled or within_one_arm(s, anchors)
            else recommended_verdict(s, anchors)
            if recommends(s)
            else verdict_of(s)
            for n, s in first.items()
        }
        directing = {n for n, s in first.items() if grade[n] == GUIDELINE and recommends(s) and stances[n] != neutral}
        stances = _by_recommendation(stances, document, on_arms | directing, neutral)
        best = _best_grade_answer(stances, grade, neutral)
        # the core's verdict when a source that takes a side supports it, unless guidelines or systematic reviews
        # take sides and none of the best-graded of them supports it: then what those find (the demo answered "Is
        # exercise better than usual care for neck pain?" "No significant difference" from an observational
        # study's aside against a review whose evidence supports exercise). Between single studies the core's
        # verdict stands: it reads the lead source, and on Evidence Inference's validation questions another
        # study graded above the lead one (C over D) overruled the lead study's right answer twice
        best_grade = _best_grade(stances, grade, neutral)
        synthesis = best_grade in (GUIDELINE, REVIEW)
        target = (
            verdict
            if best is None
            or any(st == verdict for n, st in stances.items() if not synthesis or grade[n] == best_grade)
            else best
        )
        recommended = _recommended(stances, directing, neutral)
        if recommended not in (None, neutral):  # as for a closed question, the guideline's recommendation decides
            target = recommended
        if first and not comparing:  # the cited findings compare other arms: they do not answer the question
            return _unanswered(kind, uncompared(anchors), answer, grade)
        neither = [
            n
            for n in first
            if grade[n] == GUIDELINE and n in on_arms and recommendation_stance(first[n], anchors) == "neither"
        ]
        directions = {n for n, st in stances.items() if st != neutral}
        # an unsettled review ranks with the best-graded sources that take a side: they disagree (the demo's rotator
        # cuff question read "No significant difference" from "we cannot draw firm conclusions")
        undecided = bool(unsettled) and not directing and not neither
        unsettled_at = min((grade[n] for n in unsettled), default="")  # the best grade among them
        if undecided and directions and unsettled_at <= best_grade:
            return _disagreement(kind, anchors, unsettled_at, answer, stances, grade)
        if neither and not directing:  # the guideline finds the evidence insufficient to recommend either way
            target, concluding = neutral, set(neither)  # those recommendations support it
            text = f"Insufficient evidence: the guideline recommends neither for nor against {anchors.intervention}"
        elif undecided and not directions:  # the reviews that compare the arms find the evidence uncertain
            target, concluding = neutral, unsettled
            text = f"Insufficient evidence: {uncertain_reviews(anchors, unsettled_at)}"
        elif target == neutral and first:
            if not directions:  # the sources that compare the arms state no direction
                return _unanswered(kind, undirected(anchors), answer, grade)
            # the best-graded sources that compare the arms disagree (the demo's "Is surgery better than
            # conservative treatment for rotator cuff tears?" read "Insufficient evidence to answer" at moderate
            # certainty from a review favouring surgery and one that concludes nothing firm)
            return _disagreement(kind, anchors, best_grade, answer, stances, grade)
        elif not anchors.intervention and statements:  # an open question that names no intervention ("What is the
            # most effective treatment for plantar heel pain?" read "The intervention decreased the outcome"):
            # the finding that gives the verdict is the bottom line
            lead = read_from or statements[0][0]
            text = f"The top-ranked finding: {lead.rstrip('. ')}"
        else:
            text = _phrase(target, anchors, read_from if target == verdict else None)
            text = text[0].upper() + text[1:]
    sides = {
        n: "supports"
        if n in concluding and target == neutral
        else "neutral"
        if target == neutral or st == neutral
        else "supports"
        if st == target
        else "contradicts"
        for n, st in stances.items()
    }
    line = _line(kind, target, text, answer, sides, grade)
    if closed:
        line["read_by"] = (
            "the cited guideline's recommendation about the question (its stated strength or recommending words)"
            if recommended is not None
            else f"the {placed} systematic review's conclusion that the evidence is uncertain"
            if review_unsettled
            else "closed-question reader (closed_answer_model, PubMedQA-trained: the top-ranked study read with the question)"
            if reader
            else "the verdict read against the question's direction"
        )
    return line


def in_catalogue(condition: str) -> bool:
    """Whether a condition the question names is one of the active catalogue's, by its terms (any is, for a
    catalogue with a catch-all code: an evaluation lake holds every document under one)."""
    return any(c.catch_all or c.matches(condition) for c in active_catalogue().conditions)


def condition_label(code: str | None) -> str:
    """A condition as a reader knows it: its catalogue name with its code ("patellar tendinopathy (PT)"); the
    code alone when the catalogue has no such code."""
    catalogue = active_catalogue()
    if code not in catalogue.codes:
        return str(code)
    name = catalogue.get(code).name
    return f"{name[0].lower()}{name[1:]} ({code})"


def unnamed(anchors: Anchors, condition: str | None = None) -> str:
    """Why no cited finding answers the question: none (of the question's condition, when it has
    one) names, in itself or its source's title, a word that tells the question's arms apart."""
    named = _arm_list(anchors)
    if not named:
        return f"no cited finding comes from {condition_label(condition)}"
    finding = f"{condition_label(condition)} finding" if condition else "finding"
    return f"no cited {finding} (nor the title of its source) mentions {named}"


def of_healthy_people(anchors: Anchors, condition: str | None = None) -> str:
    """Why no cited finding answers the question: those that name its arms come from studies of healthy people."""
    patients = condition_label(condition) if condition else anchors.condition
    return f"the cited findings about {_arm_list(anchors)} come from studies of healthy people, not of patients with {patients}"


def _arm_list(anchors: Anchors) -> str:
    """The words of which a statement must name one to be about the question, quoted, joined with "or"."""
    words = [f"'{w}'" for w in naming_words(anchors)]
    return " or ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def _left_open(kind: str, reason: str, answer: dict, sides: dict[int, str], grade: dict[int, str]) -> dict:
    """The bottom line "Uncertain: <reason>" (a closed question) or "Insufficient evidence: <reason>"."""
    closed = kind in CLOSED_KINDS
    text = f"{'Uncertain' if closed else 'Insufficient evidence'}: {reason}"
    return _line(kind, UNCERTAIN if closed else INSUFFICIENT, text, answer, sides, grade)


def _unanswered(kind: str, reason: str, answer: dict, grade: dict[int, str], about: Iterable[int] = ()) -> dict:
    """The bottom line when no cited source answers the question: uncertain (a closed question) or
    insufficient evidence, for `reason`, with no source on either side; the sources `about` the question
    that do not answer it take part as neutral, so that the core quotes them (`answering_evidence`)."""
    return {**_left_open(kind, reason, answer, {n: "neutral" for n in about}, grade), "unanswered": reason}


def uncontrolled(anchors: Anchors) -> str:
    """Why no cited finding answers an effect question: those about it compare forms of the intervention, the
    intervention with another treatment, or another treatment added to it with it alone, or test another
    treatment (`findings.tests_another`)."""
    i = anchors.intervention
    return (
        f"the cited findings compare forms of {i}, {i} with other treatments or other treatments added to {i}, "
        f"or test other treatments, not {i} with a control"
    )


def uncompared(anchors: Anchors) -> str:
    """Why no cited finding answers a comparative question: none compares its arms (`findings.compares_arms`)."""
    return f"no cited finding compares {anchors.intervention} with {anchors.comparator}"


def _findings_about(anchors: Anchors, verb: str) -> str:
    """What a comparative or open question's findings are about: "that <verb> I with C", "about I", or ""
    when the question names no intervention."""
    if anchors.comparator:
        return f"that {verb} {anchors.intervention} with {anchors.comparator}"
    return f"about {anchors.intervention}" if anchors.intervention else ""


def undirected(anchors: Anchors) -> str:
    """Why no cited finding answers a comparative or open question: those about its arms state no direction."""
    about = _findings_about(anchors, "compares")
    return f"no cited finding{' ' + about if about else ''} states a direction"


def uncertain_reviews(anchors: Anchors, grade: str) -> str:
    """Why the evidence does not answer a comparative question: its reviews find the evidence uncertain."""
    return f"the grade {grade} reviews {_findings_about(anchors, 'compare') or 'cited'} find the evidence uncertain"


def disagreeing(anchors: Anchors, grade: str) -> str:
    """Why the evidence does not answer a comparative or open question: its best-graded sources disagree."""
    return f"the grade {grade} findings {_findings_about(anchors, 'compare') or 'cited'} disagree"


def _disagreement(
    kind: str, anchors: Anchors, at: str, answer: dict, stances: dict[int, str], grade: dict[int, str]
) -> dict:
    """The bottom line "Insufficient evidence: the grade <at> findings ... disagree" ("Uncertain: ..." for a closed
    question), no source on either side, with the reason that downgrades its certainty for inconsistency."""
    reason = disagreeing(anchors, at)
    return {**_left_open(kind, reason, answer, {n: "neutral" for n in stances}, grade), "inconsistent": reason}


def one_side_per_document(sides: dict[int, str], document: dict[int, object]) -> dict[int, str]:
    """Each document on one side of the bottom line: a document with a cited window that supports it supports
    it, and its windows that read the other way (its other outcomes, time points or subgroups) take no side; a
    study's other findings are not another study disagreeing (GRADE's inconsistency is between studies). The
    demo's "Are NSAIDs better than acetaminophen for hip osteoarthritis?" read "supported by 1 grade B;
    contradicted by 1 grade B" and was downgraded for inconsistency: one review, whose "no significant
    difference ... between the safety of acetaminophen and NSAIDs" is about another outcome."""
    supporting = {document.get(n, n) for n, side in sides.items() if side == "supports"}
    return {
        n: "neutral" if side == "contradicts" and document.get(n, n) in supporting else side
        for n, side in sides.items()
    }


def _line(kind: str, target: str, text: str, answer: dict, sides: dict[int, str], grade: dict[int, str]) -> dict:
    """The bottom line's fields: `sides` is each cited window's side (supports / contradicts /
    neutral), one per document (`one_side_per_document`) and counted by grade once per document (the demo's
    opioid answer once read "supported by 6 grade A": windows of two guidelines); the one-line summary comes
    from `with_certainty`."""
    document = _documents(answer.get("citations", []))
    sides = one_side_per_document(sides, document)

    def tally(wanted: str) -> dict[str, int]:
        documents = {document.get(n, n): grade[n] for n, side in sides.items() if side == wanted}
        return dict(sorted(Counter(documents.values()).items()))

    return with_certainty(
        {
            "question_type": kind,
            "answer": target,
            "text": f"{text}.",
            "support": tally("supports"),
            "contradict": tally("contradicts"),
            "sides": {str(n): side for n, side in sorted(sides.items())},
        },
        answer.get("certainty", {}).get("level", "very low"),
    )


def undecided(line: dict) -> str | None:
    """Why a bottom line is left open (uncertain, insufficient evidence) with no cited source supporting it ("the
    top-ranked review does not settle it"), or None: a line with a direction, one that some source supports, and an
    unanswered or inconsistent line, which carry their own reasons."""
    if line["answer"] not in (UNCERTAIN, INSUFFICIENT) or line["support"]:
        return None
    if line.get("unanswered") or line.get("inconsistent"):
        return None
    return line["text"].split(": ", 1)[-1].rstrip(".")


def with_certainty(line: dict, certainty: str) -> dict:
    """The bottom line with its certainty and its one-line summary."""

    def tally(counts: dict[str, int]) -> str:
        return ", ".join(f"{n} grade {g}" for g, n in counts.items()) or "none"

    text = line["text"].rstrip(".")
    summary = f"{text} (certainty {certainty}; supported by {tally(line['support'])}; contradicted by {tally(line['contradict'])})"
    return {**line, "certainty": certainty, "summary": summary}


def stated_bottom_line(question: str, anchors: Anchors, answer: dict, stated: dict, by: str) -> dict:
    """The bottom line an LLM stated (LLM mode), in the same shape as `bottom_line`: its answer and
    sentence, the question type read here, the certainty assessed here, and the sources it named as
    supporting or contradicting counted by grade."""
    grade = {c["n"]: c["grade"] for c in answer.get("citations", [])}
    sides = {n: "contradicts" for n in stated.get("contradicts", []) if n in grade}
    sides.update({n: "supports" for n in stated.get("supports", []) if n in grade})
    line = _line(question_type(question, anchors), stated["answer"], stated["text"].rstrip("."), answer, sides, grade)
    return {**line, "stated_by": by}


def take_sides(answer: dict, sides: dict[str, str]) -> None:
    """Mark every core and graded statement with its source's side of the bottom line (supports,
    contradicts, neutral), so the statements shown and the certainty's inconsistency agree with the
    answer given first; the core's supporting statements come first (a stable sort)."""
    groups = [answer.get("core_answer", [])] + [g.get("statements", []) for g in answer.get("evidence_by_grade", [])]
    for statements in groups:
        for item in statements:
            item["stance"] = next((sides[str(n)] for n in item.get("citations", []) if str(n) in sides), "neutral")
    answer.get("core_answer", []).sort(key=lambda item: item["stance"] != "supports")


def answering_evidence(answer: dict, sides: dict[str, str]) -> None:
    """Leave in the graded evidence only the statements of the cited windows that take part in the bottom
    line (`sides`: those that name the question, in its condition), when any does; an answer that no cited
    finding answers keeps them all as the nearest evidence. The demo's Nordic hamstring answer listed four
    findings of an ACL graft-fixation study under "Guideline and supporting evidence", the rotator cuff
    answer an occupational survey's "significantly more patients working in agriculture"."""
    if not sides:
        return

    def takes_part(item: dict) -> bool:
        return any(str(n) in sides for n in item.get("citations", []))

    for group in answer.get("evidence_by_grade", []):
        group["statements"] = [s for s in group["statements"] if takes_part(s)]
    answer["evidence_by_grade"] = [g for g in answer.get("evidence_by_grade", []) if g["statements"]]
    # the core, too, states findings about the question, those that carry the bottom line first: the lead source's
    # findings about other treatments or conditions give way to the graded statements that take a side (the
    # demo's "Is exercise better than usual care for neck pain?" quoted three findings on cognitive-behavioural
    # therapy and left the review that answered it, "evidence supports the use of ... exercise", to the graded
    # evidence; "Are NSAIDs effective for acute low back pain?" quoted three contradicting findings and not the
    # guidelines' recommendation that answered it)
    # A single study's core statements stay with its cited window that takes part: its results name the arms "the two
    # groups" where its conclusion names them (the demo's capsule-closure answer quoted the hip arthroscopy study's
    # "similar score improvements between the groups" and left out its "no differences in magnitudes of score
    # improvement for PRO measures, VAS, or satisfaction"); not a guideline's or a review's, which are about much
    # else, and not in the graded evidence, which lists each window's best finding, a methods line among them
    document = _documents(answer.get("citations", []))
    grade = {c["n"]: c["grade"] for c in answer.get("citations", [])}
    studies = {document.get(int(n)) for n in sides if grade.get(int(n)) not in (GUIDELINE, REVIEW)}
    core = [
        item
        for item in answer.get("core_answer", [])
        if takes_part(item) or any(document.get(n) in studies for n in item.get("citations", []))
    ]
    every = [s for g in answer.get("evidence_by_grade", []) for s in g["statements"]]
    # when no core statement takes part and no graded one takes a side, the graded ones that take part are still
    # what the answer is about (the demo's functional bracing answer quoted a diclofenac gel trial, the lead source,
    # beside "the cited findings compare forms of functional bracing")
    graded = [s for s in every if s.get("stance") != "neutral"] or ([] if core else every)
    chosen: list[dict] = []
    for item in sorted([*core, *graded], key=lambda item: STANCES.index(item.get("stance", "neutral"))):
        if len(chosen) < CORE_STATEMENTS and all(item["statement"] != c["statement"] for c in chosen):
            chosen.append(dict(item))  # stable: the core's own first, then the graded ones, best grade first
    if chosen:
        answer["core_answer"] = chosen
