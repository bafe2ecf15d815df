"""Typed tool arguments: one pydantic model per tool gives both the JSON schema the model sees
and the validation of what it sends back.

The model's arguments are untrusted JSON. `add_tool` registers a handler that receives a
validated model instance; arguments that do not fit come back to the model as one honest
`error: …` line naming each bad field, so it can correct itself in the next tool round.
Imports `strata.bot.tools` and `strata.core.types`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from strata.bot.tools import ToolContext, ToolRegistry
from strata.core.types import ToolSpec

A = TypeVar("A", bound=BaseModel)


def _strip_hash(value: Any) -> Any:
    return value.strip().lstrip("#") if isinstance(value, str) else value


# An id the model may write as 12, "12" or "#12" (the form it sees in recalled text).
RowId = Annotated[int, BeforeValidator(_strip_hash)]


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown keys are ignored (models add stray ones)."""

    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)


def _clean(node: Any) -> Any:
    """The schema as a small model reads it best: no titles, `X | None` as plain X."""
    if isinstance(node, list):
        return [_clean(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _clean(v) for k, v in node.items() if k != "title"}
    options = out.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(options):
            del out["anyOf"]
            out = {**kept[0], **out}
            if out.get("default", 0) is None:
                del out["default"]
    return out


def schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, generated from its model."""
    generated = _clean(model.model_json_schema())
    generated.setdefault("properties", {})
    return dict(generated)


def describe_errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        got = err.get("input")
        shown = "" if err["type"] == "missing" else f" (got {got!r})"
        parts.append(f"{where}: {err['msg']}{shown}")
    return "; ".join(parts)


def add_tool(
    registry: ToolRegistry,
    name: str,
    description: str,
    args: type[A],
    handler: Callable[[ToolContext, A], Awaitable[str]],
    *,
    shared: bool = False,
) -> None:
    """Register `handler` under `name`, its schema generated from `args`; `shared` as in
    `ToolRegistry.add` (private by default)."""

    async def run(ctx: ToolContext, raw: dict[str, Any]) -> str:
        try:
            parsed = args.model_validate(raw)
        except ValidationError as exc:
            return f"error: the arguments for {name} do not fit: {describe_errors(exc)}"
        return await handler(ctx, parsed)

    registry.add(ToolSpec(name, description, schema(args)), run, shared=shared)
