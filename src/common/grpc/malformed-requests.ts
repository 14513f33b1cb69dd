import * as grpc from "@grpc/grpc-js";
import { grpcError } from "./grpc-server";

/** The marker a request body that did not decode becomes (instead of grpc-js's INTERNAL). */
const MALFORMED = Symbol("malformed request");

interface Malformed {
  readonly [MALFORMED]: string;
}

function isMalformed(v: unknown): v is Malformed {
  return typeof v === "object" && v !== null && MALFORMED in v;
}

type Method = grpc.MethodDefinition<unknown, unknown>;

/**
 * addStrictService registers `handlers` for `service` like `server.addService`, except that a
 * request body that is not a valid message of the method's request type is answered
 * INVALID_ARGUMENT, naming the method and what the decoder found wrong, before any handler runs.
 * grpc-js answers such a body INTERNAL ("Error deserializing request"): a server fault to the
 * caller, and to any alert on INTERNAL, for what is the caller's own mistake (or an attack).
 */
export function addStrictService(server: grpc.Server, service: grpc.ServiceDefinition, handlers: grpc.UntypedServiceImplementation): void {
  const strictService: Record<string, Method> = {};
  const strictHandlers: grpc.UntypedServiceImplementation = {};
  for (const [key, def] of Object.entries(service as Record<string, Method>)) {
    strictService[key] = {
      ...def,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return def.requestDeserialize(bytes);
        } catch (e) {
          return { [MALFORMED]: (e as Error).message } satisfies Malformed;
        }
      },
    };
    const h = handlers[key];
    if (!h) continue;
    const refusal = (m: Malformed) => grpcError(grpc.status.INVALID_ARGUMENT, `${def.path}: the request is not a valid message of its type (${m[MALFORMED].slice(0, 200)}); check the client's generated code matches the server's proto`);
    if (def.responseStream && !def.requestStream) {
      const stream = h as grpc.handleServerStreamingCall<unknown, unknown>;
      strictHandlers[key] = ((call: grpc.ServerWritableStream<unknown, unknown>) => {
        if (isMalformed(call.request)) return void call.emit("error", refusal(call.request));
        return stream(call);
      }) as grpc.handleServerStreamingCall<unknown, unknown>;
    } else if (!def.responseStream && !def.requestStream) {
      const unary = h as grpc.handleUnaryCall<unknown, unknown>;
      strictHandlers[key] = ((call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        if (isMalformed(call.request)) return callback(refusal(call.request));
        return unary(call, callback);
      }) as grpc.handleUnaryCall<unknown, unknown>;
    } else {
      strictHandlers[key] = h; // client streams decode message by message in the handler's own stream
    }
  }
  server.addService(strictService as grpc.ServiceDefinition, strictHandlers);
}
