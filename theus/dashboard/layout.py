"""Node positions for the graph view: folders, files and symbols as nested sunflowers.

rustworkx's spring_layout is O(n²) per iteration (8 s for one iteration at 20,000 nodes), and
its cheap layouts (random, circular, shell, spiral) show no structure. This layout is linear:
every folder, file and class is a disc sized to hold what it contains, its children packed on
rings around it, biggest first, so a project reads as clusters of folders, files ringed by
their symbols, methods around their class, and no two discs overlap. Deterministic, so a
re-index moves only what changed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from knowledge.core.graph import Node

_GOLDEN = math.pi * (3 - math.sqrt(5))
_UNIT = 9.0  # world units per leaf radius
_CORE = 1.6  # radius kept at the centre of a node with children, for the node itself
_GAP = 0.35  # space between neighbouring discs, in leaf radii


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
    kids = children + pseudo_children
    reach = [1.0] * total  # radius of the disc holding a node and everything under it
    dx = [0.0] * total  # offset from the parent, in leaf radii
    dy = [0.0] * total
    # Post-order (ids say nothing about depth): a node's children are packed, and its disc
    # sized, before its parent packs it.
    stack: list[tuple[int, bool]] = [(root, False)]
    while stack:
        t, done = stack.pop()
        if not done:
            stack.append((t, True))
            stack.extend((c, False) for c in kids[t])
        elif kids[t]:
            members = sorted(kids[t], key=lambda c: -reach[c])
            reach[t] = _rings(members, reach, dx, dy, _CORE if t < n else 0.0)

    xs = [0.0] * total
    ys = [0.0] * total
    todo = [root]
    while todo:
        t = todo.pop()
        for c in kids[t]:
            xs[c] = xs[t] + dx[c] * _UNIT
            ys[c] = ys[t] + dy[c] * _UNIT
            todo.append(c)
    return [round(v, 1) for v in xs[:n]], [round(v, 1) for v in ys[:n]]


def _rings(
    members: list[int], reach: list[float], dx: list[float], dy: list[float], core: float
) -> float:
    """Pack discs (biggest first) on concentric rings around a centre; return the extent.

    Within a ring each disc gets the angle its width needs, across rings the radii are
    separated by the biggest disc of each, so nothing overlaps; leftover angle on a ring is
    shared out evenly. A folder (no core) puts its biggest child in the middle.
    """
    i = 0
    inner = core
    if not core:
        dx[members[0]] = dy[members[0]] = 0.0
        inner = reach[members[0]]
        i = 1
    ring = 0
    while i < len(members):
        widest = reach[members[i]]
        radius = inner + widest + _GAP
        widths: list[float] = []
        used = 0.0
        for c in members[i:]:
            width = 2 * math.asin(min(1.0, (reach[c] + _GAP / 2) / radius))
            if used + width > 2 * math.pi and widths:
                break
            widths.append(width)
            used += width
        spare = max(0.0, 2 * math.pi - used) / len(widths)
        angle = ring * _GOLDEN  # turn each ring so spare gaps do not line up
        for c, width in zip(members[i : i + len(widths)], widths, strict=True):
            angle += width / 2
            dx[c], dy[c] = radius * math.cos(angle), radius * math.sin(angle)
            angle += width / 2 + spare
        i += len(widths)
        inner = radius + widest
        ring += 1
    return inner
