"""The learned PICO span tagger: MiniLM token embeddings, a word embedding, rule and shape
features, a BiLSTM head.

Per word the features are the mean of its word pieces' contextual MiniLM vectors (the same
float16, L2-normalised token embeddings the window index stores for MaxSim, so tagging a lake's
windows costs no second encoder pass), its id in the training texts' vocabulary (a learned
64-dimensional embedding), five flags from the offline rules (the word lies in a rule
Intervention, Comparator, Outcome, Condition or Timepoint name), four shape flags and eight
features of where the word stands in its text (`salience`: how often it and its stem recur,
whether the title holds it, how often it recurs in sentences that report a result, its rarity in
the training texts). A bidirectional LSTM reads the words of a text and gives one of none/P/I/O
per word (the EBM-NLP classes), after a per-class bias fitted on the dev texts; runs of P are the
population spans, and the runs of I and O are candidate names that `selection.EntitySelector`
keeps or drops and marks wherever they occur.

Training uses EBM-NLP's crowd-labelled abstracts (`ebm_nlp.py`); the epoch, the class bias and the
entity selector are chosen on the seeded dev tenth. In trials on EBM-NLP's dev tenth the earlier
convolutional head (kept as `head="conv"` for taggers saved before) reached 0.576 macro F1, the
BiLSTM 0.614 and the BiLSTM with the word embedding 0.638 (`docs/pico.md`).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from ebm_platform.atomic import atomic_path, write_text_atomic
from ebm_platform.graph import pico_rules
from ebm_platform.index.embeddings import Encoder, export_dir
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.pico.distant import Projector
from ebm_platform.pico.selection import EntitySelector
from ebm_platform.pico.spans import CLASSES, INNER, SENTENCE_END, Words, name_spans, token_scores

RULE_CLASSES = {"Intervention": 0, "Arm": 0, "Comparator": 1, "Outcome": 2, "Condition": 3, "Timepoint": 4}
SHAPES = 4
SALIENCE = 8
WORD_DROPOUT = 0.1
_RESULT = re.compile(r"signific|\bp\s*[<=>]|\d\s*%|\bci\b|differ", re.I)
MODEL_FILE, RARITY_FILE, SELECTOR_FILE, META_FILE = "model.pt", "rarity.json", "selector.json", "meta.json"


@dataclass(frozen=True)
class TaggerParams:
    head: str = "lstm"  # "lstm" or "conv" (see `_network`)
    word_dim: int = 64  # size of the learned word embedding (0: none)
    hidden: int = 256
    kernel: int = 5
    epochs: int = 18  # cosine-decayed learning rate; the best dev epoch is kept (at a constant rate: 11 of 15)
    class_weight: float = 1.0  # loss weight of P, I and O against none (the class bias tunes recall afterwards)
    batch: int = 16
    learning_rate: float = 2e-3
    dropout: float = 0.2
    seed: int = 13
    dev_share: float = 0.1


def piece_words(words: Words, offsets: np.ndarray) -> np.ndarray:
    """For each word piece (character offsets), the index of the word it lies in (-1: none)."""
    if not len(words) or not len(offsets):
        return np.full(len(offsets), -1, dtype=np.int64)
    index = np.searchsorted(words.ends, offsets[:, 0], side="right")
    index = np.minimum(index, len(words) - 1)
    inside = (
        (words.starts[index] <= offsets[:, 0]) & (offsets[:, 0] < words.ends[index]) & (offsets[:, 1] > offsets[:, 0])
    )
    return np.where(inside, index, -1)


def rule_flags(words: Words) -> np.ndarray:
    """(n, 5) flags: the word lies in a name the offline rules extract, by rule class."""
    flags = np.zeros((len(words), len(set(RULE_CLASSES.values()))), dtype=np.float32)
    found = pico_rules.extract(words.text).entities
    for start, end, column in name_spans(
        words.text, [(e["name"], str(RULE_CLASSES[e["type"]])) for e in found if e["type"] in RULE_CLASSES]
    ):
        i, j = words.index_of_chars(start, end)
        flags[i:j, int(column)] = 1.0
    return flags


def shape_flags(words: Words) -> np.ndarray:
    """(n, 4): capitalised, all capitals (an abbreviation), has a digit, punctuation."""
    return np.array(
        [
            [t[:1].isupper(), len(t) > 1 and t.isupper(), any(c.isdigit() for c in t), not t[:1].isalnum()]
            for t in words.tokens
        ],
        dtype=np.float32,
    ).reshape(-1, SHAPES)


@dataclass(frozen=True)
class Rarity:
    """Document frequencies of lower-cased words over the training articles."""

    df: dict[str, int]
    documents: int

    @cached_property
    def vocabulary(self) -> dict[str, int]:
        """Lower-cased words in at least two training texts -> ids from 2 (0 pads, 1 is any other word)."""
        return {w: i for i, w in enumerate(sorted(w for w, n in self.df.items() if n >= 2), 2)}

    def word_ids(self, words: Words) -> np.ndarray:
        """(n, 1) float32 column of each word's vocabulary id (1: not in the vocabulary)."""
        return np.array([self.vocabulary.get(t.lower(), 1) for t in words.tokens], dtype=np.float32).reshape(-1, 1)

    def idf(self, word: str) -> float:
        """Inverse document frequency scaled to [0, 1] (1: never seen in training)."""
        return math.log((self.documents + 1) / (1 + self.df.get(word, 0))) / math.log(self.documents + 1)

    def projector(self) -> Projector:
        """The training labels' projection, with the same document frequencies."""
        return Projector(Counter(self.df), self.documents)


def salience(words: Words, rarity: Rarity) -> np.ndarray:
    """(n, SALIENCE): log counts in the text of the word and of its first five letters, the word is
    in the title (the text's first sentence), its relative position, its sentence reports a result
    (significance, p, %, CI, difference), log count of the word in such sentences, a function word,
    and its idf over the training articles."""
    lower = [t.lower() for t in words.tokens]
    n = len(lower)
    sentence = np.cumsum([0] + [t in SENTENCE_END for t in words.tokens[:-1]]).tolist() if n else []
    first, last = {}, {}
    for i, k in enumerate(sentence):
        first.setdefault(k, i)
        last[k] = i
    reports = {k: bool(_RESULT.search(words.text[words.starts[first[k]] : words.ends[last[k]]])) for k in first}
    in_result = [reports[k] for k in sentence]
    count, stems = Counter(lower), Counter(w[:5] for w in lower)
    result_count = Counter(w for w, r in zip(lower, in_result) if r)
    title = {w for w, k in zip(lower, sentence) if k == 0}
    return np.array(
        [
            [
                math.log1p(count[w]) / 3,
                math.log1p(stems[w[:5]]) / 3,
                w in title,
                i / n,
                r,
                math.log1p(result_count[w]) / 3,
                w in INNER,
                rarity.idf(w),
            ]
            for i, (w, r) in enumerate(zip(lower, in_result))
        ],
        dtype=np.float32,
    ).reshape(-1, SALIENCE)


def features(
    words: Words, tokens: np.ndarray, offsets: np.ndarray, rarity: Rarity, word_ids: bool = True
) -> np.ndarray:
    """(n_words, dim + 17) float32 features of a text from its piece vectors and offsets; with
    `word_ids`, a first column (dim + 18 in all) holds each word's vocabulary id (read by the head's
    word embedding)."""
    dim = tokens.shape[1]
    owner = piece_words(words, offsets)
    keep = owner >= 0
    sums = np.zeros((len(words), dim), dtype=np.float32)
    np.add.at(sums, owner[keep], tokens[keep].astype(np.float32))
    counts = np.bincount(owner[keep], minlength=len(words)).astype(np.float32)[:, None]
    vectors = sums / np.maximum(counts, 1.0)
    columns = [vectors, rule_flags(words), shape_flags(words), salience(words, rarity)]
    return np.hstack([rarity.word_ids(words), *columns] if word_ids else columns)


def _network(inputs: int, params: TaggerParams, vocabulary: int = 0):
    import torch

    class Net(torch.nn.Module):
        """[word embedding] + dropout -> linear -> GELU -> a sequence layer -> linear over CLASSES. With
        `word_dim`, the features' first column is a vocabulary id whose learned embedding joins the
        features (a tenth of the ids are dropped to 'other word' in training). The sequence layer is
        a bidirectional LSTM over the whole text (`head="lstm"`: a population or an arm is named by
        a clause that can run past any fixed window), or two residual width-`kernel` convolutions
        (`head="conv"`: each word sees its neighbours up to four words away)."""

        def __init__(self) -> None:
            super().__init__()
            self.drop = torch.nn.Dropout(params.dropout)
            if params.word_dim:
                self.words = torch.nn.Embedding(vocabulary + 2, params.word_dim, padding_idx=0)
            self.inp = torch.nn.Linear(inputs - bool(params.word_dim) + params.word_dim, params.hidden)
            if params.head == "lstm":
                self.lstm = torch.nn.LSTM(params.hidden, params.hidden // 2, batch_first=True, bidirectional=True)
            else:
                self.convs = torch.nn.ModuleList(
                    torch.nn.Conv1d(params.hidden, params.hidden, params.kernel, padding=params.kernel // 2)
                    for _ in range(2)
                )
            self.out = torch.nn.Linear(params.hidden, len(CLASSES))

        def forward(self, x):
            if params.word_dim:
                ids = x[..., 0].long()
                if self.training:
                    ids = ids.masked_fill((torch.rand(ids.shape) < WORD_DROPOUT) & (ids > 0), 1)
                x = torch.cat([self.words(ids), x[..., 1:]], -1)
            h = torch.nn.functional.gelu(self.inp(self.drop(x)))
            if params.head == "lstm":
                h, _ = self.lstm(h)
            else:
                h = h.transpose(1, 2)
                for conv in self.convs:
                    h = h + torch.nn.functional.gelu(conv(h))
                h = h.transpose(1, 2)
            return self.out(self.drop(h))

    return Net()


def macro_f1(gold: list[np.ndarray], predicted: list[np.ndarray]) -> float:
    """Token macro F1 over P, I and O."""
    return float(np.mean([s["f1"] for s in token_scores(gold, predicted).values()]))


def class_bias(probabilities: list[np.ndarray], gold: list[np.ndarray], rounds: int = 2) -> list[float]:
    """Additive log-odds per class (none fixed at 0) that maximise the held-out texts' token macro F1,
    by coordinate search over -1.5..1.5 in steps of 0.25: a word's label is then the argmax of its
    log probabilities plus the bias, which trades a class's precision for its recall."""
    logs = [np.log(np.maximum(p, 1e-9)) for p in probabilities]
    bias = np.zeros(len(CLASSES), dtype=np.float32)

    def score(b: np.ndarray) -> float:
        return macro_f1(gold, [(lp + b).argmax(1) for lp in logs])

    best = score(bias)
    for _ in range(rounds):
        for c in range(1, len(CLASSES)):
            for value in np.arange(-1.5, 1.51, 0.25):
                trial = bias.copy()
                trial[c] = value
                if (found := score(trial)) > best + 1e-6:
                    best, bias = found, trial
    return [round(float(b), 2) for b in bias]


def _batches(xs: Sequence[np.ndarray], size: int, order: Sequence[int]):
    """(chosen indices, zero-padded float tensor) per batch of `size` texts in `order`."""
    import torch

    for start in range(0, len(order), size):
        chosen = order[start : start + size]
        x = torch.zeros(len(chosen), max(len(xs[i]) for i in chosen), xs[chosen[0]].shape[1])
        for row, i in enumerate(chosen):
            x[row, : len(xs[i])] = torch.from_numpy(xs[i])
        yield chosen, x


class PicoTagger:
    """A trained head with its provenance; `tag` turns texts into typed character spans."""

    def __init__(
        self, net, params: TaggerParams, meta: dict, rarity: Rarity, selector: EntitySelector | None = None
    ) -> None:
        self.net, self.params, self.meta, self.rarity, self.selector = net, params, meta, rarity, selector
        self.projector = rarity.projector()
        self.bias = np.asarray(meta.get("class_bias", [0.0] * len(CLASSES)), dtype=np.float32)
        self.net.eval()

    # ---- training --------------------------------------------------------------------------
    @classmethod
    def train(
        cls,
        words: list[Words],
        xs: list[np.ndarray],
        ys: list[np.ndarray],
        rarity: Rarity,
        params: TaggerParams = TaggerParams(),
        progress: Callable[[str], None] | None = None,
        dev: list[int] | None = None,
    ) -> PicoTagger:
        """Fit on (words, features, labels) per text; the epoch with the best held-out dev macro F1
        of the word labels wins, and the entity selector is fitted on the same dev texts. `dev`
        names the held-out texts (default: a seeded `dev_share` of them)."""
        import torch

        torch.manual_seed(params.seed)
        rng = np.random.default_rng(params.seed)
        if dev is None:
            dev = rng.permutation(len(xs))[: max(1, int(len(xs) * params.dev_share))].tolist()
        held = set(dev)
        fit = [i for i in range(len(xs)) if i not in held]
        n_dev = len(dev)
        net = _network(xs[0].shape[1], params, len(rarity.vocabulary))
        optimiser = torch.optim.Adam(net.parameters(), lr=params.learning_rate)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=params.epochs)
        weights = torch.tensor([1.0] + [params.class_weight] * (len(CLASSES) - 1))
        loss_fn = torch.nn.CrossEntropyLoss(weight=weights, ignore_index=-100)
        best, best_state, curve = -1.0, None, []
        for epoch in range(1, params.epochs + 1):
            net.train()
            started, total = time.perf_counter(), 0.0
            for chosen, x in _batches(xs, params.batch, rng.permutation(fit).tolist()):
                y = torch.full(x.shape[:2], -100, dtype=torch.long)
                for row, i in enumerate(chosen):
                    y[row, : len(ys[i])] = torch.from_numpy(ys[i])
                optimiser.zero_grad()
                loss = loss_fn(net(x).reshape(-1, len(CLASSES)), y.reshape(-1))
                loss.backward()
                optimiser.step()
                total += loss.item() * len(chosen)
            schedule.step()
            tagger = cls(net, params, {}, rarity)
            dev_labels = [p.argmax(1) for p in tagger.probabilities([xs[i] for i in dev])]
            macro = macro_f1([ys[i] for i in dev], dev_labels)
            curve.append({"epoch": epoch, "loss": round(total / len(fit), 4), "dev_macro_f1": round(macro, 4)})
            if progress:
                progress(
                    f"pico tagger epoch {epoch}/{params.epochs}: loss {total / len(fit):.4f}, dev macro F1 "
                    f"{macro:.3f} ({time.perf_counter() - started:.1f} s)"
                )
            if macro > best:
                best, best_state = macro, {k: v.clone() for k, v in net.state_dict().items()}
        net.load_state_dict(best_state)
        meta = {
            "curve": curve,
            "dev_articles": n_dev,
            "fit_articles": len(fit),
            "best_dev_macro_f1": round(best, 4),
            "best_epoch": max(curve, key=lambda c: c["dev_macro_f1"])["epoch"],
        }
        dev_ys = [ys[i] for i in dev]
        meta["class_bias"] = class_bias(cls(net, params, meta, rarity).probabilities([xs[i] for i in dev]), dev_ys)
        tagger = cls(net, params, meta, rarity)
        meta["dev_macro_f1_with_bias"] = round(
            macro_f1(dev_ys, [p.argmax(1) for p in tagger.probabilities([xs[i] for i in dev])]), 4
        )
        try:
            selector = EntitySelector.fit(
                [words[i] for i in dev],
                [xs[i] for i in dev],
                tagger.probabilities([xs[i] for i in dev]),
                [ys[i] for i in dev],
                tagger.projector,
                params.seed,
            )
        except ValueError as error:  # too few dev texts: the tagger's own word labels stand
            selector, meta["selection"] = None, f"no entity selector: {error}"
        else:  # kept only when its out-of-fold dev F1 beats the head's word labels (mean over I and O)
            classes = selector.report["classes"].values()
            gain = float(np.mean([r["selected_f1_out_of_fold"] - r["tagger_f1"] for r in classes]))
            meta["selection"] = {**selector.report, "out_of_fold_gain": round(gain, 4), "kept": gain > 0}
            if progress:
                progress(
                    "entity selector (dev, out of fold): "
                    + ", ".join(
                        f"{c} F1 {r['tagger_f1']:.3f} -> {r['selected_f1_out_of_fold']:.3f}"
                        for c, r in selector.report["classes"].items()
                    )
                    + ("; kept" if gain > 0 else "; not kept (the head's word labels stand)")
                )
            selector = selector if gain > 0 else None
        return cls(net, params, meta, rarity, selector)

    # ---- inference -------------------------------------------------------------------------
    def probabilities(self, xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """(n_words, len(CLASSES)) class probabilities per text."""
        import torch

        out: list[np.ndarray] = [np.zeros((0, len(CLASSES)), dtype=np.float32)] * len(xs)
        order = sorted(range(len(xs)), key=lambda i: len(xs[i]))
        with torch.no_grad():
            for chosen, x in _batches(xs, 64, [i for i in order if len(xs[i])]):
                probs = torch.softmax(self.net(x) + torch.tensor(self.bias), -1).numpy()
                for row, i in enumerate(chosen):
                    out[i] = probs[row, : len(xs[i])]
        return out

    def predict(self, words: Sequence[Words], xs: Sequence[np.ndarray], select: bool = True) -> list[np.ndarray]:
        """Word labels (indices into CLASSES) per text: with the entity selector when there is one
        and `select`, else the head's most probable class per word."""
        probs = self.probabilities(xs)
        if not (select and self.selector):
            return [p.argmax(1) for p in probs]
        return [
            self.selector.labels(w, x, p, self.projector) if len(w) else p.argmax(1)
            for w, x, p in zip(words, xs, probs)
        ]

    def label_encoded(self, items: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> list[tuple[Words, np.ndarray]]:
        """The words and word labels of texts whose piece vectors are known: (text, tokens, offsets)."""
        words = [Words.of(text) for text, _, _ in items]
        xs = [
            features(w, tokens, offsets, self.rarity, bool(self.params.word_dim))
            for w, (_, tokens, offsets) in zip(words, items)
        ]
        return list(zip(words, self.predict(words, xs)))

    def label_texts(self, texts: Sequence[str], encoder: Encoder) -> list[tuple[Words, np.ndarray]]:
        """The words and word labels of raw texts (one forward pass of the embedder each)."""
        encoded = encoder.encode_windows(list(texts))
        return self.label_encoded([(t, e.tokens, e.offsets) for t, e in zip(texts, encoded)])

    # ---- persistence -----------------------------------------------------------------------
    def save(self, folder: Path, meta: dict) -> None:
        """model.pt (the head's weights), rarity.json, selector.json (when fitted) and meta.json
        (parameters, provenance, metrics), atomically."""
        import torch

        folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(folder / MODEL_FILE) as tmp:
            torch.save(self.net.state_dict(), tmp)
        if self.selector:
            self.selector.save(folder / SELECTOR_FILE)
        else:
            (folder / SELECTOR_FILE).unlink(missing_ok=True)
        write_text_atomic(folder / RARITY_FILE, json.dumps({"documents": self.rarity.documents, "df": self.rarity.df}))
        self.meta = {
            **self.meta,
            **meta,
            "params": asdict(self.params),
            "classes": list(CLASSES),
            "inputs": int(self.net.inp.in_features) - self.params.word_dim + bool(self.params.word_dim),
        }
        write_text_atomic(folder / META_FILE, json.dumps(self.meta, indent=2, default=str))

    @classmethod
    def usable(cls, folder: Path) -> PicoTagger | None:
        """The saved tagger when it beat the rules on validation, else None (the rules run)."""
        return cls.load(folder) if read_meta(folder).get("beats_rules") else None

    @classmethod
    def load(cls, folder: Path) -> PicoTagger:
        import torch

        meta_path, model_path, rarity_path = (Path(folder) / name for name in (META_FILE, MODEL_FILE, RARITY_FILE))
        if not (meta_path.is_file() and model_path.is_file() and rarity_path.is_file()):
            raise FileNotFoundError(
                f"no trained PICO tagger at {folder}: materialise the pico_tagger asset "
                "(make demo, `ebm lake build`, or the Dagster UI)"
            )
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        params = TaggerParams(**{"head": "conv", "word_dim": 0, **meta["params"]})  # saved before these existed
        stored = json.loads(rarity_path.read_text(encoding="utf-8"))
        rarity = Rarity(stored["df"], stored["documents"])
        net = _network(int(meta["inputs"]), params, len(rarity.vocabulary))
        net.load_state_dict(torch.load(model_path, weights_only=True))
        selector_path = Path(folder) / SELECTOR_FILE
        selector = EntitySelector.load(selector_path) if selector_path.is_file() else None
        return cls(net, params, meta, rarity, selector)


def read_meta(folder: Path) -> dict:
    """A saved tagger's meta.json, or {} when there is none."""
    path = Path(folder) / META_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def copy_tagger(source: Path, target: Path) -> None:
    """Copy a saved tagger's files (each replaced atomically; meta.json last, so a reader that sees
    the new key sees the new weights); files of another tagger kind left in `target` are removed."""
    target.mkdir(parents=True, exist_ok=True)
    names = {path.name for path in source.iterdir() if path.is_file()}
    for path in target.iterdir():
        if path.is_file() and path.name not in names:
            path.unlink()
    for name in sorted(names - {META_FILE}) + [META_FILE]:
        with atomic_path(target / name) as tmp:
            shutil.copyfile(source / name, tmp)


def cache_path(key: str) -> Path:
    """Where a tagger that passed its check is kept for other lakes of this environment (training
    depends only on the shared data, the code and the encoder, all in its key)."""
    return export_dir() / "pico_tagger" / key


def tagger_path(lake: Path) -> Path:
    """Where a lake keeps its trained tagger."""
    return LakeLayout(lake).model("pico_tagger")
