import { errorCodeToGRPC } from "../../common/error-code-to-grpc";

/** coordCodeToGRPC: where a Coordinator error becomes a gRPC status (the seed's name for the shared table). */
export const coordCodeToGRPC = errorCodeToGRPC;
