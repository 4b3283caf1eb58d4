"""The language specs, and the tables built from them: suffixes, resolvers, test paths."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest

from knowledge.index.extract import EXTRACTORS, extract_file, language_for
from knowledge.index.languages import LANGUAGES, LanguageSpec, NoResolver, by_suffix
from knowledge.index.model import Import
from knowledge.index.resolve import _SCRIPT_EXTENSIONS, RESOLVERS, RepoFiles, resolve
from knowledge.recall.kinds import CHANGELOG, CODE, DATA, DECLARATION, DOC, EXAMPLE, TEST, kind_of

# Pinned before the test regex was built from the specs: each language's convention, the shared
# folder rules, and the near misses on either side of them.
KINDS = [
    ("src/app.py", CODE),
    ("tests/test_app.py", TEST),
    ("test/app.py", TEST),
    ("src/tests/helpers.py", TEST),
    ("pkg/__tests__/button.tsx", TEST),
    ("src/__mocks__/fs.js", TEST),
    ("testing/util.go", TEST),
    ("pkg/testdata/input.json", TEST),
    ("data/test-data/stub.pyi", TEST),
    ("spec/models/user_spec.rb", TEST),
    ("specs/user.rb", TEST),
    ("e2e/login.ts", TEST),
    ("tests/fixtures/blob.bin", TEST),
    ("src/fixtures/page.html", TEST),
    ("src/test_utils.py", TEST),
    ("test_data.json", TEST),
    ("conftest.py", TEST),
    ("src/pkg/conftest.py", TEST),
    ("src/conftest.pyc", DATA),
    ("src/myconftest.py", CODE),
    ("src/button.test.tsx", TEST),
    ("src/button.spec.ts", TEST),
    ("src/button.tests.js", TEST),
    ("src/button.test.mts", TEST),
    ("lib/foo_test.py", TEST),
    ("lib/foo-spec.rb", TEST),
    ("lib/foo_specs.rb", TEST),
    ("pkg/cart/cart_test.go", TEST),
    ("pkg/cart/carttest.go", CODE),
    ("pkg/cart/cart_test.gox", TEST),
    ("src/protest_test.go", TEST),
    ("src/main/java/com/acme/Cart.java", CODE),
    ("src/test/java/com/acme/CartTest.java", TEST),
    ("src/main/java/com/acme/CartTests.java", TEST),
    ("src/main/java/com/acme/Contest.java", CODE),
    ("src/Testing.java", CODE),
    ("src/TestCart.java", CODE),
    ("app/src/CartTest.kt", TEST),
    ("Sources/CartTests.cs", TEST),
    ("src/CartTest.scala", CODE),
    ("src/latest.py", CODE),
    ("src/attest/x.py", CODE),
    ("src/contest/x.py", CODE),
    ("Tests/Foo.cs", CODE),
    ("TEST/foo.py", CODE),
    ("src/tests.py", CODE),
    ("src/test.py", CODE),
    ("src/spec.ts", CODE),
    ("src/lib.rs", CODE),
    ("tests/integration.rs", TEST),
    ("benches/bench.rs", CODE),
    ("src/index.d.ts", DECLARATION),
    ("types/index.d.mts", DECLARATION),
    ("stubs/os.pyi", DECLARATION),
    ("docs/guide.md", DOC),
    ("README.md", DOC),
    ("notes/a.mdx", DOC),
    ("CHANGELOG.md", CHANGELOG),
    ("docs/changelog.rst", CHANGELOG),
    ("examples/demo.py", EXAMPLE),
    ("bench/run.py", EXAMPLE),
    ("_examples/rest/main.go", EXAMPLE),
    ("src/_example/x.go", EXAMPLE),
    ("src/_internal/x.go", CODE),
    ("config.yaml", DATA),
    ("schema.prisma", CODE),
    ("db/migrations/001.sql", CODE),
    ("src/Main.kt", CODE),
    ("src/test_helpers/x.ts", CODE),
    ("my_tests/x.py", CODE),
    ("src/testsuite/x.py", CODE),
    ("src/.test/x.py", CODE),
    ("src/x.test", DATA),
    ("src/x_test", DATA),
]


@pytest.mark.parametrize(("path", "kind"), KINDS)
def test_kind_of_classifies_as_before(path: str, kind: str) -> None:
    assert kind_of(path) == kind


# Pinned with the tables each language kept before the specs.
LANGUAGE_OF = [
    ("a.py", "python"),
    ("a.pyi", "python"),
    ("A.PY", "python"),
    ("a.md", "markdown"),
    ("a.markdown", "markdown"),
    ("a.mdx", "markdown"),
    ("s.prisma", "prisma"),
    ("m.sql", "sql"),
    ("a.ts", "typescript"),
    ("a.d.ts", "typescript"),
    ("a.mts", "typescript"),
    ("a.cts", "typescript"),
    ("a.tsx", "tsx"),
    ("a.js", "javascript"),
    ("a.jsx", "javascript"),
    ("a.mjs", "javascript"),
    ("a.cjs", "javascript"),
    ("a.go", "go"),
    ("a.rs", "rust"),
    ("X.Java", "java"),
    ("a.kt", ""),
    ("Makefile", ""),
    (".ts", ""),  # a dotfile has no suffix
    ("dir.py/x", ""),
    ("a.json", ""),
]


@pytest.mark.parametrize(("path", "language"), LANGUAGE_OF)
def test_language_by_suffix(path: str, language: str) -> None:
    assert language_for(path) == language
    spec = by_suffix(path)
    assert (spec.name if spec else "") == language


def test_a_suffix_belongs_to_one_language() -> None:
    suffixes = [suffix for spec in LANGUAGES.values() for suffix in spec.suffixes]
    assert len(suffixes) == len(set(suffixes))
    assert all(re.fullmatch(r"\.[a-z0-9]+", suffix) for suffix in suffixes)


def test_importing_the_specs_loads_no_grammar() -> None:
    code = (
        "import sys, knowledge.index.languages, knowledge.index.extract;"
        "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def test_every_grammar_loads() -> None:
    for spec in LANGUAGES.values():
        if spec.grammar is not None:
            module = importlib.import_module(spec.grammar.module)
            assert callable(getattr(module, spec.grammar.function))


def test_a_language_without_a_grammar_has_an_extractor() -> None:
    assert set(EXTRACTORS) == {name for name, spec in LANGUAGES.items() if spec.grammar is None}


def test_resolver_names_match_the_resolvers() -> None:
    named = {spec.resolver for spec in LANGUAGES.values() if isinstance(spec.resolver, str)}
    assert named == set(RESOLVERS)


def test_languages_without_a_resolver_say_why() -> None:
    unresolved = {
        name: spec.resolver.reason
        for name, spec in LANGUAGES.items()
        if isinstance(spec.resolver, NoResolver)
    }
    assert set(unresolved) == {"markdown", "prisma", "sql"}
    assert all(reason.strip() for reason in unresolved.values())
    files = RepoFiles(["a.md", "b.md"])
    assert resolve("a.md", Import("b.md"), "markdown", files) == []


_SYMBOL_CAPTURES = {"name", "value", "recv", "mods"}
# For each hand-written extractor, a file whose links to other files would be its imports.
_SAMPLES = {
    "python": b"import os\n",
    "markdown": b"# Title\n\nSee [b](b.md) and `c`.\n",
    "prisma": b"model A {\n  id Int @id\n  b  B   @relation(fields: [id], references: [id])\n}\n",
    "sql": b"CREATE TABLE a (id int REFERENCES b (id));\n",
}


def _has_imports(spec: LanguageSpec) -> bool:
    if spec.grammar is None:
        return bool(extract_file("x" + spec.suffixes[0], _SAMPLES[spec.name]).imports)
    captures = set(re.findall(r"@([\w.]+)", spec.grammar.query)) - _SYMBOL_CAPTURES
    return any(not capture.startswith("def.") for capture in captures)


@pytest.mark.parametrize("spec", LANGUAGES.values(), ids=lambda spec: spec.name)
def test_a_language_with_imports_has_a_resolver_or_a_reason(spec: LanguageSpec) -> None:
    if not _has_imports(spec):
        return
    resolver = spec.resolver
    if isinstance(resolver, NoResolver):
        assert resolver.reason.strip()
    else:
        assert resolver in RESOLVERS


def test_imports_are_found_where_expected() -> None:
    # Guards the check above against finding no imports anywhere.
    found = {name for name, spec in LANGUAGES.items() if _has_imports(spec)}
    assert found == {"python", "typescript", "tsx", "javascript", "go", "rust", "java"}


def test_script_probe_order_covers_the_script_languages() -> None:
    scripts = {
        suffix
        for spec in LANGUAGES.values()
        if spec.resolver == "script"
        for suffix in spec.suffixes
    }
    assert set(_SCRIPT_EXTENSIONS) == scripts | {".d.ts"}
