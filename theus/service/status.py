"""What a project's status is, for `theus status`, the app's `/status` and the MCP server
alike: the memory's report (`knowledge.memory.status.gather`) and the same report as rows of
one-line text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from theus.service.project import has_data, looking_at

# The index section's `counts` holds these too; the JSON keeps both, the table shows each once.
COUNTED = ("files", "symbols", "edges")


def project_status(root: Path) -> dict[str, Any]:
    """The report for the project at `root`, read without writing: a project Theus never saw
    reads as empty, with the data folder it will have."""
    from knowledge.core.paths import ProjectPaths
    from knowledge.memory.status import gather
    from theus.settings import current, described

    seen = has_data(root)
    with looking_at(root) as project:
        report = gather(project)
        scratch = str(project.paths.home)
    if not seen:  # read from a throwaway folder: show where the data will live
        report = _moved(report, scratch, str(ProjectPaths.for_root(root).home))
    report["settings"] = described(current())
    return report


def settings_rows(shown: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """The settings not at their defaults, as (name, "value (where from)") rows: every
    setting is in `theus status --json`."""
    rows = [
        (name, f"{entry['value']} ({entry['source']})")
        for name, entry in shown.items()
        if entry["source"] != "default"
    ]
    return rows or [("all", "defaults")]


def sections(report: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Each section of `report` as (key, value as one line of text) rows, for `theus status`
    and the app's `/status`."""
    out: dict[str, list[tuple[str, str]]] = {}
    for section, values in report.items():
        if section == "settings":
            out[section] = settings_rows(values)
            continue
        rows = out.setdefault(section, [])
        for key, value in values.items():
            if section == "index" and key in COUNTED:
                continue
            if isinstance(value, dict):
                value = ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
            elif isinstance(value, list):
                value = ", ".join(map(str, value)) or "none"
            rows.append((key, "—" if value is None else str(value)))
    return out


def _moved(value: Any, old: str, new: str) -> Any:
    """`value` with every path under `old` (strings, nested in dicts and lists) under `new`."""
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    if isinstance(value, str) and value.startswith(old):
        return new + value[len(old) :]
    return value
