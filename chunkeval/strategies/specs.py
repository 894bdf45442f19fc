"""The `head(key=value, ...)` form that names a strategy with its parameters (params.py) or
a project's splitter factory with its arguments (registry.load_splitter): read with `ast`,
literal values only, never run as code."""

from __future__ import annotations

import ast
from typing import Any

from ..errors import ConfigError
from .chonkie_specs import _shown


def call_spec(spec: str, what: str = "strategy") -> tuple[str, dict[str, Any]]:
    """(head, keyword arguments) of `head(key=literal, ...)`; `head` alone has none.
    ConfigError naming the spec when it is not of that form."""
    text = str(spec).strip()
    head, paren, rest = text.partition("(")
    head = head.strip()
    if not paren:
        return head, {}
    usage = f"expected {head}(key=value, ...) with literal values"
    if not head or not rest.endswith(")"):
        raise ConfigError(f"{what} {spec!r}: {usage}")
    try:
        call = ast.parse(f"f({rest}", mode="eval").body
    except SyntaxError:
        raise ConfigError(f"{what} {spec!r}: {usage}") from None
    if not isinstance(call, ast.Call) or call.args or any(k.arg is None for k in call.keywords):
        raise ConfigError(f"{what} {spec!r}: keyword arguments only ({usage})")
    kwargs: dict[str, Any] = {}
    for k in call.keywords:
        if k.arg in kwargs:
            raise ConfigError(f"{what} {spec!r}: parameter {k.arg!r} is given twice")
        node = k.value
        if isinstance(node, ast.Name) and node.id in ("true", "false"):
            kwargs[k.arg] = node.id == "true"
            continue
        try:
            kwargs[k.arg] = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise ConfigError(f"{what} {spec!r}: parameter {k.arg!r} must be a literal (a "
                              "number, a string, true/false, or a list of them)") from None
    return head, kwargs


def factory_name(attr: str, kwargs: dict[str, Any]) -> str:
    """The name of a factory's splitter made with `kwargs`: `make-overlap=30-size=300`."""
    parts = [attr.rsplit(".", 1)[-1]]
    parts += [f"{k}={_shown(kwargs[k])}" for k in sorted(kwargs)]
    return "-".join(parts)
