"""What a session costs, with the memory on and with each layer off (a benchmark, not a test).

    python bench/session_cost.py [--tree PATH] [--project PATH] [--configs on,no_facts,...]

Replays scripted sessions (`SESSIONS`: 5 of 8 turns; coding requests with read, edit and shell
tool calls, follow-ups, small talk, personal facts, a correction) on a small real project
(written by the bench, or a copy of `--project`), one real `theus -p` process per turn (`-c`
continues the session), against the scripted server (`tests/scripted_server.py`), whose usage
counts each prompt exactly with the tokenizer the estimator stands for (`prompt_count`).

Each configuration runs every session in a fresh THEUS_HOME on a fresh copy of the project:
`on` (every layer), each memory layer off (its THEUS_NO_* kill switch), `off` (all of them).
The memory's overhead is measured on the server's side, so the same bench measures a Theus
that has no ledger (`--tree` names another checkout, e.g. `git worktree add /tmp/theus-old
0515241`): the <system-reminder> blocks received (their "Similar past runs" examples apart),
and the structured-output requests (the facts layer's extraction) with their answers. Beside
that, each turn's `usage.ledger` (when the tree reports one) against the server's count.

`--base-url URL --model NAME` plays the sessions against a real server instead, through a
recording proxy (`bench/_recording_proxy.py`): the model answers for itself (the scripted
tool calls are not played), and the server's own usage, where it reports one, is what the
ledger is held against.

Prints per turn (for `on`), per session and in total for each configuration and tree, the
graph-quality specs' pass count (tests/knowledge/facts_specs, run by each tree's own
`run_spec`), and with `--tree` a last line: the memory's overhead, this tree / that tree.
`fresh` is what a prefix cache would process anew: each chat prompt's tokens past the
messages it shares with the session's previous chat request.
The recall deadline is raised (`--deadline-ms`): this measures what is sent, not timing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._recording_proxy import RecordingProxy
from knowledge.core.token_count import count_tokens
from tests.conftest import texts_of, write_tree
from tests.scripted_server import Reply, ScriptedServer, prompt_count, text, tool
from theus.model.limits import server_root
from theus.protocol import LEDGER_PARTS

HERE = Path(__file__).resolve().parent.parent
REMINDER = "<system-reminder>"
EXAMPLES_HEAD = "> Similar past runs in this project"
LAYER_SWITCHES = ("knowledge_inject", "facts", "history", "episodes", "memdir", "embeddings")
CONFIGS = {
    "on": {},
    **{f"no_{layer}": {f"THEUS_NO_{layer.upper()}": "1"} for layer in LAYER_SWITCHES},
    "off": {f"THEUS_NO_{layer.upper()}": "1" for layer in LAYER_SWITCHES},
}

CART = '''"""Shopping cart."""

from shop.pricing import price_of


class Cart:
    """Items a customer is about to buy."""

    def __init__(self) -> None:
        self.items: list[dict] = []

    def add(self, item: dict) -> None:
        self.items.append(item)

    def total(self) -> float:
        return sum(price_of(item) for item in self.items)
'''
PRICING = '''"""Prices of items."""


def price_of(item: dict) -> float:
    """Unit price of an item, after its own discount."""
    return item["price"] * (1 - item.get("discount", 0))
'''
ORDERS = '''"""Orders: a cart checked out, stored in the database."""

from shop.cart import Cart
from shop.db import connect


def save_order(cart: Cart, customer: str) -> int:
    """Store the cart as an order of `customer`; the new order's id."""
    with connect() as db:
        return db.insert("orders", {"customer": customer, "total": cart.total()})
'''
DB = '''"""The database connection."""

DATABASE_URL = "postgresql://localhost/shop"


def connect():
    """A connection to DATABASE_URL."""
    raise NotImplementedError("wired by the deployment")
'''
TEST_CART = """from shop.cart import Cart


def test_total_sums_prices() -> None:
    cart = Cart()
    cart.add({"price": 2.0})
    cart.add({"price": 3.0})
    assert cart.total() == 5.0
"""
PROJECT = {
    "README.md": "# Shop\n\nA small shop backend: carts, pricing, and orders stored in a "
    "database.\n\nRun the tests with `python -m pytest`.\n",
    "AGENTS.md": "Keep functions small and typed. Run the tests before saying done.\n",
    "pyproject.toml": '[project]\nname = "shop"\nversion = "0.1.0"\n',
    "shop/__init__.py": "",
    "shop/cart.py": CART,
    "shop/pricing.py": PRICING,
    "shop/orders.py": ORDERS,
    "shop/db.py": DB,
    "tests/test_cart.py": TEST_CART,
}


@dataclass(frozen=True)
class Turn:
    kind: str  # code, follow-up, small talk, fact, correction
    text: str
    replies: tuple[Reply, ...]
    extraction: dict[str, list[dict[str, str]]] = field(default_factory=dict)


def read(path: str) -> Reply:
    return tool("read", {"path": path})


def edit(path: str, old: str, new: str) -> Reply:
    return tool("edit", {"path": path, "old_string": old, "new_string": new})


def shell(command: str) -> Reply:
    return tool("shell", {"command": command})


def entity(label: str, kind: str, layer: str = "PERSONAL") -> dict[str, str]:
    return {"label": label, "type": kind, "layer": layer}


def fact(subject: str, said: str) -> dict[str, str]:
    return {"subject": subject, "text": said, "source": "user"}


TOTAL = "        return sum(price_of(item) for item in self.items)\n"
ADD = "    def add(self, item: dict) -> None:\n        self.items.append(item)\n"
SESSIONS: list[list[Turn]] = [
    [
        Turn(
            "code",
            "the cart total ignores quantities, can you look at Cart.total?",
            (read("shop/cart.py"), text("Cart.total sums unit prices; it ignores item['qty'].")),
        ),
        Turn(
            "follow-up",
            "yes do it",
            (
                edit(
                    "shop/cart.py",
                    TOTAL,
                    TOTAL.replace("price_of(item)", 'price_of(item) * item.get("qty", 1)'),
                ),
                text("Done: the total multiplies each price by its quantity."),
            ),
        ),
        Turn(
            "follow-up",
            "and the tests?",
            (
                read("tests/test_cart.py"),
                edit(
                    "tests/test_cart.py",
                    "    assert cart.total() == 5.0\n",
                    "    assert cart.total() == 5.0\n    cart.add({'price': 1.0, 'qty': 3})\n"
                    "    assert cart.total() == 8.0\n",
                ),
                text("Added a quantity case to test_total_sums_prices."),
            ),
        ),
        Turn(
            "code",
            "run the tests",
            (shell("ls shop tests"), text("The test files are in place; run pytest to check.")),
        ),
        Turn("small talk", "thanks!", (text("You're welcome."),)),
        Turn(
            "fact",
            "by the way, I like Batman",
            (text("Noted: you like Batman."),),
            {
                "entities": [entity("Batman", "Character", "UNIVERSAL")],
                "facts": [fact("Batman", "the user likes Batman")],
            },
        ),
        Turn(
            "code",
            "where are orders saved?",
            (
                tool("grep", {"pattern": "def save_order"}),
                read("shop/orders.py"),
                text("shop/orders.py: save_order inserts the cart into the orders table."),
            ),
        ),
        Turn("small talk", "great, that's all for now", (text("Bye!"),)),
    ],
    [
        Turn(
            "fact",
            "we use PostgreSQL for the orders database",
            (text("Noted: PostgreSQL for the orders."),),
            {
                "entities": [entity("PostgreSQL", "Technology")],
                "facts": [fact("project", "the orders database is PostgreSQL")],
            },
        ),
        Turn(
            "code",
            "how does the app connect to the database?",
            (read("shop/db.py"), text("shop/db.py: connect() opens DATABASE_URL.")),
        ),
        Turn(
            "follow-up",
            "and where is the connection string?",
            (
                tool("grep", {"pattern": "DATABASE_URL"}),
                text("DATABASE_URL in shop/db.py, a postgresql:// URL."),
            ),
        ),
        Turn(
            "correction",
            "actually it's MySQL, not PostgreSQL",
            (text("Understood: MySQL."),),
            {
                "entities": [entity("MySQL", "Technology")],
                "corrections": [{"subject": "project", "old": "PostgreSQL", "new": "MySQL"}],
            },
        ),
        Turn(
            "follow-up",
            "update the connection string then",
            (
                edit("shop/db.py", "postgresql://localhost/shop", "mysql://localhost/shop"),
                text("DATABASE_URL now points at MySQL."),
            ),
        ),
        Turn(
            "code",
            "list the files in shop",
            (tool("list", {"path": "shop"}), text("cart, pricing, orders, db.")),
        ),
        Turn("small talk", "thanks!", (text("Any time."),)),
        Turn("code", "what database do we use?", (text("MySQL, at DATABASE_URL in shop/db.py."),)),
    ],
    [
        Turn("small talk", "good morning", (text("Good morning!"),)),
        Turn(
            "code",
            "add a 10% discount for orders over 100 in pricing.py",
            (
                read("shop/pricing.py"),
                edit(
                    "shop/pricing.py",
                    '    return item["price"] * (1 - item.get("discount", 0))\n',
                    '    return item["price"] * (1 - item.get("discount", 0))\n\n\n'
                    "def order_discount(total: float) -> float:\n"
                    '    """10% off orders over 100."""\n'
                    "    return total * 0.9 if total > 100 else total\n",
                ),
                text("Added order_discount to shop/pricing.py."),
            ),
        ),
        Turn(
            "follow-up",
            "and the tests?",
            (
                tool(
                    "write",
                    {
                        "path": "tests/test_pricing.py",
                        "content": "from shop.pricing import order_discount\n\n\n"
                        "def test_over_100() -> None:\n"
                        "    assert order_discount(200) == 180\n",
                    },
                ),
                text("tests/test_pricing.py covers it."),
            ),
        ),
        Turn(
            "code",
            "run the tests please",
            (shell("ls tests"), text("Both test files are there.")),
        ),
        Turn(
            "fact",
            "I prefer short answers",
            (text("Short answers it is."),),
            {"facts": [fact("user", "the user prefers short answers")]},
        ),
        Turn(
            "code",
            "where is price_of used?",
            (tool("grep", {"pattern": "price_of"}), text("In shop/cart.py, Cart.total.")),
        ),
        Turn("follow-up", "ok", (text("Anything else?"),)),
        Turn("small talk", "thanks, bye", (text("Bye!"),)),
    ],
    [
        Turn(
            "code",
            "explain shop/orders.py",
            (read("shop/orders.py"), text("save_order stores a cart as an order row.")),
        ),
        Turn(
            "follow-up",
            "can you rename save_order to store_order?",
            (
                tool("grep", {"pattern": "save_order"}),
                text("Only shop/orders.py defines it; shall I rename it?"),
            ),
        ),
        Turn(
            "follow-up",
            "yes do it",
            (
                edit("shop/orders.py", "def save_order(", "def store_order("),
                text("Renamed to store_order."),
            ),
        ),
        Turn(
            "fact",
            "our team is called Fox Squad and we work at Acme",
            (text("Noted."),),
            {
                "entities": [entity("Fox Squad", "Organization"), entity("Acme", "Organization")],
                "relations": [{"source": "Fox Squad", "target": "Acme", "type": "PART_OF"}],
            },
        ),
        Turn(
            "code",
            "show me the README",
            (read("README.md"), text("A small shop backend: carts, pricing, orders.")),
        ),
        Turn("small talk", "nice", (text(":)"),)),
        Turn(
            "code",
            "add a remove method to Cart",
            (
                read("shop/cart.py"),
                edit(
                    "shop/cart.py",
                    ADD,
                    ADD + "\n    def remove(self, item: dict) -> None:\n"
                    "        self.items.remove(item)\n",
                ),
                text("Added Cart.remove."),
            ),
        ),
        Turn(
            "follow-up",
            "and the tests?",
            (
                edit(
                    "tests/test_cart.py",
                    "from shop.cart import Cart\n",
                    "from shop.cart import Cart\n\n\ndef test_remove() -> None:\n"
                    "    cart = Cart()\n    cart.add({'price': 1.0})\n"
                    "    cart.remove({'price': 1.0})\n    assert cart.items == []\n",
                ),
                text("Added test_remove."),
            ),
        ),
    ],
    [
        Turn(
            "code",
            "what does this project do?",
            (read("README.md"), text("A shop backend: carts, pricing and orders.")),
        ),
        Turn(
            "fact",
            "I like Batman and my favourite city is Gotham",
            (text("Batman and Gotham, noted."),),
            {
                "entities": [
                    entity("Batman", "Character", "UNIVERSAL"),
                    entity("Gotham", "Place", "UNIVERSAL"),
                ],
                "facts": [fact("Gotham", "the user's favourite city")],
            },
        ),
        Turn(
            "code",
            "add a docstring to Cart.total",
            (
                edit(
                    "shop/cart.py",
                    "    def total(self) -> float:\n",
                    '    def total(self) -> float:\n        """The sum of the items\' prices."""\n',
                ),
                text("Done."),
            ),
        ),
        Turn("small talk", "thanks!", (text("You're welcome."),)),
        Turn(
            "correction",
            "actually we moved from MySQL to SQLite for the tests",
            (text("SQLite for the tests, noted."),),
            {
                "entities": [entity("SQLite", "Technology")],
                "corrections": [{"subject": "project", "old": "MySQL", "new": "SQLite"}],
            },
        ),
        Turn(
            "code",
            "where are the orders saved?",
            (read("shop/orders.py"), text("As rows of the orders table, by store_order.")),
        ),
        Turn(
            "follow-up",
            "and the tests?",
            (tool("list", {"path": "tests"}), text("test_cart.py and test_pricing.py.")),
        ),
        Turn("small talk", "good night", (text("Good night!"),)),
    ],
]


@dataclass
class Figures:
    """One turn (or a sum of turns), as the server saw it and as the ledger said."""

    calls: int = 0
    sent: int = 0  # the server's count of the chat requests' prompts
    block: int = 0  # <system-reminder> tokens received, examples aside
    examples: int = 0
    extraction_calls: int = 0
    extraction: int = 0  # their prompts and answers
    # The chat prompts' tokens past the messages each shares with the session's previous
    # chat request: what a prefix cache (a hosted provider's, llama.cpp's) processes anew.
    fresh: int = 0
    ledger: dict[str, int] = field(default_factory=dict)  # summed; {} when none reported
    failed: int = 0  # turns whose process failed
    unreported: int = 0  # requests whose answer reported no usage (counted by prompt_count)
    # Chat requests whose answer reported usage: our count (the ledger's sum for a request,
    # `prompt_count`) and the server's.
    ours: int = 0
    theirs: int = 0

    @property
    def overhead(self) -> int:
        return self.block + self.examples + self.extraction

    def add(self, other: Figures) -> None:
        for name in (
            "calls",
            "sent",
            "block",
            "examples",
            "extraction_calls",
            "extraction",
            "fresh",
            "ours",
            "theirs",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failed += other.failed
        self.unreported += other.unreported
        for part, tokens in other.ledger.items():
            self.ledger[part] = self.ledger.get(part, 0) + tokens


class Wire(Protocol):
    """The server as the bench reads it: the scripted one, or a real one behind a proxy."""

    requests: list[dict[str, Any]]
    structured_requests: list[dict[str, Any]]
    script: list[Any]

    @property
    def url(self) -> str: ...

    def add(self, *items: Reply) -> None: ...

    def reported(self, body: dict[str, Any]) -> dict[str, int] | None: ...


class Scripted(ScriptedServer):
    def reported(self, body: dict[str, Any]) -> dict[str, int] | None:
        return {"prompt_tokens": prompt_count(body)}  # what it answered (answers apart)


class Proxy(RecordingProxy):
    def add(self, *items: Reply) -> None:
        """A real model answers for itself."""

    def reported(self, body: dict[str, Any]) -> dict[str, int] | None:
        return self.usage.get(id(body))


@dataclass(frozen=True)
class Options:
    project: Path | None  # a project to copy, else PROJECT
    deadline_ms: str
    upstream: str = ""  # a real server's root, else the scripted server
    model: str = "test-model"
    extra: tuple[tuple[str, str], ...] = ()  # more THEUS_* settings for every run
    timeout_s: float = 300


class Extractions:
    """The structured-output side of the server: answers the current turn's scripted
    extraction (its lists that the request's schema has; the rest empty), counting tokens."""

    def __init__(self) -> None:
        self.now: dict[str, list[dict[str, str]]] = {}
        self.answered = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        schema = body["response_format"].get("json_schema", {}).get("schema", {})
        answer = {
            name: self.now.get(name, [])
            for name, spec in schema.get("properties", {}).items()
            if spec.get("type") == "array"
        }
        reply = text(json.dumps(answer), repeat=True)
        self.answered += count_tokens(reply.text)
        return reply


def reminders(body: dict[str, Any]) -> list[str]:
    return [
        part
        for message in body["messages"]
        for part in texts_of(message)
        if part.startswith(REMINDER)
    ]


def fresh(body: dict[str, Any], previous: dict[str, Any] | None) -> int:
    """`body`'s prompt tokens past the messages it shares, in order, with `previous`; all
    of them when the tools differ (they come first in a prompt)."""
    if previous is None or previous.get("tools") != body.get("tools"):
        return prompt_count(body)
    messages, before = body["messages"], previous["messages"]
    shared = 0
    while shared < min(len(messages), len(before)) and messages[shared] == before[shared]:
        shared += 1
    return prompt_count({"messages": messages[shared:]})


def seen(server: Wire, chat: int, structured: int, answered: int, follows: bool = True) -> Figures:
    """The server's view of one turn's requests (those after the first `chat` and
    `structured` ones): its own counts where it reported them, else `prompt_count`.
    `follows`: the turn continues the session of the request before `chat`."""
    bodies, asked = server.requests[chat:], server.structured_requests[structured:]
    figures = Figures(calls=len(bodies), extraction_calls=len(asked))
    previous = server.requests[chat - 1] if follows and chat else None
    for body in bodies:
        figures.fresh += fresh(body, previous)
        previous = body
    for body in [*bodies, *asked]:
        usage = server.reported(body)
        figures.unreported += usage is None
        tokens = usage["prompt_tokens"] if usage else prompt_count(body)
        if body in asked:
            figures.extraction += tokens + (usage or {}).get("completion_tokens", 0)
        else:
            figures.sent += tokens
            if usage is not None:
                figures.ours += prompt_count(body)
                figures.theirs += tokens
    figures.extraction += answered
    for body in bodies:
        for block in reminders(body):
            at = block.find(EXAMPLES_HEAD)
            examples = (
                count_tokens(block[at:].removesuffix("\n</system-reminder>")) if at >= 0 else 0
            )
            figures.block += count_tokens(block) - examples
            figures.examples += examples
    return figures


def environment(
    home: Path, server: Wire, tree: Path, config: str, options: Options
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update(
        {
            "PYTHONPATH": str(tree),
            "THEUS_HOME": str(home),
            "THEUS_BASE_URL": server.url,
            "THEUS_MODEL": options.model,
            "THEUS_NO_WATCH": "1",
            "THEUS_RECALL_DEADLINE_MS": options.deadline_ms,
            **dict(options.extra),
            **CONFIGS[config],
        }
    )
    return env


def theus(
    tree: Path, root: Path, env: dict[str, str], timeout_s: float, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoint", "--path", str(root), *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def play(
    tree: Path, config: str, options: Options, sessions: list[list[Turn]]
) -> Iterator[tuple[int, int, Turn, Figures]]:
    """(session, turn, the turn, its figures) for every turn of `sessions`, run in a fresh
    home on a fresh copy of the project."""
    work = Path(tempfile.mkdtemp(prefix="theus-session-cost-"))
    root = work / "project"
    if options.project is not None:
        shutil.copytree(options.project, root, ignore=shutil.ignore_patterns(".git"))
    else:
        write_tree(root, PROJECT)
    extractions = Extractions()
    try:
        wire = Proxy(options.upstream) if options.upstream else Scripted()
        if isinstance(wire, Scripted):
            wire.structured.append(extractions)
        with wire:
            server: Wire = wire
            env = environment(work / "home", server, tree, config, options)
            done = theus(tree, root, env, options.timeout_s, "index")
            if done.returncode != 0:
                raise SystemExit(f"theus index failed in {tree}: {done.stderr.strip()}")
            for s, session in enumerate(sessions, 1):
                for t, turn in enumerate(session, 1):
                    figures = run_turn(tree, root, env, server, extractions, turn, t > 1, options)
                    yield s, t, turn, figures
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_turn(
    tree: Path,
    root: Path,
    env: dict[str, str],
    server: Wire,
    extractions: Extractions,
    turn: Turn,
    follows: bool,
    options: Options,
) -> Figures:
    chat, structured = len(server.requests), len(server.structured_requests)
    extractions.now, extractions.answered = turn.extraction, 0
    server.add(*turn.replies)
    flags = ["--output-format", "json", "--allow-edits", "--allow-shell"]
    flags.append("--allow-unsandboxed-shell")
    follow = ["-c"] if follows else []
    done = theus(tree, root, env, options.timeout_s, *follow, "-p", turn.text, *flags)
    server.script.clear()  # a turn that failed early leaves its replies: not the next turn's
    figures = seen(server, chat, structured, extractions.answered, follows)
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = {}
    if done.returncode != 0 or not result:
        figures.failed = 1
        print(f"    turn failed ({done.returncode}): {done.stderr.strip()[-300:]}", file=sys.stderr)
    ledger = result.get("usage", {}).get("ledger")
    if ledger:
        figures.ledger = dict(ledger)
    return figures


def specs(tree: Path) -> str:
    """The graph-quality specs as `tree`'s own runner plays them: specs and checks passed."""
    script = (
        "import json, os, sys, tempfile\n"
        "from pathlib import Path\n"
        "from entrypoint.settings import apply\n"
        "apply({}, os.environ)\n"
        "from tests.knowledge.test_facts_specs import SPECS, run_spec\n"
        "import theus\n"
        "out = [theus.__file__]\n"
        "for path in SPECS:\n"
        "    spec = json.loads(path.read_text(encoding='utf-8'))\n"
        "    declared = sum(len(items) for items in spec['checks'].values())\n"
        "    ran, failures = run_spec(spec, Path(tempfile.mkdtemp()) / 'repo')\n"
        "    out.append([path.stem, declared, ran - len(failures), len(failures)])\n"
        "print(json.dumps(out))\n"
    )
    home = tempfile.mkdtemp(prefix="theus-session-cost-specs-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update({"PYTHONPATH": str(tree), "THEUS_HOME": home, "THEUS_NO_EMBEDDINGS": "1"})
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tree, env=env, capture_output=True, text=True
    )
    shutil.rmtree(home, ignore_errors=True)
    if done.returncode != 0:
        return f"specs could not run: {done.stderr.strip().splitlines()[-1:]}"
    where, *rows = json.loads(done.stdout)
    passed = sum(1 for _, _, _, failed in rows if failed == 0)
    checks = sum(ok for _, _, ok, _ in rows)
    declared = sum(d for _, d, _, _ in rows)
    return (
        f"graph-quality specs: {passed}/{len(rows)} passed ({checks}/{declared} checks); "
        f"theus from {Path(where).parent}"
    )


def ledger_line(ledger: dict[str, int], sent: int) -> str:
    if not ledger:
        return "ledger: (not reported by this tree)"
    total = sum(ledger.get(part, 0) for part in LEDGER_PARTS)
    off = 100 * (total - sent) / sent if sent else 0.0
    parts = " ".join(f"{part}={ledger.get(part, 0)}" for part in LEDGER_PARTS)
    return f"ledger: {parts} | sum {total} vs server {sent} ({off:+.2f}%)"


def counts_line(f: Figures) -> str:
    """Where the server counts with another tokenizer: requests it reported usage for."""
    ratio = f.theirs / f.ours if f.ours else 0.0
    return (
        f"requests with reported usage: our count {f.ours:,}, "
        f"the server's {f.theirs:,} ({ratio:.2f})"
    )


def figures_line(f: Figures) -> str:
    return (
        f"calls {f.calls:2}  sent {f.sent:7,}  block {f.block:6,}  examples {f.examples:5,}  "
        f"extraction {f.extraction_calls:2} req {f.extraction:6,} tok  overhead {f.overhead:7,}  "
        f"fresh {f.fresh:7,}"
        + (f"  FAILED {f.failed}" if f.failed else "")
        + (f"  ({f.unreported} requests without usage: our count)" if f.unreported else "")
    )


def measure(
    tree: Path, config: str, options: Options, sessions: list[list[Turn]], per_turn: bool
) -> Figures:
    total, session, current = Figures(), Figures(), 1
    worst = 0.0
    kinds: dict[str, tuple[int, Figures]] = {}
    print(f"\n## {config} ({tree})")
    for s, t, turn, figures in play(tree, config, options, sessions):
        if s != current:
            print(f"  session {current} total: {figures_line(session)}")
            session, current = Figures(), s
        session.add(figures)
        total.add(figures)
        count, of_kind = kinds.get(turn.kind, (0, Figures()))
        of_kind.add(figures)
        kinds[turn.kind] = (count + 1, of_kind)
        if figures.ledger and figures.sent:
            ledger_sum = sum(figures.ledger.get(p, 0) for p in LEDGER_PARTS)
            worst = max(worst, abs(ledger_sum - figures.sent) / figures.sent)
        if per_turn:
            print(f"  s{s} t{t} {turn.kind:11} {turn.text[:44]!r:48} {figures_line(figures)}")
            print(f"      {ledger_line(figures.ledger, figures.sent)}")
            if figures.ours != figures.theirs:
                print(f"      {counts_line(figures)}")
    print(f"  session {current} total: {figures_line(session)}")
    print(f"  TOTAL {config}: {figures_line(total)}")
    print(f"  TOTAL {ledger_line(total.ledger, total.sent)}")
    if total.ledger:
        print(f"  worst turn: ledger sum off the server's count by {100 * worst:.2f}%")
    if total.ours != total.theirs:
        print(f"  TOTAL {counts_line(total)}")
    for kind, (count, f) in kinds.items():
        print(
            f"  by kind: {kind:11} {count:2} turns, per turn: extraction requests "
            f"{f.extraction_calls / count:.1f}, block+examples "
            f"{(f.block + f.examples) / count:,.0f}, sent {f.sent / count:,.0f}"
        )
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tree", type=Path, help="another Theus checkout to measure beside this one"
    )
    parser.add_argument("--project", type=Path, help="a project to copy (default: the bench's own)")
    parser.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help=f"which of {', '.join(CONFIGS)} (default: all)",
    )
    parser.add_argument("--deadline-ms", default="30000", help="THEUS_RECALL_DEADLINE_MS")
    parser.add_argument("--base-url", help="a real server (/v1 URL) instead of the scripted one")
    parser.add_argument("--model", default="test-model", help="its model (with --base-url)")
    parser.add_argument("--sessions", type=int, default=len(SESSIONS), help="the first N")
    parser.add_argument("--turns", type=int, default=8, help="the first N of each session")
    parser.add_argument(
        "--set", action="append", default=[], metavar="THEUS_X=V", help="another setting"
    )
    args = parser.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configurations {unknown}: choose from {', '.join(CONFIGS)}")
    trees = [HERE] + ([args.tree.resolve()] if args.tree else [])
    sessions = [session[: args.turns] for session in SESSIONS[: args.sessions]]
    options = Options(
        args.project,
        args.deadline_ms,
        server_root(args.base_url) if args.base_url else "",
        args.model if args.base_url else "test-model",
        tuple(tuple(pair.split("=", 1)) for pair in args.set),
        timeout_s=3600 if args.base_url else 300,
    )
    turns = sum(len(s) for s in sessions)
    where = args.base_url or "the scripted server"
    print(f"# session cost: {len(sessions)} sessions, {turns} turns against {where}, {configs}")
    overhead: dict[Path, int] = {}
    for tree in trees:
        print(f"\n# tree {tree}: {specs(tree)}")
        for config in configs:
            total = measure(tree, config, options, sessions, config == configs[0])
            if config == "on":
                overhead[tree] = total.overhead
    if args.tree and len(overhead) == 2 and overhead[trees[1]]:
        new, old = overhead[HERE], overhead[trees[1]]
        print(
            f"\nmemory overhead (blocks + examples + extraction, memory on): "
            f"this tree {new:,} / {trees[1]} {old:,} = {new / old:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
