from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DescribeRequest(_message.Message):
    __slots__ = ("classes", "input_dims")
    class InputDimsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    CLASSES_FIELD_NUMBER: _ClassVar[int]
    INPUT_DIMS_FIELD_NUMBER: _ClassVar[int]
    classes: _containers.RepeatedScalarFieldContainer[str]
    input_dims: _containers.ScalarMap[str, int]
    def __init__(self, classes: _Optional[_Iterable[str]] = ..., input_dims: _Optional[_Mapping[str, int]] = ...) -> None: ...

class ModelDescription(_message.Message):
    __slots__ = ("model", "classes")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CLASSES_FIELD_NUMBER: _ClassVar[int]
    model: str
    classes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, model: _Optional[str] = ..., classes: _Optional[_Iterable[str]] = ...) -> None: ...

class Payload(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class FrameRequest(_message.Message):
    __slots__ = ("index", "t", "inputs")
    class InputsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Payload
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Payload, _Mapping]] = ...) -> None: ...
    INDEX_FIELD_NUMBER: _ClassVar[int]
    T_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    index: int
    t: float
    inputs: _containers.MessageMap[str, Payload]
    def __init__(self, index: _Optional[int] = ..., t: _Optional[float] = ..., inputs: _Optional[_Mapping[str, Payload]] = ...) -> None: ...

class Prediction(_message.Message):
    __slots__ = ("scores", "refers_to")
    SCORES_FIELD_NUMBER: _ClassVar[int]
    REFERS_TO_FIELD_NUMBER: _ClassVar[int]
    scores: _containers.RepeatedScalarFieldContainer[float]
    refers_to: int
    def __init__(self, scores: _Optional[_Iterable[float]] = ..., refers_to: _Optional[int] = ...) -> None: ...

class FrameReply(_message.Message):
    __slots__ = ("index", "predictions", "model_ns", "error")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PREDICTIONS_FIELD_NUMBER: _ClassVar[int]
    MODEL_NS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    index: int
    predictions: _containers.RepeatedCompositeFieldContainer[Prediction]
    model_ns: int
    error: str
    def __init__(self, index: _Optional[int] = ..., predictions: _Optional[_Iterable[_Union[Prediction, _Mapping]]] = ..., model_ns: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...
