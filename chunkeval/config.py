"""Project settings shared by the CLI and the pytest plugin: `[tool.chunkeval]` in pyproject.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

from .model import InputError


def find_pyproject(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "pyproject.toml").is_file():
            return d / "pyproject.toml"
    return None


def project_settings(start: Path | None = None) -> dict:
    path = find_pyproject(start)
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(str(path), f"not valid TOML: {e}") from None
    settings = data.get("tool", {}).get("chunkeval", {})
    if not isinstance(settings, dict):
        raise InputError(str(path), "[tool.chunkeval] must be a table")
    return settings


def configured_splitters(start: Path | None = None) -> list[str]:
    value = project_settings(start).get("splitters", [])
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in value]


def configured_retrievers(start: Path | None = None) -> list[str]:
    value = project_settings(start).get("retrievers", [])
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in value]
