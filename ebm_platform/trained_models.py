"""The environment's trained models: the PICO tagger, the verdict model and the closed-question reader,
each trained once per environment from the shared datasets, kept beside the converted embedder under a
key of its inputs (data, code, encoder, parameters, training limit) and copied into each lake that needs it. One
process trains a given key at a time; the others wait for it and then reuse its model."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from ebm_platform.atomic import exclusive_lock
from ebm_platform.evaluation import closed_training, verdict_training
from ebm_platform.evaluation.verdict_training import train_verdict_model
from ebm_platform.index.embeddings import Encoder, export_dir
from ebm_platform.pico.finetuned import FineTuneParams
from ebm_platform.pico.tagger import TaggerParams, cache_path, copy_tagger, read_meta
from ebm_platform.pico.training import train_and_validate, training_key
from ebm_platform.retrieval.closed_answer import ClosedAnswerModel
from ebm_platform.retrieval.verdict import VerdictModel, verdict_path

M = TypeVar("M", VerdictModel, ClosedAnswerModel)  # a model the environment caches by key
TRAINING_DATA = "EBM-NLP training subset (960 crowd-labelled abstracts; a seeded tenth held out as dev)"


def ensure_tagger(
    folder: Path,
    datasets_dir: Path,
    encoder: Encoder,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
    params: FineTuneParams | TaggerParams = FineTuneParams(),
) -> tuple[dict, str]:
    """The tagger in `folder` for these inputs: kept when its key matches, else copied from the
    environment's cache (trained by another lake from the same inputs), else trained and, when it
    beats the rules, cached for the environment's other lakes. Returns its meta and where it came
    from ("reused from this lake", "copied from ...", "trained")."""
    key = training_key(datasets_dir, encoder.description, limit, params)
    with training_lock("pico_tagger", key):
        return _tagger_in(folder, key, datasets_dir, encoder, limit, progress, params)


def _tagger_in(
    folder: Path,
    key: str,
    datasets_dir: Path,
    encoder: Encoder,
    limit: int | None,
    progress: Callable[[str], None] | None,
    params: FineTuneParams | TaggerParams,
) -> tuple[dict, str]:
    """`ensure_tagger` under its training lock."""
    cached = cache_path(key)
    source = "reused from this lake"
    if read_meta(folder).get("key") != key and read_meta(cached).get("key") == key:
        copy_tagger(cached, folder)
        source = f"copied from {cached}"
    meta = read_meta(folder)
    if meta.get("key") == key:
        return meta, source
    tagger, report = train_and_validate(folder, datasets_dir, encoder, params, limit, progress)
    meta = {
        "key": key,
        "validation": report,
        "beats_rules": report["learned_minus_rules_macro_f1"] > 0,
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "training_data": TRAINING_DATA,
    }
    tagger.save(folder, meta)
    if meta["beats_rules"]:  # only a tagger that passed its check serves other lakes
        copy_tagger(folder, cached)
    return meta, "trained"


def ensure_environment_models(
    datasets_dir: Path, encoder: Encoder, progress: Callable[[str], None] | None = None, limit: int | None = None
) -> list[str]:
    """Train (or find) the environment's tagger, verdict model and closed-question reader, so that every
    lake, test and demo afterwards copies them instead of training; one line per model on what happened."""
    key = training_key(datasets_dir, encoder.description, limit)
    meta, source = read_meta(cache_path(key)), f"trained earlier in this environment ({cache_path(key)})"
    if meta.get("key") != key:  # not cached yet: train (the cache receives only a tagger that passed)
        with tempfile.TemporaryDirectory() as folder:
            meta, source = ensure_tagger(Path(folder), datasets_dir, encoder, limit, progress)
    sample = f", trained on a sample (training limit {limit})" if limit else ""
    lines = [
        f"PICO tagger {meta['key']}: {source} (EBM-NLP dev macro F1 over P, I, O "
        f"{meta['validation']['learned']['macro_f1']:.3f} on {meta['validation'].get('inference', 'openvino')}, "
        f"rules {meta['validation']['rules']['macro_f1']:.3f}"
        f"{'' if meta['beats_rules'] else '; it does not beat the rules, so lakes will not use it'}{sample})"
    ]
    verdict = cached_verdict_model(datasets_dir, encoder, progress, limit)
    spans = verdict.meta["validation_spans"]
    lines.append(
        f"verdict model {verdict.meta['key']}: ready (validation span macro F1 "
        f"{spans['learned']['macro_f1']:.3f}, with the question's arms exchanged "
        f"{spans['learned, the arms exchanged in the question']['macro_f1']:.3f} (the sentence alone "
        f"{spans['sentence alone, the arms exchanged']['macro_f1']:.3f}), majority class "
        f"{spans['majority class']['macro_f1']:.3f}{sample})"
    )
    closed = cached_closed_model(datasets_dir, verdict, progress)
    report = closed.meta["cross_validation"]
    lines.append(
        f"closed-question reader {closed.meta['key']}: ready (10-fold cross-validated on {report['questions']} "
        f"PubMedQA questions: accuracy {report['learned']['accuracy']:.3f}, macro-F1 "
        f"{report['learned']['macro_f1']:.3f}; majority class {report['majority class']['accuracy']:.3f} / "
        f"{report['majority class']['macro_f1']:.3f})"
    )
    return lines


def training_lock(name: str, key: str) -> AbstractContextManager[None]:
    """Held while one process trains (or finds) the environment's `name` model for `key`."""
    return exclusive_lock(export_dir() / name / f"{key}.lock")


def cached_verdict_model(
    datasets_dir: Path, encoder: Encoder, progress: Callable[[str], None] | None = None, limit: int | None = None
) -> VerdictModel:
    """The verdict model for this code, data, encoder and training limit: trained once per
    environment (about 16 minutes on two cores without a limit, most of it embedding article
    sentences) and kept by its key beside the environment's converted models, as the PICO tagger is."""
    key = verdict_training.training_key(datasets_dir, encoder.description, limit)
    return _cached(
        "verdict_model",
        key,
        VerdictModel,
        lambda: train_verdict_model(datasets_dir, encoder, progress, limit),
        progress,
    )


def cached_closed_model(
    datasets_dir: Path, verdict: VerdictModel, progress: Callable[[str], None] | None = None
) -> ClosedAnswerModel:
    """The closed-question reader for this verdict model, code and PubMedQA file: fitted and
    cross-validated once per environment (8 s of every demo's models run before) and kept by its key
    beside the verdict model."""
    key = closed_training.training_key(datasets_dir, verdict.meta["key"])
    return _cached(
        "closed_answer_model",
        key,
        ClosedAnswerModel,
        lambda: closed_training.train_closed_model(datasets_dir, verdict),
        progress,
    )


def _cached(name: str, key: str, kind: type[M], train: Callable[[], M], progress: Callable[[str], None] | None) -> M:
    """The environment's `name` model for `key` (`kind.load` from its folder), trained by `train` and saved
    there when it is missing or has another key; one process trains a key at a time (`training_lock`)."""
    folder = export_dir() / name / key
    with training_lock(name, key):
        model = kind.load(folder)
        if model is None or model.meta.get("key") != key:
            model = train()
            model.meta["key"] = key
            model.save(folder)
        elif progress:
            progress(f"{name}: trained earlier in this environment ({folder})")
    return model


def ensure_verdict_model(
    lake: Path,
    datasets_dir: Path,
    encoder: Encoder,
    progress: Callable[[str], None] | None = None,
    limit: int | None = None,
) -> VerdictModel:
    """The lake's verdict model, replaced when missing or trained by other code, data, encoder or limit."""
    model = VerdictModel.load(verdict_path(lake))
    if model is None or model.meta.get("key") != verdict_training.training_key(
        datasets_dir, encoder.description, limit
    ):
        model = cached_verdict_model(datasets_dir, encoder, progress, limit)
        model.save(verdict_path(lake))
    return model
