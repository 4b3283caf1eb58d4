"""Node positions for the graph view: folders, files and symbols as nested sunflowers.

rustworkx's spring_layout is O(n²) per iteration (8 s for one iteration at 20,000 nodes), and
its cheap layouts (random, circular, shell, spiral) show no structure. This layout is linear:
every folder, file and class is a disc whose area is its number of nodes; children are laid on a
Vogel (sunflower) spiral around their parent, biggest first, so a project reads as clusters of
folders, files ringed by their symbols, methods around their class. Deterministic, so a
re-index moves only what changed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from knowledge.graph import Node

_GOLDEN = math.pi * (3 - math.sqrt(5))
_DENSITY = 0.62  # share of a parent's disc its children fill: lower spreads clusters more
_UNIT = 12.0  # world units per unit radius
_CORE = 3.0  # area kept free at the centre of a real node for the node itself


def layout(
    nodes: Sequence[Node], folders: Sequence[str], parent: Sequence[int]
) -> tuple[list[float], list[float]]:
    """x and y for every node. ``parent[i]`` is i's enclosing symbol in the same file, or -1."""
    n = len(nodes)
    children: list[list[int]] = [[] for _ in range(n)]
    # Tree nodes above n are pseudo-nodes: the root, folders, files without a file node.
    pseudo: dict[str, int] = {}
    pseudo_children: list[list[int]] = []

    def holder(name: str) -> int:
        found = pseudo.get(name)
        if found is None:
            found = pseudo[name] = n + len(pseudo_children)
            pseudo_children.append([])
            if name.startswith("file:"):
                add(holder(file_folder[name]), found)
            elif name:
                add(holder(name.rpartition("/")[0]), found)
        return found

    def add(parent_id: int, child: int) -> None:
        (children[parent_id] if parent_id < n else pseudo_children[parent_id - n]).append(child)

    files: dict[str, int] = {}
    for i, node in enumerate(nodes):
        if node.kind == "file" and node.path:
            files[node.path] = i
    file_folder: dict[str, str] = {}
    root = holder("")
    for i, node in enumerate(nodes):
        if parent[i] >= 0:
            add(parent[i], i)
        elif node.kind == "file" and node.path:
            add(holder(folders[i]), i)
        elif node.path:
            owner = files.get(node.path)
            if owner is None:
                name = "file:" + node.path
                file_folder[name] = folders[i]
                owner = holder(name)
            add(owner, i)
        else:
            add(holder(folders[i]), i)

    total = n + len(pseudo_children)
    size = [0.0] * total
    kids = children + pseudo_children
    # Post-order walk: ids say nothing about depth (a symbol's parent may come after it).
    stack: list[tuple[int, bool]] = [(root, False)]
    while stack:
        t, done = stack.pop()
        if done:
            size[t] = (1.0 if t < n else 0.0) + sum(size[c] for c in kids[t])
            continue
        stack.append((t, True))
        stack.extend((c, False) for c in kids[t])

    xs = [0.0] * total
    ys = [0.0] * total
    todo = [root]
    while todo:
        t = todo.pop()
        members = kids[t]
        if len(members) > 1:
            members = sorted(members, key=lambda c: -size[c])
        filled = _CORE if t < n else 0.0
        cx, cy = xs[t], ys[t]
        for k, c in enumerate(members):
            area = size[c]
            dist = math.sqrt((filled + area / 2) / _DENSITY) * _UNIT
            angle = k * _GOLDEN
            xs[c] = cx + dist * math.cos(angle)
            ys[c] = cy + dist * math.sin(angle)
            filled += area
            todo.append(c)
    return [round(v, 1) for v in xs[:n]], [round(v, 1) for v in ys[:n]]
