"""The ranking behaviours recall relies on, on small repositories written here: the
implementation before the tests and docs that repeat its words, what a request asks for
(tests, docs) first, declarations after their implementation, long requests, named
identifiers and the one passage of a long file that a request is about."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from knowledge.index.project import Project
from knowledge.recall.recaller import Recall, Recaller, make_recaller
from tests.conftest import file_types_history, indexed_project

RATES = {
    "shop/discount.py": '"""Discount rules for orders."""\n\n\n'
    "def apply_discount(order, rate):\n"
    '    """Reduce the order total by a percentage rate."""\n'
    "    return order.total * (1 - rate)\n",
    "shop/cart.py": '"""The shopping cart."""\n\n\nclass Cart:\n'
    "    def add(self, item):\n        self.items.append(item)\n",
    "tests/test_discount.py": "from shop.discount import apply_discount\n\n\n"
    "def test_discount_rate_reduces_the_order_total():\n"
    "    # discount rate order total discount rate order total\n"
    "    assert apply_discount(order(100), 0.5) == 50\n\n\n"
    "def test_a_zero_discount_rate_keeps_the_order_total():\n"
    "    assert apply_discount(order(100), 0) == 100\n",
    "docs/discounts.md": "# Discounts\n\nA discount rate reduces the order total. Set the "
    "discount rate per order; the order total never goes below zero.\n",
}


def recaller(tmp_path: Path, files: dict[str, str]) -> Recaller:
    project = indexed_project(tmp_path / "repo", files)
    found = make_recaller(project)
    found.warm()
    return found


def ranked(result: Recall) -> list[str]:
    return result.files


def test_the_module_a_request_is_about_beats_a_test_that_repeats_its_words(tmp_path: Path) -> None:
    files = ranked(recaller(tmp_path, RATES).recall("change how the discount rate is applied"))
    assert files[0] == "shop/discount.py"
    assert files.index("shop/discount.py") < files.index("tests/test_discount.py")
    assert files.index("shop/discount.py") < files.index("docs/discounts.md")


def test_a_request_about_tests_puts_tests_first(tmp_path: Path) -> None:
    files = ranked(recaller(tmp_path, RATES).recall("add a test for a zero discount rate"))
    assert files[0] == "tests/test_discount.py"


def test_a_change_that_adds_its_test_in_passing_wants_the_code_first(tmp_path: Path) -> None:
    files = ranked(
        recaller(tmp_path, RATES).recall(
            "Fix the discount rate of a zero order total and add a test"
        )
    )
    assert files[0] == "shop/discount.py"


def test_a_request_about_docs_puts_docs_first(tmp_path: Path) -> None:
    files = ranked(
        recaller(tmp_path, RATES).recall(
            "document that the discount rate never takes the order total below zero"
        )
    )
    assert files[0] == "docs/discounts.md"


def test_a_request_about_an_example_puts_the_example_first(tmp_path: Path) -> None:
    files = dict(RATES)
    files["_examples/checkout/main.py"] = (
        "from shop.discount import apply_discount\n\n\n"
        "def main():\n    # apply a discount rate to an order at checkout\n"
        "    print(apply_discount(order(100), 0.1))\n"
    )
    found = recaller(tmp_path, files)
    about_example = ranked(found.recall("update the checkout example to apply a discount"))
    assert about_example[0] == "_examples/checkout/main.py"
    # A change to the code itself still wants the code before the example that uses it.
    change = ranked(found.recall("apply a discount at checkout"))
    assert change.index("shop/discount.py") < change.index("_examples/checkout/main.py")


def test_a_module_the_request_names_by_its_file_name_comes_first(tmp_path: Path) -> None:
    # Every module imports `typing`, so the word is common in the text; the file's name is
    # what says which module the request is about.
    def module(doc: str, body: str) -> str:
        return f'"""{doc}."""\n\nimport typing as t\n\n\n{body}'

    found = recaller(
        tmp_path,
        {
            "web/app.py": module(
                "The application",
                "class App:\n"
                "    def handle(self, code, handler: t.Any):\n"
                '        """Call the error handler."""\n'
                "        return handler(code)\n",
            ),
            "web/typing.py": module(
                "Type aliases",
                "ResponseValue = t.Union[str, bytes]\n"
                "ErrorHandlerCallable = t.Callable[[Exception], ResponseValue]\n",
            ),
            "web/views.py": module("Views", "def render(view: t.Any) -> str:\n    return view()\n"),
        },
    )
    assert ranked(found.recall("Correct the error handler typing"))[0] == "web/typing.py"
    # Only a file's own name counts: a word the head does not use names nothing.
    assert ranked(found.recall("Correct the error handler"))[0] == "web/app.py"


def test_a_plural_file_name_is_named_by_its_singular(tmp_path: Path) -> None:
    project = indexed_project(
        tmp_path / "repo",
        {
            "web/sessions.py": "def load(cookie):\n    return cookie\n",
            "web/login.py": "def session(request):\n    return request\n",
        },
    )
    found = make_recaller(project)
    found.sync()
    # "sessions" is folded to "session"; the symbol named `session` is not a file's name.
    assert found.files_named("session", None) == ["web/sessions.py"]
    assert found.files_named("session", "other/") == []


def test_a_long_multi_sentence_request_ranks_by_what_it_is_about(tmp_path: Path) -> None:
    request = (
        "Discounts are applied twice at checkout\n\n"
        "When a customer adds an item to the cart after a discount was applied, the order "
        "total shown is lower than expected. It looks like the percentage is subtracted "
        "again. Steps: add an item, apply a 10% discount rate, add another item. I added a "
        "test that shows it. Fixes #123."
    )
    result = recaller(tmp_path, RATES).recall(request)
    assert result.files[0] == "shop/discount.py"
    # Words in passing ("added a test") do not make it a request about tests.
    assert result.files.index("tests/test_discount.py") > 0


def test_a_declaration_file_follows_its_implementation(tmp_path: Path) -> None:
    files = ranked(
        recaller(
            tmp_path,
            {
                "src/parser.ts": "export function parseHeader(line: string): Header {\n"
                "  return { name: line.split(':')[0] };\n}\n",
                "src/parser.d.ts": "/** Parse one header line into a Header with its name. */\n"
                "export declare function parseHeader(line: string): Header;\n"
                "export interface Header { name: string; header: string }\n",
                "src/other.ts": "export const other = 1;\n",
            },
        ).recall("parse a header line into its name")
    )
    assert files.index("src/parser.ts") + 1 == files.index("src/parser.d.ts")


def test_a_stub_without_an_implementation_beside_it_follows_the_best_code_file(
    tmp_path: Path,
) -> None:
    files = ranked(
        recaller(
            tmp_path,
            {
                "stubs/http.pyi": "def fetch_header(url: str, header: str) -> str:\n"
                '    """Fetch one header of a url."""\n',
                "net/client.py": "def fetch(url):\n    # read the header of the url response\n"
                "    return open(url).read()\n",
            },
        ).recall("fetch the header of a url")
    )
    assert files[0] == "net/client.py"
    assert files[1] == "stubs/http.pyi"


def test_a_named_identifier_finds_the_file_that_defines_it(tmp_path: Path) -> None:
    files = {
        f"pkg/mod_{i}.py": f"def handle_{i}(event):\n"
        f"    # events lost on shutdown: flush pending events first\n"
        f"    return event\n"
        for i in range(10)
    }
    files["pkg/registry.py"] = "def flush_pending_events(queue):\n    return queue\n"
    found = recaller(tmp_path, files)
    request = "events are lost on shutdown; `flush_pending_events` should run first"
    assert found.recall(request).files[0] == "pkg/registry.py"
    found.tuning = replace(found.tuning, idents=0.0)  # the signal this test is about
    assert found.recall(request).files[0] != "pkg/registry.py"


def test_the_passage_a_request_is_about_lifts_a_long_file(tmp_path: Path) -> None:
    filler = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(120))
    target = (
        "def retry_with_backoff(call, attempts):\n"
        "    # retry the call with exponential backoff and jitter between attempts\n"
        "    return call()\n"
    )
    files = {
        "net/long.py": filler + target + filler,
        "net/short.py": "def backoff():\n    # retry\n    return 1\n",
        "net/other.py": "def jitter():\n    return 0\n",
    }
    result = recaller(tmp_path, files).recall(
        "retry the call with exponential backoff and jitter between attempts"
    )
    assert result.files[0] == "net/long.py"


def test_files_lists_distinct_paths_in_rank_order(tmp_path: Path) -> None:
    files = {
        f"pkg/widget_{i}.py": "".join(f"def widget_part_{i}_{j}():\n    pass\n" for j in range(5))
        for i in range(15)
    }
    result = recaller(tmp_path, files).recall("widget part", top=3)
    assert len(result.hits) == 3
    assert len(result.files) >= 12 and len(set(result.files)) == len(result.files)
    assert result.files[0] == result.hits[0].path


def test_past_commits_like_the_request_point_at_their_files(tmp_path: Path) -> None:

    # Both files say the same; the walker a little more: only history tells them apart.
    project = Project(file_types_history(tmp_path / "repo", tmp_path))
    project.index()
    found = make_recaller(project)
    found.warm()
    request = "add support for kotlin files"
    assert found.recall(request).files[0] == "ignore/default_types.py"
    assert "changed by similar commits" in found.recall(request).hits[0].why
    found.tuning = replace(found.tuning, history=0.0)  # the signal this test is about
    assert found.recall(request).files[0] == "search/walker.py"
