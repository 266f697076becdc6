"""Which quoted sentences are findings and which are background.

The offline answer quotes sentences of the retrieved windows. A trial report's introduction and
discussion are full of sentences that mention the question's words without answering it: how
common the condition is, what other studies found (with their own citation markers), what the
study set out to do. A **finding** states a result or a recommendation: result or statistics
language (`evidence_sentences.RESULT_CUES`, `STATISTICS`), a comparison's result ("no better than",
"did not differ", "similar to", `COMPARISON`) or a guideline's "we recommend / we
suggest" or stated strength, outside an introduction, background or methods section, and not
framed as context (the arms' balance at baseline among it) or as another study's result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from ebm_platform.corpus.pdf_text import STRENGTH_LABEL
from ebm_platform.corpus.windows import SENTENCE_END
from ebm_platform.retrieval.evidence_sentences import RESULT_CUES, STATISTICS, share_named
from ebm_platform.retrieval.lexical import STOPWORDS, stem, stems, terms
from ebm_platform.vocabulary import BODY_SITE_WORDS, Anchors

BACKGROUND_SECTION = re.compile(r"\b(?:introduction|background|rationale|objectives?|aims?|methods?|materials)\b", re.I)
RESULTS_SECTION = re.compile(r"\b(?:results?|findings)\b", re.I)  # "Methods and findings" holds results
_MARKER = r"\[\d+(?:\s*[-–,]\s*\d+)*\]"
CITATION_MARKER = re.compile(rf"\s*{_MARKER}(?:\s*,\s*{_MARKER})*")
# a reference number printed as a superscript and glued to the word or full stop before it ("tennis elbow.38
# These", "tendons.39-42", "Edwards and Calandruccio,10 investigating"): another study's result or context
SUPERSCRIPT_REFERENCE = re.compile(
    r"(?<!\bv)(?<!\bn)[a-z)][.,]\d{1,3}(?:[-–,]\d{1,3})*(?=\s+[A-Za-z]|$)"
)  # not "vs.10", "no.3"
OTHER_WORK = re.compile(
    r"\b(?:literature|previous (?:studies|research|trials|reviews|data|work|findings|reports)|other (?:studies|authors|trials)|"
    r"studies (?:have|show|suggest|report)|(?:has|have) been (?:shown|reported|suggested|demonstrated|known)|"
    r"they (?:found|showed|demonstrated|concluded|observed)|"
    r"the authors (?:found|showed|reported|demonstrated|concluded)|"
    # another study's result set beside this one's ("In contrast to our results, they observed that the study group
    # showed better VAS", "Previous data show that LPNIR is safe and effective"; the demo's generated questions)
    r"(?:similar to|in contrast to|contrary to|unlike) our (?:results|findings|study)|"
    r"their (?:\w+ )?meta-?analys[ie]s|their definition of|"
    r"it is (?:well )?known|et al|in their|(?:systematic )?reviews (?:showed|have shown|show|found|did not)|"
    r"(?:was|were|has been|have been|had been) previously (?:tested|shown|reported|described|validated|used|published))\b|"
    # what has been studied ("The most widely studied method was acupuncture, with several studies examining ...",
    # which supported the demo's acupuncture answer for knee osteoarthritis)
    r"\bmost (?:widely|commonly|frequently|extensively) (?:studied|investigated|researched)\b|"
    r"\b(?:several|many|numerous|some) (?:studies|trials) (?:have )?(?:examin|investigat|evaluat|assess)\w*|"
    r"\(\d{4}\)",
    re.I,
)
CONTEXT = re.compile(
    r"^\s*although\b|\b(?:is|are) (?:one of )?the (?:most )?(?:common|frequent|prevalent|leading)\b|"
    r"\bis defined as\b|\b(?:is|are) those (?:involving|with|that|who|which)\b|"
    r"\bencompass(?:es)?\b|\bresponsible for\b|\bburden\b|"
    r"\b(?:aim|purpose|objective|goal)s? (?:of|was|were|is)\b|\bwe (?:aimed|hypothesi[sz]ed|hypothesi[sz]e|sought|designed)\b|"
    r"\b(?:our|the) (?:main |primary |study )?hypothesis (?:is|was)\b|"
    r"\b(?:were|was) (?:randomly )?(?:assigned|allocated|randomi[sz]ed|recruited|enrolled|included)\b|"
    r"\b(?:were|was) (?:later |then |subsequently )?(?:dichotomi[sz]ed|categori[sz]ed|analy[sz]ed as follows)\b|"
    r"\b(?:more|further|additional|future) (?:research|studies|trials)\b|"
    r"\bincreasingly (?:used|popular|common|recogni[sz]ed|prescribed)\b|\b(?:is|are) being \w+ increasingly\b|"
    r"\b(?:it is|it remains|remains|is still) (?:unknown|not known)\b|"
    # a discussion's explanation of a result, not the result ("one of the potential reasons could be due to an
    # increased comfort", quoted in the core of the demo's insoles answer; no Evidence Inference train-split
    # evidence sentence says so)
    r"\b(?:potential|possible|likely) (?:reasons?|explanations?)\b|\b(?:could|may|might) (?:be )?(?:due to|explained by|attributed to)\b|"
    # and its suggestions ("massage could be applied to the longus colli muscle ... as an alternative method", "may
    # provide guidance in terms of which ... treatments is most likely to be efficacious"; the demo's neck pain and
    # insoles answers; none of the Evidence Inference train-split evidence sentences)
    r"\b(?:could|may|might|can) be (?:applied|used|considered|offered)\b[^.;]{0,80}?\bas an? (?:alternative|adjunct|option)\b|"
    r"\bmay (?:provide|offer) (?:guidance|insight)\b|"
    # and its guesses at a mechanism ("The mix of ... motor control exercises and higher load unstable exercises
    # might have increased the effect of exercises by trigging combined global and local muscle activation", which
    # supported the demo's motor control answer; no Evidence Inference train-split evidence sentence says so)
    r"\b(?:might|may|could) have (?:increased|enhanced|improved|reduced|decreased|contributed to|influenced|"
    r"affected|led to|caused)\b[^.;]{0,120}?\b(?:by|through|because)\b|"
    # ("Acupressure on local and distal acupuncture points might result in sedation and relaxation, thereby reducing
    # chronic neck pain", which led the demo's acupuncture answer) and at what is not known of one ("Compared with
    # NSAIDs, the anti-pain mechanism of BNHS is still unclear", in the core of its NSAIDs answer)
    r"\b(?:might|may|could) (?:result in|lead to|cause|induce)\b[^.;]{0,120}?\bthereby\b|"
    r"\bmechanisms? (?:\S+ ){0,6}?(?:is|are|remains?) (?:still )?(?:unclear|unknown|not (?:fully |well )?understood)\b|"
    r"^\s*to (?:assess|evaluate|determine|investigate|examine|compare|explore|test)\b|"
    # what is known beforehand ("Moreover, contracture of the shoulder posterior capsule is known to cause internal
    # rotation reduction", from which the demo generated "What is the effect of capsule on internal rotation?"; not
    # "As expected, since corticosteroid effects are known to be short, the VAS ... worsened"), an explanation put
    # forward ("This might explain why ...", "... might result from ...", "mechanisms ... have been proposed"), a
    # hypothetical ("If patients with higher levels of fear avoidance were less likely to improve ..."), advice on
    # how to study it ("assessment ... should focus on"), the study's limitations, a table's column heading
    r"^(?:\W*(?:moreover|however|furthermore|in addition|indeed),)?[^,;]{0,100}?\b(?:is|are) known to\b|"
    r"\b(?:this|these|which|that) (?:might|may|could) (?:explain|account for)\b|\b(?:might|may|could) result from\b|"
    r"\bhave been proposed\b|^\W*if\b|\bshould focus on\b|"
    r"\blimitations? of (?:our|this|the present|the current) (?:study|trial|review)\b|"
    r"^\W*recommendation \((?:strength|direction)\b|"
    # an abstract's heading inside the sentence, after it or in brackets ("[Purpose] Multidisciplinary treatments are
    # recommended ...", quoted in the core of the demo's multidisciplinary rehabilitation answer)
    r"\b(?:background|objectives?|aims?|purpose|design|introduction)\s*:|"
    r"\[(?:background|objectives?|aims?|purpose|design|introduction)\]",
    re.I,
)
# how the study was run or its outcomes were measured, not what it found: a sample-size calculation ("a
# statistical power of 80% ... we need 50 persons in each group"), the analysis plan ("the statistical
# significance was set at 0.05"), an instrument's definition ("Global Perceived Effect (GPE) measures overall
# improvement or worsening"), the sample's make-up ("52% were male and the mean age was 64.4 years"), what the
# authors used ("We used the hot pack to induce vasodilatation"); each quoted as a finding in the demo's answers
METHODS = re.compile(
    r"\bstatistical power\b|\bsample size\b|\bpower (?:of|calculation|analysis)\b|\bto detect a (?:difference|change)\b|"
    r"\bsignificance (?:level )?(?:was|were|is) (?:set|defined|considered)\b|\b(?:were|was) two-sided\b|"
    r"\([A-Z][A-Za-z-]*[A-Z]\) (?:measures|assesses|evaluates|quantifies|consists|is a|is an)\b|"
    r"\bmean age (?:was|of)\b|\b(?:were|was) (?:male|female)\b|"
    r"^\s*we used\b|"
    r"\b(?:were|was) (?:told|instructed|asked|advised|encouraged) to\b|"  # what participants were told to do
    r"\bcompleted the (?:study|trial)\b|\blost (?:to|at) follow-up\b|\b(?:withdrew|dropped out)\b|"  # the flow
    # what a review's trials compared, with no result ("One trial compared manual therapy and exercise with placebo
    # (inactive ultrasound therapy) in 120 participants with chronic rotator cuff disease", in the core of the demo's
    # rotator cuff answer; none of the Evidence Inference train-split evidence sentences)
    r"^(?!.*\b(?:found|showed|reported|differences?|improv\w*|reduc\w*|increas\w*|decreas\w*|significant\w*|better|"
    r"worse|effects?|benefits?|favou?r\w*)\b)\s*(?:one|two|three|four|five|six|seven|eight|nine|ten|\d+) "
    r"(?:(?:randomi[sz]ed )?(?:controlled )?trials?|studies|RCTs?) compared\b[^;]*\bin \d+ participants\b",
    re.I,
)
# a protocol's plan or a design statement, not a result: "Study participants will be asked to avoid ...",
# "The patient will be recommended to avoid remaining in bed", "The injection of autologous blood is compared
# with the standard practice ..." (quoted as findings in the demo's answers)
PROTOCOL = re.compile(
    r"\bwill be (?:\w+ )?(?:asked|randomi[sz]ed|allocated|assigned|measured|assessed|compared|recruited|enrolled|"
    r"given|treated|followed|evaluated|collected|analy[sz]ed|informed|recommended|instructed|offered|used)\b|"
    r"\bwill (?:support|indicate|inform|provide|help)\b|"  # "A positive result will support current practice"
    # what a protocol's arms will receive ("The sham and the real TENS equipment will have the same appearance")
    r"\bwill (?:have|receive|undergo)\b(?! had\b)|"
    r"\b(?:is|are) compared (?:with|to)\b",  # the design, in the present tense; "was compared with" may open a result
    re.I,
)
# a guideline's note on a recommendation's revision, which states neither a recommendation nor a result: the VA/DoD
# guideline's "Therefore, this is a Reviewed, New-replaced recommendation." was quoted as the grade-A evidence of
# the demo's platelet-rich plasma answer
REVISION_NOTE = re.compile(
    r"\b(?:Reviewed|Not reviewed),? (?:New-added|New-replaced|Not changed|Amended|Deleted) recommendation\b", re.I
)
# the sample's make-up, outside a comparison of groups: "The mean duration of knee osteoarthritis was 3 years; 27.9 %
# (29/104) of patients underwent knee surgery", "The most frequent locations of knee osteoarthritis were the medial
# compartment (34.8 %)" (the core of the demo's hyaluronic acid answer); "39 % of the patients had a haematoma"
SAMPLE = re.compile(
    r"\bmean (?:age|duration|BMI|body mass index|height|weight|symptom duration)\b[^.;]{0,60}?\b(?:was|were) \d|"
    r"\bthe most (?:frequent|common) (?:locations?|sites?|diagnos[ie]s|types?|causes?|occupations?)\b|"
    r"\b\d+(?:\.\d+)? ?% (?:\(\d+/\d+\) )?of (?:the )?(?:patients|participants|subjects) (?:underwent|had|were)\b",
    re.I,
)
# how common a condition is; within a comparison of groups it is a trial's result ("the incidence of
# vomiting was lower in group P than in group C")
EPIDEMIOLOGY = re.compile(r"\bprevalen\w*|\bincidence\b", re.I)
# the arms' balance at baseline ("Baseline characteristics of the two groups were comparable") is the
# trial's set-up, not its result
BASELINE = re.compile(
    r"\bdemographic\w*|\bbaseline (?:characteristics?|demographics|data|variables?|features?|profiles?|values?)\b|"
    r"\bclinical characteristics\b|\bat baseline\b|\bat the (?:start|outset|beginning) of\b|"
    # "no significant differences in age, weight, and pre-treatment values ... among the three groups" (the demo's
    # acupuncture answer read "No" from it)
    r"\bpre-?(?:treatment|intervention) (?:values?|scores?|data|measures?|characteristics)\b|\bdifferences? in (?:age|sex|gender)\b|"
    # "Initially there were no significant differences between the mean plantar fascia thickness of the two groups"
    # (in the core of the demo's shock wave answer)
    r"^\W*initially,? there (?:were|was) no (?:\w+ ){0,2}differences?\b|"
    r"\bbefore (?:the )?(?:treatment|intervention|therapy|randomi[sz]ation)\b",
    re.I,
)
BALANCED = re.compile(
    r"\bcomparable\b|\bsimilar\b|\bdid not differ|\bno (?:statistically )?(?:significant )?differences?\b|"
    r"\bbalanced\b|\bwell matched\b|\bhomogeneous\b|\bnot (?:statistically )?(?:significantly )?different\b",
    re.I,
)
# a later time beside the baseline: "no differences ... at baseline or at follow up" reports a result too
FOLLOW_UP = re.compile(
    r"\bfollow[- ]?up\b|\bover the course\b|\bpost-?(?:treatment|intervention|test)\b|\bat \d+ (?:days?|weeks?|months?|years?)\b|"
    r"\b(?:\d+|one|two|three|four|five|six|eight|ten|twelve) (?:days?|weeks?|months?|years?) after\b|"
    r"\bafter (?:the )?(?:treatment|intervention|therapy)\b",
    re.I,
)
GROUPS = re.compile(r"\b(?:groups?|arms?|than|compared|between|versus|vs)\b|\bp\s*[<=>≤≥]", re.I)
COMPARISON = re.compile(  # a comparison's result stated without RESULT_CUES' words
    r"\b(?:better|worse|more effective|less effective|no more|no less) than\b|\bdid not (?:differ|change)|"
    r"\bdiffered\b|\bsimilar (?:to|in|between|for|across|among|\()|\bequivalent\b|\bnon-?inferior|\boutperform\w*|\bcomparable\b|"
    r"\b(?:higher|lower|greater|shorter|longer) than\b|\b(?:not|neither|nor) (?:affected|altered|changed)\b|"
    r"\bcorrelated\b|\bcorrelations? (?:between|of|with|was|were)\b|\b(?:more|less) likely\b|"
    r"\bpredict(?:s|ive|ors?)\b|\brisk factors? (?:for|of|was|were)\b",
    re.I,
)
# what a review concludes about the evidence, in words a trial's result does not use: "Low to moderate quality
# evidence supports the use of ... exercise for chronic neck pain", "The short-term benefit of IA corticosteroids
# ... is well established", "global treatment success was more common ... with glucocorticoid injection" (the
# Cochrane reviews' conclusions read as background until 2026-12-02, so the review that answered the demo's
# neck pain exercise question was never quoted); `CONCLUDES_UNCERTAIN` adds "the evidence is insufficient"
CONCLUSION = re.compile(
    r"\bevidence\b[^.;]{0,40}?\b(?:supports?|suggests?|shows?|indicates?|favou?rs?|reveals?|to support)\b|"
    r"\b(?:no|little|some|small|short-term|long-term|clear|clinical|significant|any|of) (?:benefits?|advantages?)\b|"
    r"\bbenefit(?:s|ed)? (?:more|less)\b|\bbeneficial\b|\bharmful\b|"
    r"\b(?:efficacy|effectiveness) (?:is|was|remains) (?:\w+ )?(?:clear|established|less|more|limited|similar|modest)\b|"
    r"\b(?:small|medium|moderate|large|low|high) effect sizes?\b|\beffect sizes? (?:for|of|was|were)\b|"
    r"\b(?:more|less) common (?:in|among|with|up)\b|"
    r"\b(?:reduc|lower|decreas|increas|prevent)\w* (?:the )?(?:incidence|prevalence|risk)\b",
    re.I,
)
TABLE_CELLS = 4  # a table's rows, quoted whole, are no statement
# a list of abbreviations ("ANCOVA = analysis of covariance; APID = actual pain intensity difference; CI = confidence
# interval; ..." under a trial's table, quoted by the demo's NSAIDs answer as a finding)
GLOSSARY = re.compile(r"(?:\b[A-Za-z][\w™-]* ?= ?[A-Za-z][^;=]*; ?){3}")  # not "SD = 1.1; n = 40; p = 0.03;"
RECOMMENDATION = re.compile(rf"\bwe (?:recommend|suggest)\b|{STRENGTH_LABEL}:", re.I)
STRENGTH = re.compile(rf"{STRENGTH_LABEL}: ([^.;)]+)", re.I)  # a guideline statement's stated strength


# a guideline's reference numbers in parentheses: a list anywhere ("LBP.(96, 116)", "(94-96, 100)"), or a
# number or range that opens the sentence (the previous sentence's, cut off by the sentence split)
REFERENCE_LIST = re.compile(
    r"^\s*\(\s*\d{1,3}(?:\s*[-–,]\s*\d{1,3})*\s*\)\s*|\s*\(\s*\d{1,3}(?:\s*[-–]\s*\d{1,3})?(?:\s*,\s*\d{1,3}(?:\s*[-–]\s*\d{1,3})?)+\s*\)"
)


# a trial protocol's title ("... study protocol for a randomised controlled trial", "Rationale and design of a
# Randomized Controlled Trial"; not "a standard exercise protocol"): the document reports no result, and the
# demo answered "Does exercise therapy reduce pain in chronic neck pain?" "Yes" from one's background
PROTOCOL_TITLE = re.compile(
    r"\b(?:study|trial) protocol\b|\bprotocol (?:for|of) (?:a|an|the)\b|:\s*(?:a |the )?protocol\b|"
    r"\brationale and design\b|\bdesign and rationale\b",
    re.I,
)


def is_protocol(title: str) -> bool:
    """Whether a document's title names it a trial protocol (`PROTOCOL_TITLE`): it states no finding."""
    return bool(PROTOCOL_TITLE.search(title or ""))


def without_markers(sentence: str) -> str:
    """The sentence without the in-text citation markers of its source ("[1]", "[3-5]", a guideline's
    "(105, 106, 120)")."""
    return REFERENCE_LIST.sub("", CITATION_MARKER.sub("", sentence)).strip()


# cached: an answer reads each cited sentence several times, and the strategies cite the same windows
@lru_cache(maxsize=1 << 16)
def is_finding(sentence: str, section: str | None = None) -> bool:
    """True when the sentence states a result or a recommendation of its own source (`section`: its
    window's section path, the document's title first; a trial protocol's sentences are none)."""
    if section and is_protocol(section.split(">")[0]):
        return False
    if RECOMMENDATION.search(sentence):
        return True
    if sentence.count("|") >= TABLE_CELLS or GLOSSARY.search(sentence):
        return False
    parts = section.split(">") if section else []
    headings = parts[1:] or parts  # the title first, then the section path
    if any(BACKGROUND_SECTION.search(h) for h in headings) and not any(RESULTS_SECTION.search(h) for h in headings):
        return False
    if any(
        p.search(sentence)
        for p in (CITATION_MARKER, SUPERSCRIPT_REFERENCE, OTHER_WORK, CONTEXT, METHODS, PROTOCOL, REVISION_NOTE)
    ):
        return False
    concludes = bool(CONCLUSION.search(sentence) or CONCLUDES_UNCERTAIN.search(sentence))
    if (EPIDEMIOLOGY.search(sentence) or SAMPLE.search(sentence)) and not GROUPS.search(sentence) and not concludes:
        return False
    if BASELINE.search(sentence) and BALANCED.search(sentence) and not FOLLOW_UP.search(sentence):
        return False
    return concludes or bool(RESULT_CUES.search(sentence) or STATISTICS.search(sentence) or COMPARISON.search(sentence))


# Words that join or qualify a question's arms without naming either ("adding hip strengthening to knee
# exercise" vs "knee exercise alone"; "with gabapentin" vs "without gabapentin")
ARM_QUALIFIERS = frozenset(stems("add adding added addition plus alone only combined sole solely without no non"))
# words that name no arm in particular: "printed intervention versus web-based intervention" is not two forms of one
GENERIC_ARM = frozenset(
    stems("intervention treatment therapy group arm program programme care management strategy regimen")
)
# words that name a kind of care, not one treatment ("exercise" in "Nordic hamstring exercise"), and words that
# only describe how care is given ("structured" in "structured exercise program") or what for ("therapeutic" in
# "therapeutic ultrasound": a review's "-14.9 points with ultrasound" is about it)
KINDS_OF_CARE = GENERIC_ARM | frozenset(
    stems(
        "exercise exercises training rehabilitation structured supervised unsupervised home based individual "
        "individualized individualised general specific formal progressive standard conventional active therapeutic"
    )
)


def _position(word: str, text: str) -> int:
    """Where a term (`lexical.terms`) first occurs in the text, as a whole word."""
    match = re.search(rf"\b{re.escape(word)}\b", text.lower())
    return match.start() if match else len(text)


def arm_words(anchors: Anchors) -> list[str]:
    """The words that tell the question's arms apart, in the question's order: those of the
    intervention or of the comparator but not of both ("hip strengthening" in "hip strengthening to
    knee exercise" vs "knee exercise alone"), qualifiers and single letters left out; every word of
    the arms when neither has a word of its own; none when the question names no arm. With two arms, words
    that name no arm in particular (`GENERIC_ARM`: "care" of "exercise" vs "usual care") only when no other word
    remains. With one arm,
    the words it shares with the outcome are left out when others remain ("nordic", "exercise" for
    "Does Nordic hamstring exercise prevent hamstring injuries?": a review of other ways to prevent
    hamstring injuries does not answer it); of those, a kind of care or how it is given (`KINDS_OF_CARE`) only
    when no other word remains ("nordic" alone: a review of hamstring stretching exercises does not answer it
    either; every word of "structured exercise program")."""
    arms = [_joined(a) for a in (anchors.intervention, anchors.comparator) if a]
    own = stems(arms[0]) ^ stems(arms[1]) if len(arms) == 2 else set()
    if len(arms) == 1 and anchors.outcome:
        own = stems(arms[0]) - stems(anchors.outcome)
    words = [
        w
        for a in arms
        for w in sorted(terms(a), key=lambda w: _position(w, a))
        if len(w) > 1 and stem(w) not in ARM_QUALIFIERS
    ]
    chosen = [w for w in words if stem(w) in own] or words
    if len(arms) == 2:  # "care" of "usual care" names no arm: "self-care strategies" is not the question's control
        chosen = [w for w in chosen if stem(w) not in GENERIC_ARM] or chosen
    if len(arms) == 1:
        chosen = [w for w in chosen if stem(w) not in KINDS_OF_CARE] or chosen
    return list(dict.fromkeys(chosen))


BODY_SITES = frozenset(stems(" ".join(BODY_SITE_WORDS)))  # their stems


def naming_words(anchors: Anchors) -> list[str]:
    """The words of which a statement must name one to be about the question (`names_question`): `arm_words`,
    less, for a question with one arm, where it is applied when what it is remains ("bracing" of "knee
    bracing": a taping review's "data from 161 knees" is not about bracing), and less a control comparator's
    words (placebo, sham, control, usual care ...: `CONTROL_ARM`), which every trial's results name: the
    intervention's own words, or all of its specific words when it has none of its own ("TENS" of "TENS compared
    with sham TENS"). The demo's "parecoxib compared with control" quoted a guideline's "pregabalin versus active
    analgesic control" and a trial's "pain control was superior in the BBUP group" as about it."""
    words = arm_words(anchors)
    if not anchors.comparator:
        return [w for w in words if stem(w) not in BODY_SITES] or words
    control = {stem(w) for match in CONTROL_ARM.finditer(anchors.comparator) for w in terms(match.group(0))}
    if not control:
        return words
    intervention = [
        w for w in terms(_joined(anchors.intervention or "")) if len(w) > 1 and stem(w) not in ARM_QUALIFIERS
    ]
    return (
        [w for w in words if stem(w) not in control]
        or [w for w in intervention if stem(w) not in control | GENERIC_ARM]
        or words
    )


def _arm_word_stems(anchors: Anchors) -> set[str]:
    """The stems of the words that tell the question's arms apart (`arm_words`)."""
    return {stem(w) for w in arm_words(anchors)}


# Words that name the same kind of care, for telling whether a source names an arm: a review of "exercise
# alone compared with surgical repair" compares surgery with conservative treatment. One-way: conservative
# care takes in exercise and physiotherapy, not the other way round.
# A drug class takes in the drugs of it that sources name ("topical NSAIDs" is answered by "topical diclofenac
# and topical ketoprofen were significantly more effective than carrier"); paracetamol and acetaminophen are one.
_SURGERY = stems("surgery surgical surgically operative operation")
_CONSERVATIVE = stems("conservative nonoperative nonsurgical")
CONSERVATIVE_FAMILY = _CONSERVATIVE | stems("exercise exercises physiotherapy rehabilitation")
_NSAIDS = stems(
    "nsaid nsaids diclofenac ibuprofen ketoprofen naproxen piroxicam celecoxib etoricoxib indomethacin meloxicam "
    "etodolac aceclofenac lumiracoxib valdecoxib rofecoxib parecoxib"
)
_OPIOIDS = stems("opioid opioids tramadol tapentadol oxycodone morphine codeine buprenorphine hydromorphone")
_PARACETAMOL = stems("paracetamol acetaminophen")
# shoe inserts ("the use of shock absorbing inserts in footwear probably reduces the incidence of stress fractures"
# answers "Are insoles effective for preventing lower limb stress fractures?")
_INSOLES = stems("insole insoles insert inserts")
ARM_FAMILIES: dict[str, frozenset[str]] = {
    **dict.fromkeys(_SURGERY, _SURGERY),
    **dict.fromkeys(_CONSERVATIVE, CONSERVATIVE_FAMILY),
    **dict.fromkeys(stems("nsaid nsaids"), _NSAIDS),
    **dict.fromkeys(stems("opioid opioids"), _OPIOIDS),
    **dict.fromkeys(_PARACETAMOL, _PARACETAMOL),
    **dict.fromkeys(_INSOLES, _INSOLES),
}
NEGATED_PREFIX = re.compile(r"\bnon[- ](operative|surgical)\b", re.I)  # "non-operative" is not "operative"
WORD = re.compile(r"[a-z0-9]+")
NEGATED_WORD = re.compile(r"\b(?:non|no|without)[- ](\w)", re.I)  # "non-opioid", "no exercise": not the word


# what guides a procedure ("ultrasound-guided injection", "fluoroscopy guided block"): not a treatment of its own
GUIDANCE = re.compile(r"\b([a-z]+)[- ]guided\b", re.I)


def _joined(text: str) -> str:
    """The text with "non-operative" and "non-surgical" written as one word each (`NEGATED_PREFIX`), and a
    procedure's guidance with its "guided" (`GUIDANCE`: "ultrasound-guided" names no ultrasound therapy)."""
    return GUIDANCE.sub(r"\1guided", NEGATED_PREFIX.sub(r"non\1", text))


@lru_cache(maxsize=1 << 14)
def compound_stems(text: str) -> frozenset[str]:
    """Each two adjacent content words of `text` written as one, plural-folded ("shock waves" ->
    "shockwave", "weight-bearing" -> "weightbearing"): a word the question writes closed names a source
    that writes it open."""
    words = WORD.findall(text.lower())
    return frozenset(
        stem(a + b) for a, b in zip(words, words[1:]) if a.isalpha() and b.isalpha() and not {a, b} & STOPWORDS
    )


# the sites that acupuncture needles, which acupressure and laser also treat: "Acupressure at Local and Distal
# Acupuncture Points" names no acupuncture (the demo answered its acupuncture question from that trial)
ACUPOINTS = re.compile(r"\bacupuncture (points?)\b", re.I)


# what a sentence opens by likening its subject to ("Similar to acupuncture, we found that 3 days of auricular
# acupressure can significantly lower the postoperative opioid consumption"): not what it is about
LIKENED = re.compile(r"^\W*(?:similar(?:ly)? to|like|as with|unlike|in contrast to) [^,;.]{1,60},", re.I)


def _text_stems(text: str) -> frozenset[str]:
    """The stems of a text, "non-operative" and "ultrasound-guided" as one word each (`_joined`), "acupuncture
    points" as "acupoints", without what it opens by likening its subject to (`LIKENED`), with each two adjacent
    words also as one (`compound_stems`: "shock wave therapy" names "shockwave")."""
    joined = ACUPOINTS.sub(r"acu\1", _joined(LIKENED.sub("", text)))
    return stems(joined) | compound_stems(joined)


def _with_family(own: set[str]) -> set[str]:
    """An arm's own stems with the words that name the same kind of care (`ARM_FAMILIES`)."""
    return set(own).union(*(ARM_FAMILIES.get(w, frozenset()) for w in own))


def names_question(statement: str, anchors: Anchors, title: str = "") -> bool:
    """True when the statement, or the title of the source it comes from, names a word that tells the
    question's arms apart (`arm_words`; a trial's result often calls its arms "group A", its title
    names them), or the question names no arm: only such statements answer it."""
    named = _with_family({stem(w) for w in naming_words(anchors)})
    return not named or bool(named & (_text_stems(statement) | _text_stems(title)))


def names_every_arm_word(text: str, anchors: Anchors) -> bool:
    """True when the text names each word that tells the question's arms apart (`arm_words`, or a word of
    its kind of care): a title that answers the question as a whole, not one that shares a word with it
    ("The effect of hip abduction on EMG activity" for "Does hip strengthening reduce pain?")."""
    named = _text_stems(text)
    return all(_with_family({stem(w)}) & named for w in arm_words(anchors))


def states_about(statement: str, title: str, anchors: Anchors) -> bool:
    """True when a finding is about the question's intervention and outcome: the statement, or its
    source's title, names a word that tells the question's arms apart (`names_question`) and the
    statement names at least half the stems of the question's outcome (the offline stage-3 judge of
    generated benchmark questions: "supports the answer with closely matching PICO")."""
    share = share_named(stems(anchors.outcome or ""), _text_stems(statement))
    return share >= 0.5 and names_question(statement, anchors, title)


# an arm that is a control: usual, standard or routine care, placebo, sham, saline, nothing, baseline, a waiting list
CONTROL_ARM = re.compile(
    r"\b(?:placebo|sham|controls?|usual|standard|routine|conventional|untreated|saline|vehicle|nothing|none|"
    r"baseline|comparator|no \w+|wait(?:ing)?[- ]?list)\b",
    re.I,
)
# a control arm in a source's words ("the control group", "placebo", "usual care", a topical drug's "carrier"; not a
# "controlled" trial)
CONTROL_NAMED = re.compile(
    r"\b(?:placebo|sham|controls?|usual care|standard care|routine care|no (?:treatment|intervention)|untreated|"
    r"wait(?:ing)?[- ]?list|carrier|vehicle)\b",
    re.I,
)
# a control arm that has what the other arm adds to it ("exercises alone", "with and without mobilisation")
ADDED_TO_CONTROL = re.compile(r"\b\w+ alone\b|\bwith (?:and|or) without\b", re.I)
# a sentence about analgesics taken beside the trial's arms or counted as its outcome ("The morphine group had
# significantly lower NSAID consumption than steroid group"; "First-line supplementary analgesic was oral
# paracetamol"): the drugs it names are no arm of the trial (the demo's NSAIDs-versus-acetaminophen line counted that
# morphine-versus-steroid trial against it)
_ANALGESIC = r"(?:analgesi\w*|NSAIDs?|opioids?|morphine|paracetamol|acetaminophen|medications?)"
CO_MEDICATION = re.compile(
    rf"\b{_ANALGESIC} (?:consumption|intake|requirements?|supplementation)\b|"
    r"\brescue (?:medication|analgesi\w*)|\bsupplementa(?:ry|l) (?:analgesi\w*|medication)|"
    # counted as an outcome: "the amount of paracetamol taken/week" in an electroacupuncture-versus-diclofenac trial
    rf"\b(?:amount|quantity|number of (?:tablets|doses|pills)|consumption|intake) of (?:rescue )?{_ANALGESIC}",
    re.I,
)
# a comparison stated ("A versus B", "not superior to", "a comparative study of")
COMPARISON_STATED = re.compile(r"\b(?:versus|vs\.?|compared|than|superior|inferior|comparison|comparative)\b", re.I)
# a comparison of two things joined by "and" ("comparing intramuscular and intralesional injections")
COMPARING_AND = re.compile(r"\b(?:comparing|comparison (?:of|between)|compared)\b", re.I)


# one arm added to another ("Efficacy of Adding a Physiotherapy Rehabilitation Program to Arthroscopic Management
# of FAI"): such a trial compares the two together with one alone, not one with the other
ADD_ON = re.compile(
    r"\b(?:adding|addition of)\b(?P<added>[^.;:]{1,80}?)\bto\b(?P<base>[^.;:]{1,80})|"
    r"(?P<added2>[^.;:]{1,80}?)\b(?:added to|in addition to|as an? (?:adjunct|add-on) to)\b(?P<base2>[^.;:]{1,80})",
    re.I,
)


def _intervention_own(intervention: str) -> set[str]:
    """An intervention's own stems (`_own_stems`, "non-operative" one word) less the words that name no arm in
    particular (`GENERIC_ARM`): what a title must name to be about it."""
    return _own_stems(intervention, "") - GENERIC_ARM


def _names_arm(own: set[str], words: frozenset[str]) -> bool:
    """Whether `words` name an arm (its own stems, or its kind of care's): a word counts for an arm's word when
    it opens with all of it but its last two letters ("arthroscopic" for "arthroscopy", "physiotherapist" for
    "physiotherapy")."""
    return any(w.startswith(o[: max(3, len(o) - 2)]) for o in _with_family(own) for w in words)


def _additions(text: str) -> Iterator[tuple[frozenset[str], frozenset[str]]]:
    """The stems of what `text` adds and of what it is added to, for each addition it states (`ADD_ON`)."""
    for match in ADD_ON.finditer(text):
        yield tuple(_text_stems(match[k] or match[k + "2"] or "") for k in ("added", "base"))


def adds_one_arm_to_the_other(text: str, own_i: set[str], own_c: set[str]) -> bool:
    """Whether `text` states one of two arms (their own stems) added to the other (`ADD_ON`, `_names_arm`)."""
    return any(
        _names_arm(one, added) and _names_arm(other, base) and not _names_arm(other, added)
        for added, base in _additions(text)
        for one, other in ((own_i, own_c), (own_c, own_i))
    )


# the people a trial treats named by a treatment they had ("... postoperative treatments in patients undergoing knee
# arthroscopic debridement"): the treatment is both arms' background
UNDERGOING = re.compile(
    r"\b(?:patients|participants|people|subjects|adults|women|men|athletes) (?:undergoing|who underwent|"
    r"who have undergone|after|following)\b(?P<base>[^.;:]{1,60})",
    re.I,
)


# a title's combination of a treatment with another ("highly cross-linked hyaluronic acid-based combination therapy",
# "exercise combined with manual therapy"): its trial tests the combination; not "X alone or combined with Y", whose
# X alone is an arm
COMBINED = re.compile(
    r"(?P<base>[^.;:]{1,60}?)[- ]based combination\b|"
    r"(?P<base2>[^.;:]{1,60}?)\b(?:combined|in combination) with\b(?P<added2>[^.;:]{1,60})",
    re.I,
)
ALONE_OR = re.compile(r"\b(?:alone|or|with or without)\s*$", re.I)


def adds_to(title: str, intervention: str) -> bool:
    """Whether a source's title adds another treatment to the intervention ("Efficacy of Adding a Physiotherapy
    Rehabilitation Program to Arthroscopic Management of FAI" for hip arthroscopy), or studies another treatment
    in people who undergo it ("Benefits of different postoperative treatments in patients undergoing knee
    arthroscopic debridement" for arthroscopic surgery): both its arms have the intervention, so it tells what the
    other treatment does, not whether the intervention works (GRADE's indirectness of comparison; the demo
    answered "Does hip arthroscopy improve outcomes in femoroacetabular impingement?" "Yes" from the first
    trial's "a physiotherapist-prescribed rehabilitation program augments improvements"), or combines it with
    another (`COMBINED`: "Preliminary study of highly cross-linked hyaluronic acid-based combination therapy ..."
    gave every arm hyaluronic acid, and its arms' changes from baseline started "Are hyaluronic acid injections
    effective ...?" at certainty high)."""
    own = _intervention_own(intervention)
    additions = [
        *_additions(title),
        *((_text_stems(title[: m.start()]), _text_stems(m["base"])) for m in UNDERGOING.finditer(title)),
        *(
            (_text_stems(m["added2"] or "combination"), _text_stems(base))
            for m in COMBINED.finditer(title)
            if not ALONE_OR.search(base := m["base"] or m["base2"])
        ),
    ]
    return bool(own) and any(_names_arm(own, base) and not _names_arm(own, added) for added, base in additions)


# what a title says its trial tests ("Comparative Effects of Acupressure at Local and Distal Acupuncture Points on
# Pain Conditions ..."): the treatment after "effects of", up to where the title turns to a site, people, outcome,
# comparison or addition ("general exercises with and without mobilization therapy" tests the mobilization)
TESTED = re.compile(
    r"\b(?:effects?|efficacy|effectiveness|benefits?) of (?P<tested>[^:;,.]{1,60}?)"
    r"(?= (?:on|in|for|at|among|with|versus|vs\.?|compared)\b|[:;,.]|$)",
    re.I,
)
DOSE = re.compile(r"\b\d+[- ]?(?:weeks?|months?|days?|sessions?|hours?|minutes?)\b", re.I)  # "a 6-week" programme


def tests_another(title: str, intervention: str) -> bool:
    """Whether a source's title says it tests another treatment (`TESTED`: a word besides kinds of care and
    doses) and names the intervention nowhere, the intervention being one treatment, not a kind of care
    ("Effects of Pilates and McKenzie Training" is a trial of exercise therapy): "Comparative Effects of
    Acupressure at Local and Distal Acupuncture Points ..." tells what acupressure does, not acupuncture (GRADE's
    indirectness of intervention; the demo answered "Does acupuncture reduce neck pain?" "No" from that trial,
    through its discussion's "acupuncture/acupressure might have different physiological effects")."""
    own = _intervention_own(intervention)
    if not own - KINDS_OF_CARE - CONSERVATIVE_FAMILY:  # a kind of care: its forms go by their own names (Pilates)
        return False
    tested = [stems(DOSE.sub(" ", m["tested"])) - KINDS_OF_CARE for m in TESTED.finditer(title)]
    return any(tested) and not _names_arm(own, _text_stems(title))


def _head_to_head(text: str, own_i: set[str], own_c: set[str]) -> bool:
    """Whether `text` states a comparison (`COMPARISON_STATED`) and names both arms by their own words: a
    trial with a third arm of the two together ("the whey protein group reduced more ... fat when compared to
    the carbohydrate group", beside a protein-and-carbohydrate group) still compares them."""
    return bool(COMPARISON_STATED.search(text)) and _names_both(_text_stems(text), own_i, own_c)


def _names_both(words: frozenset[str], own_i: set[str], own_c: set[str]) -> bool:
    """Whether `words` name each of two arms by one of its own words (or a word of its kind of care)."""
    return bool(_with_family(own_i) & words and _with_family(own_c) & words)


def _own_stems(arm: str, other: str) -> set[str]:
    """The stems of an arm's own words: those the other arm lacks, qualifiers and single letters left out, each
    arm's negated words and guidance written as one word as a statement's are (`_joined`, `_text_stems`):
    "ultrasound-guided injection" against "landmark-guided injection" is told apart by "ultrasoundguided"."""
    return {stem(w) for w in terms(_joined(arm)) if len(w) > 1} - stems(_joined(other)) - ARM_QUALIFIERS


# a study of healthy people ("... in healthy subjects"): not the patients a question about treating a condition asks
# about ("healthy controls" beside patients is a patient study; a prevention question asks about healthy people)
HEALTHY_SAMPLE = re.compile(
    r"\b(?:young |older |elderly )?healthy (?:subjects|volunteers|individuals|adults|participants|people|persons|"
    r"men|women|males|females|athletes|students)\b",
    re.I,
)
PREVENTION = re.compile(r"\bprevent\w*|\bprophyla\w*|\b(?:risk|incidence) of\b", re.I)  # a question on preventing
# a change over time within one group ("6 weeks of McKenzie training led to ...", "after 12 sessions", "from baseline")
WITHIN_ARM = re.compile(
    r"\b(?:\d+|one|two|three|four|five|six|eight|ten|twelve)[- ](?:weeks?|months?|sessions?) of\b|"
    r"\bafter (?:the )?(?:\d+|one|two|three|four|five|six|eight|ten|twelve)[- ](?:weeks?|months?|sessions?)\b|"
    r"\bfrom baseline\b|\bpre-? ?(?:and|to|vs\.?) ?post|\bover time\b|\bwithin[- ]group\b",
    re.I,
)


def within_one_arm(statement: str, anchors: Anchors) -> bool:
    """Whether a statement of a question comparing two active treatments states a change over time
    (`WITHIN_ARM`) in one arm only: it names the own words of that arm, not the other's, and no comparison
    (`GROUPS`). Such a change says nothing of which arm did better: the demo's "Is Pilates better than
    McKenzie training ...?" read "Pilates increased chronic low back pain" from "6 weeks of McKenzie
    training led to significant reduction in pain levels", beside "no significant difference between
    Pilates and McKenzie groups in pain relief". Without a time-course cue a result about one arm is read
    as against the other ("MBB reduced self-reported depression symptoms"); against a control (usual care,
    placebo) a treatment's change is the comparison, and so is an add-on's against what it is added to."""
    arms = (anchors.intervention or "", anchors.comparator or "")
    if not all(arms) or any(CONTROL_ARM.search(arm) for arm in arms):
        return False
    if GROUPS.search(statement) or not WITHIN_ARM.search(statement):
        return False
    named = _text_stems(statement)
    own = (
        _own_stems(anchors.intervention, anchors.comparator) - GENERIC_ARM,
        _own_stems(anchors.comparator, anchors.intervention) - GENERIC_ARM,
    )
    if not all(own):  # an add-on trial's comparator has no word of its own: "thalidomide improved survival" compares
        return False
    return sum(bool(_with_family(arm) & named) for arm in own) == 1


def _two_forms(text: str, own: set[str], reach: int = 6, subject: int = 10) -> bool:
    """Whether a comparison in the text has the arm's own words (not `GENERIC_ARM` ones) within `reach` words on
    both sides of its comparing word, in one clause: two forms of one arm ("individualized acupuncture was not
    superior to standardized acupuncture"). Before "compared with" a clause's subject counts up to `subject` words
    back ("PT reconstruction resulted in a more statically stable knee compared with HT reconstruction"); "versus"
    joins its neighbours ("a PEG tube inserted within 1 month of developing an eating problem versus later
    insertion" compares timings in a PubMedQA abstract whose answer is its tube-fed against other residents)."""
    own = own - GENERIC_ARM
    for m in COMPARISON_STATED.finditer(text):
        back = subject if m.group(0).lower() == "compared" else reach
        before = re.split(r"[.;:]\s", text[: m.start()])[-1].split()[-back:]  # within the sentence's clause
        after = re.split(r"[.;:]\s", text[m.end() :])[0].split()[:reach]
        if own & stems(" ".join(before)) and own & stems(" ".join(after)):
            return True
    return False


def _two_forms_joined(text: str, own: set[str], reach: int = 6) -> bool:
    """Whether the text compares two things joined by "and", each with the arm's own words (not `GENERIC_ARM`
    ones) within `reach` words: "comparing intramuscular steroid injections and intralesional steroid
    injections"."""
    own = own - GENERIC_ARM
    for m in COMPARING_AND.finditer(text):
        first, joined, second = re.split(r"[.;:]\s", text[m.end() :])[0].partition(" and ")
        if joined and own & stems(" ".join(first.split()[-reach:])) and own & stems(" ".join(second.split()[:reach])):
            return True
    return False


# a quoted comparison among kinds of the intervention ("no difference in outcome between these types of functional
# treatments", "no single most effective functional treatment (tape, semi-rigid brace or lace-up brace)": the demo's
# "Does functional bracing help acute ankle sprains?" read "No" from a trial of tape against two braces)
KINDS_COMPARED = re.compile(
    r"\b(?:(?:between|among) (?:these|the|different|various) (?:\w+ )?(?:types|forms|kinds) of |"
    r"no single (?:most |best )?(?:effective )?)((?:[\w-]+ ){0,2}[\w-]+)",
    re.I,
)


def compares_forms(quoted: list[str], intervention: str, summary: str = "") -> bool:
    """Whether a source (its quoted statements and title, `quoted`; its abstract, `summary`) compares two forms
    of one intervention and names no control arm in what it is quoted for: a trial of intramuscular against
    intralesional steroid injections does not tell whether steroid injections work. A body site names no form
    ("hip arthroscopy" against "personalised hip therapy" is a trial of arthroscopy against therapy)."""
    own = _own_stems(intervention, "")
    own = own - BODY_SITES or own
    if not own or any(CONTROL_NAMED.search(t) for t in quoted):
        return False
    if any(own & stems(m.group(1)) for t in quoted for m in KINDS_COMPARED.finditer(t)):
        return True
    texts = [NEGATED_WORD.sub(r"non\1", t) for t in [*quoted, summary]]  # "the non-statin group" is no form
    return any(_two_forms(t, own) or _two_forms_joined(t, own) for t in texts)


# a title's head-to-head comparison ("autologous blood injection versus local corticosteroid injection"; a review's
# conclusion, which its title holds: "no clear advantage of foot orthoses over simple insoles or physiotherapy"),
# and a trial's design named in it ("randomised control trial"), which names no control arm
HEAD_TO_HEAD = re.compile(r"\b(?:versus|vs\.?|compared (?:with|to)|advantage of [^.;:]{1,60}? over)\b", re.I)
CONTROLLED_TRIAL = re.compile(r"\b(?:(?:non-?)?randomi[sz]ed,? )?control(?:led)? (?:clinical )?trials?\b", re.I)
# conservative care, the control arm of a trial of anything but conservative care ("Hip arthroscopy versus best
# conservative care for the treatment of femoroacetabular impingement syndrome")
CONSERVATIVE_CARE = re.compile(
    r"\b(?:conservative|non-?operative|non-?surgical) (?:care|management|treatment|therapy)\b", re.I
)


def against_active(title: str, intervention: str) -> bool:
    """Whether a source's title compares the intervention with another treatment and names no control arm
    (placebo, sham, usual care, nothing ...; conservative care when the intervention is not a kind of it): a
    trial of autologous blood against corticosteroid injections tells which works better, not whether
    corticosteroid injections work (GRADE's indirectness of comparison). Only the title: a finding may compare
    with anything in passing."""
    text = CONTROLLED_TRIAL.sub(" ", title)
    own = _intervention_own(intervention)
    controlled = CONTROL_NAMED.search(text) or (CONSERVATIVE_CARE.search(text) and not own & CONSERVATIVE_FAMILY)
    return bool(own & stems(text) and HEAD_TO_HEAD.search(text) and not controlled)


def compares_arms(quoted: list[str], anchors: Anchors, summary: str = "") -> bool:
    """Whether a source (the statements quoted from it and its title, `quoted`; its abstract, `summary`)
    compares the question's two arms, or may. Against a control arm (usual care, placebo, nothing ...), False
    when it compares two forms of the other arm and no quoted text names a control ("individualized
    acupuncture was not superior to standardized acupuncture" for acupuncture vs usual care; a trial of two
    doses and placebo names its placebo); between two active arms, False when it states a comparison and
    never names one of them by an own word (`_own_stems`): "a comparative study of ACL reconstruction with
    Endobutton and Rigidfix" for surgery vs physiotherapy; False when it adds one arm to the other and no
    quoted statement compares them head to head (`adds_one_arm_to_the_other`, `_head_to_head`: the FAIR trial
    "of adding a physiotherapy rehabilitation program to arthroscopic management" for hip arthroscopy vs
    physiotherapy). GRADE's indirectness of comparison. True when the question names fewer than two arms or
    one arm has no word of its own ("X plus Y" vs "X")."""
    intervention, comparator = (_joined(arm or "") for arm in (anchors.intervention, anchors.comparator))
    own_i, own_c = _own_stems(intervention, comparator), _own_stems(comparator, intervention)
    if not (own_i and own_c):
        return True
    texts = [*quoted, summary]
    control_i, control_c = bool(CONTROL_ARM.search(intervention)), bool(CONTROL_ARM.search(comparator))
    if control_i or control_c:
        active = own_c if control_i and not control_c else own_i
        return any(CONTROL_NAMED.search(t) for t in quoted) or not any(_two_forms(t, active) for t in texts)
    added = [t for t in texts if adds_one_arm_to_the_other(t, own_i, own_c)]
    if added and not any(_head_to_head(t, own_i, own_c) for t in quoted if t not in added):
        return False
    naming = (sentence for t in texts for sentence in SENTENCE_END.split(t) if not CO_MEDICATION.search(sentence))
    words = _text_stems(" ".join(naming))
    stated = any(COMPARISON_STATED.search(t) for t in texts)
    return not stated or _names_both(words, own_i, own_c)


_RECOMMEND_VERB = r"(?:recommend|suggest|advise)s?"
RECOMMENDS = re.compile(
    rf"\b(?:we|guidelines?) {_RECOMMEND_VERB}(?P<against> against)?\b|"
    r"\b(?P<neither>insufficient evidence to recommend|neither for nor against|no recommendation)\b",
    re.I,
)
# a review's conclusion for or against an intervention: "Low to moderate quality evidence supports the use of ...
# strengthening exercise for chronic neck pain" (the verdict model, trained on trials' results, read it as no
# difference, and the demo answered "Is exercise better than usual care for neck pain?" "No significant difference"
# with that review as support); "the evidence does not support the use of ..." is against it
ENDORSES = re.compile(
    r"\bevidence\b[^.;]{0,40}?\b(?P<not>(?:does|do|did) not |cannot |can ?not |fails? to )?"
    r"(?:supports?|favou?rs?) (?:the )?(?:use|effectiveness|efficacy|benefits?) of\b",
    re.I,
)
# guidelines' recommendations as another source reports them (an overview of guidelines: "the guidelines
# recommend reassurance ..., avoiding bed rest")
REPORTED_RECOMMENDATION = re.compile(rf"\bguidelines? {_RECOMMEND_VERB}\b", re.I)
# a review's conclusion that the evidence does not settle the question ("the effectiveness of massage for
# neck pain remains uncertain", "no recommendations for practice can be made", "insufficient evidence",
# "we cannot draw firm conclusions about the effectiveness or safety of surgery")
CONCLUDES_UNCERTAIN = re.compile(
    r"\b(?:effectiveness|efficacy|effects?|benefits?|evidence|value|role)\b[^.;]{0,80}?\b(?:remains?|is|are|was|were)\s+"
    r"(?:still\s+|currently\s+|largely\s+)?(?:uncertain|unclear|inconclusive|insufficient|lacking)\b|"
    r"\b(?:we are|it is|it remains) (?:still |very )?(?:uncertain|unclear|unsure) (?:whether|if|about)\b|"
    r"\b(?:insufficient|inconclusive|not enough) evidence\b|"
    r"\bno (?:firm |definitive |clear )?(?:conclusions?|recommendations?)\b[^.;]{0,60}?\b(?:can|could) be (?:made|drawn|reached)\b|"
    r"\b(?:cannot|can ?not|could not|unable to) (?:yet )?(?:draw|make|reach) (?:any )?(?:firm |definitive |clear )?"
    r"conclusions?\b",
    re.I,
)
# what a review's uncertain conclusion may be about besides whether the intervention works: how it compares with
# other treatments or which form of it is best ("it is uncertain whether this is better than alternative
# interventions", "insufficient evidence to determine the best design of such inserts")
AMONG_ALTERNATIVES = re.compile(
    r"\b(?:better|worse|superior|inferior|best|optimal|alternatives?|relative (?:effectiveness|efficacy|merits))\b",
    re.I,
)


def concludes_uncertain_whether_it_works(statement: str) -> bool:
    """Whether a statement concludes that the evidence does not settle whether the intervention works
    (`CONCLUDES_UNCERTAIN`), not only how it compares with other treatments or which form of it is best
    (`AMONG_ALTERNATIVES`, unless against a placebo, sham or no treatment: `CONTROL_ARM`)."""
    if not CONCLUDES_UNCERTAIN.search(statement):
        return False
    return not AMONG_ALTERNATIVES.search(statement) or bool(CONTROL_ARM.search(statement))


# what the first-named arm is compared to, up to six words ("... from advice to stay active compared to advice to
# rest in bed"; not "over 15 years"), and words that say the first-named arm came out better, or worse
COMPARED_TO = re.compile(r"\b(?:compared (?:to|with)|versus|vs\.?|than)\s+((?:[\w-]+\s+){0,5}[\w-]+)", re.I)
FIRST_BETTER = re.compile(r"\b(?:benefits?|better|more effective|superior)\b", re.I)  # not "greater BMI", a risk
FIRST_WORSE = re.compile(r"\b(?:less|worse|inferior|fewer|lower|harm\w*)\b", re.I)

SIGNIFICANT = re.compile(r"\bsignifican", re.I)


def beats_named_control(statement: str) -> bool:
    """Whether a statement reports a significant difference from a control arm it names after its comparing word
    ("pain scores were significantly more reduced in the ESWT than the sham group"); not "as effectively as a
    placebo therapy", which names no comparison."""
    return bool(SIGNIFICANT.search(statement)) and any(
        CONTROL_NAMED.search(m.group(1)) for m in COMPARED_TO.finditer(statement)
    )


def favours_another_arm_over(statement: str, anchors: Anchors) -> bool:
    """Whether the statement favours something else over the question's intervention: it names the intervention
    only in what the first-named arm is compared to, and says that arm came out better ("patients with acute LBP
    may experience small benefits ... from advice to stay active compared to advice to rest in bed" for "Should
    patients with acute low back pain stay in bed?")."""
    match = COMPARED_TO.search(statement)
    if match is None:
        return False
    before = statement[: match.start()]
    named = {stem(w) for w in naming_words(anchors)} & _text_stems(match.group(1))
    return (
        bool(named)
        and not named & _text_stems(before)
        and bool(FIRST_BETTER.search(before))
        and not FIRST_WORSE.search(before)
    )


# a finding that says which of two arms came out better ("NSAIDs are superior to acetaminophen for improving knee
# and hip pain"; "6.8 (95% CI 1.7-12.0) in favour of hip arthroscopy")
SUPERIOR_TO = re.compile(
    r"\b(?:(superior|better|more effective|preferable)|inferior|worse|less effective)\s+(?:to|than)\b", re.I
)
IN_FAVOUR_OF = re.compile(r"\bin favou?r of\s+((?:[\w-]+\s+){0,5}[\w-]+)", re.I)


def favoured_arm(statement: str, anchors: Anchors) -> str | None:
    """ "intervention" or "comparator": the question's arm that a finding says came out better, by the words of
    its own that it names where the finding says so ("in favour of ..."; the arm before "superior to" and the arm
    after it); None when the finding says neither so, or names both arms or neither there."""
    if not (anchors.intervention and anchors.comparator):
        return None
    own = {
        "intervention": _own_stems(anchors.intervention, anchors.comparator),
        "comparator": _own_stems(anchors.comparator, anchors.intervention),
    }

    def arm_in(text: str) -> str | None:
        words = _text_stems(text)
        named = [arm for arm, mine in own.items() if mine & words]
        return named[0] if len(named) == 1 else None

    if (match := IN_FAVOUR_OF.search(statement)) is not None:
        return arm_in(match.group(1))
    if (match := SUPERIOR_TO.search(statement)) is None:
        return None
    subject, other = arm_in(statement[: match.start()]), arm_in(statement[match.end() :])
    if subject is None or other is None or subject == other:
        return None
    return subject if match.group(1) else other


# a review's conclusion that the intervention works, unhedged ("viscosupplementation is an effective treatment for OA
# of the knee with beneficial effects: on pain"; not "may be beneficial although their effect may be small", nor "we
# have very little confidence that massage is an effective treatment")
CONCLUDES_BENEFIT = re.compile(r"\b(?:is|are) (?:an? )?(?:effective|efficacious|beneficial)\b", re.I)
HEDGED = re.compile(
    r"\b(?:may|might|could|possibly|uncertain|unclear|unsure|not|no|insufficient|limited|little|doubt\w*|lack\w*)\b",
    re.I,
)
# a review's conclusion that the intervention does not work ("shock wave therapy provides little or no benefit in
# terms of pain and function"; not "no more effective than", which compares it with another treatment)
CONCLUDES_NO_BENEFIT = re.compile(
    r"\b(?:little or no|no (?:clear |significant |important |additional |meaningful )?)(?:benefits?|effects?)\b|"
    r"\bineffective\b|\bnot effective\b",
    re.I,
)
# a recommendation for something that is to be avoided: the words just before an arm's first mention
AVOIDING = re.compile(r"\b(?:avoid(?:ing|ance of)?|against|discourag\w*|not)\s+(?:[\w-]+\s+){0,2}$", re.I)


def _avoided(statement: str, anchors: Anchors) -> bool:
    """Whether the first mention of the question's arms comes right after avoiding words ("advice on
    returning to normal activities, avoiding bed rest" for "stay in bed")."""
    named = _arm_word_stems(anchors)
    for word in re.finditer(r"[\w-]+", statement):
        if stem(word.group(0).lower()) in named:
            return bool(AVOIDING.search(statement[: word.start()]))
    return False


def recommendation_stance(statement: str, anchors: Anchors | None = None) -> str | None:
    """A guideline statement's stance: for, against or neither, from its stated strength, else from
    its recommending words ("we suggest against", "insufficient evidence to recommend for or
    against", "we recommend", "the guidelines recommend"), else a review's conclusion that the evidence
    supports (or does not support) the use of something (`ENDORSES`); None when it recommends nothing. With the
    question's `anchors`, a recommendation whose first mention of the question's arms is something to
    avoid ("recommend ... avoiding bed rest") is against them."""
    match = STRENGTH.search(statement)
    if match:
        strength = match.group(1).lower()
        if "neither" in strength or "no recommendation" in strength:
            return "neither"
        stance = "against" if "against" in strength else "for"
    else:
        words, endorsed = RECOMMENDS.search(statement), ENDORSES.search(statement)
        if words:
            stance = "neither" if words.group("neither") else "against" if words.group("against") else "for"
        elif endorsed:
            stance = "against" if endorsed.group("not") else "for"
        else:
            return None
    return "against" if stance == "for" and anchors is not None and _avoided(statement, anchors) else stance


# the stage of a condition a guideline recommends for ("For patients with acute low back pain, ...", the WHO
# guideline's "adults with CPLBP": chronic primary low back pain)
STAGE = re.compile(r"\b(acute|sub-?acute|chronic|persistent|CP?LBP)\b", re.I)
STAGE_NAMES = {"persistent": "chronic", "cplbp": "chronic", "clbp": "chronic"}


def _stages(text: str) -> set[str]:
    """The stages of a condition a text names ("sub-acute" as "subacute"; "persistent", CLBP and CPLBP as
    "chronic")."""
    words = (m.lower().replace("-", "") for m in STAGE.findall(text))
    return {STAGE_NAMES.get(w, w) for w in words}


def names_condition(text: str, condition: str) -> bool:
    """Whether a text names at least half the stems of a condition ("Achilles tendon rupture": not a low back
    pain guideline's "early imaging is associated with ... worse clinical outcomes")."""
    return share_named(stems(condition), _text_stems(text)) >= 0.5


def other_stage(statement: str, question: str) -> bool:
    """Whether the statement names only stages of the condition that the question does not ask about: "For
    patients with chronic low back pain, we suggest spinal manipulation" answered "Does spinal manipulation
    reduce pain in acute low back pain compared with placebo?" (the guideline's acute recommendation is neither
    for nor against). False when either names no stage."""
    stages, asked = _stages(statement), _stages(question)
    return bool(stages and asked and not stages & asked)


def recommends(statement: str) -> bool:
    """Whether a statement is a recommendation (`recommendation_stance`)."""
    return recommendation_stance(statement) is not None


def about_arms(statement: str, anchors: Anchors) -> bool:
    """Whether a statement names at least half of the words that tell the question's arms apart
    (`arm_words`): a recommendation about the question, not one that shares a word with it."""
    return 2 * arm_coverage(statement, anchors) >= len(_arm_word_stems(anchors))


def recommends_about_arms(statement: str, anchors: Anchors) -> bool:
    """A recommendation (`recommends`) about the question's arms (`about_arms`)."""
    return recommends(statement) and about_arms(statement, anchors)


def arm_coverage(statement: str, anchors: Anchors) -> int:
    """How many of the words that tell the question's arms apart (`arm_words`) the statement names: of two
    recommendations about the arms, the one naming more is about the question ("we suggest spinal
    mobilization/manipulation" names both words of spinal manipulation, "we suggest against spinal cord
    stimulation" one)."""
    return len(_arm_word_stems(anchors) & stems(statement))


def most_specific(statements: Iterable[str], anchors: Anchors) -> int:
    """The most words of the arms (`arm_coverage`) that one of the statements' recommendations about
    the arms names (0 when none is one)."""
    return max((arm_coverage(s, anchors) for s in statements if recommends_about_arms(s, anchors)), default=0)


def less_specific(statement: str, anchors: Anchors, specific: int) -> bool:
    """A recommendation about the arms that names fewer of their words than `specific` (`most_specific`
    of the statements beside it): it recommends on something else."""
    return recommends_about_arms(statement, anchors) and arm_coverage(statement, anchors) < specific
