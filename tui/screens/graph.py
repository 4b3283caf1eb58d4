"""Browse the knowledge graph: recall search, a lazy folder/file/symbol tree, a node's detail
with its edges (Enter follows one) and a read-only, highlighted preview at the node's line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList, Static, TextArea, Tree
from textual.widgets.option_list import Option
from textual.widgets.text_area import LanguageDoesNotExist
from textual.widgets.tree import TreeNode

from tui import graph_view
from tui.app_handle import theus_app
from tui.messages import RecallDone
from tui.widgets import fmt
from tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from knowledge.recall.recaller import Hit

# Tree node data: ("dir", folder) or ("node", key)
TreeData = tuple[str, str]


class GraphScreen(Screen[None]):
    CSS_PATH = "graph.tcss"
    HELP = """\
## Graph panel

Search with the box (**/** goes there; recall ranks files, symbols, docs and memories; **Down**
or **Enter** moves into the results), or walk the tree. The detail lists the node's edges
grouped by kind: Enter on one follows it. Backspace goes back.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "slash",
            "focus('#search')",
            "Search",
            id="graph.search",
            tooltip="Search the graph with recall",
        ),
        Binding(
            "ctrl+t",
            "focus('#tree')",
            "Tree",
            id="graph.tree",
            tooltip="Walk the project's folders, files and symbols",
        ),
        Binding(
            "ctrl+e",
            "focus('#edges')",
            "Edges",
            id="graph.edges",
            tooltip="The selected node's edges: Enter follows one",
        ),
        Binding(
            "ctrl+o",
            "focus('#preview')",
            "Preview",
            show=False,
            id="graph.preview",
            tooltip="The file at the node's line",
        ),
        Binding(
            "backspace", "back", "Back", id="graph.back", tooltip="Back to the node you came from"
        ),
        # Reached only from the search box: the lists and the tree have their own Down.
        Binding(
            "down",
            "into_results",
            "Results",
            show=False,
            id="graph.results",
            tooltip="From the search box into its results",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.current: str | None = None
        self.history: list[str] = []
        self.folders: graph_view.Folders | None = None
        self._edge_keys: list[str] = []
        self._hits: list[str] = []
        self._shown_query = ""  # the query whose results the list holds
        self._enter_pending = False  # Enter pressed before those results arrived

    def compose(self) -> ComposeResult:
        with Horizontal(id="graph-body"):
            with Vertical(id="graph-left"):
                yield Input(placeholder="search the graph (recall)", id="search")
                yield OptionList(id="results")
                tree: Tree[TreeData] = Tree("loading the graph…", id="tree")
                tree.show_root = True
                yield tree
            with Vertical(id="graph-right"):
                yield Static(
                    "Select a node in the tree or the search results.", id="detail", markup=False
                )
                yield OptionList(id="edges")
                yield TextArea(
                    "", id="preview", read_only=True, show_line_numbers=True, soft_wrap=False
                )
        yield StatusBar()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#results").display = False
        # Not the search box: there `/` (its documented key) would type a "/".
        self.query_one("#tree").focus()
        self.load_tree()

    # -- the tree -------------------------------------------------------------------------------
    @work(thread=True, group="graph-load", exit_on_error=False)
    def load_tree(self) -> None:
        engine = theus_app(self).engine
        try:
            project = engine.load()
        except Exception as exc:
            self.app.call_from_thread(self._tree_failed, str(exc))
            return
        self.app.call_from_thread(self._fill_root, project.root.name, engine.folders())

    def _tree_failed(self, error: str) -> None:
        self.query_one("#tree", Tree).root.set_label(
            graph_view.shown(f"graph unavailable: {error}")
        )

    def _fill_root(self, name: str, folders: graph_view.Folders) -> None:
        self.folders = folders
        tree = self.query_one("#tree", Tree)
        tree.root.set_label(graph_view.shown(name or "project"))
        tree.root.data = ("dir", "")
        if folders.told:  # what conversations told, above the files
            told = tree.root.add(f"(told: {len(folders.told)})", data=("told", ""))
            for label, key in folders.told:
                told.add_leaf(graph_view.shown(label), data=("node", key))
        self._fill_dir(tree.root, "")
        tree.root.expand()

    def _fill_dir(self, parent: TreeNode[TreeData], folder: str) -> None:
        assert self.folders is not None
        for sub in self.folders.dirs.get(folder, []):
            parent.add(graph_view.shown(sub.rsplit("/", 1)[-1] + "/"), data=("dir", sub))
        for name, key in self.folders.files.get(folder, []):
            parent.add(
                graph_view.shown(name),
                data=("node", key),
                allow_expand=key in self.folders.with_parts,
            )

    @on(Tree.NodeExpanded, "#tree")
    def expanded(self, event: Tree.NodeExpanded[TreeData]) -> None:
        node = event.node
        if node.data is None or node.children or node is self.query_one("#tree", Tree).root:
            return
        kind, value = node.data
        if kind == "dir":
            self._fill_dir(node, value)
        else:
            self.load_parts(node, value)

    @work(thread=True, group="graph-parts", exit_on_error=False)
    def load_parts(self, node: TreeNode[TreeData], key: str) -> None:
        """A file's or symbol's parts; off the event loop (the graph lock may be busy)."""
        graph = theus_app(self).engine.project.graph
        parts = graph_view.children(graph, key)
        owner = graph.get(key)
        prefix = f"{owner.label}." if owner is not None and owner.kind == "symbol" else ""
        rows = []
        for part in parts:
            name = part.label.removeprefix(prefix)  # Cart.total under Cart shows as total
            rows.append((f"{name} :{part.line}" if part.line else name, part.key))
        self.app.call_from_thread(self._fill_parts, node, rows)

    def _fill_parts(self, node: TreeNode[TreeData], rows: list[tuple[str, str]]) -> None:
        if node.children:
            return
        for label, key in rows:
            node.add(graph_view.shown(label), data=("node", key))
        if not rows:
            node.allow_expand = False

    @on(Tree.NodeHighlighted, "#tree")
    def highlighted(self, event: Tree.NodeHighlighted[TreeData]) -> None:
        if event.node.data and event.node.data[0] == "node":
            self.show(event.node.data[1])

    # -- search ---------------------------------------------------------------------------------
    @on(Input.Changed, "#search")
    def search_changed(self, event: Input.Changed) -> None:
        self._enter_pending = False
        self.search(event.value)

    @on(Input.Submitted, "#search")
    def search_submitted(self, event: Input.Submitted) -> None:
        if self._shown_query == event.value and self._hits:
            self._into_results()
        else:  # the results are on their way: go there when they arrive
            self._enter_pending = True

    def action_into_results(self) -> None:
        if self.focused is self.query_one("#search") and self._hits:
            self._into_results()

    def _into_results(self) -> None:
        results = self.query_one("#results", OptionList)
        results.highlighted = 0
        results.focus()

    def search_for(self, query: str) -> None:
        """Fill the box (from /graph QUERY); the search follows from Input.Changed."""
        box = self.query_one("#search", Input)
        box.value = query
        box.focus()

    @work(thread=True, exclusive=True, group="graph-search", exit_on_error=False)
    def search(self, query: str) -> None:
        if not query.strip():
            self.app.call_from_thread(self._show_hits, [], "")
            return
        recall = theus_app(self).engine.recaller().recall(query, 30)
        self.post_message(RecallDone(recall.took_ms))
        self.app.call_from_thread(self._show_hits, recall.hits, query)

    def _show_hits(self, hits: list[Any], query: str) -> None:
        if self.query_one("#search", Input).value != query:
            return  # a newer search is on its way
        results = self.query_one("#results", OptionList)
        self._hits = [h.key for h in hits]
        self._shown_query = query
        results.clear_options()
        results.add_options(
            [
                Option(
                    graph_view.shown(f"{h.score:.2f} {h.kind:<7} {_hit_where(h)}"), id=f"hit-{i}"
                )
                for i, h in enumerate(hits)
            ]
        )
        results.display = bool(query)
        if query and not hits:
            results.add_option(Option("nothing found", disabled=True))
        if self._enter_pending and hits:
            self._enter_pending = False
            self._into_results()

    @on(OptionList.OptionSelected, "#results")
    def hit_selected(self, event: OptionList.OptionSelected) -> None:
        self.show(self._hits[event.option_index])
        self.query_one("#edges").focus()

    # -- the detail -----------------------------------------------------------------------------
    def show(self, key: str, *, remember: bool = True) -> None:
        if remember and self.current and self.current != key:
            self.history.append(self.current)
        self.current = key
        self.load_detail(key)

    def graph_changed(self) -> None:
        """A file was re-indexed: the node shown may have moved or gone."""
        if self.current:
            self.load_detail(self.current)

    def action_back(self) -> None:
        if self.history:
            self.show(self.history.pop(), remember=False)

    @work(thread=True, exclusive=True, group="graph-detail", exit_on_error=False)
    def load_detail(self, key: str) -> None:
        engine = theus_app(self).engine
        found = graph_view.detail(engine.project.graph, engine.root, key)
        self.app.call_from_thread(self._render_detail, key, found)

    def _render_detail(self, key: str, found: graph_view.Detail | None) -> None:
        if key != self.current:
            return
        head = self.query_one("#detail", Static)
        edges = self.query_one("#edges", OptionList)
        preview = self.query_one("#preview", TextArea)
        edges.clear_options()
        self._edge_keys = []
        if found is None:
            head.update(graph_view.shown(f"{key} is not in the graph any more"))
            preview.load_text("")
            return
        head.update(graph_view.header(found.node))
        options: list[Option] = []
        group = None
        for row in found.edges:
            if (row.direction, row.kind) != group:
                group = (row.direction, row.kind)
                count = sum(1 for r in found.edges if (r.direction, r.kind) == group)
                arrow = "→" if row.direction == "out" else "←"
                options.append(
                    Option(graph_view.shown(f"{arrow} {row.kind} ({count})"), disabled=True)
                )
            options.append(
                Option(
                    graph_view.shown(f"   {fmt.clip(row.label, 50)}  {row.where}"),
                    id=f"edge-{len(self._edge_keys)}",
                )
            )
            self._edge_keys.append(row.key)
        edges.add_options(options or [Option("no edges", disabled=True)])
        if found.language != preview.language:
            preview.load_text("")  # nothing to re-parse in the old language
            try:
                preview.language = found.language
            except LanguageDoesNotExist:
                # Listed but not installed (markdown): the failed value would stay set and
                # every later load_text fail too, keeping an episode's text on screen.
                preview.language = None
        preview.load_text(found.text)
        preview.move_cursor((max(found.line - 1, 0), 0))
        # Centred once the new text is laid out: before that the scroll range is the old one
        # and the target line sat at the bottom.
        preview.call_after_refresh(self._center_preview, key)

    def _center_preview(self, key: str) -> None:
        if key == self.current:
            preview = self.query_one("#preview", TextArea)
            preview.scroll_cursor_visible(center=True, animate=False)
            preview.scroll_to(x=0, animate=False)

    @on(OptionList.OptionSelected, "#edges")
    def edge_selected(self, event: OptionList.OptionSelected) -> None:
        option_id = event.option.id or ""
        if option_id.startswith("edge-"):
            self.show(self._edge_keys[int(option_id.removeprefix("edge-"))])


def _hit_where(hit: Hit) -> str:
    """`name  path:line`, without repeating a file's name."""
    where = f"{hit.path}:{hit.line}" if hit.path and hit.line > 1 else hit.path
    if not where:
        return hit.name
    return where if hit.kind == "file" else f"{hit.name}  {where}"
