"""Building a worker.v1.Task from keyword arguments or a task dict (proto3 JSON, as the CLI's
task files), with errors that say what to fix."""
from __future__ import annotations

import base64
import json
import os
import re
import uuid
from typing import Any, Iterable, Mapping, Optional

from google.protobuf import json_format

from ._gen.worker.v1 import worker_pb2 as w
from .errors import BlockxError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
MAX_TIMEOUT_MS = 8 * 3600 * 1000


def _bad(msg: str) -> BlockxError:
    return BlockxError("INVALID_ARGUMENT", msg)


def function_ref(function: Optional[str] = None, source: Optional[str] = None, entry: str = "main") -> w.FunctionRef:
    """function_ref: ``function`` is a path to a .py file (its source is sent inline) or the name
    of a function in the Workers' FUNCTIONS_DIR; ``source`` is inline code. Exactly one."""
    if (function is None) == (source is None):
        raise _bad("give exactly one of function= (a .py file or a function name) and source= (inline code)")
    if not isinstance(entry, str) or not entry.isidentifier():
        raise _bad(f"entry must be a Python identifier, not {entry!r}")
    if source is not None:
        if not isinstance(source, str) or not source.strip():
            raise _bad("source= must be non-empty Python source text")
        return w.FunctionRef(source=source, entry=entry)
    if not isinstance(function, (str, os.PathLike)):
        raise _bad(f"function= must be a file path or a function name, not {type(function).__name__}")
    path = os.fspath(function)
    if path.endswith(".py") or os.sep in path:
        try:
            with open(path, encoding="utf-8") as f:
                # The file's name travels with its source, so a traceback names the user's file.
                return w.FunctionRef(source=f.read(), entry=entry, filename=os.path.basename(path))
        except OSError as e:
            raise _bad(f"function={path!r}: cannot read the file: {e.strerror}") from None
    if not _NAME.match(path):
        raise _bad(f"function={path!r} is neither a readable .py file nor a function name")
    return w.FunctionRef(name=path, entry=entry)


def _json_bytes(value: Any, what: str) -> bytes:
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as e:
        raise _bad(f"{what} is not JSON: {e}") from None


def build_task(*, function: Optional[str] = None, source: Optional[str] = None, entry: str = "main",
               blocks: Optional[range] = None, chain: str = "ethereum", bundle_size: Optional[int] = None,
               inputs: Optional[Iterable[Any]] = None, table: Optional[str] = None, append: bool = False,
               return_values: Optional[bool] = None, task_id: Optional[str] = None,
               timeout_ms: int = 0) -> w.Task:
    """build_task: one call per block of ``blocks`` (a ``range``; ``bundle_size``: one call per
    contiguous bundle), or one per element of ``inputs``. ``table``: rows go to that table
    (block_table_write, replacing per block, for blocks; normal_table_write, appending, for inputs
    or with ``append=True``); ``return_values`` (the default without a table): values come back."""
    ref = function_ref(function, source, entry)
    cfg = w.FunctionCallConfig(function=ref)
    if (blocks is None) == (inputs is None):
        raise _bad("give exactly one of blocks= (a range of block numbers) and inputs= (a list of JSON values)")
    if blocks is not None:
        if not isinstance(blocks, range) or blocks.step != 1:
            raise _bad(f"blocks= must be a range with step 1, e.g. range(100, 200) for blocks 100..199, not {blocks!r}")
        if len(blocks) == 0 or blocks.start < 0:
            raise _bad(f"blocks={blocks!r} is empty or negative")
        if not isinstance(chain, str) or not chain:
            raise _bad("chain= must be a non-empty string")
        if bundle_size is None:
            cfg.block_table.CopyFrom(w.BlockTableCallConfig(chain=chain, from_block=blocks.start, to_block=blocks.stop - 1))
        else:
            if not isinstance(bundle_size, int) or bundle_size < 1:
                raise _bad(f"bundle_size= must be an integer >= 1, not {bundle_size!r}")
            cfg.block_bundle.CopyFrom(w.BlockBundleCallConfig(chain=chain, from_block=blocks.start, to_block=blocks.stop - 1, bundle_size=bundle_size))
    else:
        if bundle_size is not None:
            raise _bad("bundle_size= goes with blocks=, not inputs=")
        if isinstance(inputs, (str, bytes, Mapping)):
            raise _bad("inputs= must be a list of JSON values (one call each), not a single value")
        items = list(inputs)  # type: ignore[arg-type]
        if not items:
            raise _bad("inputs= is empty: a task needs at least one call")
        cfg.inputs.CopyFrom(w.InputsCallConfig(inputs=[_json_bytes(v, f"inputs[{i}]") for i, v in enumerate(items)]))
    outputs = []
    if table is not None:
        if not isinstance(table, str) or not _NAME.match(table):
            raise _bad(f"table= must be a table name (letters, digits, _), not {table!r}")
        if blocks is not None and not append:
            outputs.append(w.Output(block_table_write=w.BlockTableWriteHandler(table=table)))
        else:
            outputs.append(w.Output(normal_table_write=w.NormalTableWriteHandler(table=table)))
    if return_values or (return_values is None and table is None):
        outputs.append(w.Output(return_value=w.ReturnValueHandler()))
    if not outputs:
        raise _bad("the task has no output: give table= or return_values=True")
    if not isinstance(timeout_ms, int) or not 0 <= timeout_ms <= MAX_TIMEOUT_MS:
        raise _bad(f"timeout_ms= must be an integer from 0 (the default 300000) to {MAX_TIMEOUT_MS}, not {timeout_ms!r}")
    return w.Task(task_id=task_id or new_task_id(), function_call_config=cfg, outputs=outputs, task_timeout_ms=timeout_ms)


def new_task_id() -> str:
    return "py-" + uuid.uuid4().hex[:16]


def task_from_dict(d: Mapping[str, Any]) -> w.Task:
    """task_from_dict: a worker.v1.Task in proto3 JSON (lowerCamel or snake_case names), as the
    CLI's task files; an input that is not a string is taken as the JSON value itself (a string
    stays base64, as proto3 JSON wants). A missing task id gets a fresh one."""
    if not isinstance(d, Mapping):
        raise _bad(f"a task dict must be a mapping, not {type(d).__name__}")
    d = json.loads(json.dumps(d))
    fcc = d.get("functionCallConfig", d.get("function_call_config"))
    inputs_cfg = fcc.get("inputs") if isinstance(fcc, dict) else None
    if isinstance(inputs_cfg, dict) and isinstance(inputs_cfg.get("inputs"), list):
        inputs_cfg["inputs"] = [v if isinstance(v, str) else base64.b64encode(_json_bytes(v, "an input")).decode() for v in inputs_cfg["inputs"]]
    task = w.Task()
    try:
        json_format.ParseDict(d, task)
    except json_format.ParseError as e:
        raise _bad(f"not a worker.v1.Task: {e}") from None
    if not task.task_id:
        task.task_id = new_task_id()
    validate_task(task)
    return task


def validate_task(task: w.Task) -> None:
    if not task.task_id:
        raise _bad("the task has no task_id")
    if task.function_call_config.WhichOneof("config") is None:
        raise _bad(f"task {task.task_id}: no call config (block_table, block_bundle or inputs)")
    if len(task.outputs) == 0:
        raise _bad(f"task {task.task_id}: no output (a table or return_value)")
