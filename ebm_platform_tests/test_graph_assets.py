"""pico_extractions -> knowledge_graph -> knowledge_tree through dagster.materialize on real articles."""

import dagster as dg
import polars as pl

from ebm_platform.conditions import load_catalogue
from ebm_platform.corpus.importers import import_dataset
from ebm_platform.defs.corpus import evidence_windows, source_documents
from ebm_platform.defs.graph import knowledge_graph, knowledge_tree, pico_extractions
from ebm_platform.graph.channel import GraphChannel
from ebm_platform.graph.store import GraphStore
from ebm_platform.index.embeddings import embed
from ebm_platform.retrieval.questions import question_anchors
from ebm_platform.settings import DEFAULT_CATALOGUE
from ebm_platform_tests.conftest import lake_resources

ASSETS = [source_documents, evidence_windows, pico_extractions, knowledge_graph, knowledge_tree]
ARTICLES = {"ACL": {"PMC3718450"}, "PFP": {"PMC1562433"}}


def _counts(lake, code):
    with GraphStore(lake / "stores" / "kuzu" / "graph.kz", read_only=True) as store:
        return {
            label: store.count(f"MATCH (n:{label}) WHERE n.partition = $p RETURN count(*)", {"p": code})
            for label in ("Document", "Window", "Attribute")
        } | {
            "Entity": store.count(
                "MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) WHERE w.partition = $p RETURN count(DISTINCT e.id)",
                {"p": code},
            ),
            "RELATES": store.count(
                "MATCH (:Entity)-[r:RELATES]->() WHERE r.partition = $p RETURN count(*)", {"p": code}
            ),
        }


def test_partitions_write_idempotently_and_feed_the_tree_and_channel(lake, datasets_dir):
    catalogue = load_catalogue(DEFAULT_CATALOGUE)
    for ids in ARTICLES.values():
        import_dataset("evidence-inference", datasets_dir, lake / "landing", catalogue, ids=ids)
    for extra in (lake / "landing").iterdir():
        if extra.name not in ARTICLES:
            for f in extra.iterdir():
                f.unlink()
    resources = lake_resources(lake)
    instance = dg.DagsterInstance.ephemeral()
    partitioned = ASSETS[:4]
    for code in ARTICLES:
        assert dg.materialize(partitioned, partition_key=code, resources=resources, instance=instance).success
    acl, pfp = _counts(lake, "ACL"), _counts(lake, "PFP")
    assert acl["Document"] == 1 and acl["Window"] > 10 and acl["Entity"] > 20 and acl["RELATES"] > 0
    result = dg.materialize(partitioned, partition_key="ACL", resources=resources, instance=instance)
    meta = result.asset_materializations_for_node("knowledge_graph")[0].metadata
    assert meta["pico_core_share_paper"].value == 0.123 and "Intervention" in meta["nodes_by_type"].value
    assert _counts(lake, "ACL") == acl and _counts(lake, "PFP") == pfp  # rerun replaces, never duplicates

    tree = dg.materialize(ASSETS, selection=[knowledge_tree], resources=resources, instance=instance)
    layers = tree.asset_materializations_for_node("knowledge_tree")[0].metadata
    assert layers["L4_communities"].value > 0 and layers["L3_keywords"].value > 0

    entities = pl.concat([pl.read_parquet(lake / "assets" / "knowledge_graph" / f"{c}.parquet") for c in ARTICLES])
    shared = entities.group_by("id").agg(pl.col("partition").n_unique().alias("k")).filter(pl.col("k") == 2)["id"]
    assert shared.len() > 0  # the same name and type in both conditions ...
    with GraphStore(lake / "stores" / "kuzu" / "graph.kz", read_only=True) as store:
        nodes = store.query(
            "MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) WHERE e.id IN $ids "
            "RETURN e.id AS id, count(DISTINCT w.partition) AS k",
            {"ids": shared.to_list()},
        )
        assert nodes.height == shared.len() and set(nodes["k"]) == {2}  # ... is one node mentioned in both
        members = store.count("MATCH (:Entity)-[:IN_COMMUNITY]->(:Community) RETURN count(*)")
        assert members == entities["id"].n_unique()
        channel = GraphChannel(store, entities, lambda t: embed(t, max_tokens=32))
        anchors = question_anchors(
            "Does exercise therapy reduce pain in patients with patellofemoral pain?", ("patellofemoral pain",)
        )
        found = channel.search(anchors, partitions=["PFP"])
        mentioned = channel.window_entities([c.window_id for c in found[:5]])
        assert mentioned and set(mentioned) <= {c.window_id for c in found[:5]}
        # the links read once at open answer as the store does
        stored = store.query(
            "MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) WHERE w.window_id IN $ids "
            "RETURN DISTINCT w.window_id AS w, e.type AS type, e.name AS name ORDER BY w, type, name",
            {"ids": [c.window_id for c in found[:5]]},
        )
        assert [(w, e["type"], e["name"]) for w, es in sorted(mentioned.items()) for e in es] == stored.rows()
        assert all(
            e["type"] in store.query("MATCH (e:Entity) RETURN DISTINCT e.type AS t")["t"].to_list()
            for es in mentioned.values()
            for e in es
        )
    windows = set(pl.read_parquet(lake / "assets" / "evidence_windows" / "PFP.parquet")["window_id"])
    assert found and all(c.window_id in windows for c in found) and len(found) <= 120
    assert found[0].path and found == sorted(found, key=lambda c: -c.score)
