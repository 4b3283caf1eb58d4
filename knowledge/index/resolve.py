"""Import resolution to in-repo files, for every indexed programming language.

``RepoFiles`` holds the project's repo-relative POSIX paths; each lookup table is built on first
use by a language that needs it, so a Go-only repo never pays for the Python module index.
``resolve`` returns the in-repo files an import points at, or nothing when it is external. A
language's resolver is the one its spec names (``knowledge.index.languages``).

Conventions match the extractors: Python ``Import.level`` counts the dots of a relative import;
Rust ``mod x;`` arrives as ``mod:x`` and each ``use`` leaf as its full path; Java wildcards arrive
as ``Import("a.b", names=("*",))``.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property

from knowledge.index.languages import LANGUAGES
from knowledge.index.model import Import

# Directory names treated as Python source roots even without a package inside them.
_SOURCE_ROOTS = frozenset({"src", "lib", "python", "source"})
# Candidates in TypeScript's probe order (.ts, .tsx, .d.ts, then JavaScript): an order of its
# own, not the specs' suffix sets, so a test checks it covers every "script" language's suffix.
_SCRIPT_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
# TypeScript ESM imports name the emitted `.js` file; the source is the `.ts` next to it.
_EMITTED = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
_RUST_CRATE_FILES = ("lib.rs", "main.rs")
_RUST_EXTERNAL = frozenset({"std", "core", "alloc"})


class RepoFiles:
    """Every file of the project, with lookup tables built lazily per language."""

    def __init__(self, paths: Iterable[str], go_modules: Mapping[str, str] | None = None) -> None:
        """``go_modules`` maps the directory of each go.mod ("" for the root) to its module
        path; without it Go imports resolve by the longest matching directory suffix."""
        self.paths = frozenset(paths)
        self.go_modules = sorted((go_modules or {}).items(), key=lambda kv: -len(kv[1]))

        # (dotted module, importer's root) -> its file: a cold index of sympy resolves 52k
        # of them, most of them many times over (`from sympy.core import S`).
        self.python_found: dict[tuple[str, str], list[str]] = {}

    def __contains__(self, path: str) -> bool:
        return path in self.paths

    def first(self, candidates: Iterable[str]) -> list[str]:
        return next(([path] for path in candidates if path in self.paths), [])

    @cached_property
    def by_dir(self) -> dict[str, list[str]]:
        """Directory ("" for the root) -> files directly inside it, unordered."""
        table: dict[str, list[str]] = defaultdict(list)
        for path in self.paths:
            table[path.rpartition("/")[0]].append(path)
        return dict(table)

    @cached_property
    def by_name(self) -> dict[str, list[str]]:
        table: dict[str, list[str]] = defaultdict(list)
        for path in self.paths:
            table[path.rpartition("/")[2]].append(path)
        return dict(table)

    @cached_property
    def dirs_by_name(self) -> dict[str, list[str]]:
        """Last segment of a directory -> directories ending with it."""
        table: dict[str, list[str]] = defaultdict(list)
        for directory in self.by_dir:
            table[posixpath.basename(directory)].append(directory)
        return dict(table)

    @cached_property
    def python_packages(self) -> frozenset[str]:
        return frozenset(posixpath.dirname(p) for p in self.paths if p.endswith("/__init__.py"))

    @cached_property
    def python_modules(self) -> dict[str, list[tuple[str, str]]]:
        """Last segment of a module -> (module as a path, file): `src/pkg/__init__.py` is
        ("src/pkg", ...) under "pkg", `src/pkg/m.py` is ("src/pkg/m", ...) under "m"."""
        table: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for path in self.paths:
            module, dot, extension = path.rpartition(".")
            if not dot or extension not in ("py", "pyi"):  # stubs too: .pyi files are indexed
                continue
            if module.endswith("__init__") and module[-9:-8] in ("", "/"):
                module = module[:-9]
            if module:
                table[module.rpartition("/")[2]].append((module, path))
        return dict(table)

    @cached_property
    def python_roots(self) -> frozenset[str]:
        """Directories holding a top-level package, plus conventional source directories."""
        roots = {python_root(package, self.python_packages) for package in self.python_packages}
        roots.update(d for d in self.by_dir if posixpath.basename(d) in _SOURCE_ROOTS)
        return frozenset(roots)

    def go_package(self, directory: str) -> list[str]:
        return sorted(
            path
            for path in self.by_dir.get(directory, ())
            if path.endswith(".go") and not path.endswith("_test.go")
        )


def go_module_path(go_mod: str) -> str | None:
    """The `module` path declared by a go.mod file's text, for ``RepoFiles(go_modules=...)``."""
    for line in go_mod.splitlines():
        words = line.split("//", 1)[0].split()
        if len(words) == 2 and words[0] == "module":
            return words[1].strip('"`')
    return None


def python_root(directory: str, packages: frozenset[str]) -> str:
    """The directory above the outermost package containing ``directory``."""
    while directory in packages:
        directory = posixpath.dirname(directory)
    return directory


def resolve(importer: str, imp: Import, language: str, files: RepoFiles) -> list[str]:
    """Repo-relative paths the import refers to; empty when it is external or unknown."""
    resolver = _BY_LANGUAGE.get(language)
    if resolver is None or not (imp.module or imp.level):
        return []
    return [path for path in resolver(importer, imp, files) if path != importer]


# Python ----------------------------------------------------------------------------------


def _python(importer: str, imp: Import, files: RepoFiles) -> list[str]:
    if imp.level:
        base = posixpath.dirname(importer)
        for _ in range(imp.level - 1):
            if not base:
                return []  # more dots than directories: outside the repo
            base = posixpath.dirname(base)
        return _with_names(lambda dotted: _python_relative(base, dotted, files), imp)
    own_root = python_root(posixpath.dirname(importer), files.python_packages)
    return _with_names(lambda dotted: _python_absolute(dotted, own_root, files), imp)


def _with_names(find: Callable[[str], list[str]], imp: Import) -> list[str]:
    """`from pkg import a, b`: submodules `pkg.a` and `pkg.b` where they exist, and `pkg` itself
    when some name is not a submodule (it must then be defined in the package)."""
    found: list[str] = []
    needs_module = not imp.names
    for name in imp.names:
        submodule = find(f"{imp.module}.{name}" if imp.module else name)
        found.extend(submodule)
        needs_module = needs_module or not submodule
    if needs_module:
        found = find(imp.module) + found
    return list(dict.fromkeys(found))


def _python_relative(base: str, dotted: str, files: RepoFiles) -> list[str]:
    path = posixpath.join(base, dotted.replace(".", "/")) if dotted else base
    prefix = f"{path}/" if path else ""
    if not dotted:
        return files.first([f"{prefix}__init__.py", f"{prefix}__init__.pyi"])
    return files.first(
        [f"{path}.py", f"{prefix}__init__.py", f"{path}.pyi", f"{prefix}__init__.pyi"]
    )


def _python_absolute(dotted: str, own_root: str, files: RepoFiles) -> list[str]:
    """The file for `a.b.c` under the most plausible source root ("" first, then the
    importer's own, then any package root)."""
    found = files.python_found.get((dotted, own_root))
    if found is None:
        found = files.python_found[dotted, own_root] = _python_module(dotted, own_root, files)
    return list(found)


def _python_module(dotted: str, own_root: str, files: RepoFiles) -> list[str]:
    """`_python_absolute`, looked up."""
    tail = dotted.replace(".", "/")
    candidates = [
        (module[: -len(tail) - 1], path)  # (source root, file)
        for module, path in files.python_modules.get(tail.rpartition("/")[2], ())
        if module == tail or module.endswith("/" + tail)
    ]
    if not candidates or not dotted:
        return []
    roots = files.python_roots
    accepts: tuple[Callable[[str], bool], ...] = (
        lambda root: root in ("", own_root),
        lambda root: root in roots,
        # Namespace packages have no __init__.py to find their root by; a dotted path of two
        # or more segments is specific enough to trust wherever it sits.
        lambda root: "." in dotted,
    )
    for accept in accepts:
        chosen = [(len(root), path) for root, path in candidates if accept(root)]
        if chosen:
            return [min(chosen)[1]]
    return []


# JavaScript / TypeScript --------------------------------------------------------------------


def _script(importer: str, imp: Import, files: RepoFiles) -> list[str]:
    spec = imp.module.split("?", 1)[0].split("#", 1)[0]
    if spec.startswith("."):
        bases = [posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec))]
    elif spec.startswith(("@/", "~/")):  # the common tsconfig alias for the source root
        bases = [f"src/{spec[2:]}", spec[2:]]
    elif spec.startswith("/"):
        bases = [spec.lstrip("/")]
    else:  # bare: a package, or a path under a `baseUrl` of "." or "src"
        bases = [spec, f"src/{spec}"]
    for base in bases:
        if base in ("", "..") or base.startswith("../"):
            continue
        # `require("../")` from a folder below the root: the root's index file.
        candidates = (
            [f"index{e}" for e in _SCRIPT_EXTENSIONS] if base == "." else _script_candidates(base)
        )
        found = files.first(candidates)
        if found:
            return found
    return []


def _script_candidates(base: str) -> list[str]:
    stem, extension = posixpath.splitext(base)
    candidates = [base]
    candidates += [stem + source for source in _EMITTED.get(extension, ())]
    candidates += [base + extension for extension in _SCRIPT_EXTENSIONS]
    candidates += [f"{base}/index{extension}" for extension in _SCRIPT_EXTENSIONS]
    return candidates


# Go ------------------------------------------------------------------------------------------


def _go(importer: str, imp: Import, files: RepoFiles) -> list[str]:
    path = imp.module.strip("/")
    for directory, module in files.go_modules:
        if path == module or path.startswith(module + "/"):
            return files.go_package(posixpath.join(directory, path[len(module) :].strip("/")))
        vendored = files.go_package(posixpath.join(directory, "vendor", path))
        if vendored:
            return vendored
    return _go_by_suffix(path, files) if not files.go_modules else []


def _go_by_suffix(path: str, files: RepoFiles) -> list[str]:
    """The directory sharing the longest tail with the import path: two segments at least, and
    the whole path for standard-library-looking ones, so `fmt` never lands on a local `fmt/`."""
    segments = path.split("/")
    need = max(2, 1 if "." in segments[0] else len(segments))
    best: tuple[int, int, str] | None = None
    for directory in files.dirs_by_name.get(segments[-1], ()):
        shared = _shared_tail(directory.split("/"), segments)
        if shared >= need and files.go_package(directory):
            candidate = (-shared, len(directory), directory)
            best = candidate if best is None else min(best, candidate)
    return files.go_package(best[2]) if best else []


def _shared_tail(left: list[str], right: list[str]) -> int:
    count = 0
    for a, b in zip(reversed(left), reversed(right), strict=False):
        if a != b:
            break
        count += 1
    return count


# Rust ----------------------------------------------------------------------------------------


def _rust(importer: str, imp: Import, files: RepoFiles) -> list[str]:
    here = _rust_module_dir(importer)
    if imp.module.startswith("mod:"):
        return files.first(_rust_module_files(posixpath.join(here, imp.module[4:])))
    segments = [s for s in imp.module.split("::") if s]
    if not segments or segments[0] in _RUST_EXTERNAL:
        return []
    head = segments[0]
    if head == "crate":
        root = _rust_crate_root(importer, files)
        return _rust_path(root, segments[1:], files) or files.first(
            f"{root}/{name}" if root else name for name in _RUST_CRATE_FILES
        )
    if head in ("self", "super"):
        base = here
        while segments and segments[0] in ("self", "super"):
            if segments.pop(0) == "super":
                base = posixpath.dirname(base)
        return _rust_path(base, segments, files) or files.first(_rust_module_files(base))
    return _rust_path(here, segments, files)  # 2018 paths may start at a child module


def _rust_module_dir(path: str) -> str:
    """Where the children of the module defined by ``path`` live."""
    directory, name = posixpath.split(path)
    if name in ("mod.rs", *_RUST_CRATE_FILES):
        return directory
    return posixpath.join(directory, name.removesuffix(".rs"))


def _rust_module_files(module: str) -> list[str]:
    return [f"{module}.rs", f"{module}/mod.rs", *(f"{module}/{n}" for n in _RUST_CRATE_FILES)]


def _rust_crate_root(importer: str, files: RepoFiles) -> str:
    """The nearest directory above with lib.rs or main.rs; else the importer's own directory,
    where Cargo's `tests/*.rs` and `benches/*.rs` crates keep their modules."""
    own = directory = posixpath.dirname(importer)
    while True:
        prefix = f"{directory}/" if directory else ""
        if any(prefix + name in files for name in _RUST_CRATE_FILES):
            return directory
        if not directory:
            return own
        directory = posixpath.dirname(directory)


def _rust_path(base: str, segments: list[str], files: RepoFiles) -> list[str]:
    """The deepest module file along ``segments``: `a::b::Item` -> a/b.rs or a/b/mod.rs."""
    for count in range(len(segments), 0, -1):
        module = posixpath.join(base, *segments[:count])
        found = files.first([f"{module}.rs", f"{module}/mod.rs"])
        if found:
            return found
    return []


# Java ----------------------------------------------------------------------------------------


def _java(importer: str, imp: Import, files: RepoFiles) -> list[str]:
    segments = [s for s in imp.module.split(".") if s]
    if imp.names == ("*",):
        found = sorted(
            path
            for directory in _dirs_ending(segments, files)
            for path in files.by_dir[directory]
            if path.endswith(".java")
        )
        if found:
            return found
    # `a.b.C`, or `a.b.C.Inner` / a static member: the longest prefix naming a file wins.
    for count in range(len(segments), 1, -1):
        tail = "/".join(segments[:count]) + ".java"
        found = sorted(
            path
            for path in files.by_name.get(f"{segments[count - 1]}.java", ())
            if path == tail or path.endswith("/" + tail)
        )
        if found:
            return found
    return []


def _dirs_ending(segments: list[str], files: RepoFiles) -> list[str]:
    if not segments:
        return []
    tail = "/".join(segments)
    return [
        directory
        for directory in files.dirs_by_name.get(segments[-1], ())
        if directory == tail or directory.endswith("/" + tail)
    ]


Resolver = Callable[[str, Import, RepoFiles], list[str]]
# By the name a language spec gives as its `resolver`.
RESOLVERS: dict[str, Resolver] = {
    "python": _python,
    "script": _script,
    "go": _go,
    "rust": _rust,
    "java": _java,
}
# A spec naming a resolver that does not exist fails here, at import.
_BY_LANGUAGE = {
    spec.name: RESOLVERS[spec.resolver]
    for spec in LANGUAGES.values()
    if isinstance(spec.resolver, str)
}
