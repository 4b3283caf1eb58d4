"""Memories lead to code: a memory names a file or a symbol however it is written (backticks
or none, a path, a bare file name, a qualified name, a snake_case name), and recalling the
memory brings that file, through real `theus memory add` and `theus recall` processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowledge.core import keys
from knowledge.core.mentions import Mentions
from tests.conftest import indexed_project, texts_of, write_tree
from tests.scripted_server import ScriptedServer, text
from tests.theus.test_headless import index, theus

FILES = {
    "billing/invoice.py": "def total(lines):\n    return sum(lines)\n",
    "shop/pricing.py": "class Cart:\n    def price_of(self, item):\n        return 1\n",
    "shop/shipping.py": "def ship_order(order):\n    return 2\n",
    "README.md": "# Shop\n",
}


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Amounts round half up in billing/invoice.py.", keys.file_key("billing/invoice.py")),
        ("Amounts round half up, see invoice.py", keys.file_key("billing/invoice.py")),
        ("Amounts round half up (./billing/invoice.py:2)", keys.file_key("billing/invoice.py")),
        ("Cart.price_of is cached", keys.symbol_key("shop/pricing.py", "Cart.price_of")),
        ("ship_order retries twice", keys.symbol_key("shop/shipping.py", "ship_order")),
        ("`shop/pricing.py#Cart` is the one", keys.symbol_key("shop/pricing.py", "Cart")),
    ],
)
def test_a_memory_names_a_file_or_symbol_with_or_without_backticks(
    tmp_path: Path, text: str, key: str
) -> None:
    project = indexed_project(tmp_path / "repo", FILES)
    assert Mentions(project.graph).keys_for(text) == [key]
    project.close()


@pytest.mark.parametrize(
    "text",
    [
        "totals are summed, e.g. on example.com with v1.2",  # no file or symbol is so named
        "the order total is shipped",  # plain words: never a symbol however named
    ],
)
def test_plain_words_name_nothing(tmp_path: Path, text: str) -> None:
    project = indexed_project(tmp_path / "repo", FILES)
    assert Mentions(project.graph).keys_for(text) == []
    project.close()


def test_a_recalled_memory_brings_the_file_it_is_about(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", FILES)
    index(root)
    added = theus(
        ["memory", "add", "Amounts round half up before tax in billing/invoice.py"], None, root
    )
    assert added.returncode == 0, added.stderr
    done = theus(["recall", "--json", "why are amounts rounded up before tax?"], None, root)
    assert done.returncode == 0, done.stderr
    recalled = json.loads(done.stdout)
    assert recalled["files"] == ["billing/invoice.py"]
    assert recalled["results"][0]["kind"] == "memory"
    brought = next(r for r in recalled["results"] if r["path"] == "billing/invoice.py")
    assert brought["why"].startswith("noted in mem:") and brought["layer"] == "WARM"
    assert "billing/invoice.py" in recalled["context"]


def test_a_memory_added_by_one_process_is_in_the_next_runs_first_request(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """No source file touched between them: the saved scoring index takes the memory in."""
    root = write_tree(tmp_path / "repo", FILES)
    index(root)
    assert theus(["recall", "--json", "ship an order"], None, root).returncode == 0  # saved
    added = theus(
        ["memory", "add", "Orders ship from the Lisbon warehouse on Tuesdays"], None, root
    )
    assert added.returncode == 0, added.stderr
    server.add(text("On Tuesdays."))
    done = theus(["-p", "when do orders ship from the warehouse?"], server, root)
    assert done.returncode == 0, done.stderr
    assert "Lisbon warehouse on Tuesdays" in texts_of(server.requests[0]["messages"][-1])[0]
