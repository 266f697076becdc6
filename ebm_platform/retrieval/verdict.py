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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ebm_platform.lake_layout import LakeLayout
from ebm_platform.model_store import load_estimators, save_estimators
from ebm_platform.retrieval.evidence_sentences import SentenceScorer, mark_arms
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
    words.extend(mark_arms(sentence, arm_i, arm_c, out))
    return " ".join(words)


def swapped(arms: Arms) -> Arms:
    """The same question with intervention and comparator exchanged."""
    return arms[1], arms[0], arms[2]


def as_yes_no(verdict: str) -> str:
    """PubMedQA's answer read from a verdict: effect -> yes, no difference -> no, else maybe."""
    return {INCREASED: "yes", DECREASED: "yes", NO_DIFFERENCE: "no"}.get(verdict, "maybe")


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
    they are summed with weights 1, 1/2, 1/3 and the largest sum is the verdict. Without both arms
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
        pipeline = _text_classifier(2, 4.0, balanced=True).fit(texts, labels)
        orientation = None
        if arms is not None:
            pairs = list(zip(arms, texts))
            orientation = _text_classifier(3, ORIENTATION_C, balanced=False, token_pattern=r"\S+").fit(
                [orientation_text(a, t) for a, t in pairs] + [orientation_text(swapped(a), t) for a, t in pairs],
                ["same"] * len(pairs) + ["reversed"] * len(pairs),
            )
        return cls(pipeline, dict(meta or {}, trained_on_spans=len(texts)), orientation=orientation)

    def probabilities(self, texts: list[str], arms: Sequence[Arms | None] | None = None) -> np.ndarray:
        """(n, classes) verdict probabilities of each text, read with its question's arms where given."""
        probabilities = self.pipeline.predict_proba(texts)
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
        probabilities = self.probabilities(statements, [arms_of(anchors)] * len(statements))
        weights = np.array([1.0 / (rank + 1) for rank in range(len(statements))])[:, None]
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
