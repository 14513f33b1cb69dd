import { describe, expect, test } from "bun:test";
import {
  AF_UNIX,
  CLONE_THREAD,
  PROCESS_SYSCALLS,
  processFilterBytes,
  SECCOMP_RET_ERRNO_ENOSYS,
  hostSeccompArch,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO_EPERM,
  SECCOMP_RET_KILL_PROCESS,
  socketFilterBytes,
  socketFilterProgram,
  SYSCALLS,
  type SeccompArch,
  KERNEL_SURFACE_SYSCALLS,
} from "./seccomp-filter";

const AUDIT = { x86_64: 0xc000003e, aarch64: 0xc00000b7, i386: 0x40000003, arm: 0x40000028 };
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;

/** run interprets the encoded program (the bytes bwrap gets) the way the kernel's classic-BPF runner does, for the opcodes it uses. */
function run(bytes: Uint8Array, data: { nr: number; arch: number; arg0?: number }): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const seccompData = new DataView(new ArrayBuffer(64));
  seccompData.setInt32(0, data.nr, true);
  seccompData.setUint32(4, data.arch, true);
  seccompData.setUint32(16, data.arg0 ?? 0, true);
  let acc = 0;
  for (let pc = 0; pc < bytes.length / 8; pc++) {
    const code = view.getUint16(pc * 8, true);
    const jt = view.getUint8(pc * 8 + 2);
    const jf = view.getUint8(pc * 8 + 3);
    const k = view.getUint32(pc * 8 + 4, true);
    if (code === 0x20) acc = seccompData.getUint32(k, true);
    else if (code === 0x15) pc += acc === k ? jt : jf;
    else if (code === 0x35) pc += acc >= k ? jt : jf;
    else if (code === 0x45) pc += (acc & k) !== 0 ? jt : jf;
    else if (code === 0x06) return k;
    else throw new Error(`unexpected opcode ${code.toString(16)} at ${pc}`);
  }
  throw new Error("the program ran off its end");
}

describe.each(["x86_64", "aarch64"] as SeccompArch[])("the %s socket filter", (arch) => {
  const bytes = socketFilterBytes(arch);
  const nr = SYSCALLS[arch];
  const archValue = AUDIT[arch];

  test("Unix sockets and socket pairs are allowed (the executor's own connection)", () => {
    expect(run(bytes, { nr: nr.socket, arch: archValue, arg0: AF_UNIX })).toBe(SECCOMP_RET_ALLOW);
    expect(run(bytes, { nr: nr.socketpair, arch: archValue, arg0: AF_UNIX })).toBe(SECCOMP_RET_ALLOW);
  });

  test("every other socket family fails with EPERM", () => {
    for (const family of [AF_INET, AF_INET6, AF_NETLINK, 0, 0xffffffff]) {
      expect(run(bytes, { nr: nr.socket, arch: archValue, arg0: family })).toBe(SECCOMP_RET_ERRNO_EPERM);
      expect(run(bytes, { nr: nr.socketpair, arch: archValue, arg0: family })).toBe(SECCOMP_RET_ERRNO_EPERM);
    }
  });

  test("io_uring, which can open sockets without socket(2), fails with EPERM", () => {
    for (const n of nr.ioUring) expect(run(bytes, { nr: n, arch: archValue })).toBe(SECCOMP_RET_ERRNO_EPERM);
  });

  test("other system calls pass untouched", () => {
    for (const n of [0, 1, 2, 57, 59, 62, 200, 424, 428]) {
      if (n === nr.socket || n === nr.socketpair) continue;
      expect(run(bytes, { nr: n, arch: archValue, arg0: AF_INET })).toBe(SECCOMP_RET_ALLOW);
    }
  });

  test("a system call of another ABI kills the process (its numbers differ)", () => {
    const others = Object.entries(AUDIT).filter(([name]) => name !== arch);
    for (const [, value] of others) expect(run(bytes, { nr: nr.socket, arch: value, arg0: AF_INET })).toBe(SECCOMP_RET_KILL_PROCESS);
  });

  test("every jump lands inside the program, forward", () => {
    const program = socketFilterProgram(arch);
    program.forEach((ins, i) => {
      if (ins.code !== 0x15 && ins.code !== 0x35) return;
      expect(i + 1 + ins.jt).toBeLessThan(program.length);
      expect(i + 1 + ins.jf).toBeLessThan(program.length);
    });
    expect(bytes.length).toBe(program.length * 8);
    expect(program.at(-1)!.code).toBe(0x06);
  });
});

test("x86_64's x32 system calls (numbers with bit 30 set) kill the process", () => {
  const bytes = socketFilterBytes("x86_64");
  expect(run(bytes, { nr: 0x40000000 + 41, arch: AUDIT.x86_64, arg0: AF_INET })).toBe(SECCOMP_RET_KILL_PROCESS);
});

test("the host architecture maps to a filter we ship, and others to none", () => {
  expect(hostSeccompArch("x64")).toBe("x86_64");
  expect(hostSeccompArch("arm64")).toBe("aarch64");
  expect(hostSeccompArch("ia32")).toBeNull();
});

describe.each(["x86_64", "aarch64"] as SeccompArch[])("the %s process filter", (arch) => {
  const bytes = processFilterBytes(arch);
  const nr = PROCESS_SYSCALLS[arch];
  const archValue = AUDIT[arch];
  // What glibc's pthread_create passes: CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|...
  const THREAD_FLAGS = 0x003d0f00;
  const FORK_FLAGS = 0x01200011; // CLONE_CHILD_SETTID|CLONE_CHILD_CLEARTID|SIGCHLD: fork() by clone

  test("a new thread (clone with CLONE_THREAD) is allowed: the executor runs calls in threads", () => {
    expect(THREAD_FLAGS & CLONE_THREAD).not.toBe(0);
    expect(run(bytes, { nr: nr.clone, arch: archValue, arg0: THREAD_FLAGS })).toBe(SECCOMP_RET_ALLOW);
  });

  test("a new process by clone, fork or vfork fails with EPERM", () => {
    expect(run(bytes, { nr: nr.clone, arch: archValue, arg0: FORK_FLAGS })).toBe(SECCOMP_RET_ERRNO_EPERM);
    expect(run(bytes, { nr: nr.clone, arch: archValue, arg0: 0x4111 })).toBe(SECCOMP_RET_ERRNO_EPERM); // CLONE_VM|CLONE_VFORK|SIGCHLD
    for (const n of nr.denied) expect(run(bytes, { nr: n, arch: archValue })).toBe(SECCOMP_RET_ERRNO_EPERM);
  });

  test("each system call of the kernel surface user code has no need for fails with EPERM", () => {
    const denied = KERNEL_SURFACE_SYSCALLS[arch];
    expect(Object.keys(denied)).toContain("userfaultfd");
    for (const [name, n] of Object.entries(denied)) expect([name, run(bytes, { nr: n, arch: archValue })]).toEqual([name, SECCOMP_RET_ERRNO_EPERM]);
  });

  test("what Python itself calls still passes: read, write, mmap, futex, openat, close, getrandom, epoll, poll", () => {
    const common = arch === "x86_64" ? [0, 1, 9, 202, 257, 3, 318, 232, 7] : [63, 64, 222, 98, 56, 57, 278, 22, 73];
    for (const n of common) expect(run(bytes, { nr: n, arch: archValue })).toBe(SECCOMP_RET_ALLOW);
  });

  test("clone3 answers ENOSYS, so the C library falls back to clone, whose flags the filter reads", () => {
    expect(run(bytes, { nr: nr.clone3, arch: archValue })).toBe(SECCOMP_RET_ERRNO_ENOSYS);
  });

  test("sockets and everything else pass (the socket filter is bwrap's), another ABI is killed", () => {
    expect(run(bytes, { nr: SYSCALLS[arch].socket, arch: archValue, arg0: 2 })).toBe(SECCOMP_RET_ALLOW);
    expect(run(bytes, { nr: 0, arch: archValue })).toBe(SECCOMP_RET_ALLOW);
    expect(run(bytes, { nr: nr.clone, arch: AUDIT.i386, arg0: THREAD_FLAGS })).toBe(SECCOMP_RET_KILL_PROCESS);
  });
});
