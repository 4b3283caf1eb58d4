"""Import resolution to in-repo files, one class per language rule."""

from __future__ import annotations

from knowledge.index.model import Import
from knowledge.index.resolve import RepoFiles, go_module_path, resolve


def files(*paths: str, go_modules: dict[str, str] | None = None) -> RepoFiles:
    return RepoFiles(paths, go_modules=go_modules)


class TestPython:
    REPO = files(
        "app/__init__.py",
        "app/models.py",
        "app/util/__init__.py",
        "app/util/text.py",
        "src/lib/__init__.py",
        "src/lib/core.py",
        "src/nspkg/tool.py",
        "tests/helpers.py",
        "tests/test_app.py",
        "scripts/os.py",
        "stubs/typed/__init__.pyi",
        "app/native.pyi",
    )

    def check(self, importer: str, imp: Import) -> list[str]:
        return resolve(importer, imp, "python", self.REPO)

    def test_absolute_module_and_package(self) -> None:
        assert self.check("tests/test_app.py", Import("app.models")) == ["app/models.py"]
        assert self.check("tests/test_app.py", Import("app.util")) == ["app/util/__init__.py"]

    def test_source_root(self) -> None:
        assert self.check("app/models.py", Import("lib.core")) == ["src/lib/core.py"]
        assert self.check("app/models.py", Import("lib")) == ["src/lib/__init__.py"]
        # No __init__.py, but the conventional `src/` root still finds the namespace package.
        assert self.check("app/models.py", Import("nspkg.tool")) == ["src/nspkg/tool.py"]

    def test_from_import_prefers_submodules(self) -> None:
        imp = Import("app.util", names=("text",))
        assert self.check("tests/test_app.py", imp) == ["app/util/text.py"]
        mixed = Import("app.util", names=("text", "slugify"))
        assert self.check("tests/test_app.py", mixed) == [
            "app/util/__init__.py",
            "app/util/text.py",
        ]

    def test_relative(self) -> None:
        assert self.check("app/util/text.py", Import("", names=("text",), level=1)) == []
        assert self.check("app/util/__init__.py", Import("text", level=1)) == ["app/util/text.py"]
        assert self.check("app/util/text.py", Import("models", level=2)) == ["app/models.py"]
        assert self.check("app/models.py", Import("", names=("util",), level=1)) == [
            "app/util/__init__.py"
        ]
        assert self.check("app/models.py", Import("x", level=5)) == []

    def test_stubs(self) -> None:
        assert self.check("app/models.py", Import("native", level=1)) == ["app/native.pyi"]
        assert self.check("tests/test_app.py", Import("app.native")) == ["app/native.pyi"]

    def test_script_directory_and_external(self) -> None:
        assert self.check("tests/test_app.py", Import("helpers")) == ["tests/helpers.py"]
        assert self.check("app/models.py", Import("helpers")) == []
        assert self.check("app/models.py", Import("os")) == []  # scripts/os.py is not a root
        assert self.check("app/models.py", Import("requests.adapters")) == []


class TestScript:
    REPO = files(
        "src/app.ts",
        "src/util.ts",
        "src/types.d.ts",
        "src/esm.ts",
        "src/components/index.tsx",
        "src/components/Button.tsx",
        "lib/legacy.js",
        "lib/mod.mjs",
    )

    def check(self, importer: str, module: str, language: str = "typescript") -> list[str]:
        return resolve(importer, Import(module), language, self.REPO)

    def test_relative_with_extensions(self) -> None:
        assert self.check("src/app.ts", "./util") == ["src/util.ts"]
        assert self.check("src/app.ts", "./types") == ["src/types.d.ts"]
        assert self.check("src/components/Button.tsx", "../util", "tsx") == ["src/util.ts"]
        assert self.check("src/app.ts", "../lib/legacy") == ["lib/legacy.js"]
        assert self.check("src/app.ts", "../lib/mod.mjs", "javascript") == ["lib/mod.mjs"]

    def test_directory_index_and_emitted_js(self) -> None:
        assert self.check("src/app.ts", "./components") == ["src/components/index.tsx"]
        assert self.check("src/app.ts", "./esm.js") == ["src/esm.ts"]

    def test_the_root_package_from_below(self) -> None:
        repo = files("index.js", "test/test.options.js", "test/helpers/util.js")
        # `require("../")` in a test: the package's own entry point.
        assert resolve("test/test.options.js", Import("../"), "javascript", repo) == ["index.js"]
        assert resolve("test/helpers/util.js", Import("../../"), "javascript", repo) == ["index.js"]

    def test_aliases_and_packages(self) -> None:
        assert self.check("src/app.ts", "@/components/Button") == ["src/components/Button.tsx"]
        assert self.check("src/app.ts", "react") == []
        assert self.check("src/app.ts", "../../outside") == []


class TestGo:
    PATHS = (
        "go.mod",
        "cmd/shop/main.go",
        "internal/util/strings.go",
        "internal/util/format.go",
        "internal/util/strings_test.go",
        "vendor/github.com/other/lib/lib.go",
        "fmt/fake.go",
    )

    def test_module_path(self) -> None:
        repo = files(*self.PATHS, go_modules={"": "github.com/acme/shop"})
        imp = Import("github.com/acme/shop/internal/util")
        assert resolve("cmd/shop/main.go", imp, "go", repo) == [
            "internal/util/format.go",
            "internal/util/strings.go",
        ]
        assert resolve("cmd/shop/main.go", Import("fmt"), "go", repo) == []
        vendored = Import("github.com/other/lib")
        assert resolve("cmd/shop/main.go", vendored, "go", repo) == [
            "vendor/github.com/other/lib/lib.go"
        ]

    def test_go_mod_parsing(self) -> None:
        text = '// comment\nmodule "github.com/acme/shop" // trailing\n\ngo 1.22\n'
        assert go_module_path(text) == "github.com/acme/shop"
        assert go_module_path("go 1.22\n") is None

    def test_suffix_without_module(self) -> None:
        repo = files(*self.PATHS)
        imp = Import("github.com/acme/shop/internal/util")
        assert resolve("cmd/shop/main.go", imp, "go", repo) == [
            "internal/util/format.go",
            "internal/util/strings.go",
        ]
        assert resolve("cmd/shop/main.go", Import("fmt"), "go", repo) == []
        assert resolve("cmd/shop/main.go", Import("github.com/x/y/util"), "go", repo) == []


class TestRust:
    REPO = files(
        "Cargo.toml",
        "src/lib.rs",
        "src/config.rs",
        "src/net/mod.rs",
        "src/net/http.rs",
        "src/net/tcp/mod.rs",
        "src/store.rs",
        "src/store/disk.rs",
        "tests/integration.rs",
        "tests/util.rs",
    )

    def check(self, importer: str, module: str) -> list[str]:
        return resolve(importer, Import(module), "rust", self.REPO)

    def test_mod_declarations(self) -> None:
        assert self.check("src/lib.rs", "mod:config") == ["src/config.rs"]
        assert self.check("src/lib.rs", "mod:net") == ["src/net/mod.rs"]
        assert self.check("src/net/mod.rs", "mod:http") == ["src/net/http.rs"]
        assert self.check("src/store.rs", "mod:disk") == ["src/store/disk.rs"]
        assert self.check("src/lib.rs", "mod:missing") == []

    def test_use_paths(self) -> None:
        assert self.check("src/config.rs", "crate::net::http::Client") == ["src/net/http.rs"]
        assert self.check("src/config.rs", "crate::net::tcp") == ["src/net/tcp/mod.rs"]
        assert self.check("src/config.rs", "crate::Error") == ["src/lib.rs"]
        assert self.check("src/net/http.rs", "super::tcp::Stream") == ["src/net/tcp/mod.rs"]
        assert self.check("src/net/http.rs", "super::super::config") == ["src/config.rs"]
        assert self.check("src/net/mod.rs", "self::http::get") == ["src/net/http.rs"]
        assert self.check("src/lib.rs", "config::Settings") == ["src/config.rs"]
        assert self.check("tests/integration.rs", "crate::util::Dir") == ["tests/util.rs"]
        assert self.check("src/lib.rs", "std::io") == []
        assert self.check("src/lib.rs", "serde::Deserialize") == []


class TestJava:
    REPO = files(
        "src/main/java/com/acme/shop/Cart.java",
        "src/main/java/com/acme/shop/Item.java",
        "src/main/java/com/acme/util/Strings.java",
        "src/test/java/com/acme/shop/CartTest.java",
    )

    def check(self, module: str, names: tuple[str, ...] = ()) -> list[str]:
        importer = "src/test/java/com/acme/shop/CartTest.java"
        return resolve(importer, Import(module, names=names), "java", self.REPO)

    def test_class_import(self) -> None:
        assert self.check("com.acme.shop.Cart", ("Cart",)) == [
            "src/main/java/com/acme/shop/Cart.java"
        ]
        assert self.check("java.util.List", ("List",)) == []

    def test_static_and_nested(self) -> None:
        expected = ["src/main/java/com/acme/util/Strings.java"]
        assert self.check("com.acme.util.Strings.join", ("join",)) == expected
        assert self.check("com.acme.util.Strings", ("*",)) == expected  # static wildcard

    def test_wildcard_package(self) -> None:
        assert self.check("com.acme.shop", ("*",)) == [
            "src/main/java/com/acme/shop/Cart.java",
            "src/main/java/com/acme/shop/Item.java",
            # the importer itself, in the test source set, is left out
        ]


def test_unknown_language_and_empty_module() -> None:
    repo = files("a.py")
    assert resolve("b.py", Import("a"), "cobol", repo) == []
    assert resolve("b.py", Import(""), "python", repo) == []
