"""Which retrieved sentences state the answer: a learned evidence-sentence scorer.

The offline answer quotes sentences of the retrieved windows, and the verdict is read from the
quoted ones, so the sentence choice decides whether better retrieval gives a better answer.
Cosine with the question alone prefers sentences that restate the question (aims, methods) over
the one that reports the result. `SentenceScorer` is a logistic regression over `FEATURES` of a
(question, sentence) pair: the cosine, standardised over the candidate sentences (stored pooled
vectors and stand-alone embeddings differ in scale, their ranking does not), result and
statistics language, how much of the question's outcome, intervention and comparator (its rule
anchors) and of its content words the sentence repeats, its length and how many numbers it holds.
It is trained on Evidence Inference's *train* prompts: the sentences of each prompt's article,
positive when they hold an annotated evidence span (`evaluation/verdict_training.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ebm_platform.retrieval.lexical import stems
from ebm_platform.vocabulary import Anchors

RESULT_CUES = re.compile(
    r"\b(?:significant|improv|reduc|increas|decreas|recommend|effective|no difference|"
    r"superior|inferior|compared|versus|associated)\w*",
    re.I,
)
STATISTICS = re.compile(r"\bp\s*[<=>≤≥]|\bci\b|confidence interval|\d\s*%|\bsignifican", re.I)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_QUESTION_FRAME = frozenset({"effect"})  # the benchmark's "What is the effect of"; its other words are stopwords
FEATURES = (
    "cosine, standardised over the candidates",
    "result language",
    "statistics",
    "outcome words",
    "intervention words",
    "comparator words",
    "question words",
    "log characters",
    "numbers / 10",
)


def _share(wanted: set[str], found: set[str]) -> float:
    return len(wanted & found) / len(wanted) if wanted else 0.0


def sentence_features(question: str, anchors: Anchors, sentences: Sequence[str], cosines: np.ndarray) -> np.ndarray:
    """(sentences, len(FEATURES)) features of each candidate sentence for the question."""
    if not len(sentences):
        return np.zeros((0, len(FEATURES)))
    cosines = np.asarray(cosines, dtype=np.float64)
    z = (cosines - cosines.mean()) / (cosines.std() + 1e-6)
    outcome, intervention, comparator = (
        stems(a or "") for a in (anchors.outcome, anchors.intervention, anchors.comparator)
    )
    asked = stems(question) - _QUESTION_FRAME
    rows = []
    for sentence, standard in zip(sentences, z):
        words = stems(sentence)
        rows.append(
            [
                standard,
                bool(RESULT_CUES.search(sentence)),
                bool(STATISTICS.search(sentence)),
                _share(outcome, words),
                _share(intervention, words),
                _share(comparator, words),
                _share(asked, words),
                np.log1p(len(sentence)),
                len(_NUMBER.findall(sentence)) / 10,
            ]
        )
    return np.array(rows, dtype=np.float64)


class SentenceScorer:
    """Standardised logistic regression over `FEATURES` (balanced classes: a few evidence sentences
    among an article's many)."""

    def __init__(self, pipeline) -> None:
        self.pipeline = pipeline

    @classmethod
    def train(cls, features: np.ndarray, evidence: np.ndarray) -> SentenceScorer:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        if len(set(evidence.tolist())) < 2:
            raise ValueError("the sentence scorer needs evidence and other sentences to learn from")
        return cls(
            make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced")).fit(
                features, evidence
            )
        )

    def scores(self, features: np.ndarray) -> np.ndarray:
        """A score per sentence (higher: more likely the one that states the result)."""
        return self.pipeline.decision_function(features) if len(features) else np.zeros(0)

    def weights(self) -> dict[str, float]:
        """The regression's weight per (standardised) feature, for the model's provenance."""
        return dict(zip(FEATURES, np.round(self.pipeline[-1].coef_[0], 3).tolist()))


def cosine_scores(sentences: Sequence[str], cosines: np.ndarray) -> np.ndarray:
    """The hand-set choice without a scorer: cosine plus 0.05 for result language."""
    return np.asarray(cosines, dtype=np.float64) + np.array([0.05 if RESULT_CUES.search(s) else 0.0 for s in sentences])
