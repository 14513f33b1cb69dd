from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

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
