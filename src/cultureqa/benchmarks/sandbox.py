"""The Jinja sandbox benchmark templates render in, bounded in time and in memory.

jinja2's sandbox stops unsafe attribute access, not work: ``{{ 'x' * 10**8 }}`` used to pass
``validate`` after 89 s at 7.2 GB, and ``{{ 'x'|center(10**9) }}`` allocated 1.1 GB before the
clock stopped it. A string is only ever built by an operator, a filter, a method call or a
concatenation, so each of those is bounded here *before* it builds anything larger than
``template_limits.max_chars``:

- an integer argument larger than ``max_chars`` (a width, a count, a fill) is refused, whatever
  the filter or string method (``center``, ``indent``, ``ljust``, ``batch``, …);
- a width or precision inside a format string (``'%999999999s' % x``, ``'{:>999999999}'``,
  ``|format``) is refused the same way;
- operations whose output multiplies their inputs are estimated first: ``*`` (by the characters
  a list holds, not its length), ``**``, ``replace``, ``join``, ``indent``, ``wordwrap``,
  ``expandtabs``;
- every result of a filter, call, operator or ``~`` concatenation is measured, so no chain of
  them grows past the limit by more than one step; every loop looks at the clock.

Anything else a template raises (``{{ 1 // 0 }}``) is the caller's to turn into one row error.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
import string
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.sandbox
from jinja2 import nodes

from cultureqa.benchmarks.spec import TemplateLimits

GUARD = "_cultureqa_loop"
"""Global wrapped around every ``{% for %}`` iterable, so a loop cannot outrun the time limit."""
SIZED = "_cultureqa_sized"
"""Global wrapped around every ``~`` concatenation, so repeated doubling stops at the limit."""
_TICK = 256
"""Loop iterations between two looks at the clock."""
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\d+|\*)?(?:\.(\d+|\*))?")


class LimitExceeded(Exception):
    """A render went past a template limit; the renderer turns it into a row error."""


@dataclass
class Budget:
    """The limits of the render in progress: a deadline and a size."""

    limits: TemplateLimits
    deadline: float

    def check_time(self) -> None:
        """Stop the render once its time is up."""
        if time.monotonic() > self.deadline:
            raise LimitExceeded(
                f"took longer than template_limits.max_seconds {self.limits.max_seconds:g} s"
            )

    def check_size(self, size: float, what: str) -> None:
        """Stop the render before it builds ``size`` characters past the limit."""
        if size > self.limits.max_chars:
            raise LimitExceeded(
                f"{what} {size:,.0f} characters, more than template_limits.max_chars "
                f"{self.limits.max_chars:,}"
            )


_LIMITS: ContextVar[TemplateLimits | None] = ContextVar("template_limits", default=None)
_BUDGET: ContextVar[Budget | None] = ContextVar("template_budget", default=None)


@contextmanager
def render_limits(limits: TemplateLimits) -> Iterator[None]:
    """Apply a benchmark's template limits to every render inside the block (the loader's)."""
    token = _LIMITS.set(limits)
    try:
        yield
    finally:
        _LIMITS.reset(token)


def template_limits() -> TemplateLimits:
    """The limits in force: the benchmark's inside :func:`render_limits`, else the defaults."""
    return _LIMITS.get() or TemplateLimits()


@contextmanager
def activate(budget: Budget) -> Iterator[None]:
    """Make ``budget`` the one every bounded operation of this render charges."""
    token = _BUDGET.set(budget)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _budget() -> Budget:
    budget = _BUDGET.get()
    if budget is None:  # a template called outside a render: give it a fresh budget
        limits = template_limits()
        budget = Budget(limits, time.monotonic() + limits.max_seconds)
    return budget


def content_size(value: Any, stop: int) -> int:
    """Characters a value holds: a string's length, a container's items summed.

    Counting stops past ``stop``, so measuring a huge list costs no more than the limit.
    """
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, Mapping):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list | tuple | set | frozenset):
        total = 0
        for item in value:
            total += max(1, content_size(item, stop))
            if total > stop:
                break
        return total
    return 0


def _sized(value: Any, what: str = "the result would hold") -> Any:
    budget = _budget()
    budget.check_size(content_size(value, budget.limits.max_chars), what)
    return value


def _guarded(iterable: Iterable[Any]) -> Iterator[Any]:
    budget = _budget()
    for n, value in enumerate(iterable):
        if n % _TICK == 0:
            budget.check_time()
        yield value


def _check_ints(values: Iterable[Any], what: str) -> None:
    budget = _budget()
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool):
            budget.check_size(value, what)


def _check_format(fmt: Any) -> None:
    """Widths and precisions written inside a ``%`` or ``{}`` format string."""
    if not isinstance(fmt, str):
        return
    budget = _budget()
    widths = [n for m in _PERCENT_SPEC.finditer(fmt) for n in m.groups() if n and n.isdigit()]
    try:
        specs = [spec or "" for _, _, spec, _ in string.Formatter().parse(fmt)]
    except ValueError:  # not a {} format string; str.format itself will say so
        specs = []
    widths += [n for spec in specs for n in re.findall(r"\d+", spec)]
    for width in widths:
        budget.check_size(int(width), "the format string asks for")


def _estimate(name: str, bound: Mapping[str, Any]) -> float:
    """Characters an operation known to multiply its input would build (0: not one of them)."""
    text = bound.get("s", bound.get("value"))
    if name == "replace" and isinstance(text, str):
        old, new = str(bound.get("old", "")), str(bound.get("new", ""))
        times = text.count(old) if old else len(text) + 1
        count = bound.get("count")
        if isinstance(count, int) and count >= 0:
            times = min(times, count)
        return len(text) + times * max(0, len(new) - len(old))
    if name == "indent" and isinstance(text, str):
        width = bound.get("width", 4)
        step = len(width) if isinstance(width, str) else int(width)
        return len(text) + (text.count("\n") + 1) * step
    if name == "wordwrap" and isinstance(text, str):
        width = max(1, int(bound.get("width", 79)))
        glue = bound.get("wrapstring") or "\n"
        return len(text) + (len(text) // width + 1) * len(str(glue))
    if name == "expandtabs" and isinstance(text, str):
        return len(text) + text.count("\t") * int(bound.get("tabsize", 8))
    return 0


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that refuses oversized arguments and estimates, then measures, its result."""
    signature = inspect.signature(func)

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.check_time()
        _check_ints((*args, *kwargs.values()), f"the filter '{name}' was asked for")
        try:
            bound = signature.bind(*args, **kwargs).arguments
        except TypeError:  # a wrong call: the filter itself says what is wrong
            return func(*args, **kwargs)
        if name == "format":
            _check_format(bound.get("value"))
        if name == "join" and "value" in bound:
            items = list(_guarded(bound["value"]))
            glue = str(bound.get("d", ""))
            size = content_size(items, budget.limits.max_chars) + len(glue) * len(items)
            budget.check_size(size, f"the filter '{name}' would build")
            args, kwargs = _rebind(signature, bound, value=items)
        budget.check_size(_estimate(name, bound), f"the filter '{name}' would build")
        return _sized(func(*args, **kwargs), f"the filter '{name}' built")

    return run


def _rebind(
    signature: inspect.Signature, bound: Mapping[str, Any], **new: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    arguments = signature.bind_partial()
    arguments.arguments.update({**bound, **new})
    return arguments.args, arguments.kwargs


class LimitedEnvironment(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """jinja2's immutable sandbox with the limits of this module."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """``*``, ``**`` and ``%``: estimated before they are computed, measured after."""
        budget = _budget()
        budget.check_time()
        stop = budget.limits.max_chars
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, str | list | tuple) and isinstance(times, int):
                    budget.check_size(content_size(seq, stop) * times, "the product would hold")
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0:
                budget.check_size(right * math.log10(abs(left)), "the power would have")
        elif isinstance(left, str):  # "%" formatting
            _check_format(left)
            values = right if isinstance(right, tuple) else (right,)
            _check_ints(values, "the format was asked for")
        return _sized(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """A call: string methods' sizes and format strings checked first, the result after."""
        budget = _budget()
        budget.check_time()
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str):
            name = getattr(__obj, "__name__", "")
            _check_ints((*args, *kwargs.values()), "the string method was asked for")
            if name == "join" and args:
                items = list(_guarded(args[0]))
                size = content_size(items, budget.limits.max_chars) + len(owner) * len(items)
                budget.check_size(size, "the join would build")
                args = (items, *args[1:])
            names = {"replace": ("old", "new", "count"), "expandtabs": ("tabsize",)}
            bound = dict(zip(names.get(name, ()), args, strict=False)) | kwargs
            budget.check_size(
                _estimate(name, {"s": owner, **bound}), "the string method would build"
            )
        return _sized(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format`` / ``format_map``: jinja2 swaps them for its own formatter on access."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt = value.__self__

        def bounded(*args: Any, **kwargs: Any) -> str:
            _check_format(fmt)
            _check_ints((*args, *kwargs.values()), "the format was asked for")
            return str(_sized(wrapped(*args, **kwargs)))

        return bounded

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Call(nodes.Name(GUARD, "load"), [loop.iter], [], None, None)
        for parent in list(tree.find_all(nodes.Node)):
            for field_name, child in parent.iter_fields():
                if isinstance(child, list):
                    setattr(parent, field_name, [_wrap_concat(c) for c in child])
                else:
                    setattr(parent, field_name, _wrap_concat(child))
        return tree


def _wrap_concat(node: Any) -> Any:
    if isinstance(node, nodes.Concat):
        return nodes.Call(nodes.Name(SIZED, "load"), [node], [], None, None)
    return node


ENV = LimitedEnvironment(
    undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False
)
ENV.globals[GUARD] = _guarded
ENV.globals[SIZED] = _sized
ENV.filters = {name: _bounded_filter(name, func) for name, func in ENV.filters.items()}
