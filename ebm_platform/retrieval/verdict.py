"""The answer's `verdict`: the direction its core conclusion states, or `insufficient evidence`.

Offline, learned (`VerdictModel`, when the lake holds one: the `verdict_model` asset): a text
classifier trained on Evidence Inference's train-split evidence spans reads the core statements.
Offline, rules (deterministic, when no model is in the lake) over the core answer's statements, most relevant first): the first
statement that reports a comparison decides. No-difference language ("no significant", "did not
differ", "similar", p > 0.05) gives `no significant difference`; otherwise the balance of
increase words (increased, higher, improved, greater, ...) against decrease words (reduced, lower,
fewer, ...) gives `significantly increased` / `significantly decreased`; a statement with neither
is skipped, and when none reports a comparison the verdict is `insufficient evidence`.
With an LLM the model states the verdict in its answer (IRCOT_ANSWER_SCHEMA); when it does not,
these rules read its statements and the answer says so.
PubMedQA's yes / no / maybe is read from the same verdict (`as_yes_no`): an effect -> yes, no
significant difference -> no, insufficient evidence -> maybe (a mapping, labelled as such).

The learned verdict reads the question with the sentence (`VerdictModel.verdict(statements, anchors)`):
the sentence's direction is read as it is stated (a study reports its intervention against its
control), and an *orientation* classifier reads the question's intervention and comparator with the
sentence (each arm's words marked in it, whether an arm names a control) and gives the probability
that the question's I is the sentence's intervention; when it is not, increased and decreased swap.
So "I reduced O compared with C" answers "Does C reduce O more than I?" with "increased".
The sentence reader reads the sentence with its significance and direction spelled out
(`with_reading_cues`): each p-value becomes "zpsig" (below 0.05) or "zpns", each confidence interval
"zcinull" (it spans 0, or 1 for a ratio) or "zciclear", so that "p = 0.34" and "p = 0.04" no longer
share their tokens, and each direction word (higher, reduced, shorter, ...) adds "zup" or "zdown",
so that a direction worded rarely counts like a common one. The orientation classifier also reads
which arm the sentence names first (`_arm_order`). Chosen by grouped 5-fold CV by article on the
train spans (accuracy read with the arms as asked): 0.726 without the cues, 0.767 with the
significance cues, 0.782 with the direction cues too, 0.797 with the arms' order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ebm_platform.lake_layout import LakeLayout
from ebm_platform.model_store import load_estimators, save_estimators
from ebm_platform.retrieval.evidence_sentences import SentenceScorer, mark_arms, share_named
from ebm_platform.retrieval.lexical import stems
from ebm_platform.vocabulary import Anchors

INCREASED, DECREASED, NO_DIFFERENCE, INSUFFICIENT = (
    "significantly increased",
    "significantly decreased",
    "no significant difference",
    "insufficient evidence",
)
VERDICTS = (INCREASED, DECREASED, NO_DIFFERENCE, INSUFFICIENT)
SWAPPED = {INCREASED: DECREASED, DECREASED: INCREASED}  # the verdict with the arms exchanged
ORIENTATION_C = 32.0  # inverse regularisation of the orientation classifier: grouped 5-fold CV on the train spans (log-loss; 4-64 tried)
_CONTROL_ARM = re.compile(
    r"\b(?:placebo|control|usual|standard|sham|no|none|conventional|saline|routine|without|vehicle|waiting|"
    r"wait-list|untreated)\b",
    re.I,
)
Arms = tuple[str, str, str]  # a question's intervention, comparator and outcome ("" when not stated)
_NO_DIFFERENCE = re.compile(
    r"\bno (?:statistically )?significant\b|\bnot (?:statistically )?significant(?:ly)?\b|\bnon-?significant|"
    r"\bdid not (?:significantly )?(?:differ|change|improve|reduce|increase|affect)|\bno (?:significant )?differences?\b|"
    r"\bsimilar\b|\bcomparable\b|\bn\.?s\.?\b|\bp\s*(?:>|=)\s*0?\.(?:0[5-9]|[1-9])|\bwas not associated\b|"
    r"\bno (?:effect|change|benefit)\b|\bdid not\b",
    re.I,
)
_UP = re.compile(
    r"\b(?:increas\w*|higher|greater|improv\w*|elevat\w*|longer|rais\w*|gain\w*|better|"
    r"enhanc\w*|superior|boost\w*)\b",
    re.I,
)
_DOWN = re.compile(
    r"\b(?:decreas\w*|lower\w*|reduc\w*|less|fewer|shorter|declin\w*|drop\w*|fell|fall\w*|"
    r"diminish\w*|worse|inferior|attenuat\w*|suppress\w*)\b",
    re.I,
)


P_VALUE = re.compile(r"\bp\s*(?:-?\s*value)?\s*(<=|>=|<|≤|=|>|≥)\s*(0?\.\d+|[01](?:\.0+)?)", re.I)
CONFIDENCE_INTERVAL = re.compile(
    r"(?:\bci\b|confidence interval)[^\d\-−]{0,12}([-−]?\d+(?:\.\d+)?)\s*(?:to|-|–|,|;)\s*([-−]?\d+(?:\.\d+)?)", re.I
)
NOT_SIGNIFICANT_MARK = re.compile(r"\(\s*n\.?s\.?\s*\)|\bn\.s\.", re.I)
SIGNIFICANCE_LEVEL = 0.05
_SIGNIFICANT = re.compile(r"\bsignifican", re.I)


def _p_cue(operator: str, value: float) -> str:
    """zpsig / zpns for one reported p-value; zpwide for a bound that says neither (p < 0.2)."""
    if operator in ("<", "<=", "≤"):
        return "zpsig" if value <= SIGNIFICANCE_LEVEL else "zpwide"
    if operator in (">", ">=", "≥"):
        return "zpns" if value >= SIGNIFICANCE_LEVEL else "zpwide"
    return "zpsig" if value < SIGNIFICANCE_LEVEL else "zpns"


def _interval_cue(low: str, high: str) -> str:
    """zcinull when the interval spans no effect (0 for a difference, 1 for a ratio), else zciclear."""
    a, b = sorted(float(v.replace("−", "-")) for v in (low, high))
    return "zcinull" if a < 0 < b or 0 < a < 1 < b else "zciclear"


def with_reading_cues(text: str) -> str:
    """The text with one cue word appended for each p-value, confidence interval, "(NS)" and
    direction word it holds: what the sentence reader reads."""
    cues = [_p_cue(operator, float(value)) for operator, value in P_VALUE.findall(text)]
    cues += [_interval_cue(low, high) for low, high in CONFIDENCE_INTERVAL.findall(text)]
    cues += ["zpns"] * bool(NOT_SIGNIFICANT_MARK.search(text))
    cues += ["zup"] * len(_UP.findall(text)) + ["zdown"] * len(_DOWN.findall(text))
    return " ".join([text, *cues])


def reports_comparison(statement: str) -> bool:
    """Whether a statement reports a result the verdict can be read from: no-difference language, a
    direction word, significance, a p-value or a confidence interval."""
    return any(
        pattern.search(statement)
        for pattern in (_NO_DIFFERENCE, _UP, _DOWN, P_VALUE, CONFIDENCE_INTERVAL, _SIGNIFICANT)
    )


def offline_verdict(statements: list[str]) -> tuple[str, str | None]:
    """The verdict and the statement it rests on (None when evidence is insufficient)."""
    for statement in statements:
        if _NO_DIFFERENCE.search(statement):
            return NO_DIFFERENCE, statement
        up, down = len(_UP.findall(statement)), len(_DOWN.findall(statement))
        if up != down:
            return (INCREASED if up > down else DECREASED), statement
    return INSUFFICIENT, None


def read_verdict(
    statements: list[str], model: VerdictModel | None = None, anchors: Anchors | None = None
) -> tuple[str, str | None]:
    """The verdict of ranked statements and the statement it rests on: the learned model (reading
    the question's arms when `anchors` name both) when given, else the rules."""
    return model.verdict(statements, anchors) if model else offline_verdict(statements)


def arms_of(anchors: Anchors | None) -> Arms | None:
    """The question's (intervention, comparator, outcome) when it names both arms, else None."""
    if anchors is None or not anchors.intervention or not anchors.comparator:
        return None
    return anchors.intervention, anchors.comparator, anchors.outcome or ""


def orientation_text(arms: Arms, sentence: str) -> str:
    """What the orientation classifier reads: whether each arm names a control, each arm's terms,
    then the sentence with the words of I, C and O replaced by markers (zarmi, zarmc, zoutc)."""
    intervention, comparator, outcome = arms
    arm_i, arm_c, out = stems(intervention), stems(comparator), stems(outcome)
    words = [
        f"qi_{'ctl' if _CONTROL_ARM.search(intervention) else 'act'}",
        f"qc_{'ctl' if _CONTROL_ARM.search(comparator) else 'act'}",
        *sorted(f"i_{t}" for t in arm_i),
        *sorted(f"c_{t}" for t in arm_c),
        "|",
    ]
    marked = mark_arms(sentence, arm_i, arm_c, out)
    words.append(_arm_order(marked))
    words.extend(marked)
    return " ".join(words)


def _arm_order(marked: list[str]) -> str:
    """Which of the question's arms the marked sentence names first (zorder_ic, zorder_ci), or only
    (zonly_i, zonly_c), or neither (zorder_none)."""
    seen = [w for w in marked if w in ("zarmi", "zarmc")]
    if not seen:
        return "zorder_none"
    if len(set(seen)) == 1:
        return f"zonly_{seen[0][-1]}"
    return "zorder_ic" if seen[0] == "zarmi" else "zorder_ci"


def swapped(arms: Arms) -> Arms:
    """The same question with intervention and comparator exchanged."""
    return arms[1], arms[0], arms[2]


def as_yes_no(verdict: str) -> str:
    """PubMedQA's answer read from a verdict: effect -> yes, no difference -> no, else maybe."""
    return {INCREASED: "yes", DECREASED: "yes", NO_DIFFERENCE: "no"}.get(verdict, "maybe")


# Both arms changed and the arms did not differ: the between-arm clause is the verdict ("Both interventions
# improved function, but neither was superior to the other"). The reader, trained on Evidence Inference's
# spans, where such sentences are rare, read 4 of 6 of them as an effect (docs/evaluation.md). Among the
# train spans that state no difference between the arms (BETWEEN_NULL), 253 of 262 are labelled so.
BETWEEN_NULL = re.compile(
    r"\bneither\b[^.;]{0,60}?\b(?:superior|better|more effective|inferior|worse)\b|"
    r"\bequally (?:effective|efficacious|beneficial|good|well)\b|"
    r"\bno (?:statistically )?(?:significant )?differences? (?:\w+ ){0,3}?between\b|"
    r"\bno (?:significant )?between[- ]groups? differences?\b|"
    r"\bnone of (?:the )?(?:\w+ ){0,2}?(?:was|is|were)\b[^.;]{0,30}?\bsignificantly\b",
    re.I,
)
BOTH_ARMS = re.compile(r"\bboth\b|\b(?:all|each) (?:the )?(?:groups|arms)\b", re.I)
_EXCEPT = re.compile(r"\bexcept\b|\bapart from\b|\bother than\b|\bhowever\b|\bwhereas\b", re.I)


def arms_did_not_differ(text: str) -> bool:
    """Whether a sentence says that both arms changed and that they did not differ, with no exception."""
    return bool(BETWEEN_NULL.search(text) and BOTH_ARMS.search(text) and not _EXCEPT.search(text))


# How much a statement that names the question's outcome outweighs one that does not: grouped 5-fold CV
# by article on 676 sampled train prompts, each article the only source (evaluation/verdict_training.py's
# setting), the reader refitted per fold: ranks alone 0.701; x (0.05 + share)^2 0.722 (paired +0.021
# [+0.002, +0.041]); x (0.1 + share) 0.713; the best-named statements alone 0.712 (docs/evaluation.md).
OUTCOME_FLOOR = 0.05


def statement_weights(statements: Sequence[str], outcome: str | None) -> np.ndarray:
    """Each ranked statement's weight in the verdict: 1, 1/2, 1/3, ... by rank, times
    (OUTCOME_FLOOR + the share of the question's outcome stems it names)^2 when any statement names
    one (a trial reports many outcomes: "no difference in weight gain" beside "a significant
    reduction in dietary glycaemic load" for a question on glycaemic load)."""
    weights = np.array([1.0 / (rank + 1) for rank in range(len(statements))])
    wanted = stems(outcome or "")
    shares = np.array([share_named(wanted, stems(s)) for s in statements])
    return weights * (OUTCOME_FLOOR + shares) ** 2 if shares.max(initial=0.0) > 0 else weights


def stated_probabilities(pipeline, texts: Sequence[str]) -> np.ndarray:
    """The sentence reader `pipeline`'s (n, classes) probabilities of texts, each read with its cues; a
    sentence that says both arms changed and did not differ (`arms_did_not_differ`) reads no difference."""
    probabilities = pipeline.predict_proba([with_reading_cues(t) for t in texts])
    null = [i for i, text in enumerate(texts) if arms_did_not_differ(text)]
    if null and NO_DIFFERENCE in pipeline.classes_:
        probabilities[null] = 0.0
        probabilities[null, list(pipeline.classes_).index(NO_DIFFERENCE)] = 1.0
    return probabilities


def _text_classifier(ngrams: int, c: float, balanced: bool, token_pattern: str = r"(?u)\b\w\w+\b"):
    """TF-IDF over word n-grams (1..ngrams) and logistic regression."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(
        TfidfVectorizer(ngram_range=(1, ngrams), min_df=2, sublinear_tf=True, token_pattern=token_pattern),
        LogisticRegression(C=c, max_iter=3000, class_weight="balanced" if balanced else None),
    )


class VerdictModel:
    """A learned verdict read with the question: `pipeline` (TF-IDF over words and word pairs +
    logistic regression) reads a sentence's direction as stated, trained on the annotated evidence
    spans of Evidence Inference's *train* split with their prompts' labels; `orientation` (TF-IDF
    over `orientation_text` + logistic regression) gives the probability that the question's
    intervention is the sentence's, trained on each train span with its prompt's arms (same) and
    with them exchanged (reversed). A statement's class probabilities are
    p(same) x p(verdict) + p(reversed) x p(verdict with the arms swapped); over ranked statements
    they are summed with `statement_weights` (1, 1/2, 1/3 by rank, favouring the statements that name
    the question's outcome; over the statements that report a comparison, as the
    rules read them: a reader trained on result spans reads "Participants were recruited in clinics."
    as no difference) and the largest sum is the verdict. Without both arms
    in the question (or in a model saved before `orientation`), the sentence's reading is the
    verdict. `sentences`, when trained, is the scorer that chooses which sentences the offline
    answer quotes."""

    FILE = "verdict.skops"

    def __init__(self, pipeline, meta: dict, sentences: SentenceScorer | None = None, orientation=None) -> None:
        self.pipeline, self.meta, self.sentences, self.orientation = pipeline, meta, sentences, orientation

    @classmethod
    def train(
        cls, texts: list[str], labels: list[str], arms: Sequence[Arms] | None = None, meta: dict | None = None
    ) -> VerdictModel:
        """Fit the sentence reader on (text, label); with each text's question `arms`, the orientation too."""
        pipeline = _text_classifier(2, 4.0, balanced=True).fit([with_reading_cues(t) for t in texts], labels)
        orientation = None
        if arms is not None:
            pairs = list(zip(arms, texts))
            orientation = _text_classifier(3, ORIENTATION_C, balanced=False, token_pattern=r"\S+").fit(
                [orientation_text(a, t) for a, t in pairs] + [orientation_text(swapped(a), t) for a, t in pairs],
                ["same"] * len(pairs) + ["reversed"] * len(pairs),
            )
        return cls(pipeline, dict(meta or {}, trained_on_spans=len(texts)), orientation=orientation)

    def stated_probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """(n, classes) probabilities of each text's direction as stated (no question read)."""
        return stated_probabilities(self.pipeline, texts)

    def probabilities(self, texts: list[str], arms: Sequence[Arms | None] | None = None) -> np.ndarray:
        """(n, classes) verdict probabilities of each text, read with its question's arms where given."""
        probabilities = self.stated_probabilities(texts)
        read = [i for i, arm in enumerate(arms or []) if arm is not None]
        if not read or self.orientation is None:
            return probabilities
        same = self.orientation.predict_proba([orientation_text(arms[i], texts[i]) for i in read])
        same = same[:, [list(self.orientation.classes_).index("same")]]
        classes = [str(c) for c in self.pipeline.classes_]
        exchanged = [classes.index(SWAPPED.get(c, c)) for c in classes]
        stated = probabilities[read]
        probabilities[read] = same * stated + (1.0 - same) * stated[:, exchanged]
        return probabilities

    def predict(self, texts: list[str], arms: Sequence[Arms | None] | None = None) -> list[str]:
        """Each text's verdict, read with its question's arms where given."""
        return [str(self.pipeline.classes_[k]) for k in self.probabilities(texts, arms).argmax(axis=1)]

    def verdict(self, statements: list[str], anchors: Anchors | None = None) -> tuple[str, str | None]:
        """The verdict over ranked statements read with the question's arms, and the statement that weighs most for it."""
        if not statements:
            return INSUFFICIENT, None
        statements = [s for s in statements if reports_comparison(s)] or statements
        probabilities = self.probabilities(statements, [arms_of(anchors)] * len(statements))
        weights = statement_weights(statements, anchors.outcome if anchors else None)[:, None]
        best = int(np.argmax((probabilities * weights).sum(axis=0)))
        basis = int(np.argmax(probabilities[:, best] * weights[:, 0]))
        return str(self.pipeline.classes_[best]), statements[basis]

    def save(self, folder: Path) -> None:
        sentences = self.sentences.pipeline if self.sentences else None
        save_estimators(
            Path(folder) / self.FILE,
            {"pipeline": self.pipeline, "sentences": sentences, "orientation": self.orientation},
            self.meta,
        )

    @classmethod
    def load(cls, folder: Path) -> VerdictModel | None:
        stored = load_estimators(Path(folder) / cls.FILE)
        if stored is None:
            return None
        estimators, meta = stored
        return cls(
            estimators.get("pipeline"),
            meta,
            SentenceScorer.stored(estimators.get("sentences")),  # None: the cosine choice quotes
            estimators.get("orientation"),
        )


def verdict_path(lake: Path) -> Path:
    return LakeLayout(lake).model("verdict")
