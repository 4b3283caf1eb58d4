"""`theus mcp` as another agent sees it: a real subprocess on a fixture project, driven by the
official SDK's own client over stdio and over Streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import TextResourceContents

from tests.conftest import indexed_project
from theus.tools import memory

CART = '''"""Shopping cart."""
from pricing import price_of


class Cart:
    def total(self, items):
        """Sum of line prices."""
        return sum(price_of(i) for i in items)
'''
FILES = {
    "cart.py": CART,
    "pricing.py": 'def price_of(item):\n    """Unit price."""\n    return item["price"]\n',
    "docs/deploy.md": "# Deploy\n\nStaging is deployed with `make ship`.\n",
}
TOKEN = "t0ken-for-the-test-only-0123456789"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    indexed_project(root, FILES).close()
    return root


def env(**extra: str) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    full.update({"THEUS_HOME": os.environ["THEUS_HOME"], "THEUS_NO_EMBEDDINGS": "1"}, **extra)
    return full


def stdio(root: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "entrypoint", "mcp", str(root)],
        env=env(),
        cwd=str(Path(__file__).parents[2]),
    )


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def test_stdio_lists_tools_recalls_the_right_file_and_fails_open(project: Path) -> None:
    async with Client(stdio(project)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        names = set(listed)
        assert {
            "recall",
            "outline",
            "read_node",
            "neighbours",
            "search_memory",
            "add_memory",
            "list_episodes",
            "read_episode",
            "facts",
        } <= names

        recalled = await client.call_tool("recall", {"query": "where is the cart total"})
        assert not recalled.is_error
        found = json.loads(text_of(recalled))
        assert found["files"][0] == "cart.py"
        assert found["results"][0]["key"].startswith(("sym:cart.py#", "file:cart.py"))
        assert "cart.py" in found["block"]

        node = await client.call_tool("read_node", {"key": "sym:cart.py#Cart.total"})
        details = json.loads(text_of(node))
        assert details["signature"].startswith("def total")
        assert "return sum(price_of(i) for i in items)" in details["lines"]
        assert {"from": "file:cart.py", "kind": "defines"} in details["edges_in"]

        bad = await client.call_tool("read_node", {"key": "sym:nowhere.py#Nothing"})
        assert bad.is_error and "no node has the key" in text_of(bad)
        missing = await client.call_tool("read_episode", {"episode_id": "2020-01-01-nope"})
        assert missing.is_error and "no episode" in text_of(missing)
        empty = await client.call_tool("recall", {"query": "   "})
        assert empty.is_error and "needs a query" in text_of(empty)

        # The tools are served from the agent's own declarations: the same schemas.
        assert listed["recall"].input_schema == memory.recall.parameters
        assert listed["outline"].input_schema == memory.outline.parameters
        shown = await client.call_tool("outline", {"path": "cart.py"})
        assert not shown.is_error
        assert text_of(shown).splitlines() == [
            "cart.py (python): 2 definitions",
            "     5-8     class Cart: class Cart",
            "     6-8       method Cart.total: def total(self, items)",
        ]
        gone = await client.call_tool("outline", {"path": "../elsewhere.py"})
        assert gone.is_error and "outside the project" in text_of(gone)

        near = json.loads(text_of(await client.call_tool("neighbours", {"key": "file:cart.py"})))
        assert "sym:cart.py#Cart" in {n["key"] for n in near["neighbours"]}

        # The watcher keeps the graph fresh while the server runs.
        (project / "shipping.py").write_text('def shipping_fee(order):\n    """Fee."""\n')
        for _ in range(150):
            fresh = json.loads(text_of(await client.call_tool("recall", {"query": "shipping fee"})))
            if fresh["files"][:1] == ["shipping.py"]:
                break
            await asyncio.sleep(0.1)
        assert fresh["files"][:1] == ["shipping.py"], fresh

        added = await client.call_tool(
            "add_memory",
            {
                "text": "Shipping is never part of the cart total; key sk-"
                "proj-abcdefghijklmnopqrstuvwx0123"
            },
        )
        assert not added.is_error
        searched = text_of(await client.call_tool("search_memory", {"query": "shipping"}))
        assert "Shipping is never part" in searched
        assert "abcdefghijklmnopqrstuvwx0123" not in searched  # redacted, as everywhere
        index = (await client.read_resource("theus://memory/MEMORY.md")).contents[0]
        assert isinstance(index, TextResourceContents)
        assert "Shipping is never part" in index.text


def test_stdin_eof_and_sigterm_end_the_server(project: Path) -> None:
    argv = [sys.executable, "-m", "entrypoint", "mcp", str(project)]
    pipe = subprocess.PIPE
    ending, terminated = (
        subprocess.Popen(argv, env=env(), stdin=pipe, stdout=pipe, stderr=pipe) for _ in range(2)
    )
    try:
        assert ending.stdin is not None
        assert terminated.stdin is not None and terminated.stdout is not None
        ending.stdin.close()  # EOF: the client went away
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode() + b"\n"
        terminated.stdin.write(ping)
        terminated.stdin.flush()
        assert b'"id":1' in terminated.stdout.readline()
        terminated.terminate()
        # Both end cleanly, the memory closed on the way out.
        # a minute: on a loaded machine its layers may still be starting, and closing waits for
        # each (bounded); a hang still fails
        assert ending.wait(timeout=60) == 0 and terminated.wait(timeout=60) == 0
    finally:
        for proc in (ending, terminated):
            proc.kill()
            proc.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(project: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "entrypoint", "mcp", str(project), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env(THEUS_MCP_TOKEN=TOKEN),
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # printed once it listens
        assert f"http://127.0.0.1:{port}/mcp" in first, first + proc.stderr.read()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0
        proc.kill()


async def test_http_serves_with_the_token_and_refuses_foreign_hosts_origins_and_no_token(
    http_server: str,
) -> None:
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        Client(streamable_http_client(http_server, http_client=http)) as client,
    ):
        assert "recall" in {t.name for t in (await client.list_tools()).tools}
        found = json.loads(text_of(await client.call_tool("recall", {"query": "staging deploy"})))
        assert found["files"][0] == "docs/deploy.md"
        bad = await client.call_tool("read_node", {"key": "file:nope.py"})
        assert bad.is_error

    port = int(http_server.rsplit(":", 1)[1].split("/")[0])
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    good = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    async with httpx2.AsyncClient(timeout=10) as raw:

        async def post(**headers: str) -> httpx2.Response:
            return await raw.post(http_server, json=body, headers={**good, **headers})

        for host in (
            f"evil.example:{port}",
            f"localhost.evil.example:{port}",
            f"localhost:{port + 1}",
        ):
            answer = await post(Host=host)
            assert answer.status_code == 403 and "host" in answer.text, host
        for origin in ("https://evil.example", "null"):
            answer = await post(Origin=origin)
            assert answer.status_code == 403 and "origin" in answer.text, origin
        assert (await post(Authorization="")).status_code == 401
        assert (await post(Authorization="Bearer wrong-token")).status_code == 401
        # The same request with every check passed, from no page or from the server's own.
        passed = await post()
        assert passed.status_code == 200
        assert "access-control-allow-origin" not in {k.lower() for k in passed.headers}
        assert (await post(Origin=f"http://127.0.0.1:{port}")).status_code == 200


def test_print_config_and_bad_input_are_one_line(project: Path) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "entrypoint", "mcp", str(project), "--print-config"],
        env=env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert shown.returncode == 0
    claude = json.loads(shown.stdout.split("# Codex")[0].split("\n", 1)[1])
    assert claude["mcpServers"]["theus"]["args"][-1] == str(project)
    assert "[mcp_servers.theus]" in shown.stdout and "# Cursor" in shown.stdout
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for bad, said in (
            (["--http", "70000"], "between 0 and 65535"),
            (["/no/such/folder"], "no such folder"),
            ([str(project), "--http", str(port)], "cannot listen"),
        ):
            done = subprocess.run(
                [sys.executable, "-m", "entrypoint", "mcp", *bad],
                env=env(),
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert done.returncode == 2 and said in done.stderr, done.stderr
            assert len(done.stderr.strip().splitlines()) == 1, done.stderr
