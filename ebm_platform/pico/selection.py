"""Entity selection: which of a text's tagged names are its trial's arms and outcomes, and where each occurs.

The tagger labels words one by one. An entity, in the EBM-NLP convention, marks its name wherever
it occurs, and Evidence Inference's doctors wrote prompts for the arms and outcomes a trial reports
on, not for every outcome an abstract mentions. So the tagger's I and O runs are read as candidate
names (a text's runs grouped by their name words); each candidate is projected onto every place
its name occurs (`Projector.project`, the projection that made the training labels); and a
logistic regression over `FEATURES` of the candidate (the tagger's probabilities, how often and
where the name occurs, the rules' flags, its rank among the text's candidates) keeps or drops it
at a threshold per class. The regression and thresholds are fitted on the tagger's dev articles,
which the head never trained on; each threshold maximises its class's F1 over 5-fold out-of-fold
predictions on those articles.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ebm_platform.atomic import write_text_atomic
from ebm_platform.pico.distant import Projector, name_words
from ebm_platform.pico.spans import CLASSES, Words, runs, trim

SELECTED = {CLASSES.index("I"): "I", CLASSES.index("O"): "O"}  # the classes whose candidates are selected
FEATURES = (
    "log mentions",
    "log occurrences",
    "mean p(class) in mentions",
    "best mention's mean p(class)",
    "mean p(class) in occurrences",
    "mean p(none) in mentions",
    "mean p(P) in mentions",
    "mean p(other of I/O) in mentions",
    "in the title",
    "share in result sentences",
    "max result-sentence count",
    "first occurrence's position",
    "log name words",
    "mean idf",
    "max idf",
    "log mean mention length",
    "rule Intervention",
    "rule Comparator",
    "rule Outcome",
    "rule Condition",
    "rule Timepoint",
    "capitalised",
    "all capitals",
    "max word count",
    "max stem count",
    "log text words",
    "rank share",
    "log candidates",
    "gap to the best",
    "the best",
    "an outcome",
)
_RULES, _SHAPES, _SALIENCE = 5, 4, 8  # the tagger's feature columns after the MiniLM vector
_FOLDS = 5
_GRID = np.round(np.arange(0.10, 0.81, 0.05), 2)


@dataclass
class Candidate:
    """One candidate name of a text: its class, the words where its name occurs, its features."""

    label: int
    where: np.ndarray  # bool per word
    features: np.ndarray


def candidates(words: Words, x: np.ndarray, probs: np.ndarray, projector: Projector) -> list[Candidate]:
    """The text's candidate I and O names from the tagger's word probabilities (see module doc)."""
    n = len(words)
    argmax = probs.argmax(1)
    rules = x.shape[1] - _RULES - _SHAPES - _SALIENCE
    shape, sal = rules + _RULES, rules + _RULES + _SHAPES
    out: list[Candidate] = []
    for label in SELECTED:
        groups: dict[frozenset, list[tuple[int, int, str]]] = defaultdict(list)
        for i, j, _ in runs(np.where(argmax == label, label, 0)):
            i, j = trim(words, i, j)
            phrase = " ".join(words.tokens[i:j])
            key = frozenset(name_words(phrase))
            if i < j and key:
                groups[key].append((i, j, phrase))
        rows = []
        for key, mentions in groups.items():
            phrase = Counter(m[2] for m in mentions).most_common(1)[0][0]
            spans = projector.project(words, phrase, single=SELECTED[label] == "I") or [m[:2] for m in mentions]
            where, said = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
            for i, j in spans:
                where[i:j] = True
            for i, j, _ in mentions:
                said[i:j] = True
            other = 5 - label  # I <-> O
            p, xm, xo = probs[said], x[said], x[where]
            rows.append(
                (
                    where,
                    [
                        np.log1p(len(mentions)),
                        np.log1p(len(spans)),
                        p[:, label].mean(),
                        max(probs[i:j, label].mean() for i, j, _ in mentions),
                        probs[where, label].mean(),
                        p[:, 0].mean(),
                        p[:, CLASSES.index("P")].mean(),
                        p[:, other].mean(),
                        xo[:, sal + 2].max(),
                        xo[:, sal + 4].mean(),
                        xm[:, sal + 5].max(),
                        min(i for i, _ in spans) / n,
                        np.log1p(len(key)),
                        xm[:, sal + 7].mean(),
                        xm[:, sal + 7].max(),
                        np.log1p(np.mean([j - i for i, j, _ in mentions])),
                        *xo[:, rules : rules + _RULES].mean(0),
                        xm[:, shape].mean(),
                        xm[:, shape + 1].mean(),
                        xm[:, sal].max(),
                        xm[:, sal + 1].max(),
                        np.log1p(n),
                    ],
                )
            )
        best = np.array([r[1][3] for r in rows])
        rank = (-best).argsort().argsort()
        for (where, feats), r, b in zip(rows, rank, best):
            out.append(
                Candidate(
                    label,
                    where,
                    np.array(
                        [
                            *feats,
                            r / len(rows),
                            np.log1p(len(rows)),
                            best.max() - b,
                            float(r == 0),
                            float(SELECTED[label] == "O"),
                        ],
                        dtype=np.float64,
                    ),
                )
            )
    return out


def decode(probs: np.ndarray, found: Sequence[Candidate], keep: Sequence[bool]) -> np.ndarray:
    """Word labels: P as the tagger says, then the kept I names, then the kept O names (an O
    overwrites an I, as in the projected gold)."""
    labels = probs.argmax(1)
    labels[np.isin(labels, list(SELECTED))] = 0
    for label in SELECTED:
        for c, k in zip(found, keep):
            if k and c.label == label:
                labels[c.where] = label
    return labels


def _f1(gold: Sequence[np.ndarray], predicted: Sequence[np.ndarray], label: int) -> float:
    g, p = np.concatenate(gold), np.concatenate(predicted)
    tp = float(((g == label) & (p == label)).sum())
    return 2 * tp / max(float((g == label).sum() + (p == label).sum()), 1.0)


@dataclass(frozen=True)
class Regression:
    """Standardised logistic regression over candidate features."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    @classmethod
    def fit(cls, features: np.ndarray, target: np.ndarray) -> Regression:
        from sklearn.linear_model import LogisticRegression

        mean, scale = features.mean(0), features.std(0) + 1e-9
        model = LogisticRegression(C=0.5, max_iter=2000).fit((features - mean) / scale, target)
        return cls(mean, scale, model.coef_[0], float(model.intercept_[0]))

    def score(self, features: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(((features - self.mean) / self.scale) @ self.coef + self.intercept)))


class EntitySelector:
    """Keeps a candidate name when the regression scores it at its class's threshold or above."""

    def __init__(self, regression: Regression, thresholds: dict[int, float], report: dict | None = None) -> None:
        self.regression, self.thresholds, self.report = regression, thresholds, report or {}

    def keep(self, found: Sequence[Candidate]) -> list[bool]:
        if not found:
            return []
        scores = self.regression.score(np.array([c.features for c in found]))
        return [bool(s >= self.thresholds[c.label]) for c, s in zip(found, scores)]

    def labels(self, words: Words, x: np.ndarray, probs: np.ndarray, projector: Projector) -> np.ndarray:
        """Word labels of one text (indices into CLASSES)."""
        found = candidates(words, x, probs, projector)
        return decode(probs, found, self.keep(found))

    @classmethod
    def fit(
        cls,
        words: Sequence[Words],
        xs: Sequence[np.ndarray],
        probs: Sequence[np.ndarray],
        gold: Sequence[np.ndarray],
        projector: Projector,
        seed: int = 13,
    ) -> EntitySelector:
        """The regression and thresholds from held-out texts with their gold word labels; the report
        gives per class the F1 of the tagger's own labels, of every candidate kept and of the
        selection (out-of-fold, on these texts)."""
        found = [candidates(w, x, p, projector) for w, x, p in zip(words, xs, probs)]
        rows = [(t, c) for t, cs in enumerate(found) for c in cs]
        target = np.array([(gold[t][c.where] == c.label).mean() >= 0.5 for t, c in rows], dtype=bool)
        for label, letter in SELECTED.items():
            if len({bool(y) for (_, c), y in zip(rows, target) if c.label == label}) < 2:
                raise ValueError(f"too few {letter} candidates on both sides to fit the entity selector")
        features = np.array([c.features for _, c in rows])
        fold = (np.random.default_rng(seed).permutation(len(found)) % _FOLDS)[[t for t, _ in rows]]
        oof = np.zeros(len(rows))
        for k in range(_FOLDS):
            if (fold == k).any() and len(set(target[fold != k])) == 2:
                oof[fold == k] = Regression.fit(features[fold != k], target[fold != k]).score(features[fold == k])
        scored = {id(c): s for (_, c), s in zip(rows, oof)}
        thresholds, report = {}, {}
        for label, letter in SELECTED.items():

            def f1_at(threshold: float) -> float:
                return _f1(
                    gold,
                    [
                        decode(p, cs, [c.label != label or scored[id(c)] >= threshold for c in cs])  # noqa: B023 (called within this iteration)
                        for p, cs in zip(probs, found)
                    ],
                    label,  # noqa: B023 (called within this iteration)
                )

            thresholds[label] = float(max(_GRID, key=f1_at))
            mine = target[[c.label == label for _, c in rows]]
            report[letter] = {
                "candidates": int(mine.size),
                "kept_by_gold": round(float(mine.mean()), 3),
                "threshold": thresholds[label],
                "tagger_f1": round(_f1(gold, [p.argmax(1) for p in probs], label), 4),
                "all_candidates_f1": round(f1_at(0.0), 4),
                "selected_f1_out_of_fold": round(f1_at(thresholds[label]), 4),
            }
        return cls(Regression.fit(features, target), thresholds, {"texts": len(found), "classes": report})

    # ---- persistence -----------------------------------------------------------------------
    def save(self, path: Path) -> None:
        r = self.regression
        write_text_atomic(
            path,
            json.dumps(
                {
                    "features": list(FEATURES),
                    "report": self.report,
                    "thresholds": {SELECTED[label]: t for label, t in self.thresholds.items()},
                    "regression": {
                        "mean": r.mean.tolist(),
                        "scale": r.scale.tolist(),
                        "coef": r.coef.tolist(),
                        "intercept": r.intercept,
                    },
                },
                indent=1,
            ),
        )

    @classmethod
    def load(cls, path: Path) -> EntitySelector:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data["features"] != list(FEATURES):
            raise ValueError(f"{path} was fitted on other features: retrain the pico_tagger asset")
        r = data["regression"]
        return cls(
            Regression(np.array(r["mean"]), np.array(r["scale"]), np.array(r["coef"]), r["intercept"]),
            {CLASSES.index(letter): t for letter, t in data["thresholds"].items()},
            data["report"],
        )
