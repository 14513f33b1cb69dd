/**
 * sdNotify sends one sd_notify(3) message ("READY=1", "STOPPING=1", ...) to systemd when the
 * process runs under a unit with Type=notify ($NOTIFY_SOCKET set); it does nothing otherwise.
 * The message is a datagram on a Unix socket, which neither Bun nor Node can send, so it goes
 * through libc's socket/sendto via bun:ffi: no native module to build or ship. Returns whether
 * a message was sent; a failure is returned, never thrown (readiness must not kill a server).
 */
export function sdNotify(message: string, env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  const socketPath = env.NOTIFY_SOCKET;
  if (!socketPath || (!socketPath.startsWith("/") && !socketPath.startsWith("@"))) return false;
  try {
    return sendDatagram(socketPath, Buffer.from(message));
  } catch {
    return false;
  }
}

const AF_UNIX = 1;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;
const SUN_PATH_MAX = 108;

type Libc = {
  socket: (domain: number, type: number, protocol: number) => number;
  sendto: (fd: number, buf: Uint8Array, len: number, flags: number, addr: Uint8Array, addrlen: number) => number | bigint;
  close: (fd: number) => number;
};
let libc: Libc | null = null;

function loadLibc(): Libc {
  if (libc) return libc;
  // Imported lazily: only a process started by systemd with Type=notify pays for it.
  const { dlopen, FFIType } = require("bun:ffi") as typeof import("bun:ffi");
  const lib = dlopen("libc.so.6", {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    sendto: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i64 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
  });
  libc = lib.symbols as unknown as Libc;
  return libc;
}

/** sockaddr_un: sa_family (2 bytes, host order) then the path; "@name" is an abstract socket (leading NUL). */
function sockaddrUn(path: string): { addr: Uint8Array; len: number } {
  const name = Buffer.from(path.startsWith("@") ? `\0${path.slice(1)}` : path);
  if (name.length >= SUN_PATH_MAX) throw new Error(`NOTIFY_SOCKET path too long: ${path}`);
  const addr = new Uint8Array(2 + SUN_PATH_MAX);
  new DataView(addr.buffer).setUint16(0, AF_UNIX, true);
  addr.set(name, 2);
  // An abstract name's length counts exactly its bytes; a path's includes the terminating NUL.
  return { addr, len: 2 + name.length + (path.startsWith("@") ? 0 : 1) };
}

function sendDatagram(path: string, payload: Uint8Array): boolean {
  const c = loadLibc();
  const { addr, len } = sockaddrUn(path);
  const fd = c.socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  try {
    return Number(c.sendto(fd, payload, payload.length, 0, addr, len)) === payload.length;
  } finally {
    c.close(fd);
  }
}
