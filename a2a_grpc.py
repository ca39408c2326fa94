"""a2a_grpc: the gRPC binding of A2A 1.0 (specification section 10) for a2a_min.

The optional companion of a2a_min.py. It serves the same Server (the same
agent, the same task store, the same behaviour) over gRPC, beside the JSON-RPC
and HTTP+JSON bindings. It needs grpcio, protobuf and googleapis-common-protos
(in a checkout: pip install '.[grpc]'), and the generated a2a_min_pb2.py.

Quick start::

    import a2a_min, a2a_grpc

    server = a2a_min.Server(lambda text: "You said: " + text)
    grpc_server, port = a2a_grpc.create_server(server, "127.0.0.1:50051")
    grpc_server.start()                          # gRPC on 50051
    a2a_min.serve(server, port=8000)             # JSON-RPC, HTTP+JSON and the card on 8000

or run ``python a2a_grpc.py`` for the demo agent on all three bindings.

How it works. The core speaks ProtoJSON dicts, so this module only converts:
a request message becomes its ProtoJSON dict (google.protobuf.json_format),
goes through Server.call() exactly as a JSON-RPC or HTTP+JSON request does,
and the answer dict is parsed back into the response message. There is no
per-message mapping code. Service parameters travel as metadata (a2a-version,
a2a-extensions) and get the same checks. Errors become the gRPC status of the
error table with a google.rpc.Status in the grpc-status-details-bin trailer,
whose details carry the google.rpc.ErrorInfo (and BadRequest for invalid
params), as grpcio-status would send them. An exception nobody expected is
logged and answered INTERNAL with a generic message (grpc on its own would
send the exception's text). NaN and Infinity, which protobuf carries in a
Struct or Value but JSON cannot, are INVALID_ARGUMENT.

A2A 0.3 clients too: with Server(compat="0.3"), create_server also serves
0.3's service, a2a.v1.A2AService, whose messages are built from a2a_v03's
description of the 0.3 proto (no generated module), each rpc translated by
a2a_v03 as 0.3's HTTP+JSON binding is (the same messages' JSON); and
GrpcChannel(v03=a2a_v03) calls an agent that speaks only 0.3.

Limits. A message is received up to the server's max_body_bytes. Each open
stream (SendStreamingMessage, SubscribeToTask) holds one thread of the gRPC
server's pool for as long as it lasts, so create_server allows at most
``max_streams`` of them at once (half the pool by default) and answers the next
with RESOURCE_EXHAUSTED (reason TOO_MANY_STREAMS): however many clients keep
streams open, unary calls still find a thread. One client address holds at
most ``max_caller_streams`` of the places (a quarter by default; past it,
reason CALLER_LIMIT). A stream that ends, however it ends, frees its place,
and wakes only the streams of its own task.
"""

__all__ = ["A2AServiceServicer", "TooManyStreamsError", "create_server", "serve", "main",
           "SERVICE_NAME", "GrpcChannel", "v03_messages"]


import errno
import os
import sys
import threading

try:
    import grpc
    from google.protobuf import any_pb2, empty_pb2, json_format
    from google.rpc import error_details_pb2, status_pb2  # noqa: F401 - registers ErrorInfo, BadRequest
except ImportError as missing:
    if os.path.basename(sys.argv[0] if sys.argv else "") in ("a2a-min-grpc", "a2a_grpc.py"):
        sys.exit(f"a2a_grpc needs the gRPC extra ({missing}): in a checkout, pip install "
                 "'.[grpc]'; beside a copied file, pip install grpcio protobuf "
                 "googleapis-common-protos")       # (run as a command: one line, no traceback)
    raise ImportError(
        f"a2a_grpc needs the gRPC extra ({missing}): in a checkout, pip install '.[grpc]'; "
        "beside a copied file, pip install grpcio protobuf "
        "googleapis-common-protos", name=missing.name) from missing

import a2a_min
import a2a_min_pb2 as pb

SERVICE_NAME = "lf.a2a.v1.A2AService"

# Request and response classes of each rpc, from the tables of a2a_min.
_EMPTY = "google.protobuf.Empty"


def _message_class(name):
    return empty_pb2.Empty if name == _EMPTY else getattr(pb, name)


class _Status(grpc.Status):
    """What context.abort_with_status() takes: a code, a message, trailers."""

    def __init__(self, code, details, trailing_metadata):
        self.code = code
        self.details = details
        self.trailing_metadata = trailing_metadata


def _grpc_status(error):
    """The gRPC form of an a2a_min error (a pure function of the error)."""
    code = grpc.StatusCode[error.grpc_status]
    status = status_pb2.Status(code=code.value[0], message=error.message)
    for detail in error.details():
        status.details.append(json_format.ParseDict(detail, any_pb2.Any()))
    return _Status(code, error.message,
                   (("grpc-status-details-bin", status.SerializeToString()),))


class TooManyStreamsError(a2a_min.InternalError):
    """As many streams are open as create_server's ``max_streams`` allows.

    A limit of the server, like a2a_min.TaskStoreFullError: RESOURCE_EXHAUSTED,
    and an ErrorInfo whose metadata says the limit."""
    code, grpc_status, http_status, reason = -32603, "RESOURCE_EXHAUSTED", 503, "TOO_MANY_STREAMS"


class _StreamSlots:
    """At most ``limit`` streams open at once, ``per_peer`` of them from one
    client address (so that one client cannot hold them all): take() a place
    when a stream starts (None, or the error refusing it), give_back() when it ends."""

    def __init__(self, limit, per_peer=None):
        self.limit, self.per_peer = limit, per_peer
        self.open, self.by_peer = 0, {}
        self.lock = threading.Lock()

    def take(self, peer=None):
        with self.lock:
            if self.limit is not None and self.open >= self.limit:
                return self.refusal()
            held = self.by_peer.get(peer, 0)
            if self.per_peer is not None and held >= self.per_peer:
                return a2a_min.CallerLimitError(
                    f"you have {held} streams open, the most one client may here "
                    f"(max_caller_streams is {self.per_peer}); close one, or poll the task "
                    "with GetTask, then try again",
                    metadata={"limit": "max_caller_streams", "value": self.per_peer})
            self.open, self.by_peer[peer] = self.open + 1, held + 1
            return None

    def give_back(self, peer=None):
        with self.lock:
            self.open -= 1
            held = self.by_peer.pop(peer) - 1
            if held:
                self.by_peer[peer] = held

    def refusal(self):
        return TooManyStreamsError(
            f"too many streams: this server serves at most {self.limit} at once (max_streams) "
            "and all are open; retry when one has ended, or poll the task with GetTask "
            "meanwhile", metadata={"limit": self.limit})


class A2AServiceServicer:
    """lf.a2a.v1.A2AService over an a2a_min.Server. Methods are named like the rpcs.

    ``max_streams`` bounds the streams open at once (None: no bound; create_server
    always sets one, below its thread pool's size)."""

    def __init__(self, server, max_streams=None, max_caller_streams=None):
        self.server = server
        self.streams = _StreamSlots(max_streams, max_caller_streams)
        self.certificates = {}          # PEM -> its decoded dict: the last few client certificates

    # -- the eleven rpcs ---------------------------------------------------------

    def SendMessage(self, request, context):
        return self._unary("SendMessage", request, context)

    def SendStreamingMessage(self, request, context):
        return self._stream("SendStreamingMessage", request, context)

    def GetTask(self, request, context):
        return self._unary("GetTask", request, context)

    def ListTasks(self, request, context):
        return self._unary("ListTasks", request, context)

    def CancelTask(self, request, context):
        return self._unary("CancelTask", request, context)

    def SubscribeToTask(self, request, context):
        return self._stream("SubscribeToTask", request, context)

    def CreateTaskPushNotificationConfig(self, request, context):
        return self._unary("CreateTaskPushNotificationConfig", request, context)

    def GetTaskPushNotificationConfig(self, request, context):
        return self._unary("GetTaskPushNotificationConfig", request, context)

    def ListTaskPushNotificationConfigs(self, request, context):
        return self._unary("ListTaskPushNotificationConfigs", request, context)

    def DeleteTaskPushNotificationConfig(self, request, context):
        return self._unary("DeleteTaskPushNotificationConfig", request, context)

    def GetExtendedAgentCard(self, request, context):
        return self._unary("GetExtendedAgentCard", request, context)

    # -- the one path every rpc takes -------------------------------------------------

    def _call_context(self, context):
        headers = {}
        for key, value in context.invocation_metadata():
            if not key.endswith("-bin"):
                headers[key] = headers[key] + ", " + value if key in headers else value
        peer = _peer_address(context.peer())
        certificate = _certificate_of(context, self.certificates)
        if certificate is not None:                # mutual TLS: as the HTTP hosts give it
            peer = a2a_min._Peer(peer, certificate)
        call = a2a_min.CallContext(headers, peer=peer, tracing=self.server.tracing)
        last = headers.get("last-event-id", "").strip()
        if last.isascii() and last.isdecimal():    # resume a SubscribeToTask stream
            call.last_event_id = int(last)
        return call

    def _call(self, method, request, context, v03=None):
        """The answer of Server.call() for an rpc's request message. ``v03``:
        (a2a_v03, rpc, the 0.3 message classes) for an rpc of A2A 0.3's
        service, whose request a2a_v03 translates into the 1.0 call."""
        try:
            params = json_format.MessageToDict(request)
        except (ValueError, json_format.Error) as exc:
            # A double protobuf carries but JSON cannot: NaN or Infinity in a Struct or Value.
            context.abort_with_status(_grpc_status(a2a_min.InvalidParamsError(
                f"the request holds a number JSON has no form for (NaN or Infinity): {exc}")))
        call = self._call_context(context)
        path = f"/{SERVICE_NAME}/{method}"
        if v03 is not None:
            compat, rpc, _ = v03
            path = f"/{compat.PROTO_SERVICE}/{rpc}"
            try:
                method, params, _ = compat.grpc_call(rpc, params, call)
            except a2a_min.A2AError as error:
                context.abort_with_status(_grpc_status(error))
        observers, failed = self.server.observers, None
        if observers:                              # (Server(observers=...): as HTTP's are told)
            watched = a2a_min.Request("POST", path, "", call.headers, b"",
                                      None, call.peer, None, binding="GRPC")
            watched.call = call
            a2a_min._started(self.server, watched)
        try:
            return self.server.call(method, params, call)
        except a2a_min.A2AError as error:
            failed = type(error)
            context.abort_with_status(_grpc_status(error))
        except Exception:
            failed = a2a_min.InternalError
            _unexpected(context, method)
        finally:
            if observers:
                watched.error = failed
                a2a_min._returned(watched)
                a2a_min._answered(watched, "OK" if failed is None else failed.grpc_status, None,
                                  a2a_min.METHODS[method][2])

    def _unary(self, method, request, context):
        result = self._call(method, request, context)
        try:
            return json_format.ParseDict(result, _message_class(a2a_min.METHODS[method][1])(),
                                         ignore_unknown_fields=True)
        except json_format.ParseError:
            _unexpected(context, method, "the answer to %s does not fit the proto")

    def _stream(self, method, request, context, v03=None):
        # The place is taken on the pool thread that will serve the stream, and
        # given back when that thread is done with it: a stream refused here
        # has held its thread only for this check.
        peer = _peer_address(context.peer())
        refused = self.streams.take(peer)
        if refused is not None:
            context.abort_with_status(_grpc_status(refused))
        try:
            yield from self._follow(method, request, context, v03)
        finally:
            self.streams.give_back(peer)

    def _follow(self, method, request, context, v03=None):
        events = self._call(method, request, context, v03)
        response, event_out = pb.StreamResponse, None
        if v03 is not None:
            response, event_out = v03[2]["StreamResponse"], v03[0].grpc_event_out
        try:
            # A client that goes away (or a server that stops) wakes the streams
            # of this task (the channel its follower reads), so this one notices
            # at once instead of at its next keep-alive tick; streams of other
            # tasks sleep on.
            channel = getattr(events, "channel", None)
            if channel is not None and not context.add_callback(channel.wake):
                return                             # the call has ended already
            generations = getattr(events, "generations", False)     # (an A2A 1.1 client's)
            for seq, event in events:
                if not context.is_active():
                    return
                if event is None:                  # keep-alive tick: gRPC needs none
                    continue
                out = json_format.ParseDict(event if event_out is None else event_out(event),
                                            response(), ignore_unknown_fields=True)
                kind = generations and out.WhichOneof("payload")
                if kind in ("task", "status_update", "artifact_update"):
                    getattr(out, kind).generation = seq + 1   # (the event's id + 1: _as_of)
                yield out
        except a2a_min.A2AError as error:
            context.abort_with_status(_grpc_status(error))
        except Exception:
            _unexpected(context, method)
        finally:
            close = getattr(events, "close", None)
            if close:
                close()


def _unexpected(context, method, what="unexpected error answering %s over gRPC"):
    """The last line of defence: log the exception being handled, answer INTERNAL
    with the generic message (grpc itself would send the exception's text)."""
    a2a_min._log().exception(what, method)
    context.abort_with_status(_grpc_status(a2a_min.InternalError(
        "internal error; see the server log")))


def _certificate_of(context, seen=None):
    """The verified client certificate of a call over mutual TLS, as ssl's
    getpeercert() gives it on the HTTP hosts (the same dict, decoded by the
    same OpenSSL code from the PEM grpc hands over), or None. So one
    certificate is one principal on every binding: MutualTlsAuth's one
    function reads the same subject and subjectAltName everywhere. ``seen``:
    a dict of the certificates decoded lately (a client calls again and again),
    emptied when it holds 64."""
    auth = context.auth_context() or {}
    pem = (auth.get("x509_pem_cert") or [b""])[0]
    if not pem:
        return None
    if seen is None:
        return _decoded_certificate(pem)
    decoded = seen.get(pem)
    if decoded is None:
        decoded = _decoded_certificate(pem)
        if len(seen) >= 64:
            seen.clear()                   # (one step, safe across the pool's threads)
        seen[pem] = decoded
    return dict(decoded)


def _decoded_certificate(pem):
    """ssl's getpeercert() dict of a PEM certificate. The standard library
    decodes a certificate only from a file (ssl._ssl._test_decode_cert, the
    decoder getpeercert() uses): a private temporary file, removed at once."""
    import ssl
    import tempfile
    with tempfile.NamedTemporaryFile("wb", suffix=".pem") as f:
        f.write(pem)
        f.flush()
        return ssl._ssl._test_decode_cert(f.name)


def _credentials(tls):
    """grpc's server credentials for a2a_min's tls= dict (the same files as the
    HTTP servers'): the certificate and key, and for mutual TLS the client CA."""
    def read(what, path):
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as error:
            raise ValueError(f"the TLS {what} {path} cannot be used: "
                             f"{error.strerror.lower()}") from None
    cert = read("certificate", tls["cert"])
    key = read("key", tls["key"]) if tls.get("key") else cert
    ca = read("client CA file", tls["client_ca"]) if tls.get("client_ca") else None
    # grpc asks for a client certificate only when it requires one: with a
    # client CA the gRPC port always does. (The public card is served over
    # HTTP, where "client_cert": "optional" keeps it reachable without one.)
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca,
                                       require_client_auth=bool(ca))


def _peer_address(peer):
    """grpc's peer ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000", "unix:...") -> the
    address alone, as the HTTP hosts give it (per-caller limits count by it)."""
    kind, _, rest = (peer or "").partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0]
    if kind == "ipv6":
        return rest.rpartition(":")[0].strip("[]")
    return peer


def _decoder(request_class, what):
    """decode(data, context): the request, or INVALID_ARGUMENT saying "the <what>"."""
    def decode(data, context):
        try:
            return request_class.FromString(data)
        except Exception:                          # DecodeError and friends
            context.abort_with_status(_grpc_status(a2a_min.InvalidParamsError(f"the {what}")))
    return decode


def _handlers(servicer):
    """The generic handler of the service: one entry per rpc, from METHODS.

    Requests arrive as bytes and are parsed here, so that malformed protobuf
    gets INVALID_ARGUMENT with a message rather than grpc's generic INTERNAL.
    """
    def make(method, request_class, streams):
        implementation = getattr(servicer, method)
        decode = _decoder(request_class, f"{request_class.DESCRIPTOR.name} bytes are not valid "
                                         "protobuf")

        if streams:
            def handler(data, context):
                yield from implementation(decode(data, context), context)
            return grpc.unary_stream_rpc_method_handler(
                handler, response_serializer=lambda m: m.SerializeToString())

        def handler(data, context):
            return implementation(decode(data, context), context)
        return grpc.unary_unary_rpc_method_handler(
            handler, response_serializer=lambda m: m.SerializeToString())

    table = {method: make(method, _message_class(request), streams)
             for method, (request, _, streams) in a2a_min.METHODS.items()}
    return grpc.method_handlers_generic_handler(SERVICE_NAME, table)


# -- A2A 0.3's service (a2a.v1.A2AService), for Server(compat="0.3") --------------------------
#
# The 0.3 messages are built from a2a_v03's description of them (facts of the
# 0.3 proto: names, numbers, types) into a descriptor pool of their own, so
# that a process may also hold another a2a.v1 (the reference SDK's generated
# module). Each 0.3 request goes, as its JSON, through a2a_v03's translation
# to the 1.0 call, and its answer back: the same route the 0.3 HTTP+JSON
# binding takes, which speaks these messages' JSON.

_SCALARS = {"string": 9, "bytes": 12, "bool": 8, "int32": 5}     # FieldDescriptorProto types


def v03_messages(compat):
    """{message name: class} of A2A 0.3's proto (package a2a.v1), from the
    description in ``compat`` (a2a_v03), in a descriptor pool of their own."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2, \
        timestamp_pb2
    package = compat.PROTO_PACKAGE
    proto = descriptor_pb2.FileDescriptorProto(
        name="a2a_min_v03.proto", package=package, syntax="proto3",
        dependency=["google/protobuf/struct.proto", "google/protobuf/timestamp.proto"])
    for name, values in compat.PROTO_ENUMS.items():
        enum = proto.enum_type.add(name=name)
        for number, value in enumerate(values):
            enum.value.add(name=value, number=number)
    for name, fields in compat.PROTO_MESSAGES.items():
        message = proto.message_type.add(name=name)
        oneofs = []
        for spec in fields:
            field_name, number, kind, *flags = spec.split()
            flags = dict(flag.partition("=")[::2] for flag in flags)
            field = message.field.add(name=field_name, number=int(number), label=3 if
                                      "repeated" in flags else 1)
            if kind in _SCALARS:
                field.type = _SCALARS[kind]
            else:
                field.type = 14 if kind in compat.PROTO_ENUMS else 11
                field.type_name = kind if kind.startswith(".") else f".{package}.{kind}"
            if flags.get("json"):
                field.json_name = flags["json"]
            if flags.get("oneof"):
                if flags["oneof"] not in oneofs:
                    oneofs.append(flags["oneof"])
                    message.oneof_decl.add(name=flags["oneof"])
                field.oneof_index = oneofs.index(flags["oneof"])
    pool = descriptor_pool.DescriptorPool()
    for known in (struct_pb2, timestamp_pb2):
        pool.AddSerializedFile(known.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    classes = {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(
        f"{package}.{name}")) for name in compat.PROTO_MESSAGES}
    classes[_EMPTY] = empty_pb2.Empty
    return classes


def _v03_handlers(servicer, compat):
    """The generic handler of 0.3's service: one entry per rpc of a2a_v03.GRPC_RPCS."""
    classes = v03_messages(compat)

    def make(rpc, request_name, response_name, streams):
        request_class, response_class = classes[request_name], classes[response_name]
        v03 = (compat, rpc, classes)
        decode = _decoder(request_class, f"{request_name} bytes are not valid A2A 0.3 protobuf")

        if streams:
            def handler(data, context):
                yield from servicer._stream(rpc, decode(data, context), context, v03)
            return grpc.unary_stream_rpc_method_handler(
                handler, response_serializer=lambda m: m.SerializeToString())

        def handler(data, context):
            result = servicer._call(rpc, decode(data, context), context, v03)
            try:
                return json_format.ParseDict(compat.grpc_answer(rpc, result), response_class(),
                                             ignore_unknown_fields=True)
            except json_format.ParseError:
                _unexpected(context, rpc, "the answer to %s does not fit the 0.3 proto")
        return grpc.unary_unary_rpc_method_handler(
            handler, response_serializer=lambda m: m.SerializeToString())

    table = {rpc: make(rpc, request, response, streams)
             for rpc, (request, response, streams, _) in compat.GRPC_RPCS.items()}
    return grpc.method_handlers_generic_handler(compat.PROTO_SERVICE, table)


def create_server(server, address="127.0.0.1:0", *, max_workers=64, max_streams=None,
                  max_caller_streams=None, advertise=True, tls=None):
    """A grpc.Server serving ``server`` at ``address``; returns (grpc_server, port).

    Call ``grpc_server.start()``; stop with ``grpc_server.stop(grace)``, which
    ends open streams. With ``advertise`` the agent card lists the GRPC
    interface as host:port. The receive limit is the server's max_body_bytes.
    ``max_workers`` threads serve the calls; at most ``max_streams`` of them
    (default: half) serve streams, and a stream past that is refused with
    RESOURCE_EXHAUSTED, so the other calls always have threads; one client
    address holds at most ``max_caller_streams`` of them (default: a quarter,
    and never more than the Server's own max_caller_streams). ``tls``: the
    files of a2a_min's tls= dict ({"cert", "key", "client_ca", "client_cert"}):
    gRPC over TLS, and mutual TLS with a client CA. The card's GRPC interface
    stays host:port (a gRPC target): it names no scheme, so a client is told
    TLS by being given credentials (see the README).
    """
    from concurrent import futures
    if max_streams is None:
        max_streams = max_workers // 2
    if max_caller_streams is None:
        max_caller_streams = max(1, min(max_streams // 4, server.limits["max_caller_streams"]))
    if not 0 <= max_streams < max_workers:
        raise ValueError(f"max_streams must be from 0 to max_workers - 1 ({max_workers - 1}), "
                         f"so that unary calls keep a thread; got {max_streams}")
    limit = server.limits["max_body_bytes"]
    grpc_server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="a2a-grpc"),
        options=[("grpc.max_receive_message_length", limit),
                 ("grpc.so_reuseport", 0)])
    servicer = A2AServiceServicer(server, max_streams, max_caller_streams)
    handlers = [_handlers(servicer)]
    if server.compat is not None:               # A2A 0.3 clients too: a2a.v1.A2AService
        handlers.append(_v03_handlers(servicer, server.compat))
    grpc_server.add_generic_rpc_handlers(tuple(handlers))
    port = (grpc_server.add_secure_port(address, _credentials(tls)) if tls
            else grpc_server.add_insecure_port(address))
    if port == 0:
        raise OSError(f"cannot listen for gRPC on {address}")
    if advertise:
        host = address.rsplit(":", 1)[0].strip("[]") or "127.0.0.1"
        server.add_interface("GRPC", f"{host}:{port}")
    return grpc_server, port


# -- the caller's side: what a2a_client uses for a GRPC interface -------------------

def _channel_credentials(tls, client_error):
    """grpc's channel credentials from the files a2a_client.tls_context() was
    made of (grpc takes PEM bytes, not an ssl.SSLContext)."""
    files = getattr(tls, "a2a_files", None) or {}
    if files.get("insecure"):
        raise client_error("gRPC cannot skip the check of the agent's certificate "
                                     "(-k): give the CA that issued it (--cacert FILE)")

    def read(path):
        if not path:
            return None
        with open(path, "rb") as f:
            return f.read()
    cert = read(files.get("cert"))
    return grpc.ssl_channel_credentials(
        root_certificates=read(files.get("ca")), certificate_chain=cert,
        private_key=read(files.get("key")) or cert)


class GrpcChannel:
    """Calls to one agent's A2AService, for a2a_client.Client: ProtoJSON
    dicts in and out, as on the other bindings. ``target`` is the
    interface's URL: host:port (or grpc://host:port), or http:// (plaintext)
    or https:// (TLS) before it. ``tls``: TLS for host:port too, with the files of
    a2a_client.tls_context() (its CA, and a client certificate for mutual
    TLS); without it a bare host:port is plaintext. An error answered by the
    agent is raised as its a2a_min class, from the ErrorInfo in
    grpc-status-details-bin: ``error_from(None, message, details,
    http_status=)``, a2a_client's; ``client_error``: its ClientError, for an
    agent that could not be reached. (a2a_client gives both: this module does
    not import it, so that the imports run one way.) ``v03``: the module
    a2a_v03, for an agent that speaks only A2A 0.3 (a2a.v1.A2AService): each
    call and answer translated, as on 0.3's HTTP+JSON."""

    def __init__(self, target, *, client_error, error_from, timeout=30.0, tls=None, v03=None):
        self.client_error, self.error_from = client_error, error_from
        self.v03 = v03
        self.v03_classes = None if v03 is None else v03_messages(v03)
        secure = target.startswith("https://") or tls is not None and (
            "://" not in target or target.startswith("grpc://"))
        address = target.split("://", 1)[-1].rstrip("/")
        self.channel = (grpc.secure_channel(address, _channel_credentials(tls, client_error)) if secure
                        else grpc.insecure_channel(address))
        self.target, self.timeout = target, timeout

    def close(self):
        self.channel.close()

    def _rpc(self, method, kind):
        make = self.channel.unary_stream if kind == "stream" else self.channel.unary_unary
        if self.v03 is not None:
            rpc = self.v03.GRPC_RPC_OF[method]          # (_request refused any other first)
            response = self.v03_classes[self.v03.GRPC_RPCS[rpc][1]]
            return make(f"/{self.v03.PROTO_SERVICE}/{rpc}",
                        request_serializer=lambda m: m.SerializeToString(),
                        response_deserializer=response.FromString)
        request, response, _ = a2a_min.METHODS[method]
        return make(f"/{SERVICE_NAME}/{method}",
                    request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=_message_class(response).FromString)

    def _request(self, method, params):
        if self.v03 is not None:
            rpc, params = self.v03.grpc_request_v03(method, params)
            request = self.v03_classes[self.v03.GRPC_RPCS[rpc][0]]()
        else:
            request = _message_class(a2a_min.METHODS[method][0])()
        try:
            return json_format.ParseDict(params, request)
        except json_format.ParseError as error:
            raise a2a_min.InvalidParamsError(f"{method}: {error}") from None

    def _answer(self, method, message, event=False):
        """The answer (or stream event) as 1.0 ProtoJSON."""
        answer = json_format.MessageToDict(message)
        if self.v03 is None:
            return answer
        try:
            return self.v03.rest_event_from_v03(answer) if event else \
                self.v03.rest_answer_from_v03(method, answer)
        except a2a_min.InvalidParamsError as error:
            raise self.client_error(f"{self.target} (an A2A 0.3 agent) answered something that "
                                    f"is not A2A 0.3: {error.message}") from None

    @staticmethod
    def _metadata(headers):
        return [(name.lower(), value) for name, value in headers.items()]

    def _error(self, error):
        """The a2a_min error of a grpc.RpcError (ClientError when the agent
        could not be reached or timed out)."""
        code = error.code()
        if code in (grpc.StatusCode.DEADLINE_EXCEEDED,):
            return self.client_error(
                f"{self.target} did not answer within {self.timeout} s: raise the timeout "
                "(--timeout), or send with --immediate / --stream")
        details = []
        for key, value in error.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                status = status_pb2.Status.FromString(value)
                details = [json_format.MessageToDict(any_message) for any_message in status.details]
        if not details and code == grpc.StatusCode.UNAVAILABLE:
            return self.client_error(
                f"{self.target} could not be reached over gRPC ({error.details()}): is the "
                "agent running, and is the address right?")
        return self.error_from(None, error.details(), details,
                               http_status={"NOT_FOUND": 404, "UNAUTHENTICATED": 401}.get(
                                   code.name))

    def call(self, method, params, headers):
        request = self._request(method, params)
        try:
            answer = self._rpc(method, "unary")(request, metadata=self._metadata(headers),
                                                 timeout=self.timeout)
        except grpc.RpcError as error:
            raise self._error(error) from None
        return self._answer(method, answer)

    def stream(self, method, params, headers, last_event_id=None):
        """(None, StreamResponse dict) of each message of a streaming rpc (gRPC
        has no event ids). Its first message is awaited here, so an error
        answered at once is raised by the call that opened the stream."""
        metadata = self._metadata(headers)
        if last_event_id is not None:
            metadata.append(("last-event-id", str(last_event_id)))
        request = self._request(method, params)
        responses = self._rpc(method, "stream")(request, metadata=metadata)
        try:
            first = next(responses, None)
        except grpc.RpcError as error:
            raise self._error(error) from None

        def events():
            if first is None:
                return
            yield None, self._answer(method, first, event=True)
            try:
                for message in responses:
                    yield None, self._answer(method, message, event=True)
            except grpc.RpcError as error:
                if error.code() == grpc.StatusCode.CANCELLED:
                    return
                raise self._error(error) from None
            finally:
                responses.cancel()
        return events()


def serve(server, host="127.0.0.1", port=8000, grpc_port=50051, *, on_ready=None,
          grace=10.0, tls=None):
    """Serve ``server`` on all three bindings until SIGTERM or Ctrl-C, then stop
    gracefully: a2a_min.serve ends the streams (gRPC streams end too, and are
    resumed with the last-event-id metadata) and lets turns finish, then the
    gRPC server lets the calls in flight finish, within ``grace`` seconds.
    ``tls`` (a2a_min's dict of files): TLS on every binding."""
    grpc_server, bound = create_server(server, f"{host}:{grpc_port}", tls=tls)
    grpc_server.start()
    try:
        a2a_min.serve(server, host, port, grace=grace, tls=tls,
                      on_ready=on_ready and (lambda httpd: on_ready(httpd, bound)))
    finally:
        grpc_server.stop(grace).wait()


def main(argv=None):
    """python a2a_grpc.py [--host H] [--port 8000] [--grpc-port 50051]: the demo on
    JSON-RPC, HTTP+JSON and gRPC, one task store."""
    import argparse
    parser = argparse.ArgumentParser(prog=a2a_min._prog(), description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--grpc-port", type=int, default=50051)
    a2a_min._tls_arguments(parser)                # (TLS on every binding)
    args = parser.parse_args(argv)
    tls = None
    if args.tls_cert:
        tls = {"cert": args.tls_cert, "key": args.tls_key, "client_ca": args.tls_client_ca,
               "client_cert": args.tls_client_cert}
        try:
            a2a_min._tls_context(tls)              # (each file checked before anything starts)
        except ValueError as error:
            parser.error(str(error))
    server = a2a_min.demo_server(
        authenticate=a2a_min.MutualTlsAuth() if args.tls_client_ca else None)

    def ready(httpd, grpc_port):
        host, port = httpd.server_address[:2]
        scheme = "https" if tls else "http"
        print(f"a2a_min {a2a_min.__version__}: JSON-RPC and HTTP+JSON on {scheme}://{host}:{port}/, "
              f"gRPC on {host}:{grpc_port}" + (" (TLS)" if tls else ""), flush=True)

    try:
        serve(server, args.host, args.port, args.grpc_port, on_ready=ready, tls=tls)
    except RuntimeError as error:                  # (grpc's: the gRPC port)
        sys.exit(f"a2a_grpc: cannot listen for gRPC on {args.host}:{args.grpc_port} ({error}); "
                 "pick another port with --grpc-port N")
    except OSError as error:
        if error.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES):
            raise
        sys.exit(f"a2a_grpc: cannot listen on {args.host}:{args.port}: {error.strerror}; "
                 "pick another port with --port N")


if __name__ == "__main__":
    main()
