"""The tables at the top of a2a_min.py, held against the specification's tables."""

import a2a_min

# Specification section 5.4 (and the project's facts sheet, section 2).
SPEC_ERRORS = {
    "TaskNotFoundError": (-32001, "NOT_FOUND", 404, "TASK_NOT_FOUND"),
    "TaskNotCancelableError": (-32002, "FAILED_PRECONDITION", 400, "TASK_NOT_CANCELABLE"),
    "PushNotificationNotSupportedError": (-32003, "FAILED_PRECONDITION", 400,
                                          "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    "UnsupportedOperationError": (-32004, "FAILED_PRECONDITION", 400, "UNSUPPORTED_OPERATION"),
    "ContentTypeNotSupportedError": (-32005, "INVALID_ARGUMENT", 400, "CONTENT_TYPE_NOT_SUPPORTED"),
    "InvalidAgentResponseError": (-32006, "INTERNAL", 500, "INVALID_AGENT_RESPONSE"),
    "ExtendedAgentCardNotConfiguredError": (-32007, "FAILED_PRECONDITION", 400,
                                            "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
    "ExtensionSupportRequiredError": (-32008, "FAILED_PRECONDITION", 400, "EXTENSION_SUPPORT_REQUIRED"),
    "VersionNotSupportedError": (-32009, "FAILED_PRECONDITION", 400, "VERSION_NOT_SUPPORTED"),
    "ParseError": (-32700, "INVALID_ARGUMENT", 400, "PARSE_ERROR"),
    "InvalidRequestError": (-32600, "INVALID_ARGUMENT", 400, "INVALID_REQUEST"),
    "MethodNotFoundError": (-32601, "UNIMPLEMENTED", 404, "METHOD_NOT_FOUND"),
    "InvalidParamsError": (-32602, "INVALID_ARGUMENT", 400, "INVALID_PARAMS"),
    "InternalError": (-32603, "INTERNAL", 500, "INTERNAL_ERROR"),
}

# Specification section 3.1 / the proto's service: the eleven operations.
SPEC_METHODS = {
    "SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask",
    "SubscribeToTask", "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard"}


def test_error_classes_match_the_spec_table():
    for name, row in SPEC_ERRORS.items():
        cls = getattr(a2a_min, name)
        assert issubclass(cls, a2a_min.A2AError)
        assert (cls.code, cls.grpc_status, cls.http_status, cls.reason) == row, name


def test_every_a2a_error_renders_with_error_info():
    for name in SPEC_ERRORS:
        error = getattr(a2a_min, name)("message", metadata={"taskId": "t"})
        info = error.details()[0]
        assert info == {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": error.reason, "domain": "a2a-protocol.org",
                        "metadata": {"taskId": "t"}}


def test_methods_operations_and_legacy_names_agree():
    assert set(a2a_min.METHODS) == SPEC_METHODS == set(a2a_min.OPERATIONS)
    assert set(a2a_min.LEGACY_METHODS.values()) == SPEC_METHODS
    for method, (request, response, streams) in a2a_min.METHODS.items():
        assert request in a2a_min.MESSAGES
        assert response in a2a_min.MESSAGES or response == "google.protobuf.Empty"
        assert streams == (method in ("SendStreamingMessage", "SubscribeToTask"))
        assert a2a_min.OPERATIONS[method].__doc__.startswith(method)


def test_states():
    states = set(a2a_min.ENUMS["TaskState"]) - {"TASK_STATE_UNSPECIFIED"}
    assert a2a_min.TERMINAL_STATES | a2a_min.INTERRUPTED_STATES < states
    assert not a2a_min.TERMINAL_STATES & a2a_min.INTERRUPTED_STATES


def test_message_types_refer_to_known_types():
    scalars = {"string", "int32", "int64", "bool", "bytes", "Timestamp", "Struct", "Value"}
    for name, rows in a2a_min.MESSAGES.items():
        for _, field, type_, _ in rows:
            if type_.startswith("map<"):
                type_ = type_[4:-1].split(",")[1]
            assert type_ in scalars or type_ in a2a_min.MESSAGES or type_ in a2a_min.ENUMS, \
                (name, field, type_)
