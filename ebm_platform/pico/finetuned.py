"""The PICO tagger fine-tuned end to end: the bundled MiniLM with a token-classification layer
(none / P / I / O per word piece), trained on EBM-NLP's crowd-labelled abstracts.

A word's label is read from its first word piece (the only piece trained with a label). Training
texts are cut at word boundaries into runs of at most `chunk_words` words (and 254 pieces, the
model's sentence length); tagging reads any text in the same runs. Training runs in PyTorch (bf16
autocast where the CPU computes bf16 natively); tagging runs the same weights through OpenVINO,
converted once per environment beside the embedder (and quantized to INT8 there, as the embedder
is, unless EBM_EMBEDDING_BACKEND says otherwise: `inference`). The per-class bias is fitted on the dev
tenth after the last epoch (the number of epochs is fixed, not chosen on dev).

In a trial on the dev tenth (docs/pico.md) this reached macro F1 0.680 over P, I and O on
EBM-NLP's own tokens, where the best head over the frozen encoder's token vectors reached 0.656.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ebm_platform.atomic import write_text_atomic
from ebm_platform.bundled_model import BUNDLED, model_path
from ebm_platform.index.embeddings import (
    INT8,
    Encoder,
    OpenVinoForward,
    calibration_texts,
    convert_openvino,
    default_backend,
    export_dir,
    forward_batched,
    output_module,
    quantized_openvino,
    quiet_transformers,
)
from ebm_platform.pico.distant import Example
from ebm_platform.pico.spans import CLASSES, Words
from ebm_platform.pico.tagger import META_FILE, PicoTagger, class_bias, macro_f1, piece_words, read_meta

HEAD = "finetuned"
WEIGHTS_FILE = "model.safetensors"
MAX_PIECES = 254  # word pieces per run, [CLS] and [SEP] aside (the model's sentence length, 256)
PROGRESS_STEPS = 50


@dataclass(frozen=True)
class FineTuneParams:
    head: str = HEAD
    epochs: int = 3
    batch: int = 8
    learning_rate: float = 8e-5  # AdamW, linear warm-up over `warmup` of the steps, then linear decay to 0
    warmup: float = 0.06
    weight_decay: float = 0.01
    chunk_words: int = 180
    min_steps: int = 60  # small training sets (tests' samples) take more epochs to reach this many steps
    seed: int = 13


@dataclass(frozen=True)
class Run:
    """One run of a text's word pieces as the model reads it."""

    ids: list[int]  # [CLS] pieces [SEP]
    words: np.ndarray  # per id, the word whose first piece it is (-1: special, or a later piece)


def runs_of(tokenizer, words: Words, chunk_words: int) -> list[Run]:
    """A text's word pieces, cut at word starts into runs of at most `chunk_words` words and
    MAX_PIECES pieces; each run wrapped in [CLS] ... [SEP]."""
    encoded = tokenizer(words.text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    ids = encoded["input_ids"]
    owner = piece_words(words, np.asarray(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2))
    first = (owner >= 0) & np.concatenate([[True], owner[1:] != owner[:-1]])
    out, start, count = [], 0, 0
    for k in range(len(ids) + 1):
        starts_word = k == len(ids) or first[k]
        if starts_word and k > start and (k == len(ids) or count == chunk_words or k - start >= MAX_PIECES):
            out.append(_run(tokenizer, ids, owner, first, start, k))
            start, count = k, 0
        if k < len(ids) and first[k]:
            count += 1
        while k + 1 - start > MAX_PIECES:  # one word longer than a run: cut inside it
            out.append(_run(tokenizer, ids, owner, first, start, start + MAX_PIECES))
            start += MAX_PIECES
    return out


def _run(tokenizer, ids: list[int], owner: np.ndarray, first: np.ndarray, start: int, end: int) -> Run:
    marked = np.where(first[start:end], owner[start:end], -1)
    return Run([tokenizer.cls_token_id, *ids[start:end], tokenizer.sep_token_id], np.concatenate([[-1], marked, [-1]]))


def word_probabilities(logits: Sequence[np.ndarray], runs: Sequence[Run], n_words: int, bias: np.ndarray) -> np.ndarray:
    """(n_words, len(CLASSES)) softmax of each word's first-piece logits plus `bias`; a word with no
    piece of its own is "none"."""
    probs = np.zeros((n_words, len(CLASSES)), dtype=np.float32)
    probs[:, 0] = 1.0
    for scores, run in zip(logits, runs):
        marked = run.words >= 0
        z = scores[marked].astype(np.float32) + bias
        z = np.exp(z - z.max(1, keepdims=True))
        probs[run.words[marked]] = z / z.sum(1, keepdims=True)
    return probs


def _bf16(torch) -> bool:
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def _token_classifier(folder: str):
    """MiniLM with a token-classification layer over CLASSES (new when `folder` is the bundled model)."""
    from transformers import AutoModelForTokenClassification

    with quiet_transformers():
        return AutoModelForTokenClassification.from_pretrained(folder, num_labels=len(CLASSES))


class _Logits:
    """The torch model as a forward function (training's dev figures)."""

    def __init__(self, model) -> None:
        import torch

        self.torch, self.model = torch, model

    def __call__(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        torch = self.torch
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=_bf16(torch)):
            out = self.model(
                input_ids=torch.from_numpy(ids),
                attention_mask=torch.from_numpy(mask),
                token_type_ids=torch.from_numpy(types),
            ).logits
        return out.float().numpy()


class FineTunedTagger:
    """Fine-tuned MiniLM weights with their tokenizer and provenance; `label_texts` gives the word
    labels of texts (as `PicoTagger.label_texts` does)."""

    def __init__(self, folder: Path, meta: dict, forward=None, tokenizer=None) -> None:
        from transformers import AutoTokenizer

        self.folder, self.meta = Path(folder), meta
        self.params = FineTuneParams(**meta["params"])
        self.tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(folder))
        self.bias = np.asarray(meta.get("class_bias", [0.0] * len(CLASSES)), dtype=np.float32)
        self._forward = forward
        self.inference = INT8 if default_backend() == INT8 else "openvino"  # bf16 where the CPU has it

    @property
    def forward(self) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
        """The weights on OpenVINO (converted once per environment, keyed by the weights' hash; then
        quantized to INT8 when `inference` says so, calibrated on the texts the encoder's INT8 is)."""
        if self._forward is None:
            import openvino as ov

            digest = hashlib.sha256()
            with open(self.folder / WEIGHTS_FILE, "rb") as weights:
                while block := weights.read(1 << 20):
                    digest.update(block)
            target = export_dir() / "pico_tagger_openvino" / f"{digest.hexdigest()[:16]}-ov{ov.__version__}"
            with quiet_transformers():
                xml = convert_openvino(target, lambda: output_module(_token_classifier(str(self.folder)), "logits"))
            if self.inference == INT8:
                xml = quantized_openvino(xml, self._calibration_ids, self.tokenizer.pad_token_id)
            self._forward = OpenVinoForward(xml)
        return self._forward

    def _calibration_ids(self) -> list[list[int]]:
        """The calibration texts in the runs the tagger reads."""
        return [
            run.ids
            for text in calibration_texts()
            for run in runs_of(self.tokenizer, Words.of(text), self.params.chunk_words)
        ]

    # ---- training --------------------------------------------------------------------------
    @classmethod
    def train(
        cls,
        folder: Path,
        examples: list[Example],
        dev: list[int],
        params: FineTuneParams = FineTuneParams(),
        progress: Callable[[str], None] | None = None,
    ) -> FineTunedTagger:
        """Fine-tune the bundled MiniLM on every example but `dev` for `params.epochs` epochs (more when
        that is under `min_steps` steps), report dev macro F1 after each, fit the class bias on dev,
        and save the weights to `folder`. The tagger returned infers as every lake's tagging does
        (OpenVINO, `inference`), so its validation figures are those of the weights as shipped."""
        import torch
        from transformers import AutoTokenizer

        torch.manual_seed(params.seed)
        rng = np.random.default_rng(params.seed)
        base = model_path(BUNDLED)
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = _token_classifier(base)
        held = set(dev)
        chunks = [
            (run.ids, [int(e.labels[w]) if w >= 0 else -100 for w in run.words])
            for i, e in enumerate(examples)
            if i not in held
            for run in runs_of(tokenizer, e.words, params.chunk_words)
        ]
        if not chunks:
            raise ValueError("no training texts outside the dev set")
        optimiser = torch.optim.AdamW(model.parameters(), lr=params.learning_rate, weight_decay=params.weight_decay)
        epochs = max(params.epochs, -(-params.min_steps // -(-len(chunks) // params.batch)))
        steps = epochs * -(-len(chunks) // params.batch)
        warm = max(1.0, params.warmup * steps)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda s: min(1.0, (s + 1) / warm) * (steps - s) / steps
        )
        dev_examples = [examples[i] for i in dev]
        curve, step, started = [], 0, time.perf_counter()
        for epoch in range(1, epochs + 1):
            model.train()
            order = rng.permutation(len(chunks))
            for start in range(0, len(chunks), params.batch):
                chosen = [chunks[i] for i in order[start : start + params.batch]]
                width = max(len(ids) for ids, _ in chosen)
                ids = torch.zeros((len(chosen), width), dtype=torch.long)
                mask = torch.zeros_like(ids)
                labels = torch.full_like(ids, -100)
                for row, (piece_ids, piece_labels) in enumerate(chosen):
                    ids[row, : len(piece_ids)] = torch.tensor(piece_ids)
                    mask[row, : len(piece_ids)] = 1
                    labels[row, : len(piece_labels)] = torch.tensor(piece_labels)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=_bf16(torch)):
                    logits = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).logits
                loss = torch.nn.functional.cross_entropy(
                    logits.float().reshape(-1, len(CLASSES)), labels.reshape(-1), ignore_index=-100
                )
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimiser.step()
                schedule.step()
                optimiser.zero_grad()
                step += 1
                if progress and step % PROGRESS_STEPS == 0:
                    progress(
                        f"pico tagger fine-tuning step {step}/{steps}: loss {loss.item():.3f} "
                        f"({time.perf_counter() - started:.0f} s)"
                    )
            model.eval()
            tagger = cls(folder, {"params": asdict(params)}, _Logits(model), tokenizer)
            macro = macro_f1([e.labels for e in dev_examples], tagger.label_words([e.words for e in dev_examples]))
            curve.append(
                {"epoch": epoch, "dev_macro_f1": round(macro, 4), "seconds": round(time.perf_counter() - started, 1)}
            )
            if progress:
                progress(
                    f"pico tagger epoch {epoch}/{epochs}: dev macro F1 {macro:.3f} "
                    f"({time.perf_counter() - started:.0f} s)"
                )
        probabilities = tagger.probabilities([e.words for e in dev_examples])
        bias = class_bias(probabilities, [e.labels for e in dev_examples])
        meta = {
            "params": asdict(params),
            "curve": curve,
            "dev_articles": len(dev),
            "fit_articles": len(examples) - len(dev),
            "fit_runs": len(chunks),
            "epochs": epochs,
            "dev_macro_f1": curve[-1]["dev_macro_f1"],
            "class_bias": bias,
            "bf16_training": _bf16(torch),
        }
        folder.mkdir(parents=True, exist_ok=True)
        with quiet_transformers():
            model.save_pretrained(str(folder), safe_serialization=True)
            tokenizer.save_pretrained(str(folder))
        write_text_atomic(folder / META_FILE, json.dumps(meta, indent=2))
        return cls(folder, meta, tokenizer=tokenizer)  # reports read the saved weights as tagging does

    # ---- inference -------------------------------------------------------------------------
    def probabilities(self, words: Sequence[Words]) -> list[np.ndarray]:
        """(n_words, len(CLASSES)) class probabilities (after the class bias) per text."""
        runs = [runs_of(self.tokenizer, w, self.params.chunk_words) for w in words]
        flat = [run.ids for text in runs for run in text]
        logits = iter(forward_batched(self.forward, flat, self.tokenizer.pad_token_id) if flat else [])
        return [
            word_probabilities([next(logits) for _ in text], text, len(w), self.bias) for w, text in zip(words, runs)
        ]

    def label_words(self, words: Sequence[Words]) -> list[np.ndarray]:
        """Each text's word labels (indices into CLASSES)."""
        return [p.argmax(1) for p in self.probabilities(words)]

    def label_texts(self, texts: Sequence[str], encoder: Encoder | None = None) -> list[tuple[Words, np.ndarray]]:
        """The words and word labels of raw texts (`encoder` unused: the tagger reads the text itself,
        as `PicoTagger.label_texts` is called)."""
        words = [Words.of(text) for text in texts]
        return list(zip(words, self.label_words(words)))

    def save(self, folder: Path, meta: dict) -> None:
        """meta.json with `meta` added (the weights were saved where training ran: `folder`)."""
        if Path(folder) != self.folder:
            raise ValueError(f"a fine-tuned tagger is saved where it was trained ({self.folder}), not {folder}")
        self.meta = {**self.meta, **meta}
        write_text_atomic(Path(folder) / META_FILE, json.dumps(self.meta, indent=2, default=str))

    @classmethod
    def load(cls, folder: Path) -> FineTunedTagger:
        if not (Path(folder) / WEIGHTS_FILE).is_file():
            raise FileNotFoundError(f"no fine-tuned PICO tagger weights at {folder}")
        return cls(Path(folder), read_meta(folder))


def load_tagger(folder: Path) -> FineTunedTagger | PicoTagger:
    """The tagger saved in `folder`, of whichever kind its meta names."""
    if read_meta(folder).get("params", {}).get("head") == HEAD:
        return FineTunedTagger.load(folder)
    return PicoTagger.load(folder)


def usable_tagger(folder: Path) -> FineTunedTagger | PicoTagger | None:
    """The saved tagger when it beat the rules on validation, else None (the rules run)."""
    return load_tagger(folder) if read_meta(folder).get("beats_rules") else None
