/**
 * peerCredentials reads SO_PEERCRED of a connected Unix socket (the kernel's word on the peer's
 * pid, uid and gid at connect time) through libc's getsockopt via bun:ffi. Null when the
 * descriptor is not such a socket or libc cannot be loaded (then the caller logs no uid).
 */
export interface PeerCredentials {
  readonly pid: number;
  readonly uid: number;
  readonly gid: number;
}

const SOL_SOCKET = 1;
const SO_PEERCRED = 17;

type Getsockopt = (fd: number, level: number, name: number, value: Uint8Array, len: Uint32Array) => number;
let getsockopt: Getsockopt | null | undefined;

function load(): Getsockopt | null {
  if (getsockopt !== undefined) return getsockopt;
  try {
    const { dlopen, FFIType } = require("bun:ffi") as typeof import("bun:ffi");
    const lib = dlopen("libc.so.6", { getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 } });
    getsockopt = lib.symbols.getsockopt as unknown as Getsockopt;
  } catch {
    getsockopt = null;
  }
  return getsockopt;
}

export function peerCredentials(fd: number): PeerCredentials | null {
  const call = load();
  if (call === null || !Number.isInteger(fd) || fd < 0) return null;
  const buf = new Uint8Array(12);
  const len = new Uint32Array([12]);
  if (call(fd, SOL_SOCKET, SO_PEERCRED, buf, len) !== 0 || len[0] !== 12) return null;
  const v = new DataView(buf.buffer);
  return { pid: v.getInt32(0, true), uid: v.getUint32(4, true), gid: v.getUint32(8, true) };
}
