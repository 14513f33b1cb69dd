"""precheck checks a function's source WITHOUT running any of it: ``ast.parse`` and
``compile`` only build objects (a code object is never executed here: no ``exec``, no
``eval``, no import of the user's module), so a module whose top level writes a file,
loops forever or opens a socket does nothing at all.

Run as ``python3 -m blockx_executor.precheck``: one JSON object on stdin,
``{"source": str, "entry": str, "filename": str}``, one JSON object on stdout,
``{"diagnostics": [{"severity", "code", "message", "line", "column"}]}`` (1-based line and
column, 0 when unknown). It reports every problem it can find at once:

- SYNTAX_ERROR: the parser's error (Python stops at the first one), or, when the source
  parses, the compiler's (``return`` outside a function, ``await`` outside ``async def``, ...);
- ENTRY_NOT_FOUND: no top-level binding of the entry name;
- BAD_SIGNATURE: the entry cannot be called as ``entry(ctx, input)`` (the executor's calling
  convention, the same rule as ``inspect.signature(fn).bind(None, None)``);
- warnings: an entry bound by an assignment or an import (checked only when it runs), a
  decorated entry, an entry defined twice, an ``async def`` entry awaiting something other
  than a ``ctx`` operation, and module-level statements that run when the function is
  first loaded in an executor.
"""

import ast
import json
import sys


def _diag(severity: str, code: str, message: str, line: int = 0, column: int = 0) -> dict:
    return {"severity": severity, "code": code, "message": message, "line": line, "column": column}


def _syntax(exc: BaseException) -> dict:
    if isinstance(exc, SyntaxError):
        line = exc.lineno or 0
        column = exc.offset or 0
        return _diag("error", "SYNTAX_ERROR", f"{exc.msg} (line {line}, column {column})", line, column)
    # ValueError for a NUL byte, RecursionError/MemoryError for absurd nesting.
    return _diag("error", "SYNTAX_ERROR", f"{type(exc).__name__}: {exc}")


def _top_level_bindings(body: list, name: str, out: list) -> None:
    """_top_level_bindings collects the module-level statements that bind ``name``, in order,
    looking inside if/try/with/for/while blocks (they run at module level) but not inside
    functions or classes."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                out.append(node)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == name:
                    out.append(node)
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                out.append(node)
            continue
        for field in ("body", "orelse", "finalbody"):
            _top_level_bindings(getattr(node, field, None) or [], name, out)
        for handler in getattr(node, "handlers", None) or []:
            _top_level_bindings(handler.body, name, out)


def _signature_problems(fn, entry: str) -> list:
    """_signature_problems: why ``fn(ctx, input)`` would not bind, statically."""
    a = fn.args
    positional = a.posonlyargs + a.args
    required = len(positional) - len(a.defaults)
    problems = []
    if len(positional) < 2 and a.vararg is None:
        got = ", ".join(p.arg for p in positional) or "no arguments"
        problems.append(f"entry {entry!r} takes {got}, but it is called as {entry}(ctx, input): give it two positional parameters")
    elif required > 2:
        problems.append(f"entry {entry!r} requires {required} positional arguments, but it is called with two, as {entry}(ctx, input)")
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        if default is None:
            problems.append(f"entry {entry!r} has a keyword-only parameter {arg.arg!r} without a default, which a call {entry}(ctx, input) never gives")
    return problems


def _non_ctx_awaits(fn) -> list:
    """_non_ctx_awaits lists awaits in an async entry that are not ``ctx.<op>(...)``: the
    executor drives async entries itself and can only resume ctx operations."""
    ctx_name = (fn.args.posonlyargs + fn.args.args)[0].arg if (fn.args.posonlyargs + fn.args.args) else None
    found = []

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Await):
                v = child.value
                is_ctx = isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and isinstance(v.func.value, ast.Name) and v.func.value.id == ctx_name
                if not is_ctx:
                    found.append(child)
            elif isinstance(child, (ast.AsyncFor, ast.AsyncWith)):
                found.append(child)
            visit(child)

    visit(fn)
    return found


_QUIET_TOP_LEVEL = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.Pass, ast.Return)


def check(source: str, entry: str, filename: str) -> list:
    diagnostics = []
    try:
        tree = ast.parse(source, filename, "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return [_syntax(exc)]
    try:
        # compile() builds a code object and never runs it; it finds what the parser lets through.
        compile(tree, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        diagnostics.append(_syntax(exc))

    for node in tree.body:
        is_docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if not isinstance(node, _QUIET_TOP_LEVEL) and not is_docstring:
            diagnostics.append(
                _diag(
                    "warning",
                    "MODULE_LEVEL_CODE",
                    f"module-level {type(node).__name__.lower()} statement runs once in each executor when the function is first loaded (not during precheck)",
                    node.lineno,
                    node.col_offset + 1,
                )
            )

    bindings = []
    _top_level_bindings(tree.body, entry, bindings)
    if not bindings:
        defined = sorted({n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))})
        hint = f" (top-level functions: {', '.join(defined)})" if defined else " (it defines no top-level function)"
        diagnostics.append(_diag("error", "ENTRY_NOT_FOUND", f"the source defines no entry {entry!r}{hint}; define def {entry}(ctx, input)"))
        return diagnostics
    for earlier in bindings[:-1]:
        diagnostics.append(
            _diag("warning", "ENTRY_REDEFINED", f"{entry!r} is bound again at line {bindings[-1].lineno}; the last binding wins", earlier.lineno, earlier.col_offset + 1)
        )
    last = bindings[-1]
    where = (last.lineno, last.col_offset + 1)
    if isinstance(last, (ast.FunctionDef, ast.AsyncFunctionDef)):
        severity = "warning" if last.decorator_list else "error"
        for problem in _signature_problems(last, entry):
            diagnostics.append(_diag(severity, "BAD_SIGNATURE", problem, *where))
        if last.decorator_list:
            diagnostics.append(_diag("warning", "ENTRY_DECORATED", f"entry {entry!r} is decorated: a decorator may change its signature, which is then checked only when it runs", *where))
        if isinstance(last, ast.AsyncFunctionDef):
            for node in _non_ctx_awaits(last):
                diagnostics.append(
                    _diag(
                        "warning",
                        "ASYNC_AWAIT_NON_CTX",
                        f"an async def entry may await only ctx operations (await ctx.io(...)); this {type(node).__name__} awaits something else and fails when it runs",
                        node.lineno,
                        node.col_offset + 1,
                    )
                )
    elif isinstance(last, ast.ClassDef):
        diagnostics.append(_diag("warning", "ENTRY_NOT_A_FUNCTION", f"entry {entry!r} is a class; the executor calls {entry}(ctx, input), so define a function", *where))
    else:
        kind = "an import" if isinstance(last, (ast.Import, ast.ImportFrom)) else "an assignment"
        diagnostics.append(
            _diag("warning", "ENTRY_NOT_CHECKED", f"entry {entry!r} is bound by {kind}; its signature can be checked only when it runs", *where)
        )
    return diagnostics


def main() -> None:
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    source, entry, filename = request["source"], request.get("entry") or "main", request.get("filename") or "<blockx>"
    sys.setrecursionlimit(10_000)
    result = {"diagnostics": check(source, entry, filename)}
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
