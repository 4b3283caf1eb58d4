"""Every indexed language as one spec: the single table that extraction, import resolution,
file kinds and the TUI preview read.

Adding a language = one spec + tests. Fill in its name and suffixes (lower case, with the dot);
either a tree-sitter ``Grammar`` (the wheel's module and function, a query and its keywords) or
``grammar=None`` plus a hand-written extractor in ``knowledge.index.extract.EXTRACTORS``; its
import resolver, the name of a function in ``knowledge.index.resolve.RESOLVERS``, or
``NoResolver(reason)`` when its imports make no edges; the regexes of its test-file names; and
the TUI's highlighting for it, if any. Then add extraction and resolution tests for it.

Nothing here imports a grammar: importing this table is free, and a grammar wheel is imported by
the extractor on the first file of its language.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True, slots=True)
class Grammar:
    """How ``knowledge.index.extract.treesitter`` reads a language."""

    module: str  # the grammar wheel, imported on first use
    function: str  # the module's function returning the language capsule
    # Captures: `def.<kind>` with `name` (and `value`, `recv`, `mods`) make a symbol; any other
    # match is an import (`import` with `stmt`, `modimport`, `use`, `crate`, `javaimport`).
    query: str
    keywords: frozenset[str]  # words never kept as identifiers
    call_imports: bool = False  # `require("x")` and `import("x")` calls are imports too


@dataclass(frozen=True, slots=True)
class NoResolver:
    """A language whose imports are not resolved to files, and why."""

    reason: str


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    name: str
    suffixes: tuple[str, ...]
    grammar: Grammar | None  # None: a hand-written extractor
    resolver: str | NoResolver  # a key of knowledge.index.resolve.RESOLVERS
    tests: tuple[str, ...]  # regexes naming its test files, searched in a repo-relative path
    highlight: str | None  # the TUI preview's syntax (a Textual TextArea language)


_JS_DEFS = """
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(class_declaration name: (_) @name) @def.class
(class_body (method_definition name: (_) @name) @def.method)
(program (lexical_declaration kind: "const"
  (variable_declarator name: (identifier) @name) @def.const))
(program (export_statement (lexical_declaration kind: "const"
  (variable_declarator name: (identifier) @name) @def.const)))
(variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)] @value) @def.function
(import_statement source: (string) @import) @stmt
(export_statement source: (string) @import) @stmt
"""

_JS_FIELD_METHOD = """
(class_body (field_definition property: (_) @name
  value: [(arrow_function) (function_expression)] @value) @def.method)
"""

_TS_EXTRA = """
(abstract_class_declaration name: (_) @name) @def.class
(class_body (abstract_method_signature name: (_) @name) @def.method)
(class_body (public_field_definition name: (_) @name
  value: [(arrow_function) (function_expression)] @value) @def.method)
(interface_declaration name: (_) @name) @def.interface
(interface_body (method_signature name: (_) @name) @def.method)
(type_alias_declaration name: (_) @name) @def.type
(enum_declaration name: (_) @name) @def.enum
(internal_module name: (_) @name) @def.namespace
(function_signature name: (identifier) @name) @def.function
"""

_GO = """
(function_declaration name: (identifier) @name) @def.function
(method_declaration receiver: (parameter_list (parameter_declaration type: (_) @recv))
  name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (struct_type)) @def.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @def.interface
(type_spec name: (type_identifier) @name type: [
  (type_identifier) (qualified_type) (generic_type) (pointer_type) (function_type) (map_type)
  (slice_type) (array_type) (channel_type)]) @def.type
(type_alias name: (type_identifier) @name) @def.type
(source_file (const_declaration (const_spec name: (identifier) @name) @def.const))
(source_file (var_declaration (var_spec name: (identifier) @name) @def.var))
(import_spec path: (_) @import)
"""

_RUST = """
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.struct
(union_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(trait_item name: (type_identifier) @name) @def.trait
(type_item name: (type_identifier) @name) @def.type
(const_item name: (identifier) @name) @def.const
(static_item name: (identifier) @name) @def.const
(macro_definition name: (identifier) @name) @def.macro
(mod_item name: (identifier) @name body: (declaration_list)) @def.module
(impl_item type: (_) @name) @def.impl
(mod_item name: (identifier) @modimport !body) @stmt
(use_declaration argument: (_) @use) @stmt
(extern_crate_declaration name: (identifier) @crate) @stmt
"""

_JAVA = """
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(record_declaration name: (identifier) @name) @def.class
(annotation_type_declaration name: (identifier) @name) @def.interface
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(field_declaration (modifiers) @mods declarator: (variable_declarator name: (identifier) @name))
  @def.const
(import_declaration) @javaimport
"""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_JS_KEYWORDS = _words(
    """abstract any as async await boolean break case catch class const constructor continue
    debugger declare default delete do else enum export extends false finally for from function
    get if implements import in instanceof interface keyof let module namespace never new null
    number object of package private protected public readonly require return set static
    string super switch symbol this throw true try type typeof undefined unknown var void while
    with yield"""
)
_GO_KEYWORDS = _words(
    """break case chan const continue default defer else fallthrough for func go goto if
    import interface map package range return select struct switch type var nil true false
    iota string int bool error byte rune"""
)
_RUST_KEYWORDS = _words(
    """as async await break const continue crate dyn else enum extern false fn for if impl
    in let loop match mod move mut pub ref return self Self static struct super trait true type
    unsafe use where while"""
)
_JAVA_KEYWORDS = _words(
    """abstract assert boolean break byte case catch char class const continue default do
    double else enum extends final finally float for goto if implements import instanceof int
    interface long native new package private protected public return short static strictfp
    super switch synchronized this throw throws transient try void volatile while true false
    null var record"""
)

# Jest's and Vitest's default test files.
_SCRIPT_TESTS = (r"\.(test|spec)\.[cm]?[jt]sx?$",)
_SCHEMA = NoResolver("a schema imports nothing: its relations become foreign-key edges")

_SPECS = (
    LanguageSpec(
        name="python",
        suffixes=(".py", ".pyi"),
        grammar=None,
        resolver="python",
        tests=(r"(^|/)test_[^/]*\.py$", r"(^|/)conftest\.py$"),
        highlight="python",
    ),
    LanguageSpec(
        name="typescript",
        suffixes=(".ts", ".mts", ".cts"),
        grammar=Grammar(
            "tree_sitter_typescript",
            "language_typescript",
            _JS_DEFS + _TS_EXTRA,
            _JS_KEYWORDS,
            call_imports=True,
        ),
        resolver="script",
        tests=_SCRIPT_TESTS,
        highlight="javascript",  # Textual has no TypeScript highlighting
    ),
    LanguageSpec(
        name="tsx",
        suffixes=(".tsx",),
        grammar=Grammar(
            "tree_sitter_typescript",
            "language_tsx",
            _JS_DEFS + _TS_EXTRA,
            _JS_KEYWORDS,
            call_imports=True,
        ),
        resolver="script",
        tests=_SCRIPT_TESTS,
        highlight="javascript",
    ),
    LanguageSpec(
        name="javascript",
        suffixes=(".js", ".jsx", ".mjs", ".cjs"),
        grammar=Grammar(
            "tree_sitter_javascript",
            "language",
            _JS_DEFS + _JS_FIELD_METHOD,
            _JS_KEYWORDS,
            call_imports=True,
        ),
        resolver="script",
        tests=_SCRIPT_TESTS,
        highlight="javascript",
    ),
    LanguageSpec(
        name="go",
        suffixes=(".go",),
        grammar=Grammar("tree_sitter_go", "language", _GO, _GO_KEYWORDS),
        resolver="go",
        tests=(r"_test\.go$",),
        highlight="go",
    ),
    LanguageSpec(
        name="rust",
        suffixes=(".rs",),
        grammar=Grammar("tree_sitter_rust", "language", _RUST, _RUST_KEYWORDS),
        resolver="rust",
        tests=(),  # unit tests sit inside the code; Cargo's tests/ folder is a shared rule
        highlight="rust",
    ),
    LanguageSpec(
        name="java",
        suffixes=(".java",),
        grammar=Grammar("tree_sitter_java", "language", _JAVA, _JAVA_KEYWORDS),
        resolver="java",
        tests=(r"Tests?\.java$",),
        highlight="java",
    ),
    LanguageSpec(
        name="markdown",
        suffixes=(".md", ".markdown", ".mdx"),
        grammar=None,
        resolver=NoResolver("the extractor keeps no links; names in inline code become references"),
        tests=(),
        highlight="markdown",
    ),
    LanguageSpec(
        name="prisma",
        suffixes=(".prisma",),
        grammar=None,
        resolver=_SCHEMA,
        tests=(),
        highlight=None,
    ),
    LanguageSpec(
        name="sql",
        suffixes=(".sql",),
        grammar=None,
        resolver=_SCHEMA,
        tests=(),
        highlight="sql",
    ),
)

LANGUAGES: dict[str, LanguageSpec] = {spec.name: spec for spec in _SPECS}
_BY_SUFFIX = {suffix: spec for spec in _SPECS for suffix in spec.suffixes}


def by_suffix(path: str) -> LanguageSpec | None:
    """The spec of a file by its last suffix, any case; None when the language is not indexed."""
    return _BY_SUFFIX.get(PurePosixPath(path).suffix.lower())
