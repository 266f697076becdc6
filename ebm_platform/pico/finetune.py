"""Fine-tune the bundled MiniLM on the distant PICO labels, so the tagger reads token vectors made for the task.

The bundled MiniLM was trained for sentence similarity; its token vectors, read as they are, limit
the head (validation token macro F1 over I and O: 0.469 with the head's word labels, 0.521 with
entity selection). Here its weights are trained further, for a few epochs, under a linear word-piece
classifier over [the piece's hidden state, its word's rule/shape/salience features] with the class
weights of the head. Texts are cut into segments exactly as `Encoder.encode_windows` cuts them
(`Encoder.plan`), so the tuned model is read the same way at training and at inference. The epoch
with the best dev F1 (the tagger's dev tenth of the train articles) is kept and saved as a
sentence-transformers folder beside the tagger: `Encoder` loads it (and converts it to OpenVINO)
like the bundled model, and the head is then trained on its token vectors (`PicoTagger.train`).
Training uses bf16 autocast where the CPU computes in bf16 (the bundled encoder's OpenVINO plugin
chose bf16), else float32.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from ebm_platform.index.embeddings import Encoder
from ebm_platform.pico.spans import CLASSES, Words, macro_f1, token_scores
from ebm_platform.pico.tagger import TaggerParams, piece_words

_WEIGHTS = (".safetensors", ".bin")


def segments(encoder: Encoder, words: Sequence[Words],
             prefixes: Sequence[int]) -> list[tuple[int, list[int], np.ndarray]]:
    """(text index, segment ids, the word each position lies in or -1) for every segment the
    encoder reads of each text ([CLS], [SEP] and a later segment's repeated context are -1)."""
    encoded, cut, owner, contexts = encoder.plan([w.text for w in words], list(prefixes))
    out, seen = [], [0] * len(words)
    for ids, t in zip(cut, owner):
        skip = 1 if not seen[t] else 1 + contexts[t]
        content = len(ids) - 1 - skip
        offsets = np.asarray(encoded["offset_mapping"][t][seen[t]:seen[t] + content], dtype=np.int64).reshape(-1, 2)
        where = np.full(len(ids), -1, dtype=np.int64)
        where[skip:skip + content] = piece_words(words[t], offsets)
        seen[t] += content
        out.append((t, ids, where))
    return out


class _Model:
    """The transformer with a linear classifier over [hidden state, word features] per position."""

    def __init__(self, path: str, extra: int) -> None:
        import torch
        from transformers import AutoModel

        self.torch = torch
        self.encoder = AutoModel.from_pretrained(path)
        self.classifier = torch.nn.Linear(self.encoder.config.hidden_size + extra, len(CLASSES))
        self.drop = torch.nn.Dropout(0.1)

    def logits(self, batch: list[tuple[int, list[int], np.ndarray]], extras: Sequence[np.ndarray]):
        torch = self.torch
        width = max(len(ids) for _, ids, _ in batch)
        ids = torch.zeros(len(batch), width, dtype=torch.long)
        mask = torch.zeros(len(batch), width, dtype=torch.long)
        extra = torch.zeros(len(batch), width, extras[0].shape[1])
        for row, (t, segment, where) in enumerate(batch):
            ids[row, : len(segment)] = torch.tensor(segment)
            mask[row, : len(segment)] = 1
            inside = torch.from_numpy(where >= 0)
            extra[row, : len(segment)][inside] = torch.from_numpy(extras[t][where[where >= 0]])
        hidden = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        return self.classifier(self.drop(torch.cat([hidden, extra.to(hidden.dtype)], -1))).float()


def _word_probabilities(model: _Model, cut, extras, words: Sequence[Words], precision) -> list[np.ndarray]:
    """Per text, each word's class probabilities: the mean of its pieces' log-probabilities."""
    torch = model.torch
    sums = [np.zeros((len(w), len(CLASSES))) for w in words]
    counts = [np.zeros(len(w)) for w in words]
    model.encoder.eval()
    model.drop.eval()
    with torch.no_grad(), precision():
        for start in range(0, len(cut), 32):
            batch = cut[start:start + 32]
            logp = torch.log_softmax(model.logits(batch, extras), -1).numpy()
            for row, (t, segment, where) in enumerate(batch):
                inside = where >= 0
                np.add.at(sums[t], where[inside], logp[row, : len(segment)][inside])
                np.add.at(counts[t], where[inside], 1)
    return [np.exp(s / np.maximum(c, 1)[:, None]) for s, c in zip(sums, counts)]


def fine_tune(base: Encoder, words: Sequence[Words], prefixes: Sequence[int], extras: Sequence[np.ndarray],
              labels: Sequence[np.ndarray], fit: Sequence[int], dev: Sequence[int], target: Path,
              params: TaggerParams = TaggerParams(), progress: Callable[[str], None] | None = None) -> dict:
    """Train a copy of `base`'s transformer on the `fit` texts (word labels and word features
    `extras`), keep the epoch with the best dev macro F1 and save it as a model folder at `target`
    (atomically); returns the training curve."""
    import torch

    torch.manual_seed(params.seed)
    rng = np.random.default_rng(params.seed)
    model = _Model(base.spec.path, extras[0].shape[1])
    bf16 = base.forward.precision == "bf16"

    def precision():
        return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext()

    fit_set = set(fit)
    plan = segments(base, words, prefixes)
    train_cut = [s for s in plan if s[0] in fit_set]
    dev_index = {t: k for k, t in enumerate(dev)}
    dev_cut = [(dev_index[t], ids, where) for t, ids, where in plan if t in dev_index]
    dev_words, dev_extras = [words[t] for t in dev], [extras[t] for t in dev]
    steps = params.encoder_epochs * math.ceil(len(train_cut) / params.encoder_batch)
    optimiser = torch.optim.AdamW([{"params": model.encoder.parameters(), "lr": params.encoder_learning_rate},
                                   {"params": model.classifier.parameters(), "lr": params.learning_rate}],
                                  weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(1.0, (s + 1) / 50) * max(0.0, 1 - s / steps))
    weights = torch.tensor([1.0] + [params.class_weight] * (len(CLASSES) - 1))
    loss_fn = torch.nn.CrossEntropyLoss(weight=weights, ignore_index=-100)
    best, best_state, curve = -1.0, None, []
    for epoch in range(1, params.encoder_epochs + 1):
        started, total = time.perf_counter(), 0.0
        model.encoder.train()
        model.drop.train()
        order = rng.permutation(len(train_cut))
        for start in range(0, len(order), params.encoder_batch):
            batch = [train_cut[i] for i in order[start:start + params.encoder_batch]]
            with precision():
                logits = model.logits(batch, extras)
            target_labels = torch.full(logits.shape[:2], -100, dtype=torch.long)
            for row, (t, segment, where) in enumerate(batch):
                inside = where >= 0
                known = torch.from_numpy(labels[t][where[inside]])
                target_labels[row, : len(segment)][torch.from_numpy(inside)] = known
            loss = loss_fn(logits.reshape(-1, len(CLASSES)), target_labels.reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_([*model.encoder.parameters(), *model.classifier.parameters()], 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            total += loss.item() * len(batch)
        probs = _word_probabilities(model, dev_cut, dev_extras, dev_words, precision)
        macro = macro_f1(token_scores([labels[t] for t in dev], [p.argmax(1) for p in probs]))
        curve.append({"epoch": epoch, "loss": round(total / max(len(train_cut), 1), 4),
                      "dev_macro_f1": round(macro, 4)})
        if progress:
            progress(f"MiniLM fine-tuning epoch {epoch}/{params.encoder_epochs}: loss {curve[-1]['loss']:.4f}, "
                     f"dev macro F1 {macro:.3f} ({time.perf_counter() - started:.0f} s, {len(train_cut)} segments, "
                     f"{'bf16' if bf16 else 'f32'})")
        if macro > best:
            best, best_state = macro, {k: v.clone() for k, v in model.encoder.state_dict().items()}
    model.encoder.load_state_dict(best_state)
    save_model(model.encoder, Path(base.spec.path), target)
    return {"curve": curve, "best_epoch": max(curve, key=lambda c: c["dev_macro_f1"])["epoch"],
            "best_dev_macro_f1": round(best, 4), "segments": len(train_cut), "precision": "bf16" if bf16 else "f32"}


def save_model(encoder, base: Path, target: Path) -> None:
    """The tuned transformer as a model folder: the base folder's tokenizer and sentence-transformers
    files with the new weights and config, staged and renamed into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".encoder-"))
    try:
        shutil.copytree(base, staging, dirs_exist_ok=True, ignore=lambda folder, names: [
            n for n in names if Path(folder) == base and (n.endswith(_WEIGHTS) or n == "config.json")])
        encoder.save_pretrained(str(staging))
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
