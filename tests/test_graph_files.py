"""Graph files: read by content, integer ids in numeric order, refused with one line when unusable."""

import warnings

import networkx as nx
import pytest

from llm_mesa.cli import main
from llm_mesa.graphs import GraphWarning, NetworkError, load_graph, normalise_graph
from llm_mesa.models.consensus import ConsensusModel


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_integer_ids_keep_their_numeric_order(tmp_path):
    path = write(tmp_path, "path.edges", "".join(f"{i} {i + 1}\n" for i in range(11)))
    g = load_graph(path)
    assert sorted(g.edges) == [(i, i + 1) for i in range(11)]  # text order would put 10 after 1
    model = ConsensusModel(graph=g, policy="voter", assign={"nodes:10,11": "stubborn"}, rng=1, max_rounds=1,
                           baseline_permutations=0)
    assert [a.policy.name for a in model.agents_by_node][9:] == ["voter", "stubborn", "stubborn"]


def test_a_numeric_third_column_is_a_weight_and_text_there_is_refused(tmp_path):
    assert load_graph(write(tmp_path, "w.edges", "a b 0.5\nb c 2\n")).number_of_edges() == 2
    with pytest.raises(NetworkError, match="line 2: the third column 'heavy' is not a number"):
        load_graph(write(tmp_path, "bad.edges", "a b 1\nb c heavy\n"))
    with pytest.raises(NetworkError, match="line 1: 4 columns"):
        load_graph(write(tmp_path, "four.edges", "a b 1 2\n"))


def test_graphml_is_read_by_content_whatever_the_suffix(tmp_path):
    nx.write_graphml(nx.cycle_graph(5), tmp_path / "ring.graphml")
    path = write(tmp_path, "ring.txt", (tmp_path / "ring.graphml").read_text())
    assert nx.is_isomorphic(load_graph(path), nx.cycle_graph(5))


@pytest.mark.parametrize("graph, fragment", [
    (nx.DiGraph([(0, 1), (1, 2), (2, 0)]), "is directed"),
    (nx.Graph([(0, 1), (2, 3)]), "is not connected (2 components"),
])
def test_directed_and_disconnected_files_are_refused(tmp_path, graph, fragment):
    nx.write_graphml(graph, tmp_path / "g.graphml")
    with pytest.raises(NetworkError, match=fragment.replace("(", r"\(")):
        load_graph(tmp_path / "g.graphml")


def test_an_isolated_node_in_an_edge_list_is_refused(tmp_path):
    nx.write_graphml(nx.path_graph(3), tmp_path / "p.graphml")
    g = nx.path_graph(3)
    g.add_node(7)
    nx.write_graphml(g, tmp_path / "iso.graphml")
    with pytest.raises(NetworkError, match="not connected"):
        load_graph(tmp_path / "iso.graphml")


def test_the_library_plays_a_disconnected_or_directed_graph_but_says_so():
    with pytest.warns(GraphWarning, match="components"):
        normalise_graph(nx.Graph([(0, 1), (2, 3)]))
    with pytest.warns(GraphWarning, match="directed"):
        normalise_graph(nx.DiGraph([(0, 1), (1, 2)]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        normalise_graph(nx.path_graph(4))


@pytest.mark.parametrize("content, fragment", [
    ("0 1\n1 2 heavy\n", "not a number"),
    ("0 1\n2 3\n", "not connected"),
    ("", "fewer than 2 nodes"),
])
def test_the_cli_refuses_a_bad_graph_file_in_one_line(tmp_path, capsys, content, fragment):
    path = write(tmp_path, "g.edges", content)
    assert main(["consensus", "--graph", str(path), "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1
    assert not (tmp_path / "never").exists()
