from blockx._gen.worker.v1 import worker_pb2 as _worker_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DebugInvokeResponse(_message.Message):
    __slots__ = ["call_id", "durations", "error", "io_trace", "logs", "result", "stderr", "stdout", "traceback"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    DURATIONS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IO_TRACE_FIELD_NUMBER: _ClassVar[int]
    LOGS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    TRACEBACK_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    durations: Durations
    error: InvokeError
    io_trace: _containers.RepeatedCompositeFieldContainer[IoTraceEntry]
    logs: _containers.RepeatedCompositeFieldContainer[LogLine]
    result: bytes
    stderr: str
    stdout: str
    traceback: str
    def __init__(self, call_id: _Optional[str] = ..., result: _Optional[bytes] = ..., error: _Optional[_Union[InvokeError, _Mapping]] = ..., durations: _Optional[_Union[Durations, _Mapping]] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., logs: _Optional[_Iterable[_Union[LogLine, _Mapping]]] = ..., io_trace: _Optional[_Iterable[_Union[IoTraceEntry, _Mapping]]] = ..., traceback: _Optional[str] = ...) -> None: ...

class Diagnostic(_message.Message):
    __slots__ = ["code", "column", "line", "message", "severity"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    code: str
    column: int
    line: int
    message: str
    severity: str
    def __init__(self, severity: _Optional[str] = ..., message: _Optional[str] = ..., line: _Optional[int] = ..., column: _Optional[int] = ..., code: _Optional[str] = ...) -> None: ...

class Durations(_message.Message):
    __slots__ = ["cpu_ms", "io_ms", "queue_ms", "total_ms"]
    CPU_MS_FIELD_NUMBER: _ClassVar[int]
    IO_MS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MS_FIELD_NUMBER: _ClassVar[int]
    cpu_ms: float
    io_ms: float
    queue_ms: float
    total_ms: float
    def __init__(self, queue_ms: _Optional[float] = ..., cpu_ms: _Optional[float] = ..., io_ms: _Optional[float] = ..., total_ms: _Optional[float] = ...) -> None: ...

class InvokeError(_message.Message):
    __slots__ = ["code", "message", "traceback"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TRACEBACK_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    traceback: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., traceback: _Optional[str] = ...) -> None: ...

class InvokeRequest(_message.Message):
    __slots__ = ["args", "function", "timeout_ms"]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    args: bytes
    function: _worker_pb2.FunctionRef
    timeout_ms: int
    def __init__(self, function: _Optional[_Union[_worker_pb2.FunctionRef, _Mapping]] = ..., args: _Optional[bytes] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class InvokeResponse(_message.Message):
    __slots__ = ["call_id", "durations", "error", "result"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    DURATIONS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    durations: Durations
    error: InvokeError
    result: bytes
    def __init__(self, call_id: _Optional[str] = ..., result: _Optional[bytes] = ..., error: _Optional[_Union[InvokeError, _Mapping]] = ..., durations: _Optional[_Union[Durations, _Mapping]] = ...) -> None: ...

class IoTraceEntry(_message.Message):
    __slots__ = ["backend", "bytes", "cache_hit", "duration_ms", "error", "op"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    CACHE_HIT_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    backend: str
    bytes: int
    cache_hit: bool
    duration_ms: float
    error: str
    op: str
    def __init__(self, backend: _Optional[str] = ..., op: _Optional[str] = ..., duration_ms: _Optional[float] = ..., cache_hit: bool = ..., bytes: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class LogLine(_message.Message):
    __slots__ = ["level", "message", "time_ms"]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    level: str
    message: str
    time_ms: int
    def __init__(self, time_ms: _Optional[int] = ..., level: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class PrecheckRequest(_message.Message):
    __slots__ = ["function"]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    function: _worker_pb2.FunctionRef
    def __init__(self, function: _Optional[_Union[_worker_pb2.FunctionRef, _Mapping]] = ...) -> None: ...

class PrecheckResponse(_message.Message):
    __slots__ = ["diagnostics", "digest", "entry", "ok"]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    diagnostics: _containers.RepeatedCompositeFieldContainer[Diagnostic]
    digest: str
    entry: str
    ok: bool
    def __init__(self, ok: bool = ..., diagnostics: _Optional[_Iterable[_Union[Diagnostic, _Mapping]]] = ..., digest: _Optional[str] = ..., entry: _Optional[str] = ...) -> None: ...
