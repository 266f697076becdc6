"""The learned fine scorer: a LightGBM LambdaRank model over the candidates' features.

Trained on training questions only (Evidence Inference train split in an evaluation lake, the
generated benchmark's train split in the production lake); the number of boosting rounds is chosen
by early stopping on a held-out tenth of the *training* questions (by a hash of the question id;
a fixed 100 rounds when that tenth holds fewer than 20 questions).
It is compared with the hand-set scorer s = cos + 0.4 * coverage on the same candidates of the
validation questions and is used only when it beats it there (MRR higher, R@10 not lower).

In the production lake (`cross_validate`) the model learns from every labelled question of the
benchmark's train and validation splits (Evidence Inference prompts, PubMedQA, questions generated
from the corpus, graded A/B documents included) and its gate reads out-of-fold scores: the questions
are cut into FOLDS folds by their source article, each fold is scored by a model fitted on the
others, and the pooled scores must beat the hand-set scorer on at least MIN_GATE_QUESTIONS questions;
the figures are reported per source. The shipped model is then fitted on all of them, and the
out-of-fold scores are kept beside it (`OUT_OF_FOLD_FILE`): BETR is fitted on s(q, d) of questions
whose gold windows trained the scorer, and the shipped model's own scores for them are in-sample (it
separates their gold windows almost perfectly, so no grade offset could add anything).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import lightgbm as lgb
import numpy as np
import polars as pl

from ebm_platform.atomic import atomic_path, write_text_atomic
from ebm_platform.benchmark.sources import EI_QUESTION
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.retrieval.features import FEATURES
from ebm_platform.retrieval.lexical import LEXICAL_WEIGHT

MODEL_FILE = "model.json"  # the booster and its provenance in one atomically written file
OUT_OF_FOLD_FILE = "out_of_fold.parquet"  # (question_id, window_id, s, model_key) of the questions it learned from
K = 10
PARAMS = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [K],
    "learning_rate": 0.05,
    "num_leaves": 31,
    "min_data_in_leaf": 20,
    "feature_fraction": 0.8,
    "lambdarank_truncation_level": 30,
    "verbosity": -1,
    "deterministic": True,
    "num_threads": 2,
    "seed": 13,
}
MAX_ROUNDS, PATIENCE = 600, 60
MIN_DEV_QUESTIONS, DEFAULT_ROUNDS = 20, 100  # fewer train-dev questions than this: a fixed number of rounds
FOLDS, MIN_GATE_QUESTIONS = 5, 200  # the cross-validated gate: folds, and the fewest questions it may rest on
SOURCES = {"ei": "evidence_inference", "pubmedqa": "pubmedqa", "gen": "generated", "srrag": "sr_rag_release"}


@dataclass
class LearnedReranker:
    """A fitted booster, the feature names it reads and its provenance."""

    booster: lgb.Booster
    meta: dict = field(default_factory=dict)

    @property
    def features(self) -> list[str]:
        return list(self.meta["features"])

    @property
    def usable(self) -> bool:
        return bool(self.meta.get("beats_hand_set"))

    @property
    def name(self) -> str:
        return f"learned LambdaRank {self.meta.get('key', '?')} ({len(self.features)} features)"

    def score(self, matrix: np.ndarray) -> np.ndarray:
        """Scores for rows laid out as FEATURES (columns the model does not read are dropped)."""
        columns = [FEATURES.index(f) for f in self.features]
        return self.booster.predict(matrix[:, columns]) if len(matrix) else np.zeros(0)

    def save(self, folder: Path) -> None:
        write_text_atomic(
            Path(folder) / MODEL_FILE,
            json.dumps({"meta": self.meta, "booster": self.booster.model_to_string()}, indent=1),
        )

    @classmethod
    def load(cls, folder: Path) -> LearnedReranker | None:
        path = Path(folder) / MODEL_FILE
        if not path.is_file():
            return None
        stored = json.loads(path.read_text(encoding="utf-8"))
        return cls(lgb.Booster(model_str=stored["booster"]), stored["meta"])


def reranker_path(lake: Path) -> Path:
    return LakeLayout(lake).model("reranker")


def save_out_of_fold(folder: Path, scores: pl.DataFrame) -> None:
    """Write the out-of-fold scores of `cross_validate` beside the model, atomically."""
    with atomic_path(Path(folder) / OUT_OF_FOLD_FILE) as tmp:
        scores.write_parquet(tmp)


def out_of_fold_scores(folder: Path, model: LearnedReranker | None) -> pl.DataFrame | None:
    """The out-of-fold s(q, d) stored with `model` (question_id, window_id, s); None when there are
    none or they belong to another fit of the model."""
    path = Path(folder) / OUT_OF_FOLD_FILE
    if model is None or not path.is_file():
        return None
    scores = pl.read_parquet(path)
    if not scores.height or scores["model_key"][0] != model.meta.get("key"):
        return None
    return scores.select("question_id", "window_id", "s")


def _groups(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Feature matrix, labels and group sizes (rows sorted by question)."""
    frame = frame.sort("question_id", "window_id")
    sizes = frame.group_by("question_id", maintain_order=True).len()["len"].to_numpy()
    return frame.select(FEATURES).to_numpy().astype(np.float32), frame["gold"].cast(pl.Int32).to_numpy(), sizes


def _bucket(key: str, buckets: int) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % buckets


def _in_dev(question_id: str) -> bool:
    return _bucket(question_id, 10) == 0


def question_source(question_id: str) -> str:
    """The benchmark source of a question, read from its id's prefix (benchmark/sources.py)."""
    return SOURCES.get(question_id.split("-", 1)[0], "other")


def without_prompts(rows: pl.DataFrame, prompt_ids: set[str]) -> pl.DataFrame:
    """Rows of every question but the Evidence Inference prompts named (ids `ei-<code>-<prompt id>`)."""
    held = pl.col("question_id").str.extract(EI_QUESTION.pattern).is_in(sorted(prompt_ids)).fill_null(False)
    return rows.filter(~held)


def folds_by_article(frame: pl.DataFrame, folds: int = FOLDS) -> np.ndarray:
    """Each row's fold: questions about one source article (the document of their first gold
    window; window ids are `<doc_id>-<suffix>`) share a fold, as the benchmark's splits keep them."""
    gold = frame.filter(pl.col("gold")).group_by("question_id").agg(pl.col("window_id").min())
    article = {q: w.split("-", 1)[0] for q, w in gold.iter_rows()}
    return np.array([_bucket(article.get(q, q), folds) for q in frame["question_id"].to_list()])


def fit(train: pl.DataFrame, features: list[str] | None = None) -> tuple[lgb.Booster, dict]:
    """LambdaRank on the training questions that have a gold candidate; rounds by early stopping
    on the train-dev tenth. Returns the booster (refit on all of train at that many rounds)."""
    features = list(features or FEATURES)
    with_gold = train.filter(pl.col("gold").any().over("question_id"))
    dev_mask = pl.Series([_in_dev(q) for q in with_gold["question_id"].to_list()], dtype=pl.Boolean)
    columns = [FEATURES.index(f) for f in features]

    def dataset(frame: pl.DataFrame, reference=None) -> lgb.Dataset:
        x, y, sizes = _groups(frame)
        return lgb.Dataset(
            x[:, columns], y, group=sizes, feature_name=features, reference=reference, free_raw_data=False
        )

    started = time.perf_counter()
    dev = with_gold.filter(dev_mask)
    rounds, dev_ndcg = DEFAULT_ROUNDS, None
    if dev["question_id"].n_unique() >= MIN_DEV_QUESTIONS:
        probe = lgb.train(
            PARAMS,
            dataset(with_gold.filter(~dev_mask)),
            MAX_ROUNDS,
            valid_sets=[dataset(dev)],
            callbacks=[lgb.early_stopping(PATIENCE, verbose=False)],
        )
        rounds, dev_ndcg = max(probe.best_iteration, 1), round(probe.best_score["valid_0"][f"ndcg@{K}"], 4)
    booster = lgb.train(PARAMS, dataset(with_gold), rounds)
    return booster, {
        "features": features,
        "rounds": rounds,
        "train_questions": with_gold["question_id"].n_unique(),
        "train_rows": with_gold.height,
        "train_dev_ndcg@10": dev_ndcg,
        "fit_seconds": round(time.perf_counter() - started, 1),
    }


def ranking_metrics(frame: pl.DataFrame, score: np.ndarray, k: int = K) -> dict[str, float]:
    """R@k, Hit@k and MRR of ranking each question's candidates by `score` (recall over the
    question's full gold set, `gold_total`, so gold missing from the candidates counts as missed)."""
    ranked = frame.with_columns(pl.Series("score", score)).sort(
        ["question_id", "score", "window_id"], descending=[False, True, False]
    )
    ranked = ranked.with_columns(pl.int_range(1, pl.len() + 1).over("question_id").alias("rank"))
    per_question = ranked.group_by("question_id").agg(
        (pl.col("gold") & (pl.col("rank") <= k)).sum().alias("found"),
        pl.col("gold_total").first(),
        pl.col("rank").filter(pl.col("gold")).min().alias("first"),
    )
    n = max(per_question.height, 1)
    recall = (per_question["found"] / per_question["gold_total"]).sum() / n
    hit = (per_question["found"] > 0).sum() / n
    mrr = (1.0 / per_question["first"].cast(pl.Float64)).fill_null(0.0).sum() / n
    return {
        f"R@{k}": round(float(recall), 4),
        f"Hit@{k}": round(float(hit), 4),
        "MRR": round(float(mrr), 4),
        "questions": per_question.height,
    }


def hand_set_scores(frame: pl.DataFrame) -> np.ndarray:
    """The offline hand-set fine scorer on the same rows: cos + LEXICAL_WEIGHT * coverage."""
    return (frame["cosine"] + LEXICAL_WEIGHT * frame["coverage"]).to_numpy()


def beats_hand_set(learned: dict | None, hand: dict | None) -> bool:
    """The gate: on the same validation questions, MRR higher and R@10 not lower."""
    return bool(
        learned
        and hand
        and learned["questions"]
        and learned["MRR"] > hand["MRR"]
        and learned[f"R@{K}"] >= hand[f"R@{K}"]
    )


def _comparison(frame: pl.DataFrame, learned: np.ndarray) -> dict[str, dict]:
    return {
        "learned": ranking_metrics(frame, learned),
        "hand_set": ranking_metrics(frame, hand_set_scores(frame)),
        "fused_rrf": ranking_metrics(frame, frame["rrf"].to_numpy()),
        "all candidates (recall ceiling)": ranking_metrics(frame, frame["gold"].cast(pl.Float64).to_numpy(), k=10**6),
    }


def cross_validate(rows: pl.DataFrame, key: str, folds: int = FOLDS) -> tuple[LearnedReranker, dict]:
    """Out-of-fold scores for every question of `rows` (folds by source article), compared with the
    hand-set scorer pooled and per source; the gate passes when the pooled learned MRR is higher,
    its R@10 not lower, on at least MIN_GATE_QUESTIONS questions. The model returned is fitted on all
    rows; the report's `out_of_fold` holds each row's out-of-fold score (question_id, window_id, s,
    model_key)."""
    fold = folds_by_article(rows, folds)
    matrix = rows.select(FEATURES).to_numpy()
    oof = np.zeros(rows.height)
    for f in range(folds):
        held = fold == f
        if held.any() and (~held).any():
            booster, _ = fit(rows.filter(pl.Series(~held)))
            oof[held] = booster.predict(matrix[held])
    pooled = _comparison(rows, oof)
    sources = rows["question_id"].map_elements(question_source, return_dtype=pl.String)
    per_source = {}
    for source in sorted(set(sources.to_list())):
        mask = (sources == source).to_numpy()
        per_source[source] = _comparison(rows.filter(pl.Series(mask)), oof[mask])
    booster, meta = fit(rows)
    model = LearnedReranker(booster, {**meta, "key": key})
    questions = pooled["learned"]["questions"]
    beats = passes_gate(pooled["learned"], pooled["hand_set"])
    importance = dict(zip(booster.feature_name(), booster.feature_importance("gain").round(1).tolist()))
    model.meta.update(
        beats_hand_set=beats,
        validation=pooled,
        validation_by_source=per_source,
        gate=f"{folds}-fold cross-validation by source article over {questions} questions "
        f"(at least {MIN_GATE_QUESTIONS})",
        gain=dict(sorted(importance.items(), key=lambda kv: -kv[1])),
    )
    out_of_fold = rows.select("question_id", "window_id").with_columns(
        s=pl.Series(oof, dtype=pl.Float64), model_key=pl.lit(key, pl.String)
    )
    return model, {"validation": pooled, "by_source": per_source, "out_of_fold": out_of_fold}


def passes_gate(learned: dict | None, hand: dict | None) -> bool:
    """The shipped model's gate: it beats the hand-set scorer on at least MIN_GATE_QUESTIONS questions."""
    return beats_hand_set(learned, hand) and learned["questions"] >= MIN_GATE_QUESTIONS


def gate_line(meta: dict) -> str:
    """One line that says whether the learned ranking passed its gate and on what."""
    learned, hand = meta["validation"]["learned"], meta["validation"]["hand_set"]
    verdict = "in use" if meta.get("beats_hand_set") else "NOT used (the hand-set scorer ranks)"
    return (
        f"learned reranker {verdict}: {meta.get('gate', 'validation split')}; MRR {learned['MRR']:.3f} vs hand-set "
        f"{hand['MRR']:.3f}, R@10 {learned['R@10']:.3f} vs {hand['R@10']:.3f}"
    )


def gate_by_source(meta: dict) -> list[str]:
    """The gate's out-of-fold figures per benchmark source, one line each."""
    return [
        f"  {source:<20} n={c['learned']['questions']:>4}  MRR {c['learned']['MRR']:.3f} vs hand-set "
        f"{c['hand_set']['MRR']:.3f}, R@10 {c['learned']['R@10']:.3f} vs {c['hand_set']['R@10']:.3f}"
        for source, c in meta.get("validation_by_source", {}).items()
    ]


def train_and_validate(
    train: pl.DataFrame, validation: pl.DataFrame, key: str, ablate: tuple[str, ...] = ()
) -> tuple[LearnedReranker, dict]:
    """Fit on train, compare with the hand-set scorer (and the fused RRF order) on validation, and
    refit without each feature group in `ablate` to report what it adds."""
    booster, meta = fit(train)
    model = LearnedReranker(booster, {**meta, "key": key})
    report = {"validation": _comparison(validation, model.score(validation.select(FEATURES).to_numpy()))}
    for group in ablate:
        kept = [f for f in FEATURES if not f.startswith(group)]
        booster_wo, _ = fit(train, kept)
        without = LearnedReranker(booster_wo, {"features": kept})
        report["validation"][f"learned without {group}*"] = ranking_metrics(
            validation, without.score(validation.select(FEATURES).to_numpy())
        )
    beats = beats_hand_set(report["validation"]["learned"], report["validation"]["hand_set"])
    importance = dict(zip(booster.feature_name(), booster.feature_importance("gain").round(1).tolist()))
    model.meta.update(
        beats_hand_set=beats,
        validation=report["validation"],
        gain=dict(sorted(importance.items(), key=lambda kv: -kv[1])),
    )
    return model, report
