"""Invoke through Debian's python3-grpcio (not grpc-js), protobuf encoded by hand.

usage: /usr/bin/python3 py_syncinvoker_client.py ADDR SOURCE ARGS_JSON
Prints one JSON object: {"ok", "callId", "result", "error", "durations"} or {"ok": false, "code", "details"}.
"""
import json
import sys

import grpc
from py_grpc_client import open_channel

from py_grpc_client import decode as fields, string_field, varint


def main():
    addr, source, args = sys.argv[1], sys.argv[2], sys.argv[3]
    function_ref = string_field(2, source)
    request = varint(1 << 3 | 2) + varint(len(function_ref)) + function_ref + varint(2 << 3 | 2) + varint(len(args.encode())) + args.encode()
    with open_channel(addr) as channel:
        try:
            raw = channel.unary_unary("/syncinvoker.v1.SyncInvokerService/Invoke")(request, timeout=30)
        except grpc.RpcError as e:
            print(json.dumps({"ok": False, "code": e.code().name, "details": e.details()}))
            return
    f = fields(raw)
    err = fields(f[3]) if 3 in f else None
    d = fields(f.get(4, b""))
    print(json.dumps({
        "ok": True,
        "callId": f.get(1, b"").decode(),
        "result": f.get(2, b"").decode(),
        "error": {"code": err.get(1, b"").decode(), "message": err.get(2, b"").decode()} if err else None,
        "durations": {"queueMs": d.get(1, 0.0), "cpuMs": d.get(2, 0.0), "ioMs": d.get(3, 0.0), "totalMs": d.get(4, 0.0)},
    }))


if __name__ == "__main__":
    main()
