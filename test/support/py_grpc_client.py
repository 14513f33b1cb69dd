"""A gRPC client that is not grpc-js: Debian's python3-grpcio, with protobuf encoded by hand
(no generated stubs, no PyPI). Used by the interop tests so that HTTP/2 framing quirks of the
Bun server runtime cannot hide behind a grpc-js client.

usage: /usr/bin/python3 py_grpc_client.py ADDR reserve SERVICE TASK_ID
       /usr/bin/python3 py_grpc_client.py ADDR health [SERVICE]
Prints one JSON object.
"""
import json
import os
import struct
import sys

import grpc


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def string_field(num, s):
    data = s.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


def read_varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def decode(buf):
    fields = {}
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = read_varint(buf, i)
        elif wire == 1:
            v = struct.unpack("<d", bytes(buf[i:i + 8]))[0]
            i += 8
        elif wire == 2:
            n, i = read_varint(buf, i)
            v = bytes(buf[i:i + n])
            i += n
        else:
            raise ValueError("unexpected wire type %d" % wire)
        fields[num] = v
    return fields


def open_channel(addr):
    """mTLS when BLOCKX_TLS_CA_FILE, BLOCKX_TLS_CERT_FILE and BLOCKX_TLS_KEY_FILE are set (as for a
    BlockX role), else plaintext. gRPC's C core checks the server's IP or DNS SAN itself."""
    files = [os.environ.get(n, "") for n in ("BLOCKX_TLS_CA_FILE", "BLOCKX_TLS_CERT_FILE", "BLOCKX_TLS_KEY_FILE")]
    if not all(files):
        return grpc.insecure_channel(addr)
    ca, cert, key = (open(f, "rb").read() for f in files)
    return grpc.secure_channel(addr, grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert))


def main():
    addr, op = sys.argv[1], sys.argv[2]
    with open_channel(addr) as channel:
        try:
            if op == "reserve":
                service, task_id = sys.argv[3], sys.argv[4]
                call = channel.unary_unary("/%s/ReserveWorkerSlot" % service)
                raw = call(string_field(1, task_id), timeout=15, compression=grpc.Compression.Gzip)
                f = decode(raw)
                print(json.dumps({
                    "ok": True,
                    "taskId": f.get(1, b"").decode(),
                    "workerAddr": f.get(2, b"").decode(),
                    "slotId": f.get(3, b"").decode(),
                }))
            elif op == "health":
                service = sys.argv[3] if len(sys.argv) > 3 else ""
                call = channel.unary_unary("/grpc.health.v1.Health/Check")
                f = decode(call(string_field(1, service) if service else b"", timeout=15))
                status = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}[f.get(1, 0)]
                print(json.dumps({"ok": True, "status": status}))
            else:
                raise SystemExit("unknown op " + op)
        except grpc.RpcError as e:
            print(json.dumps({"ok": False, "code": e.code().name, "details": e.details()}))


if __name__ == "__main__":
    main()
