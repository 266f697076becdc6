"""The lake's LanceDB store at an object-store URI (issue #43, point 2): the window index written and
read on S3, served by moto's S3 server in this process (no network), against the same index in a
local folder."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from ebm_platform.lake_layout import OBJECT_STORE, LakeLayout
from ebm_platform_tests.test_retrieval import window_frame


@pytest.fixture
def s3(monkeypatch):
    """An S3 endpoint (moto's server on a free local port) with a bucket of this test's own; the AWS_*
    variables every client (boto3, LanceDB, pyarrow) reads point at it. moto keeps its buckets in the
    process, not in the server: a bucket name shared by two tests would hand the second the first's tables."""
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ALLOW_HTTP": "true",
    }.items():
        monkeypatch.setenv(name, value)
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3").create_bucket(Bucket=bucket)
    yield f"s3://{bucket}/ebm"
    server.stop()


def test_the_configured_lake_keeps_its_lancedb_store_at_the_object_store_uri(tmp_path, monkeypatch):
    lake = tmp_path / "lake"
    monkeypatch.setenv("EBM_LAKE", str(lake))
    assert LakeLayout(lake).lancedb == lake / "stores" / "lancedb"  # unset: the lake folder
    monkeypatch.setenv(OBJECT_STORE, "s3://bucket/ebm/")
    assert LakeLayout(lake).lancedb == "s3://bucket/ebm/stores/lancedb"
    assert LakeLayout(lake / "eval" / "x").lancedb == lake / "eval" / "x" / "stores" / "lancedb"  # others stay local


def test_the_window_index_on_s3_reads_and_writes_as_a_local_one(s3, tmp_path):
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.index.window_index import WindowIndex

    encoder = get_encoder()
    remote, local = WindowIndex(f"{s3}/stores/lancedb"), WindowIndex(tmp_path / "lancedb")
    assert not remote.exists() and remote.committed_versions() == 0
    for index in (remote, local):
        index.replace_partition("X", window_frame("w1", "w2"), encoder)
        index.replace_partition("Y", window_frame("w3", text="Rest {} helped nobody's knee."), encoder)
        counts = index.replace_partition("X", window_frame("w1"), encoder)  # X shrinks, Y stays
        assert counts["reused"] == 1 and counts["encoded"] == 0  # its encoding copied from the table on S3 too
    assert not list(remote.work.glob(".staging*"))  # the staging file was local and is gone
    assert remote.committed_versions() >= 3
    reader = WindowIndex(f"{s3}/stores/lancedb", pinned=True)
    assert reader.count() == local.count() == 2 and reader.count("Y") == 1
    question = encoder.embed(["Does exercise reduce knee pain?"])[0]
    dense = [WindowIndex(p, pinned=True).dense(question, 5) for p in (f"{s3}/stores/lancedb", tmp_path / "lancedb")]
    assert dense[0]["window_id"].to_list() == dense[1]["window_id"].to_list()
    np.testing.assert_allclose(dense[0]["similarity"].to_numpy(), dense[1]["similarity"].to_numpy(), rtol=1e-5)
    assert (
        reader.full_text("rest knee", 5)["window_id"].to_list()
        == local.full_text("rest knee", 5)["window_id"].to_list()
    )


def test_asset_files_on_s3_are_written_whole_versioned_listed_and_promoted(s3, tmp_path, monkeypatch):
    import polars as pl

    from ebm_platform.defs.io import latest_file, promote
    from ebm_platform.lake_files import is_file, read_parquet
    from ebm_platform.versions import parquet_version, write_parquet

    lake = tmp_path / "lake"
    monkeypatch.setenv("EBM_LAKE", str(lake))
    monkeypatch.setenv(OBJECT_STORE, s3)
    layout = LakeLayout(lake)
    staged = layout.asset("benchmark_qa", "PFP", staging=True)
    assert staged == f"{s3}/staging/benchmark_qa/PFP.parquet"
    write_parquet(pl.DataFrame({"question_id": ["q1", "q2"]}), staged, version="run-1")
    assert latest_file(lake, "benchmark_qa", "PFP") == staged and parquet_version(staged) == "run-1"
    assert layout.asset_partitions("benchmark_qa") == []  # staged, not promoted
    assert promote(lake, "benchmark_qa", "PFP") and not is_file(staged)
    assert layout.asset_partitions("benchmark_qa") == [f"{s3}/assets/benchmark_qa/PFP.parquet"]
    assert read_parquet(layout.asset("benchmark_qa", "PFP"))["question_id"].to_list() == ["q1", "q2"]
    assert not promote(lake, "benchmark_qa", "PFP")  # nothing staged any more
    assert not (lake / "assets").exists() and not (lake / "staging").exists()


def test_a_partition_materialised_on_s3_equals_the_local_build(s3, tmp_path, monkeypatch, datasets_dir):
    """One partition (two real PFP articles and a guideline) through the real assets and IO manager,
    with the parquet assets and the window index on S3, against the same build in a local folder:
    the same documents, windows, entities and index rows, and `ask` cites the same windows."""
    from ebm_platform.index.window_index import WindowIndex
    from ebm_platform.lake_files import read_parquet
    from ebm_platform.retrieval.ask import ask
    from ebm_platform_tests.conftest import build_small_lake
    from ebm_platform_tests.test_retrieval import QUESTION

    built = {}
    for name, store in (("local", None), ("s3", s3)):
        root = tmp_path / name
        monkeypatch.setenv("EBM_LAKE", str(root))
        if store:
            monkeypatch.setenv(OBJECT_STORE, store)
        build_small_lake(root, datasets_dir)
        layout = LakeLayout(root)
        built[name] = {
            asset: read_parquet(layout.asset(asset, "PFP")).drop("path", strict=False)
            for asset in ("source_documents", "evidence_windows", "knowledge_graph")
        }
        built[name]["index"] = WindowIndex(layout.lancedb).count("PFP")
        built[name]["cited"] = [
            (c["window_id"], round(c["score"], 6)) for c in ask(QUESTION, condition="PFP", lake=root)["citations"]
        ]
    assert not (tmp_path / "s3" / "assets").exists() and not (tmp_path / "s3" / "stores" / "lancedb").exists()
    assert built["s3"]["evidence_windows"].height > 0 and built["s3"]["knowledge_graph"].height > 0
    assert built["s3"]["index"] == built["local"]["index"] == built["s3"]["evidence_windows"].height
    for asset in ("source_documents", "evidence_windows", "knowledge_graph"):
        assert built["s3"][asset].equals(built["local"][asset]), asset
    # the same windows cited in the same order with the same scores
    assert built["s3"]["cited"] == built["local"]["cited"] and len(built["s3"]["cited"]) >= 3
