from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

ALLOCATED: TaskState
BUILD: TaskPhase
CANCELLED: TaskState
DESCRIPTOR: _descriptor.FileDescriptor
EXECUTE: TaskPhase
FAILED: TaskState
RUNNING: TaskState
SUCCEEDED: TaskState
TASK_PHASE_UNSPECIFIED: TaskPhase
TASK_STATE_UNSPECIFIED: TaskState
TIMED_OUT: TaskState
WRITE: TaskPhase

class BlockBundleCallConfig(_message.Message):
    __slots__ = ["bundle_size", "chain", "from_block", "to_block"]
    BUNDLE_SIZE_FIELD_NUMBER: _ClassVar[int]
    CHAIN_FIELD_NUMBER: _ClassVar[int]
    FROM_BLOCK_FIELD_NUMBER: _ClassVar[int]
    TO_BLOCK_FIELD_NUMBER: _ClassVar[int]
    bundle_size: int
    chain: str
    from_block: int
    to_block: int
    def __init__(self, chain: _Optional[str] = ..., from_block: _Optional[int] = ..., to_block: _Optional[int] = ..., bundle_size: _Optional[int] = ...) -> None: ...

class BlockTableCallConfig(_message.Message):
    __slots__ = ["chain", "from_block", "to_block"]
    CHAIN_FIELD_NUMBER: _ClassVar[int]
    FROM_BLOCK_FIELD_NUMBER: _ClassVar[int]
    TO_BLOCK_FIELD_NUMBER: _ClassVar[int]
    chain: str
    from_block: int
    to_block: int
    def __init__(self, chain: _Optional[str] = ..., from_block: _Optional[int] = ..., to_block: _Optional[int] = ...) -> None: ...

class BlockTableWriteHandler(_message.Message):
    __slots__ = ["record_scopes", "table"]
    RECORD_SCOPES_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    record_scopes: bool
    table: str
    def __init__(self, table: _Optional[str] = ..., record_scopes: bool = ...) -> None: ...

class CallError(_message.Message):
    __slots__ = ["call_id", "call_index", "call_input", "code", "message", "traceback"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_INDEX_FIELD_NUMBER: _ClassVar[int]
    CALL_INPUT_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TRACEBACK_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    call_index: int
    call_input: str
    code: str
    message: str
    traceback: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., call_id: _Optional[str] = ..., traceback: _Optional[str] = ..., call_index: _Optional[int] = ..., call_input: _Optional[str] = ...) -> None: ...

class CancelTaskRequest(_message.Message):
    __slots__ = ["reason", "task_id"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    reason: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class FunctionCallConfig(_message.Message):
    __slots__ = ["block_bundle", "block_table", "function", "inputs"]
    BLOCK_BUNDLE_FIELD_NUMBER: _ClassVar[int]
    BLOCK_TABLE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    block_bundle: BlockBundleCallConfig
    block_table: BlockTableCallConfig
    function: FunctionRef
    inputs: InputsCallConfig
    def __init__(self, function: _Optional[_Union[FunctionRef, _Mapping]] = ..., block_table: _Optional[_Union[BlockTableCallConfig, _Mapping]] = ..., inputs: _Optional[_Union[InputsCallConfig, _Mapping]] = ..., block_bundle: _Optional[_Union[BlockBundleCallConfig, _Mapping]] = ...) -> None: ...

class FunctionRef(_message.Message):
    __slots__ = ["entry", "filename", "name", "source"]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    entry: str
    filename: str
    name: str
    source: str
    def __init__(self, name: _Optional[str] = ..., source: _Optional[str] = ..., entry: _Optional[str] = ..., filename: _Optional[str] = ...) -> None: ...

class GetTaskResultRequest(_message.Message):
    __slots__ = ["task_id"]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class GetTaskStoryRequest(_message.Message):
    __slots__ = ["task_id"]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class InputsCallConfig(_message.Message):
    __slots__ = ["inputs"]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    inputs: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, inputs: _Optional[_Iterable[bytes]] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ["limit"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ["tasks", "truncated"]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskListEntry]
    truncated: bool
    def __init__(self, tasks: _Optional[_Iterable[_Union[TaskListEntry, _Mapping]]] = ..., truncated: bool = ...) -> None: ...

class NormalTableWriteHandler(_message.Message):
    __slots__ = ["table"]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    table: str
    def __init__(self, table: _Optional[str] = ...) -> None: ...

class Output(_message.Message):
    __slots__ = ["block_table_write", "normal_table_write", "return_value"]
    BLOCK_TABLE_WRITE_FIELD_NUMBER: _ClassVar[int]
    NORMAL_TABLE_WRITE_FIELD_NUMBER: _ClassVar[int]
    RETURN_VALUE_FIELD_NUMBER: _ClassVar[int]
    block_table_write: BlockTableWriteHandler
    normal_table_write: NormalTableWriteHandler
    return_value: ReturnValueHandler
    def __init__(self, block_table_write: _Optional[_Union[BlockTableWriteHandler, _Mapping]] = ..., normal_table_write: _Optional[_Union[NormalTableWriteHandler, _Mapping]] = ..., return_value: _Optional[_Union[ReturnValueHandler, _Mapping]] = ...) -> None: ...

class RequestTaskSlotRequest(_message.Message):
    __slots__ = ["task_id", "ttl_ms"]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    ttl_ms: int
    def __init__(self, task_id: _Optional[str] = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class RequestTaskSlotsRequest(_message.Message):
    __slots__ = ["requests"]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[RequestTaskSlotRequest]
    def __init__(self, requests: _Optional[_Iterable[_Union[RequestTaskSlotRequest, _Mapping]]] = ...) -> None: ...

class RequestTaskSlotsResponse(_message.Message):
    __slots__ = ["outcomes"]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[TaskSlotOutcome]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[TaskSlotOutcome, _Mapping]]] = ...) -> None: ...

class ReturnValueHandler(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class StreamTaskLogsRequest(_message.Message):
    __slots__ = ["follow", "tail", "task_id"]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    TAIL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    follow: bool
    tail: int
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., tail: _Optional[int] = ..., follow: bool = ...) -> None: ...

class SubmitTaskOutcome(_message.Message):
    __slots__ = ["message", "snapshot", "status", "task_id"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    message: str
    snapshot: TaskSnapshot
    status: int
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., snapshot: _Optional[_Union[TaskSnapshot, _Mapping]] = ..., status: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class SubmitTaskRequest(_message.Message):
    __slots__ = ["resubmit", "slot_id", "task", "wait_ms"]
    RESUBMIT_FIELD_NUMBER: _ClassVar[int]
    SLOT_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    resubmit: bool
    slot_id: str
    task: Task
    wait_ms: int
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., slot_id: _Optional[str] = ..., wait_ms: _Optional[int] = ..., resubmit: bool = ...) -> None: ...

class SubmitTasksRequest(_message.Message):
    __slots__ = ["tasks"]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[SubmitTaskRequest]
    def __init__(self, tasks: _Optional[_Iterable[_Union[SubmitTaskRequest, _Mapping]]] = ...) -> None: ...

class SubmitTasksResponse(_message.Message):
    __slots__ = ["outcomes"]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[SubmitTaskOutcome]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[SubmitTaskOutcome, _Mapping]]] = ...) -> None: ...

class TableWriteSummary(_message.Message):
    __slots__ = ["calls_written", "handler", "rows_written", "table"]
    CALLS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    HANDLER_FIELD_NUMBER: _ClassVar[int]
    ROWS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    calls_written: int
    handler: str
    rows_written: int
    table: str
    def __init__(self, table: _Optional[str] = ..., handler: _Optional[str] = ..., rows_written: _Optional[int] = ..., calls_written: _Optional[int] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ["function_call_config", "outputs", "task_id", "task_timeout_ms"]
    FUNCTION_CALL_CONFIG_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    function_call_config: FunctionCallConfig
    outputs: _containers.RepeatedCompositeFieldContainer[Output]
    task_id: str
    task_timeout_ms: int
    def __init__(self, task_id: _Optional[str] = ..., function_call_config: _Optional[_Union[FunctionCallConfig, _Mapping]] = ..., outputs: _Optional[_Iterable[_Union[Output, _Mapping]]] = ..., task_timeout_ms: _Optional[int] = ...) -> None: ...

class TaskError(_message.Message):
    __slots__ = ["code", "message"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class TaskListEntry(_message.Message):
    __slots__ = ["call_seconds", "calls_timed", "function", "log_lines_dropped", "owner", "snapshot"]
    CALLS_TIMED_FIELD_NUMBER: _ClassVar[int]
    CALL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    LOG_LINES_DROPPED_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    call_seconds: float
    calls_timed: int
    function: str
    log_lines_dropped: int
    owner: str
    snapshot: TaskSnapshot
    def __init__(self, snapshot: _Optional[_Union[TaskSnapshot, _Mapping]] = ..., owner: _Optional[str] = ..., function: _Optional[str] = ..., log_lines_dropped: _Optional[int] = ..., calls_timed: _Optional[int] = ..., call_seconds: _Optional[float] = ...) -> None: ...

class TaskLogLine(_message.Message):
    __slots__ = ["attempt", "call_index", "dropped_before", "input", "level", "seq", "stream", "text", "time_ms"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CALL_INDEX_FIELD_NUMBER: _ClassVar[int]
    DROPPED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    call_index: int
    dropped_before: int
    input: str
    level: str
    seq: int
    stream: str
    text: str
    time_ms: int
    def __init__(self, seq: _Optional[int] = ..., time_ms: _Optional[int] = ..., call_index: _Optional[int] = ..., attempt: _Optional[int] = ..., input: _Optional[str] = ..., stream: _Optional[str] = ..., level: _Optional[str] = ..., text: _Optional[str] = ..., dropped_before: _Optional[int] = ...) -> None: ...

class TaskOutputs(_message.Message):
    __slots__ = ["first_error", "return_values", "writes"]
    FIRST_ERROR_FIELD_NUMBER: _ClassVar[int]
    RETURN_VALUES_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    first_error: CallError
    return_values: _containers.RepeatedScalarFieldContainer[bytes]
    writes: _containers.RepeatedCompositeFieldContainer[TableWriteSummary]
    def __init__(self, return_values: _Optional[_Iterable[bytes]] = ..., writes: _Optional[_Iterable[_Union[TableWriteSummary, _Mapping]]] = ..., first_error: _Optional[_Union[CallError, _Mapping]] = ...) -> None: ...

class TaskResult(_message.Message):
    __slots__ = ["first_error", "return_values", "snapshot", "writes"]
    FIRST_ERROR_FIELD_NUMBER: _ClassVar[int]
    RETURN_VALUES_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    first_error: CallError
    return_values: _containers.RepeatedScalarFieldContainer[bytes]
    snapshot: TaskSnapshot
    writes: _containers.RepeatedCompositeFieldContainer[TableWriteSummary]
    def __init__(self, snapshot: _Optional[_Union[TaskSnapshot, _Mapping]] = ..., return_values: _Optional[_Iterable[bytes]] = ..., writes: _Optional[_Iterable[_Union[TableWriteSummary, _Mapping]]] = ..., first_error: _Optional[_Union[CallError, _Mapping]] = ...) -> None: ...

class TaskSlotOutcome(_message.Message):
    __slots__ = ["message", "snapshot", "status", "task_id"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    message: str
    snapshot: TaskSnapshot
    status: int
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., snapshot: _Optional[_Union[TaskSnapshot, _Mapping]] = ..., status: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class TaskSnapshot(_message.Message):
    __slots__ = ["accepted_at_ms", "allocated_at_ms", "calls_failed", "calls_retried", "calls_succeeded", "calls_total", "deadline_ms", "error", "finished_at_ms", "outputs", "phase", "run_generation", "slot_id", "state", "task_id", "updated_at_ms", "worker_addr"]
    ACCEPTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    CALLS_FAILED_FIELD_NUMBER: _ClassVar[int]
    CALLS_RETRIED_FIELD_NUMBER: _ClassVar[int]
    CALLS_SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    CALLS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    RUN_GENERATION_FIELD_NUMBER: _ClassVar[int]
    SLOT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ADDR_FIELD_NUMBER: _ClassVar[int]
    accepted_at_ms: int
    allocated_at_ms: int
    calls_failed: int
    calls_retried: int
    calls_succeeded: int
    calls_total: int
    deadline_ms: int
    error: TaskError
    finished_at_ms: int
    outputs: TaskOutputs
    phase: TaskPhase
    run_generation: int
    slot_id: str
    state: TaskState
    task_id: str
    updated_at_ms: int
    worker_addr: str
    def __init__(self, task_id: _Optional[str] = ..., slot_id: _Optional[str] = ..., worker_addr: _Optional[str] = ..., state: _Optional[_Union[TaskState, str]] = ..., phase: _Optional[_Union[TaskPhase, str]] = ..., calls_total: _Optional[int] = ..., calls_succeeded: _Optional[int] = ..., calls_failed: _Optional[int] = ..., error: _Optional[_Union[TaskError, _Mapping]] = ..., allocated_at_ms: _Optional[int] = ..., accepted_at_ms: _Optional[int] = ..., finished_at_ms: _Optional[int] = ..., updated_at_ms: _Optional[int] = ..., calls_retried: _Optional[int] = ..., deadline_ms: _Optional[int] = ..., outputs: _Optional[_Union[TaskOutputs, _Mapping]] = ..., run_generation: _Optional[int] = ...) -> None: ...

class TaskStory(_message.Message):
    __slots__ = ["entries"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[TaskStoryEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[TaskStoryEntry, _Mapping]]] = ...) -> None: ...

class TaskStoryEntry(_message.Message):
    __slots__ = ["at_ms", "event", "outcome"]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    at_ms: int
    event: str
    outcome: str
    def __init__(self, at_ms: _Optional[int] = ..., event: _Optional[str] = ..., outcome: _Optional[str] = ...) -> None: ...

class WatchTasksRequest(_message.Message):
    __slots__ = ["task_ids", "terminal_only", "with_results"]
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_ONLY_FIELD_NUMBER: _ClassVar[int]
    WITH_RESULTS_FIELD_NUMBER: _ClassVar[int]
    task_ids: _containers.RepeatedScalarFieldContainer[str]
    terminal_only: bool
    with_results: bool
    def __init__(self, task_ids: _Optional[_Iterable[str]] = ..., with_results: bool = ..., terminal_only: bool = ...) -> None: ...

class TaskState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TaskPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
