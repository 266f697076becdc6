"""Offline PICO extraction: deterministic rules and lexicons over one evidence window.

Produces PICO-extended-schema entities, relations and attributes; `retrieval.questions` reads a
clinical question's anchors with its lexicons.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# ---- lexicons -------------------------------------------------------------------------------
OUTCOME_SCALES: dict[str, tuple[str, str]] = {
    # canonical name: (pattern, outcome domain)
    "VAS": (r"\bVAS\b|visual analog(?:ue)? scale", "pain"),
    "NPRS": (r"\bNPRS\b|numeric(?:al)? pain rating scale", "pain"),
    "NRS": (r"\bNRS\b|numeric(?:al)? rating scale", "pain"),
    "KOOS": (r"\bKOOS\b|knee injury and osteoarthritis outcome score", "function"),
    "IKDC": (r"\bIKDC\b|international knee documentation committee", "function"),
    "LEFS": (r"\bLEFS\b|lower extremity functional scale", "function"),
    "DASH": (r"\b(?:Quick ?)?DASH\b|disabilities of the arm,? shoulder,? and hand", "function"),
    "ODI": (r"\bODI\b|oswestry disability", "disability"),
    "NDI": (r"\bNDI\b|neck disability index", "disability"),
    "VISA-A": (r"\bVISA-A\b", "function"),
    "VISA-P": (r"\bVISA-P\b", "function"),
    "WOMAC": (r"\bWOMAC\b|western ontario and mcmaster", "function"),
    "SF-36": (r"\bSF-?36\b|short[- ]form[- ]36", "quality of life"),
    "SF-12": (r"\bSF-?12\b", "quality of life"),
    "EQ-5D": (r"\bEQ-?5D\b|euroqol", "quality of life"),
    "RMDQ": (r"\bRMDQ\b|roland[- ]morris", "disability"),
    "SPADI": (r"\bSPADI\b|shoulder pain and disability index", "disability"),
    "Constant score": (r"constant(?:[- ]murley)? (?:score|shoulder score)", "function"),
    "Lysholm score": (r"\blysholm\b", "function"),
    "Tegner activity scale": (r"\btegner\b", "activity"),
    "FAAM": (r"\bFAAM\b|foot and ankle ability measure", "function"),
    "HAGOS": (r"\bHAGOS\b|copenhagen hip and groin", "function"),
    "iHOT": (r"\biHOT\b", "function"),
    "PSFS": (r"\bPSFS\b|patient[- ]specific functional scale", "function"),
    "Tampa Scale of Kinesiophobia": (r"\bTSK\b|tampa scale", "psychological"),
    "Pain Catastrophizing Scale": (r"pain catastrophi[sz]ing scale", "psychological"),
    "Berg Balance Scale": (r"berg balance", "balance"),
    "Timed Up and Go": (r"timed up[- ]and[- ]go|\bTUG\b", "mobility"),
    "6-minute walk test": (r"\b6[- ]?min(?:ute)?[- ]walk", "mobility"),
    "range of motion": (r"range of (?:motion|movement)|\bROM\b", "mobility"),
    "muscle strength": (r"(?:muscle|isometric|isokinetic|quadriceps|hip abductor|grip) strength", "strength"),
    "pain intensity": (r"pain intensity|pain severity|pain scores?", "pain"),
    "quality of life": (r"quality of life|\bQoL\b", "quality of life"),
    "return to sport": (r"return to (?:sport|play|activity)", "participation"),
    "recurrence": (r"\brecurren(?:ce|t) (?:rate|injur)|re-?injury|reinjury", "recurrence"),
    "disability": (r"\bdisability\b", "disability"),
    "physical function": (r"physical function(?:ing)?|functional (?:status|ability|outcome)", "function"),
}
_SCALES = [(name, re.compile(p, re.I), domain) for name, (p, domain) in OUTCOME_SCALES.items()]

INTERVENTION_HEADS = (
    r"exercises?|training|therapy|physiotherapy|physical therapy|manipulation|mobili[sz]ation|massage|"
    r"acupuncture|injections?|surgery|reconstruction|repair|arthroscopy|taping|orthos[ie]s|insoles|"
    r"stretching|strengthening|education|programs?|programmes?|ultrasound|shock ?wave therapy|laser|"
    r"TENS|electrotherapy|dry needling|cryotherapy|rehabilitation|platelet-rich plasma|PRP|"
    r"corticosteroids?|steroids?|NSAIDs?|ibuprofen|naproxen|diclofenac|paracetamol|acetaminophen|"
    r"brace|bracing|yoga|pilates|tai chi|walking|running|counsel(?:l)?ing|cognitive behavio(?:u)?ral therapy|"
    r"CBT|hydrotherapy|traction|immobili[sz]ation|surgical treatment|conservative treatment|treatment"
)
_INTERVENTION = re.compile(rf"\b({INTERVENTION_HEADS})\b", re.I)
COMPARATOR_TERMS = re.compile(
    r"\b(placebo|sham(?: [a-z]+)?|usual care|standard care|no treatment|no intervention|"
    r"wait(?:ing)?[- ]list|control group|minimal intervention|advice alone|routine care)\b",
    re.I,
)
_COMPARE = re.compile(
    r"(?:versus|vs\.?|compared (?:with|to)|in comparison (?:with|to)|relative to|rather than)\s+"
    r"(?:a |an |the |those receiving |patients receiving |participants receiving )?"
    r"([^,.;:()]{3,80}?)(?=\s*(?:[,.;:()]|\bon\b|\bin\b|\bfor\b|\bat\b|\bamong\b|\bgroups?\b|$))",
    re.I,
)
_ALLOCATION = re.compile(
    r"(?:randomi[sz]ed|randomly (?:assigned|allocated)|allocated|assigned)\s+(?:in)?to\s+"
    r"(?:receive\s+|either\s+|one of (?:two|three|four) (?:groups|arms)[:,]?\s*)?([^.;]{3,200}\b)",
    re.I,
)
_EFFECT_OF = re.compile(
    r"\b(?:effects?|efficacy|effectiveness|benefits?|impact) of\s+(?:a |an |the )?([^,.;:()]{3,90}?)\s+"
    r"(?:on|in|for|versus|vs\.?|compared|among|with)\b",
    re.I,
)
_ARM = re.compile(r"\b((?:[A-Za-z][\w-]*\s){0,3}[A-Za-z][\w-]*)\s+(?:group|arm)\b", re.I)
_POPULATION = re.compile(
    r"\b((?:(?:adult|elderly|older|young|male|female|healthy|sedentary|obese|recreational|elite|"
    r"competitive|professional|amateur|postmenopausal|pregnant)\s+)*"
    r"(?:patients|participants|subjects|adults|children|adolescents|women|men|athletes|individuals|"
    r"people|persons|volunteers|runners|players|workers|students|soldiers|recruits|footballers|"
    r"employees|veterans|elderly))\s+(with|who (?:had|have|underwent|were)|aged|undergoing|after|"
    r"following|suffering from|diagnosed with|presenting with)\s+([^.;:()]{3,90}\b)",
    re.I,
)
_AGE_RANGE = re.compile(r"aged\s+(\d{1,2})\s*(?:-|–|to)\s*(\d{1,3})", re.I)
_MEAN_AGE = re.compile(r"(?:mean|average) age(?: of)?(?: was)?\s*(?:=|:)?\s*(\d{1,2}(?:\.\d+)?)", re.I)
_SEVERITY = re.compile(r"\b(acute|subacute|chronic|mild|moderate|severe|recurrent|persistent)\b", re.I)
_TIMEPOINT = re.compile(
    r"\b(?:at|after|following|over|for|within|up to)\s+(\d+(?:\.\d+)?)\s*(?:(?:-|–|to)\s*(\d+)\s*)?"
    r"(days?|weeks?|months?|years?|wks?|mos?)\b",
    re.I,
)
_FOLLOW_UP = re.compile(
    r"follow[- ]?up(?: period)?(?: of| at| was)?\s+(\d+(?:\.\d+)?)\s*(days?|weeks?|months?|years?)", re.I
)
_FREQUENCY = re.compile(
    r"\b(\d+|once|twice|three times)\s*(?:times|sessions|x|×)?\s*(?:per|a|/|each)\s*(week|day|wk)\b", re.I
)
_DURATION = re.compile(
    r"\b(\d+)\s*(?:(?:-|–|to)\s*(\d+)\s*)?(?:min|mins|minutes)\b(?:\s*(?:per|each|a)\s*(?:session|day))?", re.I
)
_SETS = re.compile(r"\b(\d+)\s*sets?\s*(?:of|x|×)\s*(\d+)(?:\s*(?:-|–|to)\s*\d+)?\s*(?:repetitions|reps)?", re.I)
_INTENSITY = re.compile(r"\b\d+(?:\s*(?:-|–|to)\s*\d+)?\s*%\s*(?:of\s*)?(?:1RM|HRmax|HRR|VO2 ?max|maximal|MVC)\b", re.I)
_DRUG_DOSE = re.compile(r"\b\d+(?:\.\d+)?\s*(?:mg|g|ml|mL|µg|mcg|IU)(?:/kg)?\b")
_SAMPLE = re.compile(
    r"(?:\b[nN]\s*=\s*(\d{2,5})\b|\b(\d{2,5})\s+(?:patients|participants|subjects|individuals|adults|"
    r"women|men|children|athletes|volunteers)\s+(?:were\s+)?(?:randomi[sz]ed|enrolled|included|recruited|"
    r"allocated|completed))"
)
_RECOMMEND = re.compile(
    r"\b(?:we recommend|(?:is|are) recommended|should (?:be|not)|recommendations?\b|we suggest|is advised)", re.I
)
_AGAINST = re.compile(r"\b(?:not recommended|should not|recommend against|do not recommend|is discouraged)\b", re.I)
_STRENGTH = re.compile(r"\b(strong|weak|conditional|moderate|grade [A-D])\s+recommendation", re.I)
_ADVERSE = re.compile(
    r"\b(?:(?:serious |severe |minor |no )?adverse (?:events?|effects?|reactions?)|side[- ]effects?|complications?)\b",
    re.I,
)
_SUCH_AS = re.compile(r"(?:such as|including|e\.g\.,?)\s+([^.;:()]{3,80}\b)", re.I)
_CONTRA = re.compile(r"\bcontraindicat\w*\b", re.I)
_DEVICE = re.compile(
    r"\b(knee brace|brace|orthos[ie]s|foot orthoses|insoles|kinesio ?tap(?:e|ing)|crutches|treadmill|"
    r"dynamometer|TENS unit|foam roller|elastic bands?|resistance bands?|splint|sling|cycle ergometer|"
    r"ergometer|wobble board|balance board)\b",
    re.I,
)
ANATOMY = (
    r"low(?:er)? back|back|neck|knee|hip|shoulder|ankle|foot|heel|elbow|wrist|groin|calf|thigh|"
    r"patellofemoral|anterior knee|lateral ankle|lateral elbow|achilles|patellar|hamstring|quadriceps|"
    r"adductor|plantar|lumbar|cervical|thoracic|spinal|musculoskeletal|myofascial|joint|tendon|"
    r"ligament|muscle|bone|stress|sports?|anterior cruciate ligament|ACL|meniscal|cartilage|"
    r"rotator cuff|subacromial|glenohumeral|trochanteric|iliotibial band|tibial|pelvic|sacroiliac|"
    r"whiplash|overuse|running|exercise-induced|knee and hip|hip and knee"
)
_CONDITION = re.compile(
    rf"\b((?:chronic |acute |subacute |non-?specific |recurrent |persistent )?(?:{ANATOMY})[ -]"
    r"(?:[a-z-]+ )?"
    r"(?:pain|injury|injuries|tendinopathy|tendinitis|tendinosis|syndrome|osteoarthritis|fracture|"
    r"sprain|dislocation|strain|rupture|tear|capsulitis|fasciitis|fasciopathy|impingement|"
    r"instability|spondylolisthesis|radiculopathy|arthritis))\b",
    re.I,
)
_STUDY_DESIGN = (
    ("systematic review", re.compile(r"systematic review|meta-?analys", re.I)),
    ("randomised controlled trial", re.compile(r"randomi[sz]ed|randomly (?:assigned|allocated)", re.I)),
    ("cohort study", re.compile(r"\bcohort\b", re.I)),
    ("guideline", re.compile(r"\bguideline|consensus statement", re.I)),
)
STOP_LEFT = {
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
    "was",
    "were",
    "is",
    "are",
    "this",
    "that",
    "these",
    "those",
    "their",
    "his",
    "her",
    "its",
    "our",
    "we",
    "both",
    "each",
    "either",
    "after",
    "before",
    "during",
    "from",
    "than",
    "as",
    "at",
    "received",
    "receiving",
    "underwent",
    "versus",
    "vs",
    "compared",
    "effect",
    "effects",
    "who",
    "which",
    "all",
    "same",
    "other",
    "only",
    "no",
    "not",
    "usual",
    "standard",
    "while",
    "when",
    "had",
    "has",
    "have",
    "be",
    "been",
    "group",
}
_ARM_STOP = {
    "control",
    "each",
    "both",
    "the",
    "treatment",
    "intervention",
    "study",
    "age",
    "same",
    "other",
    "either",
    "experimental",
    "two",
    "three",
    "placebo",
    "comparison",
    "focus",
    "this",
    "that",
}
_SPLIT = re.compile(
    r"\s*(?:,|;|\bversus\b|\bvs\.?\b|\bor\b|\bcompared (?:with|to)\b|\(\w\)|\band\b(?=\s+(?:a|an|the)\s))\s*", re.I
)
_OUTCOME_PHRASES = (
    re.compile(
        r"\b(?:differences?|reductions?|improvements?|increases?|decreases?|changes?|declines?|rises?) "
        r"in (?:the )?([^,.;:()]{3,60}?)(?=\s+(?:was|were|between|from|at|after|in|compared|versus|vs|of|"
        r"with|among|by|did|during|over)\b|[,.;:()]|$)",
        re.I,
    ),
    re.compile(
        r"(?:^|[.;:]\s*|\b(?:and|the|mean|median|total)\s+)([A-Za-z][\w -]{2,50}?)\s+(?:was|were)\s+"
        r"(?:not\s+)?(?:significantly\s+|statistically\s+significantly\s+|markedly\s+)?"
        r"(?:higher|lower|greater|smaller|reduced|improved|increased|decreased|better|worse|similar|"
        r"measured|assessed|evaluated|recorded|shorter|longer)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:effects?|influence) (?:of [^,.;]{3,60}? )?on (?:the )?([^,.;:()]{3,60}?)(?=\s+(?:in|among|of|at|after|was|were)\b|[,.;:()]|$)",
        re.I,
    ),
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
MAX_NAME = 200
GENERIC_INTERVENTIONS = {
    "treatment",
    "therapy",
    "training",
    "intervention",
    "program",
    "programme",
    "programs",
    "programmes",
    "interventions",
    "treatments",
    "experimental",
    "study",
}


@dataclass
class Extraction:
    """Schema-typed output of one window (or question), before validation."""

    entities: list[dict] = field(default_factory=list)
    relations: list[dict] = field(default_factory=list)
    attributes: list[dict] = field(default_factory=list)

    def add_entity(self, name: str, type_: str) -> str | None:
        name = clean_name(name)
        if not name or (type_ in ("Intervention", "Arm") and name.lower() in GENERIC_INTERVENTIONS):
            return None
        if not any(e["name"] == name and e["type"] == type_ for e in self.entities):
            self.entities.append({"name": name, "type": type_})
        return name

    def add_relation(self, source: str | None, relation: str, target: str | None) -> None:
        if source and target and source != target:
            item = {"source": source, "relation": relation, "target": target}
            if item not in self.relations:
                self.relations.append(item)

    def add_attribute(self, entity: str | None, attribute: str, value: object) -> None:
        if entity and value not in (None, ""):
            item = {"entity": entity, "attribute": attribute, "value": str(value)[:MAX_NAME]}
            if item not in self.attributes:
                self.attributes.append(item)

    def names(self, type_: str) -> list[str]:
        return [e["name"] for e in self.entities if e["type"] == type_]

    def as_dict(self) -> dict:
        return {"entities": self.entities, "relations": self.relations, "attributes": self.attributes}


def clean_name(text: str) -> str:
    """Trim a captured phrase: whitespace, brackets, leading function words, trailing clauses."""
    text = re.sub(r"\([^)]*\)?", " ", text.rsplit(":", 1)[-1])  # parentheticals, text before a colon
    text = re.sub(r"\s+", " ", text).strip(" ,.;:-()[]\"'")
    text = re.split(
        r"\s+(?:who|which|that|were|was|is|are|had|has|showed|resulted|did|will|would|could)\b", text, maxsplit=1
    )[0]
    words = text.split()
    while words and words[0].lower() in STOP_LEFT:
        words.pop(0)
    while words and words[-1].lower() in STOP_LEFT and not _compound_head(words):
        words.pop()
    return " ".join(words)[:MAX_NAME]


def _compound_head(words: list[str]) -> bool:
    """The name ends in a compound whose last word is never stripped ("side effects", "adverse effect")."""
    return len(words) > 1 and words[-1].lower() in ("effect", "effects") and words[-2].lower() in ("side", "adverse")


def _head_phrase(text: str, match: re.Match) -> str:
    """A lexicon hit extended left by up to three content words (e.g. 'hip strengthening')."""
    clause = re.split(r"[,.;:()\[\]]", text[: match.start()])[-1]
    left = re.findall(r"[A-Za-z][\w-]*", clause)[-3:]
    kept: list[str] = []
    for word in reversed(left):
        if word.lower() in STOP_LEFT or word[0].isdigit():
            break
        kept.insert(0, word)
    return " ".join(kept + [match.group(0)])


def _weeks(value: float, unit: str) -> float:
    unit = unit.lower()
    factor = (
        1 / 7 if unit.startswith("d") else 4.345 if unit.startswith("mo") else 52.18 if unit.startswith("y") else 1.0
    )
    return round(value * factor, 1)


def _age_bin(age: float) -> str:
    return "child" if age < 13 else "adolescent" if age < 18 else "adult" if age < 65 else "older adult"


def split_arms(phrase: str) -> list[str]:
    """'hip and knee exercise or knee exercise alone' style lists -> their members."""
    parts = [clean_name(p) for p in _SPLIT.split(phrase)]
    return [p for p in parts if p and len(p.split()) <= 12 and not p.lower().startswith(("group", "groups"))]


def extract(text: str, condition_names: tuple[str, ...] = (), tagged: list[dict] | None = None) -> Extraction:
    """PICO-extended entities, relations and attributes of one window. With `tagged` (the learned
    tagger's typed spans of this text: "text" as written, "name" normalised) those are the window's
    populations, interventions, comparators and outcomes; the rules add everything else."""
    out = Extraction()
    sentences = [s for s in _SENTENCE.split(text) if s.strip()]
    populations: list[str] = []
    interventions: list[str] = []
    conditions: list[str] = []

    for name in condition_names:
        if re.search(re.escape(name), text, re.I):
            conditions.append(out.add_entity(name, "Condition"))
    for m in _CONDITION.finditer(text):
        conditions.append(out.add_entity(m.group(1), "Condition"))

    if tagged is not None:
        found_populations = [(t.get("name") or t["text"], t["text"]) for t in tagged if t["type"] == "Population"]
    else:
        found_populations = [
            (f"{m.group(1)} {m.group(2)} {clean_name(m.group(3))}", m.group(0)) for m in _POPULATION.finditer(text)
        ]
    for name, context in found_populations:
        pop = out.add_entity(name, "Population")
        if not pop:
            continue
        populations.append(pop)
        severity = _SEVERITY.search(context)
        out.add_attribute(pop, "baseline_severity", severity.group(1).lower() if severity else None)
        lower = pop.lower()
        out.add_attribute(
            pop,
            "sex",
            "female"
            if re.search(r"\b(?:women|female|pregnant|postmenopausal)\b", lower)
            else "male"
            if re.search(r"\b(?:men|male)\b", lower)
            else None,
        )
        for cond in conditions:
            if cond and cond.lower() in lower:
                out.add_attribute(pop, "has_condition", cond)
    age = _AGE_RANGE.search(text)
    mean_age = _MEAN_AGE.search(text)
    for pop in populations[:1]:
        if age:
            out.add_attribute(pop, "age_range", f"{age.group(1)}-{age.group(2)}")
            out.add_attribute(pop, "age_bin", _age_bin((int(age.group(1)) + int(age.group(2))) / 2))
        elif mean_age:
            out.add_attribute(pop, "age_bin", _age_bin(float(mean_age.group(1))))

    if tagged is not None:
        interventions += [
            out.add_entity(t.get("name") or t["text"], "Intervention") for t in tagged if t["type"] == "Intervention"
        ]
    else:
        for m in _ALLOCATION.finditer(text):
            arms = split_arms(m.group(1))
            if arms:
                interventions.append(out.add_entity(arms[0], "Intervention"))
                for other in arms[1:3]:
                    kind = "Comparator" if COMPARATOR_TERMS.search(other) or len(arms) == 2 else "Arm"
                    name = out.add_entity(other, kind)
                    if kind == "Comparator":
                        out.add_relation(interventions[-1], "compares_to", name)
        for m in _EFFECT_OF.finditer(text):
            interventions.append(out.add_entity(m.group(1), "Intervention"))
        for m in _INTERVENTION.finditer(text):
            interventions.append(out.add_entity(_head_phrase(text, m), "Intervention"))
    for m in _ARM.finditer(text):
        words = m.group(1).split()
        while words and words[0].lower() in STOP_LEFT | _ARM_STOP:
            words.pop(0)
        if words and words[-1].lower() not in _ARM_STOP:
            arm = out.add_entity(" ".join(words) + " group", "Arm")
            out.add_attribute(arm, "targets_arm", " ".join(words))
    interventions = [i for i in dict.fromkeys(interventions) if i]

    for sentence in sentences:
        sent_interventions = [i for i in interventions if i.lower() in sentence.lower()]
        if tagged is not None:
            comparators = [
                out.add_entity(t.get("name") or t["text"], "Comparator")
                for t in tagged
                if t["type"] == "Comparator" and t["text"].lower() in sentence.lower()
            ]
        else:
            comparators = [out.add_entity(m.group(1), "Comparator") for m in _COMPARE.finditer(sentence)]
            comparators += [out.add_entity(m.group(1), "Comparator") for m in COMPARATOR_TERMS.finditer(sentence)]
        for i in sent_interventions:
            for c in comparators:
                if c and c.lower() != i.lower():
                    out.add_relation(i, "compares_to", c)
        outcomes: list[str] = []
        primary = re.search(
            r"primary (?:outcome|end ?point)s?(?: measures?)?(?: (?:was|were|included|is))?\s*:?\s*([^.;]{3,120})",
            sentence,
            re.I,
        )
        if tagged is not None:  # a named instrument is an attribute of the tagged outcome that names it
            for t in tagged:
                if t["type"] == "Outcome" and t["text"].lower() in sentence.lower():
                    o = out.add_entity(t.get("name") or t["text"], "Outcome")
                    outcomes.append(o)
                    for name, pattern, domain in _SCALES:
                        if pattern.search(t["text"]):
                            out.add_attribute(o, "measure_name", name)
                            out.add_attribute(o, "outcome_domain", domain)
                    out.add_attribute(o, "primary_outcome", "yes" if primary else None)
        else:
            for name, pattern, domain in _SCALES:
                if pattern.search(sentence):
                    o = out.add_entity(name, "Outcome")
                    outcomes.append(o)
                    out.add_attribute(o, "measure_name", name)
                    out.add_attribute(o, "outcome_domain", domain)
            for pattern in _OUTCOME_PHRASES:
                for m in pattern.finditer(sentence):
                    phrase = clean_name(m.group(1))
                    if phrase and len(phrase.split()) <= 7 and not re.fullmatch(r"[\d\s.%-]+", phrase):
                        outcomes.append(out.add_entity(phrase, "Outcome"))
            if primary:
                o = out.add_entity(primary.group(1), "Outcome")
                outcomes.append(o)
                out.add_attribute(o, "primary_outcome", "yes")
        for m in _TIMEPOINT.finditer(sentence):
            value = float(m.group(2) or m.group(1))
            t = out.add_entity(
                f"{m.group(1)}{'-' + m.group(2) if m.group(2) else ''} {m.group(3).lower()}", "Timepoint"
            )
            out.add_attribute(t, "timepoint_value", m.group(2) or m.group(1))
            out.add_attribute(t, "timepoint_unit", m.group(3).lower().rstrip("s"))
            out.add_attribute(t, "followup_weeks", _weeks(value, m.group(3)))
            for o in outcomes:
                out.add_relation(o, "has_timepoint", t)
            if not outcomes:
                for i in sent_interventions[:2]:
                    out.add_relation(i, "has_timepoint", t)
        for i in sent_interventions:
            for o in outcomes:
                out.add_attribute(i, "reports_outcome", o)
        for m in _DEVICE.finditer(sentence):
            d = out.add_entity(m.group(1), "Device")
            for i in sent_interventions:
                out.add_relation(i, "uses_device", d)
        if _RECOMMEND.search(sentence):
            r = out.add_entity(sentence[:160], "Recommendation")
            strength = _STRENGTH.search(sentence)
            out.add_attribute(r, "recommendation_strength", strength.group(1).lower() if strength else None)
            for i in sent_interventions:
                out.add_relation(r, "recommends_against" if _AGAINST.search(sentence) else "uses_intervention", i)
        adverse = _ADVERSE.search(sentence)
        if adverse:
            events = [adverse.group(0)]
            such = _SUCH_AS.search(sentence[adverse.start() :])
            if such:
                events += split_arms(such.group(1))[:4]
            for e in events:
                a = out.add_entity(e, "AdverseEvent")
                out.add_attribute(a, "adverse_event", e)
                for i in sent_interventions:
                    out.add_relation(i, "has_adverse_event", a)
        if _CONTRA.search(sentence):
            c = out.add_entity(sentence[:160], "Contraindication")
            out.add_attribute(c, "contraindication", sentence[:160])
            for target in populations[:1] + [x for x in conditions if x][:1]:
                out.add_relation(c, "contraindicated_for", target)

    first = interventions[0] if interventions else (populations[0] if populations else None)
    for i in interventions[:3]:
        for p in populations[:2]:
            out.add_relation(i, "has_population", p)
    for pattern, key in (
        (_FREQUENCY, "frequency"),
        (_DURATION, "session_duration"),
        (_SETS, "dose"),
        (_INTENSITY, "intensity"),
        (_DRUG_DOSE, "dose"),
    ):
        hit = pattern.search(text)
        out.add_attribute(first, key, hit.group(0) if hit else None)
    follow = _FOLLOW_UP.search(text)
    if follow:
        out.add_attribute(first, "followup_weeks", _weeks(float(follow.group(1)), follow.group(2)))
    sample = _SAMPLE.search(text)
    if sample:
        out.add_attribute(populations[0] if populations else first, "sample_size", sample.group(1) or sample.group(2))
    for design, pattern in _STUDY_DESIGN:
        if pattern.search(text):
            out.add_attribute(first, "study_design", design)
            break
    return out
