import { BackendError } from "../../backend-error";

/**
 * JsonRpcError: the node answered the request with a JSON-RPC error object. Never retried (the
 * node will answer the same); the user function sees type "JsonRpcError" with the node's code
 * and message.
 */
export class JsonRpcError extends BackendError {
  constructor(
    readonly code: number,
    readonly nodeMessage: string,
    where: string,
  ) {
    super("JsonRpcError", `JSON-RPC error ${code} from ${where}: ${nodeMessage}`);
  }
}
