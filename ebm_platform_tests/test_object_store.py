"""The lake's LanceDB store at an object-store URI (issue #43, point 2): the window index written and
read on S3, served by moto's S3 server in this process (no network), against the same index in a
local folder."""

from __future__ import annotations

import numpy as np
import pytest

from ebm_platform.lake_layout import OBJECT_STORE, LakeLayout
from ebm_platform_tests.test_retrieval import window_frame


@pytest.fixture
def s3(monkeypatch):
    """An S3 endpoint (moto's server on a free local port) with the bucket `lake`; the AWS_*
    variables every client (boto3, LanceDB, pyarrow) reads point at it."""
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
    boto3.client("s3").create_bucket(Bucket="lake")
    yield "s3://lake/ebm"
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
