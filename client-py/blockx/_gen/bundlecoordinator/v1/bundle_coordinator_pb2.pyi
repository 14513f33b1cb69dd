from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetReservationOutcomesRequest(_message.Message):
    __slots__ = ["limit"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class GetReservationOutcomesResponse(_message.Message):
    __slots__ = ["counts", "recent", "started_at_ms", "total"]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    RECENT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    counts: _containers.RepeatedCompositeFieldContainer[ReservationOutcomeCount]
    recent: _containers.RepeatedCompositeFieldContainer[ReservationRecord]
    started_at_ms: int
    total: int
    def __init__(self, started_at_ms: _Optional[int] = ..., counts: _Optional[_Iterable[_Union[ReservationOutcomeCount, _Mapping]]] = ..., recent: _Optional[_Iterable[_Union[ReservationRecord, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...

class ReservationOutcomeCount(_message.Message):
    __slots__ = ["last_minute", "outcome", "since_start"]
    LAST_MINUTE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SINCE_START_FIELD_NUMBER: _ClassVar[int]
    last_minute: int
    outcome: str
    since_start: int
    def __init__(self, outcome: _Optional[str] = ..., since_start: _Optional[int] = ..., last_minute: _Optional[int] = ...) -> None: ...

class ReservationRecord(_message.Message):
    __slots__ = ["at_ms", "duration_ms", "outcome", "reason", "task_id", "worker_addr", "workers_asked"]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    WORKERS_ASKED_FIELD_NUMBER: _ClassVar[int]
    WORKER_ADDR_FIELD_NUMBER: _ClassVar[int]
    at_ms: int
    duration_ms: float
    outcome: str
    reason: str
    task_id: str
    worker_addr: str
    workers_asked: int
    def __init__(self, at_ms: _Optional[int] = ..., task_id: _Optional[str] = ..., outcome: _Optional[str] = ..., worker_addr: _Optional[str] = ..., workers_asked: _Optional[int] = ..., duration_ms: _Optional[float] = ..., reason: _Optional[str] = ...) -> None: ...

class ReserveWorkerSlotRequest(_message.Message):
    __slots__ = ["task_id"]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class ReserveWorkerSlotResponse(_message.Message):
    __slots__ = ["slot_id", "task_id", "worker_addr"]
    SLOT_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ADDR_FIELD_NUMBER: _ClassVar[int]
    slot_id: str
    task_id: str
    worker_addr: str
    def __init__(self, task_id: _Optional[str] = ..., worker_addr: _Optional[str] = ..., slot_id: _Optional[str] = ...) -> None: ...

class ReserveWorkerSlotsRequest(_message.Message):
    __slots__ = ["task_ids"]
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    task_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, task_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ReserveWorkerSlotsResponse(_message.Message):
    __slots__ = ["grants"]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    grants: _containers.RepeatedCompositeFieldContainer[SlotGrant]
    def __init__(self, grants: _Optional[_Iterable[_Union[SlotGrant, _Mapping]]] = ...) -> None: ...

class SlotGrant(_message.Message):
    __slots__ = ["code", "message", "slot_id", "status", "task_id", "worker_addr"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SLOT_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ADDR_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    slot_id: str
    status: int
    task_id: str
    worker_addr: str
    def __init__(self, task_id: _Optional[str] = ..., worker_addr: _Optional[str] = ..., slot_id: _Optional[str] = ..., status: _Optional[int] = ..., code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...
