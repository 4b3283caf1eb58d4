"""The outline tool, declared once (`theus.tools.memory.outline`), as the agent's model calls
it through the scripted server (the `theus mcp` side is in test_mcp_server)."""

from __future__ import annotations

from pathlib import Path

from knowledge.index.project import Project
from knowledge.recall.recaller import Recaller
from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.conftest import MakeAgent
from theus.tools import memory


async def test_the_agent_gets_a_files_outline_from_the_graph(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent
) -> None:
    (repo / "orders.py").write_text(
        "class Order:\n    def total(self):\n        return 1\n\n\n"
        + "".join(f"def step_{i}(order, n=1):\n    return n\n\n\n" for i in range(250))
    )
    project = Project(repo)
    project.index()
    server.add(
        tool("outline", {"path": "cart.py"}),
        tool("outline", {"path": str(repo / "orders.py")}),
        tool("outline", {"path": "nowhere.py"}),
        tool("outline", {"path": "../outside.py"}),
        text("outlined"),
    )
    agent, rec = make_agent(recaller_factory=lambda: Recaller(project.graph, repo))
    assert (await agent.run_turn("what is in the cart module?")).text == "outlined"
    assert "outline" in {t["function"]["name"] for t in server.requests[0]["tools"]}
    cart, orders, nowhere, outside = (
        m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"
    )
    assert cart.splitlines() == [
        "cart.py (python): 2 definitions",
        "     5-8     class Cart: class Cart",
        "     6-8       method Cart.total: def total(self, items)",
    ]
    lines = orders.splitlines()
    assert lines[0] == "orders.py (python): 252 definitions"
    assert lines[1:3] == [
        "     1-3     class Order: class Order",
        "     2-3       method Order.total: def total(self)",
    ]
    assert lines[3] == "     6-7     function step_0: def step_0(order, n=1)"
    assert len(lines) == 1 + memory.MAX_OUTLINE + 1
    assert lines[-1] == "... (52 more; read the file or grep)"
    assert nowhere.startswith("error: nowhere.py is not in the project's graph")
    assert outside.startswith("error: ") and "outside the project" in outside
    assert rec.asked == []  # reading: nothing to approve
