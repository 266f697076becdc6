"""Graph assets: pico_extractions[CODE], knowledge_graph[CODE] (Kùzu), knowledge_tree."""

import dagster as dg
import polars as pl

from ebm_platform.defs.corpus import preview
from ebm_platform.defs.partitions import conditions_partitions
from ebm_platform.defs.progress import reporter
from ebm_platform.defs.resources import EmbedderResource, GraphResource, LakeResource, LLMResource
from ebm_platform.graph.build import graph_stats, partition_tables
from ebm_platform.graph.extraction import ELEMENT_COLUMNS, Extractor
from ebm_platform.graph.tree import build_tree, tree_tables

ELEMENT_SCHEMA = {c: pl.String for c in ELEMENT_COLUMNS}
EAGER = dg.AutomationCondition.eager()


@dg.asset(partitions_def=conditions_partitions, group_name="graph", kinds={"polars"}, automation_condition=EAGER)
def pico_extractions(context: dg.AssetExecutionContext, evidence_windows: pl.DataFrame, llm: LLMResource,
                     graph: GraphResource, lake: LakeResource) -> dg.Output[pl.DataFrame]:
    """Schema-bounded entities, relations and attributes per window (LLM or offline rules).
    Anything out of schema is dropped and counted, never fatal."""
    client = llm.client()
    schema = graph.schema()
    condition_names = tuple(c.name.lower() for c in lake.catalogue().conditions)
    extractor = Extractor(schema, client, condition_names)
    rows = extractor.windows(evidence_windows.to_dicts(), progress=reporter(context))
    frame = pl.DataFrame(rows, schema=ELEMENT_SCHEMA) if rows else pl.DataFrame(schema=ELEMENT_SCHEMA)
    kinds = frame.group_by("kind").len().to_dicts() if frame.height else []
    return dg.Output(frame, metadata={
        "mode": dg.MetadataValue.text("offline (deterministic PICO rules)" if client.offline else f"llm:{client.model}"),
        "schema": dg.MetadataValue.text(schema.name),
        "windows": dg.MetadataValue.int(evidence_windows.height),
        "elements_by_kind": dg.MetadataValue.json({k["kind"]: k["len"] for k in kinds}),
        "dropped_out_of_schema": dg.MetadataValue.json(dict(extractor.drops)),
        "failed_windows": dg.MetadataValue.int(extractor.failed_windows),
        "llm_usage": dg.MetadataValue.json(client.usage.as_metadata()),
        "preview": preview(frame, ["kind", "subject", "subject_type", "predicate", "object"], rows=8),
    })


@dg.asset(partitions_def=conditions_partitions, group_name="graph", kinds={"kuzu"}, pool="kuzu_writer",
          automation_condition=EAGER)
def knowledge_graph(context: dg.AssetExecutionContext, source_documents: pl.DataFrame,
                    evidence_windows: pl.DataFrame, pico_extractions: pl.DataFrame,
                    graph: GraphResource, embedder: EmbedderResource) -> dg.Output[pl.DataFrame]:
    """The partition's documents, windows, entities and attributes in Kùzu, replaced atomically;
    the output table lists its entities with name embeddings for the graph channel."""
    code = context.partition_key
    schema = graph.schema()
    tables, entities = partition_tables(code, source_documents, evidence_windows, pico_extractions, schema,
                                        lambda texts: embedder.embed(texts, max_tokens=32), graph.merge_threshold)
    with graph.store() as store:
        store.replace_partition(code, tables)
        in_store = store.count("MATCH (e:Entity) WHERE e.partition = $p RETURN count(*)", {"p": code})
    stats = graph_stats(tables["Entity"], tables["RELATES"], tables["Attribute"].height, schema)
    mentions = pico_extractions.filter(pl.col("kind") == "entity").height if pico_extractions.height else 0
    return dg.Output(entities, metadata={
        "entities": dg.MetadataValue.int(stats["entities"]),
        "entities_in_store": dg.MetadataValue.int(in_store),
        "entity_mentions_before_merge": dg.MetadataValue.int(mentions),
        "attributes": dg.MetadataValue.int(stats["attributes"]),
        "relations": dg.MetadataValue.int(stats["relations"]),
        "windows": dg.MetadataValue.int(tables["Window"].height),
        "nodes_by_type": dg.MetadataValue.json(stats["nodes_by_type"]),
        "relations_by_type": dg.MetadataValue.json(stats["relations_by_type"]),
        "pico_core_share": dg.MetadataValue.float(stats["pico_core_share"]),
        "pico_core_share_paper": dg.MetadataValue.float(stats["pico_core_share_paper"]),
        "core_mix_vs_paper": dg.MetadataValue.json({t: {"here": stats["core_mix"][t], "paper": stats["core_mix_paper"][t]}
                                                    for t in stats["core_mix"]}),
        "store": dg.MetadataValue.path(str(graph.path)),
    })


@dg.asset(group_name="graph", kinds={"kuzu"}, pool="kuzu_writer", automation_condition=EAGER,
          ins={"entities": dg.AssetIn("knowledge_graph", partition_mapping=dg.AllPartitionMapping())})
def knowledge_tree(context: dg.AssetExecutionContext, entities: pl.DataFrame,
                   graph: GraphResource) -> dg.Output[pl.DataFrame]:
    """Community compression over every partition's entities, stored as the tree's four layers:
    communities (L4), keywords (L3), triples (L2, typed RELATES) and attributes (L1)."""
    with graph.store() as store:
        relates = store.query("MATCH (a:Entity)-[r:RELATES]->(b:Entity) RETURN a.id AS source, b.id AS target, "
                              "r.type AS type")
        mentions = store.query("MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) RETURN e.id AS entity, w.id AS window")
        co = (mentions.join(mentions, on="window", suffix="_b").filter(pl.col("entity") < pl.col("entity_b"))
              .group_by("entity", "entity_b").len()
              .select(pl.col("entity").alias("source"), pl.col("entity_b").alias("target"),
                      pl.lit("co_mention").alias("type"), pl.col("len").cast(pl.Float64).alias("weight")))
        edges = pl.concat([relates.with_columns(pl.lit(2.0).alias("weight")), co], how="vertical_relaxed") \
            if relates.height or co.height else pl.DataFrame(schema={"source": pl.String, "target": pl.String,
                                                                     "type": pl.String, "weight": pl.Float64})
        community, stats = build_tree(entities, edges)
        context.log.info(f"knowledge tree: {stats}")
        tables = tree_tables(entities, edges, community)
        store.replace_tree(tables)
        layers = {
            "L4_communities": tables["Community"].height,
            "L3_keywords": tables["Keyword"].height,
            "L2_triples": relates.height,
            "L1_attributes": store.count("MATCH (a:Attribute) RETURN count(*)"),
        }
    return dg.Output(tables["Community"], metadata={
        **{k: dg.MetadataValue.int(v) for k, v in layers.items()},
        "compression": dg.MetadataValue.json(stats),
        "largest_communities": preview(tables["Community"].sort("size", descending=True), ["id", "size", "name"], rows=10),
    })
