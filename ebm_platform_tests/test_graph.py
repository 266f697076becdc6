"""PICO rules, schema-bounded validation, the Kùzu store, the knowledge tree and the graph channel."""

import fcntl
import gzip
import json
from collections import Counter

import networkx as nx
import numpy as np
import polars as pl
import pytest

from ebm_platform.graph.build import stored_vectors
from ebm_platform.graph.extraction import Extractor
from ebm_platform.graph.normalise import merge_entities, mostly_numeric, normalise
from ebm_platform.graph.pico_rules import clean_name, extract
from ebm_platform.graph.release import load_into_kuzu, read_edges, two_hop_kuzu, two_hop_networkx
from ebm_platform.graph.schema import load_schema, validate
from ebm_platform.graph.store import GraphStore
from ebm_platform.graph.tree import EntityGraph, TreeParams, build_tree, tree_tables
from ebm_platform.llm.client import LLMClient
from ebm_platform_tests.test_llm_client import ScriptedServer

TRIAL = (
    "Sixty adults with chronic low back pain aged 20-60 were randomly assigned to receive either motor "
    "control exercise or general exercise. Pain intensity was measured with the VAS and disability with the "
    "ODI at 12 weeks. Participants trained 3 times per week for 45 minutes. Compared with placebo, hip "
    "strengthening reduced pain. No serious adverse events were reported. 60 patients were randomized."
)


def test_offline_rules_find_pico_elements():
    found = extract(TRIAL, ("low back pain",))
    names = {(e["type"], e["name"]) for e in found.entities}
    assert ("Population", "adults with chronic low back pain aged 20-60") in names
    assert ("Intervention", "motor control exercise") in names
    assert ("Comparator", "general exercise") in names and ("Comparator", "placebo") in names
    assert {("Outcome", "VAS"), ("Outcome", "ODI"), ("Timepoint", "12 weeks")} <= names
    attrs = {(a["attribute"], a["value"]) for a in found.attributes}
    assert {
        ("age_range", "20-60"),
        ("age_bin", "adult"),
        ("frequency", "3 times per week"),
        ("sample_size", "60"),
        ("followup_weeks", "12.0"),
        ("baseline_severity", "chronic"),
    } <= attrs
    relations = {(r["source"], r["relation"], r["target"]) for r in found.relations}
    assert ("motor control exercise", "compares_to", "general exercise") in relations


def test_clean_name_keeps_compound_heads():
    assert clean_name("side effects") == "side effects" and clean_name("the adverse effect of") == "adverse effect"
    assert clean_name("the effects") == "" and clean_name("pain effects") == "pain"
    found = extract("Side effects were mild. Adverse effects were rare in both groups.")
    assert {e["name"].lower() for e in found.entities if e["type"] == "AdverseEvent"} == {
        "side effects",
        "adverse effects",
    }


def test_validation_drops_and_counts_out_of_schema_output():
    schema = load_schema("pico_extended")
    drops = Counter()
    raw = {
        "entities": [
            {"name": "knee exercise", "type": "Intervention"},
            {"name": "", "type": "Outcome"},
            {"name": "x" * 500, "type": "Outcome"},
            {"name": "pain", "type": "Symptom"},
            {"name": "placebo", "type": "Comparator"},
        ],
        "relations": [
            {"source": "knee exercise", "relation": "compares_to", "target": "placebo"},
            {"source": "knee exercise", "relation": "cures", "target": "placebo"},
            {"source": "placebo", "relation": "compares_to", "target": "knee exercise"},
            {"source": "ghost", "relation": "compares_to", "target": "placebo"},
        ],
        "attributes": [
            {"entity": "knee exercise", "attribute": "dose", "value": "3x10"},
            {"entity": "knee exercise", "attribute": "colour", "value": "red"},
        ],
    }
    kept = validate(raw, schema, drops)
    assert [e["name"] for e in kept["entities"]] == ["knee exercise", "placebo"]
    assert len(kept["relations"]) == 1 and len(kept["attributes"]) == 1
    assert drops == Counter(
        {
            "entity_bad_name": 2,
            "entity_unknown_type": 1,
            "relation_unknown_type": 1,
            "relation_signature": 1,
            "relation_unknown_endpoint": 1,
            "attribute_unknown_type": 1,
        }
    )
    assert validate("not a dict", schema, drops) == {"entities": [], "relations": [], "attributes": []}


def test_llm_mode_malformed_output_is_dropped_never_fatal(tmp_path):
    server = ScriptedServer()
    try:
        server.script = ["malformed"] * 2 + [
            "content:"
            + json.dumps(
                {
                    "entities": [
                        {"name": "hip strengthening", "type": "Intervention"},
                        {"name": "pain", "type": "Feeling"},
                    ]
                }
            )
        ]
        client = LLMClient(
            model="openai/test",
            api_base=server.base,
            api_key="k",
            max_retries=1,
            backoff_s=0.01,
            cache_path=tmp_path / "c.sqlite",
        )
        extractor = Extractor(load_schema("pico_extended"), client)
        assert extractor.window("window one") == {"entities": [], "relations": [], "attributes": []}
        assert extractor.failed_windows == 1
        second = extractor.window("window two")
        assert second["entities"] == [{"name": "hip strengthening", "type": "Intervention"}]
        assert extractor.drops["entity_unknown_type"] == 1
    finally:
        server.close()


def test_neutral_schema_is_a_configuration_rerun():
    neutral = load_schema("pico_neutral")
    extractor = Extractor(neutral, LLMClient())
    result = extractor.window(TRIAL)
    assert {e["type"] for e in result["entities"]} <= set(neutral.nodes)
    assert {"Protocol", "OutcomeMeasure", "ClinicalConcept"} <= {e["type"] for e in result["entities"]}
    assert extractor.drops["unmapped_entity"] >= 1  # timepoints have no neutral node type


def test_merge_is_conservative_and_skips_numeric_names():
    assert normalise("The  Hip-Strengthening  Exercises.") == "hip-strengthening exercises"
    assert mostly_numeric("12 weeks") and not mostly_numeric("hip strengthening")
    vectors = {
        "knee exercise": [1, 0],
        "knee exercises": [0.999, 0.04],
        "12 weeks": [1, 0],
        "16 weeks": [1, 0],
        "placebo": [0, 1],
    }
    embed = lambda names: np.array([vectors[n] for n in names], dtype=np.float32)  # noqa: E731
    keys = [
        ("Intervention", "knee exercise"),
        ("Intervention", "knee exercises"),
        ("Timepoint", "12 weeks"),
        ("Timepoint", "16 weeks"),
        ("Comparator", "placebo"),
    ]
    canonical = merge_entities(keys, embed, 0.92)
    assert canonical[("Intervention", "knee exercises")] == ("Intervention", "knee exercise")
    assert canonical[("Timepoint", "16 weeks")] == ("Timepoint", "16 weeks")


def test_knowledge_tree_groups_related_entities():
    rng = np.random.default_rng(0)
    base = {"a": rng.normal(size=8), "b": rng.normal(size=8)}
    ids = [f"{g}{i}" for g in "ab" for i in range(5)]
    vecs = [base[i[0]] + rng.normal(scale=0.05, size=8) for i in ids]
    entities = pl.DataFrame({"id": ids, "name": ids, "vector": [list(map(float, v)) for v in vecs]})
    relates = [(f"{g}{i}", f"{g}{j}", "compares_to") for g in "ab" for i in range(5) for j in range(i + 1, 5)]
    graph = EntityGraph.build(ids, _relates(relates), _mentions({"w1": ["a0", "b0"]}))
    matrix = np.asarray(vecs, dtype=np.float32)
    community, stats = build_tree(entities, graph, lambda: (matrix[i : i + 3] for i in range(0, len(matrix), 3)))
    assert len({community[f"a{i}"] for i in range(5)}) == 1 and community["a1"] != community["b1"]
    assert stats["communities"] == 2
    with pytest.raises(ValueError, match="9 entity vectors for 10 entities"):
        build_tree(entities, graph, lambda: iter([matrix[:9]]))


def test_the_tree_reads_each_entitys_vector_once_a_batch_at_a_time(tmp_path):
    """`stored_vectors`: the entities' vectors from knowledge_graph's partition files, in the order the
    tree lists the entities, an entity two partitions list from the first; other entities are an error."""
    first = pl.DataFrame({"id": ["a", "b"], "vector": [[1.0, 0.0], [0.0, 1.0]]})
    second = pl.DataFrame(
        {"id": [f"c{i}" for i in range(5000)] + ["a"], "vector": [[float(i), 2.0] for i in range(5001)]}
    )
    files = [tmp_path / "GL-GEN.parquet", tmp_path / "LBP.parquet"]
    first.write_parquet(files[0])
    second.write_parquet(files[1])
    ids = ["a", "b", *(f"c{i}" for i in range(5000))]
    batches = list(stored_vectors(files, ids)())
    assert len(batches) > 1 and all(b.dtype == np.float32 for b in batches)
    matrix = np.concatenate(batches)
    assert matrix.shape == (5002, 2) and matrix[0].tolist() == [1.0, 0.0] and matrix[-1].tolist() == [4999.0, 2.0]
    with pytest.raises(ValueError, match="other entities"):
        stored_vectors(files[::-1], ids)


def test_release_edges_in_kuzu_match_networkx(tmp_path, datasets_dir):
    source = datasets_dir / "sr_rag_release" / "knowledge-graph" / "edges.jsonl.gz"
    with gzip.open(source, "rt") as handle:
        lines = [next(handle) for _ in range(3000)]
    small = tmp_path / "edges.jsonl.gz"
    with gzip.open(small, "wt") as handle:
        handle.writelines(lines)
    edges = read_edges(small)
    counts = load_into_kuzu(edges, tmp_path / "db.kz")
    graph = nx.MultiDiGraph()
    graph.add_edges_from((s, t) for s, t in edges.select("source", "target").iter_rows())
    assert counts == {"nodes": graph.number_of_nodes(), "edges": 3000}
    import kuzu

    conn = kuzu.Connection(kuzu.Database(str(tmp_path / "db.kz"), read_only=True))
    for node in ["entity_1", edges["source"][1500]]:
        assert (
            two_hop_kuzu(conn, node)
            == two_hop_networkx(graph, node)
            == len(nx.descendants_at_distance(graph, node, 1) | nx.descendants_at_distance(graph, node, 2))
        )
    with pytest.raises(FileExistsError):
        load_into_kuzu(edges, tmp_path / "db.kz")


def test_tree_tables_rank_keywords_by_salience_and_count_layers():
    """A hub linked mostly outside its community loses to a member central inside it."""
    ids = ["hub", "core", "x", "y", "out1", "out2", "out3"]
    entities = pl.DataFrame(
        {
            "id": ids,
            "name": ids,
            "type": ["Intervention", "Outcome", "Outcome", "Population", "Outcome", "Outcome", "Outcome"],
        }
    )
    community = {"hub": 0, "core": 0, "x": 0, "y": 0, "out1": 1, "out2": 1, "out3": 1}
    relates = [("core", "x", "has_timepoint"), ("core", "y", "has_population"), ("hub", "core", "compares_to")]
    shared = {f"{o}-{k}": ["hub", o] for o in ("out1", "out2", "out3") for k in range(3)}  # 3 windows each
    tables, mode = tree_tables(
        entities,
        EntityGraph.build(ids, _relates(relates), _mentions(shared)),
        community,
        {"core": 2, "x": 1},
        params=TreeParams(keywords=1),
    )
    first = tables["Community"].filter(pl.col("id") == "community-0").row(0, named=True)
    assert first["name"] == "core"  # degree alone would pick the hub (weight 11 vs 6)
    assert first["l2_triples"] == 3 and first["l1_attributes"] == 3
    assert (
        mode.startswith("offline") and "core has timepoint x" in first["summary"] and "4 entities" in first["summary"]
    )


def _document(partition: str) -> pl.DataFrame:
    """One Document node row of `partition` (id `<partition>|d`), as `partition_graph` builds them."""
    return pl.DataFrame(
        {
            "id": [f"{partition}|d"],
            "partition": [partition],
            "doc_id": ["d"],
            "title": ["t"],
            "grade": ["C"],
            "year": [2020],
            "source": ["s"],
        }
    )


def test_a_failed_partition_write_keeps_the_previous_state_and_its_own_error(tmp_path):
    """A COPY that fails inside the transaction surfaces its own error, and nothing is half-written."""
    good = {"Document": _document("P")}
    with GraphStore(tmp_path / "g.kz") as store:
        store.replace_partition("P", good, "run-1")
        broken = {"Document": good["Document"].with_columns(pl.lit("x").alias("extra"))}
        with pytest.raises(RuntimeError, match="columns"):
            store.replace_partition("P", broken, "run-2")
        assert store.count("MATCH (d:Document) RETURN count(*)") == 1 and store.versions() == {"P": "run-1"}
        duplicate_key = {"Document": pl.concat([good["Document"].with_columns(pl.lit("P|d2").alias("id"))] * 2)}
        with pytest.raises(RuntimeError):
            store.replace_partition("P", duplicate_key, "run-3")
        assert store.query("MATCH (d:Document) RETURN d.id AS id")["id"].to_list() == ["P|d"]


def test_a_writer_that_releases_its_database_keeps_its_lock_and_its_work(tmp_path):
    """`GraphStore.released`: Kùzu's database closed while a writer computes; no other writer gets in
    meanwhile, and what the writer wrote before and after is committed when it closes."""
    doc = _document("P")
    path = tmp_path / "g.kz"
    with GraphStore(path) as store:
        store.replace_partition("P", {"Document": doc}, "run-1")
        with store.released(), open(path.with_name(path.name + ".writer.lock"), "w") as other:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        store.replace_partition("Q", {"Document": _document("Q")}, "run-2")
    with GraphStore(path, read_only=True) as reader:
        assert reader.versions() == {"P": "run-1", "Q": "run-2"}
        assert reader.count("MATCH (d:Document) RETURN count(*)") == 2


def test_a_writer_works_on_a_copy_that_replaces_the_store_only_when_it_closes_cleanly(tmp_path):
    """Readers keep reading the live file while a writer works; an error discards the writer's copy."""
    doc = _document("P")
    with GraphStore(tmp_path / "g.kz") as store:
        store.replace_partition("P", {"Document": doc}, "run-1")
    with GraphStore(tmp_path / "g.kz") as writer:
        writer.replace_partition(
            "P", {"Document": pl.concat([doc, doc.with_columns(pl.lit("P|e").alias("id"))])}, "run-2"
        )
        with GraphStore(tmp_path / "g.kz", read_only=True) as reader:  # opens while the writer holds its copy
            assert reader.count("MATCH (d:Document) RETURN count(*)") == 1 and reader.versions() == {"P": "run-1"}
    with GraphStore(tmp_path / "g.kz", read_only=True) as reader:
        assert reader.count("MATCH (d:Document) RETURN count(*)") == 2 and reader.versions() == {"P": "run-2"}
    with pytest.raises(ValueError), GraphStore(tmp_path / "g.kz") as writer:
        writer.replace_partition("P", {"Document": doc}, "run-3")
        raise ValueError("the asset failed after writing")
    with GraphStore(tmp_path / "g.kz", read_only=True) as reader:
        assert reader.count("MATCH (d:Document) RETURN count(*)") == 2 and reader.versions() == {"P": "run-2"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.kz", "g.kz.writer.lock"]  # no working copy left


def _mentioning(code: str, name: str | None) -> dict[str, pl.DataFrame]:
    """One window of partition `code`; when `name` is given it mentions the entity Intervention|exercise so."""
    tables = {
        "Window": pl.DataFrame(
            {
                "id": [f"{code}|w"],
                "partition": [code],
                "window_id": ["w"],
                "doc_id": ["d"],
                "grade": ["C"],
                "section": ["results"],
                "text": ["t"],
            }
        )
    }
    if name:
        tables["Entity"] = pl.DataFrame(
            {"id": ["Intervention|exercise"], "name": [name], "norm": ["exercise"], "type": ["Intervention"]}
        ).with_columns(pico_core=pl.lit(True))
        tables["MENTIONED_IN"] = pl.DataFrame({"from": ["Intervention|exercise"], "to": [f"{code}|w"], "name": [name]})
    return tables


def test_a_shared_entity_is_named_the_same_whichever_partition_commits_first(tmp_path):
    """An entity two conditions mention takes the name the first condition (by code) gives it, in either
    commit order; a condition rebuilt without it hands the name to the next (its name was the store's
    first writer's before, so parallel partition runs built different graphs from the same code)."""

    def stored(order: list[tuple[str, str | None]]) -> list[str]:
        path = tmp_path / f"g{len(list(tmp_path.iterdir()))}.kz"
        with GraphStore(path) as store:
            for code, name in order:
                store.replace_partition(code, _mentioning(code, name), f"run-{code}")
            return store.query("MATCH (e:Entity) RETURN e.name AS name")["name"].to_list()

    assert stored([("ACL", "Exercise"), ("LBP", "exercise therapy")]) == ["Exercise"]
    assert stored([("LBP", "exercise therapy"), ("ACL", "Exercise")]) == ["Exercise"]
    assert stored([("ACL", "Exercise"), ("LBP", "exercise therapy"), ("ACL", None)]) == ["exercise therapy"]
    assert stored([("ACL", "Exercise"), ("LBP", "exercise therapy"), ("ACL", "exercises")]) == ["exercises"]
    assert stored([("ACL", "Exercise"), ("ACL", None)]) == []


def test_a_partition_is_extracted_whole_documents_at_a_time():
    """`Extractor.partition` turns a partition's windows into elements a batch of whole documents at a time
    (a document's abbreviations name the spans of all its windows), each batch tagged once, and gives the
    elements the windows give read all at once."""
    from ebm_platform.graph.extraction import document_batches

    texts = [
        "Exercise therapy reduced pain intensity compared with usual care in adults with chronic low back pain.",
        "Manual therapy improved shoulder function more than placebo (p < 0.05).",
        "Ankle bracing lowered the rate of recurrent ankle sprains in athletes.",
    ]
    windows = pl.DataFrame(
        [
            {"window_id": f"{doc}-{i}", "doc_id": doc, "text": texts[(n + i) % 3]}
            for n, (doc, count) in enumerate([("d1", 1), ("d2", 3), ("d3", 1)])
            for i in range(count)
        ]
    )
    batches = list(document_batches(windows, size=2))
    assert [[w["window_id"] for w in b] for b in batches] == [["d1-0"], ["d2-0", "d2-1", "d2-2"], ["d3-0"]]
    asked: list[list[str]] = []

    def tag(batch: list[dict]) -> dict[str, list[dict]]:
        asked.append([w["window_id"] for w in batch])
        return {}

    extractor = Extractor(load_schema("pico_extended"), LLMClient(model="offline"))
    whole = extractor.windows(windows.to_dicts(), tagged={})
    assert whole.height and extractor.partition(windows, tag).equals(whole)
    assert asked == [[w["window_id"] for w in windows.to_dicts()]]  # 5 windows: one batch of the default size


def test_the_tree_weighs_each_pair_of_entities_by_the_windows_they_share():
    """`EntityGraph.build`: typed relations weigh 2; each pair of entities mentioned in one window is
    co-mentioned, weighed by how many windows they share; one edge per pair (source < target) with the
    weights summed; a relation of an entity with itself is no edge but counts at both its ends."""
    ids = ["I|exercise", "O|pain", "P|adults", "C|usual care"]
    mentions = pl.DataFrame(
        {"entity": ["I|exercise", "O|pain", "P|adults", "I|exercise", "O|pain", "O|pain"], "window": list("aaabbc")}
    )
    relates = _relates([("O|pain", "I|exercise", "IMPROVES"), ("C|usual care", "C|usual care", "same_as")])
    graph = EntityGraph.build(ids, relates, mentions)
    edges = [(ids[a], ids[b], w) for a, b, w in zip(graph.source, graph.target, graph.weight)]
    assert edges == [("I|exercise", "O|pain", 4.0), ("I|exercise", "P|adults", 1.0), ("O|pain", "P|adults", 1.0)]
    assert graph.psi == [frozenset({"IMPROVES"}), frozenset({"IMPROVES"}), frozenset(), frozenset()]
    degree, inside = graph.weights_inside(np.array([0, 0, 1, 2]))
    assert degree.tolist() == [5.0, 5.0, 2.0, 4.0] and inside.tolist() == [4.0, 4.0, 0.0, 4.0]
    empty = EntityGraph.build(ids, relates.clear(), mentions.clear())
    assert len(empty.source) == 0 and empty.psi == [frozenset()] * 4


def _relates(rows: list[tuple[str, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["source", "target", "type"], orient="row")


def _mentions(windows: dict[str, list[str]]) -> pl.DataFrame:
    """Window id -> the entities mentioned in it, as the store's (entity, window) rows."""
    return pl.DataFrame(
        [(e, w) for w, entities in windows.items() for e in entities], schema=["entity", "window"], orient="row"
    )
