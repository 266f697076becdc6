"""Graph assets: pico_tagger (checked), pico_extractions[CODE], knowledge_graph[CODE] (Kùzu),
knowledge_tree."""

from contextlib import nullcontext

import dagster as dg
import polars as pl
import pyarrow as pa

from ebm_platform.defs.corpus import preview
from ebm_platform.defs.io import PARTITION_VERSION, partition_files
from ebm_platform.defs.partitions import AFTER_DEPS, EAGER, conditions_partitions
from ebm_platform.defs.progress import reporter
from ebm_platform.defs.resources import BenchmarkResource, EmbedderResource, GraphResource, LakeResource, LLMResource
from ebm_platform.evaluation.pico_eval import tagger_model
from ebm_platform.graph.build import graph_stats, partition_graph, stored_vectors
from ebm_platform.graph.extraction import Extractor
from ebm_platform.graph.tree import EntityGraph, build_tree, tree_tables
from ebm_platform.index.window_index import WindowIndex
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.pico.finetuned import FineTuneParams, usable_tagger
from ebm_platform.pico.tagger import TaggerParams, tagger_path
from ebm_platform.pico.training import HEADLINE
from ebm_platform.pico.windows import PartitionTagging, SpanStore, tagger_key
from ebm_platform.process import release_free_memory
from ebm_platform.settings import training_limit
from ebm_platform.trained_models import ensure_tagger

# knowledge_graph's inputs, in `partition_graph`'s order: documents, windows, extraction elements
GRAPH_INPUTS = ["source_documents", "evidence_windows", "pico_extractions"]


class TaggerConfig(dg.Config):
    """Training scope of the PICO tagger."""

    # at most this many EBM-NLP abstracts and EI articles per split (unset: EBM_TRAINING_LIMIT)
    article_limit: int | None = None
    # "finetuned": MiniLM fine-tuned end to end; "lstm": a BiLSTM head over the embedder's token vectors
    model: str = "finetuned"


@dg.asset(group_name="graph", kinds={"pytorch"}, pool="lake_writer")
def pico_tagger(
    context: dg.AssetExecutionContext,
    config: TaggerConfig,
    lake: LakeResource,
    embedder: EmbedderResource,
    benchmark: BenchmarkResource,
) -> dg.Output[pl.DataFrame]:
    """The learned PICO span tagger (MiniLM fine-tuned end to end as a token classifier, or with
    `model: lstm` a BiLSTM head over the embedder's token vectors), trained on EBM-NLP's
    crowd-labelled abstracts and scored beside the offline rules on their held-out dev tenth (P, I, O), and on Evidence Inference's projected validation gold; kept in
    <lake>/models/pico_tagger. Reused while its inputs are unchanged, also from another lake of
    this environment (a passing tagger is kept beside the converted embedder, keyed by data, code,
    encoder and parameters)."""
    folder = tagger_path(lake.path)
    limit = config.article_limit if config.article_limit is not None else training_limit()
    if config.model not in ("finetuned", "lstm"):
        raise ValueError(f"pico_tagger model {config.model!r}: choose finetuned or lstm")
    params = FineTuneParams() if config.model == "finetuned" else TaggerParams()
    meta, source = ensure_tagger(folder, benchmark.root(), embedder.encoder(), limit, reporter(context), params)
    report, reused = meta["validation"], source != "trained"
    rows = [
        {"extractor": extractor, "class": c, **{k: float(v) for k, v in scores.items()}}
        for extractor in ("learned", "learned_word_labels", "rules", "majority_class")
        if extractor in report
        for c, scores in report[extractor]["classes"].items()
    ]
    return dg.Output(
        pl.DataFrame(rows),
        metadata={
            "macro_f1_learned": dg.MetadataValue.float(report["learned"]["macro_f1"]),
            "macro_f1_rules": dg.MetadataValue.float(report["rules"]["macro_f1"]),
            "macro_f1_majority_class": dg.MetadataValue.float(report["majority_class"]["macro_f1"]),
            **{
                f"macro_f1_interval_95_{name}": dg.MetadataValue.text(f"[{low}, {high}]")
                for name, (low, high) in report.get("macro_f1_interval_95", {}).items()
            },
            "headline_classes": dg.MetadataValue.text(f"{', '.join(HEADLINE)} (EBM-NLP dev tenth)"),
            "macro_f1_learned_evidence_inference": dg.MetadataValue.float(
                report["evidence_inference"]["learned"]["macro_f1"]
            ),
            "model": dg.MetadataValue.text(tagger_model(meta)),
            "validation_articles": dg.MetadataValue.int(report["articles"]),
            "train_articles": dg.MetadataValue.int(report["train_articles"]),
            "encoder": dg.MetadataValue.text(report["encoder"]),
            "reused": dg.MetadataValue.bool(reused),
            "source": dg.MetadataValue.text(source),
            "path": dg.MetadataValue.path(str(folder)),
            "scores": dg.MetadataValue.md(pl.DataFrame(rows).to_pandas().to_markdown(index=False)),
        },
    )


def macro_f1(scores: pl.DataFrame, extractor: str) -> float:
    """Headline macro F1 (P, I, O on EBM-NLP's dev tenth) of one extractor in the pico_tagger table."""
    rows = scores.filter((pl.col("extractor") == extractor) & pl.col("class").is_in(list(HEADLINE)))
    return float(rows["f1"].mean()) if rows.height else 0.0


@dg.asset_check(
    asset=pico_tagger,
    blocking=True,
    description="the learned tagger must beat the offline rules on held-out validation (token macro F1)",
)
def pico_tagger_beats_rules(pico_tagger: pl.DataFrame) -> dg.AssetCheckResult:
    learned, rules = macro_f1(pico_tagger, "learned"), macro_f1(pico_tagger, "rules")
    return dg.AssetCheckResult(passed=learned > rules, metadata={"learned": learned, "rules": rules})


@dg.asset(
    partitions_def=conditions_partitions,
    group_name="graph",
    kinds={"polars"},
    automation_condition=EAGER,
    deps=["window_index", "pico_tagger"],
)
def pico_extractions(
    context: dg.AssetExecutionContext,
    evidence_windows: pl.DataFrame,
    llm: LLMResource,
    graph: GraphResource,
    lake: LakeResource,
    embedder: EmbedderResource,
) -> dg.Output[pl.DataFrame]:
    """Schema-bounded entities, relations and attributes per window: the LLM when one is set;
    offline, the learned tagger's P/I/C/O spans (when it passed its check) with the rules for
    the rest, or the rules alone. Anything out of schema is dropped and counted, never fatal."""
    client = llm.client()
    schema = graph.schema()
    condition_names = tuple(c.name.lower() for c in lake.catalogue().conditions)
    extractor = Extractor(schema, client, condition_names)
    learned = client.offline and graph.pico_extractor == "learned"
    tagger = usable_tagger(tagger_path(lake.path)) if learned else None
    tagging = (
        PartitionTagging(
            SpanStore(LakeLayout(lake.root).pico_spans, tagger_key(tagger)),
            context.partition_key,
            tagger,
            embedder.encoder(),
            WindowIndex(LakeLayout(lake.root).lancedb),
        )
        if tagger
        else None
    )
    with tagging.storing() if tagging else nullcontext():
        frame = extractor.partition(evidence_windows, tagging, reporter(context))
    kinds = frame.group_by("kind").len().to_dicts() if frame.height else []
    return dg.Output(
        frame,
        metadata={
            "mode": dg.MetadataValue.text(
                f"llm:{client.model}"
                if not client.offline
                else "offline (learned PICO tagger + rules)"
                if tagger
                else "offline (rules; no usable tagger in the lake)"
                if learned
                else "offline (rules, as configured)"
            ),
            "schema": dg.MetadataValue.text(schema.name),
            "windows": dg.MetadataValue.int(evidence_windows.height),
            "windows_spans_reused": dg.MetadataValue.int(tagging.reused if tagging else 0),
            "elements_by_kind": dg.MetadataValue.json({k["kind"]: k["len"] for k in kinds}),
            "dropped_out_of_schema": dg.MetadataValue.json(dict(extractor.drops)),
            "failed_windows": dg.MetadataValue.int(extractor.failed_windows),
            "llm_usage": dg.MetadataValue.json(client.usage.as_metadata()),
            "preview": preview(frame, ["kind", "subject", "subject_type", "predicate", "object"], rows=8),
        },
    )


@dg.asset(
    partitions_def=conditions_partitions,
    group_name="graph",
    kinds={"kuzu"},
    automation_condition=EAGER,
    deps=GRAPH_INPUTS,  # read from their partition files a batch at a time, not handed over whole
)
def knowledge_graph(
    context: dg.AssetExecutionContext, graph: GraphResource, embedder: EmbedderResource
) -> dg.Output[pa.RecordBatchReader]:
    """The partition's documents, windows, entities and attributes in Kùzu, replaced atomically;
    the output table lists its entities with name embeddings for the graph channel. Both record the
    run as the partition's version, so readers never pair a graph with another run's entities. Built
    from the inputs' files a batch at a time (`graph.build.partition_graph`), written a row group at a time."""
    code = context.partition_key
    schema = graph.schema()
    inputs = {}
    for asset in GRAPH_INPUTS:
        inputs[asset], missing = partition_files(graph.lake_root, asset, [code])
        if missing:
            raise FileNotFoundError(f"knowledge_graph[{code}] needs {asset}[{code}]: materialise it first")
    built = partition_graph(
        code,
        *inputs.values(),
        schema,
        lambda texts: embedder.embed(texts, max_tokens=32),
        graph.merge_threshold,
    )
    with graph.store() as store:
        store.replace_partition(code, built.tables(), context.run_id)
        in_store = store.count(
            "MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) WHERE w.partition = $p RETURN count(DISTINCT e.id)",
            {"p": code},
        )
    release_free_memory()  # what Kùzu freed is not resident while the entity table is written
    stats = graph_stats(built.entities, built.relations_by_type, built.rows["Attribute"], schema)
    return dg.Output(
        built.entity_table(),
        metadata={
            "entities": dg.MetadataValue.int(stats["entities"]),
            "entities_in_store": dg.MetadataValue.int(in_store),
            "entity_mentions_before_merge": dg.MetadataValue.int(built.mentions_before_merge),
            "attributes": dg.MetadataValue.int(stats["attributes"]),
            "relations": dg.MetadataValue.int(stats["relations"]),
            "windows": dg.MetadataValue.int(built.rows["Window"]),
            "nodes_by_type": dg.MetadataValue.json(stats["nodes_by_type"]),
            "relations_by_type": dg.MetadataValue.json(stats["relations_by_type"]),
            "pico_core_share": dg.MetadataValue.float(stats["pico_core_share"]),
            "pico_core_share_paper": dg.MetadataValue.float(stats["pico_core_share_paper"]),
            "core_mix_vs_paper": dg.MetadataValue.json(
                {t: {"here": stats["core_mix"][t], "paper": stats["core_mix_paper"][t]} for t in stats["core_mix"]}
            ),
            "store": dg.MetadataValue.path(str(graph.path)),
            PARTITION_VERSION: dg.MetadataValue.text(context.run_id),
        },
    )


@dg.asset(
    group_name="graph",
    kinds={"kuzu"},
    pool="kuzu_writer",
    automation_condition=AFTER_DEPS,
    ins={
        "entities": dg.AssetIn(
            "knowledge_graph",
            partition_mapping=dg.AllPartitionMapping(),
            metadata={"columns": ["id", "name", "type"]},  # the vectors are read a batch at a time
        )
    },
)
def knowledge_tree(
    context: dg.AssetExecutionContext, entities: pl.DataFrame, graph: GraphResource, llm: LLMResource
) -> dg.Output[pl.DataFrame]:
    """Community compression over every partition's entities, stored as the tree's four layers:
    communities (L4), keywords (L3), triples (L2, typed RELATES) and attributes (L1)."""
    with graph.store() as store:
        relates = store.query(
            "MATCH (a:Entity)-[r:RELATES]->(b:Entity) RETURN a.id AS source, b.id AS target, r.type AS type"
        )
        mentions = store.query(  # a window is only told apart from the others: by its number in the store
            "MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) RETURN e.id AS entity, offset(id(w)) AS window"
        )
        if entities["id"].is_duplicated().any():  # one row per global entity (a copy only when needed)
            entities = entities.unique("id", keep="first", maintain_order=True)
        entity_graph = EntityGraph.build(entities["id"].to_list(), relates, mentions)
        del mentions  # a row per mention: the graph holds what the tree needs of them
        attributes = store.query(
            "MATCH (e:Entity)-[:HAS_ATTRIBUTE]->(a:Attribute) RETURN e.id AS entity, count(*) AS n"
        )
        triples = relates.height
        del relates
        files, _ = partition_files(
            graph.lake_root, "knowledge_graph", context.asset_partition_keys_for_input("entities")
        )
        vectors = stored_vectors(files, entity_graph.ids)  # the files the input was read from, in its order
        with store.released():  # the pages the queries read are not resident while the tree is built
            community, stats = build_tree(entities, entity_graph, vectors)
            context.log.info(f"knowledge tree: {stats}")
            tables, summary_mode = tree_tables(
                entities,
                entity_graph,
                community,
                dict(attributes.iter_rows()) if attributes.height else {},
                llm.client(),
            )
            del attributes, entity_graph, community  # the tables hold what the store is given
            release_free_memory()  # the graph's arrays are not resident beside the store's write
        store.replace_tree(tables)
        layers = {
            "L4_communities": tables["Community"].height,
            "L3_keywords": tables["Keyword"].height,
            "L2_triples": triples,
            "L1_attributes": store.count("MATCH (a:Attribute) RETURN count(*)"),
        }
    return dg.Output(
        tables["Community"],
        metadata={
            **{k: dg.MetadataValue.int(v) for k, v in layers.items()},
            "compression": dg.MetadataValue.json(stats),
            "summaries": dg.MetadataValue.text(summary_mode),
            "largest_communities": preview(
                tables["Community"].sort("size", descending=True),
                ["id", "size", "l2_triples", "l1_attributes", "name", "summary"],
                rows=10,
            ),
        },
    )
