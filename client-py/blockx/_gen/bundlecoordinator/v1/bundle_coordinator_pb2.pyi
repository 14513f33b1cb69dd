from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

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
