/**
 * The seccomp filter of sandboxed executors, as the classic-BPF program `bwrap --seccomp FD`
 * loads (an array of `struct sock_filter`, 8 bytes each, in the host's byte order: little-endian
 * on both architectures we ship). There are no libseccomp bindings here, so the program is
 * written out by hand; it is short.
 *
 * What it does, for a process of the expected architecture:
 * - `socket` and `socketpair` succeed only for AF_UNIX (the executor connects to the pool's
 *   socket, the only Unix socket its mount namespace shows); any other family fails with EPERM;
 * - `io_uring_setup/enter/register` fail with EPERM (an io_uring can open sockets without the
 *   `socket` system call, behind the filter's back);
 * - every other system call is allowed.
 * A system call of another ABI (32-bit x86 or x32 on x86_64, arm32 compat on aarch64) kills the
 * process: its numbers differ, so the checks above would not hold for it.
 */

export type SeccompArch = "x86_64" | "aarch64";

const AUDIT_ARCH: Record<SeccompArch, number> = { x86_64: 0xc000003e, aarch64: 0xc00000b7 };
/** System call numbers (x86_64: arch/x86/entry/syscalls/syscall_64.tbl; aarch64: the generic table). */
export const SYSCALLS: Record<SeccompArch, { socket: number; socketpair: number; ioUring: readonly number[] }> = {
  x86_64: { socket: 41, socketpair: 53, ioUring: [425, 426, 427] },
  aarch64: { socket: 198, socketpair: 199, ioUring: [425, 426, 427] },
};
/** x86_64's x32 ABI sets this bit in the system call number. */
const X32_SYSCALL_BIT = 0x40000000;
export const AF_UNIX = 1;
const EPERM = 1;

// BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const RET_K = 0x06;
export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO_EPERM = 0x00050000 | EPERM;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
/** struct seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low 32 bits, little-endian). */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0_LOW = 16;

export interface BpfInstruction {
  readonly code: number;
  readonly jt: number;
  readonly jf: number;
  readonly k: number;
}

/** socketFilterProgram returns the filter's instructions for `arch` (exported for the unit test's interpreter). */
export function socketFilterProgram(arch: SeccompArch): BpfInstruction[] {
  const nr = SYSCALLS[arch];
  // Jump targets are relative; the program is laid out as:
  //   0 load arch; 1 arch ok? else KILL
  //   2 load nr; [x86_64: 3 nr >= x32 bit? KILL]
  //   socket? -> FAMILY; socketpair? -> FAMILY; each io_uring call? -> DENY
  //   ALLOW; FAMILY: load arg0; AF_UNIX? (next) ALLOW : DENY; DENY; KILL  (BPF jumps only forward)
  const body: { code: number; k: number; jumpTrueTo?: Target; jumpFalseTo?: Target }[] = [];
  body.push(...archPrologue<Target>(arch));
  body.push({ code: JEQ_K, k: nr.socket, jumpTrueTo: "family" });
  body.push({ code: JEQ_K, k: nr.socketpair, jumpTrueTo: "family" });
  for (const n of nr.ioUring) body.push({ code: JEQ_K, k: n, jumpTrueTo: "deny" });
  body.push({ code: RET_K, k: SECCOMP_RET_ALLOW });
  const familyAt = body.length;
  body.push({ code: LD_W_ABS, k: OFFSET_ARG0_LOW });
  body.push({ code: JEQ_K, k: AF_UNIX, jumpFalseTo: "deny" });
  body.push({ code: RET_K, k: SECCOMP_RET_ALLOW });
  const denyAt = body.length;
  body.push({ code: RET_K, k: SECCOMP_RET_ERRNO_EPERM });
  const killAt = body.length;
  body.push({ code: RET_K, k: SECCOMP_RET_KILL_PROCESS });
  return resolveJumps(body, { kill: killAt, family: familyAt, deny: denyAt });
}

type Target = "kill" | "family" | "deny";

/** System calls that make processes or run programs, per architecture (aarch64 has no fork/vfork). */
export const PROCESS_SYSCALLS: Record<SeccompArch, { clone: number; clone3: number; denied: readonly number[] }> = {
  // fork 57, vfork 58, execve 59, execveat 322
  x86_64: { clone: 56, clone3: 435, denied: [57, 58, 59, 322] },
  // execve 221, execveat 281
  aarch64: { clone: 220, clone3: 435, denied: [221, 281] },
};
/**
 * KERNEL_SURFACE_SYSCALLS: system calls user code has no need for and that widen the kernel surface
 * other people's code can reach (each a source of privilege escalations or of reading other
 * processes), denied with EPERM by the process filter. Python's standard library calls none of
 * them; native code a function brings (an extension module it wrote to scratch) could. Why each:
 * - ptrace, process_vm_readv/writev, kcmp, pidfd_getfd: reading or writing another process (the
 *   executor's own siblings of the same user, whose calls are other tasks');
 * - userfaultfd: the classic way to widen a kernel race's window; perf_event_open: a long list of
 *   kernel bugs and side channels; bpf: loading programs into the kernel;
 * - keyctl, add_key, request_key: the kernel keyring (shared by a user's processes);
 * - mount, umount2, pivot_root, open_tree, move_mount, fsopen, fsconfig, fsmount, fspick,
 *   mount_setattr, unshare, setns: new namespaces and mounts (the sandbox's own are set up before
 *   this filter, by bwrap); open_by_handle_at, name_to_handle_at: opening files by handle, around
 *   the mount namespace;
 * - kexec_load, kexec_file_load, init_module, finit_module, delete_module, reboot, swapon,
 *   swapoff, acct, quotactl, syslog, settimeofday, clock_settime, clock_adjtime, adjtimex,
 *   lookup_dcookie, vhangup, fanotify_init, personality, and x86_64's iopl and ioperm: the
 *   administrator's, and a few with a record of kernel bugs.
 */
export const KERNEL_SURFACE_SYSCALLS: Record<SeccompArch, Readonly<Record<string, number>>> = {
  x86_64: {
    ptrace: 101, process_vm_readv: 310, process_vm_writev: 311, kcmp: 312, pidfd_getfd: 438,
    userfaultfd: 323, perf_event_open: 298, bpf: 321,
    keyctl: 250, add_key: 248, request_key: 249,
    mount: 165, umount2: 166, pivot_root: 155, open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, mount_setattr: 442, unshare: 272, setns: 308,
    open_by_handle_at: 304, name_to_handle_at: 303,
    kexec_load: 246, kexec_file_load: 320, init_module: 175, finit_module: 313, delete_module: 176, reboot: 169, swapon: 167, swapoff: 168, acct: 163, quotactl: 179, syslog: 103,
    settimeofday: 164, clock_settime: 227, clock_adjtime: 305, adjtimex: 159, lookup_dcookie: 212, vhangup: 153, fanotify_init: 300, personality: 135, iopl: 172, ioperm: 173,
  },
  aarch64: {
    ptrace: 117, process_vm_readv: 270, process_vm_writev: 271, kcmp: 272, pidfd_getfd: 438,
    userfaultfd: 282, perf_event_open: 241, bpf: 280,
    keyctl: 219, add_key: 217, request_key: 218,
    mount: 40, umount2: 39, pivot_root: 41, open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, mount_setattr: 442, unshare: 97, setns: 268,
    open_by_handle_at: 265, name_to_handle_at: 264,
    kexec_load: 104, kexec_file_load: 294, init_module: 105, finit_module: 273, delete_module: 106, reboot: 142, swapon: 224, swapoff: 225, acct: 89, quotactl: 60, syslog: 116,
    settimeofday: 170, clock_settime: 112, clock_adjtime: 266, adjtimex: 171, lookup_dcookie: 18, vhangup: 58, fanotify_init: 262, personality: 92,
  },
};

/** clone(2) flag of a new thread (sharing the caller's thread group): the only clone allowed. */
export const CLONE_THREAD = 0x00010000;
const ENOSYS = 38;
export const SECCOMP_RET_ERRNO_ENOSYS = 0x00050000 | ENOSYS;
const JSET_K = 0x45;

/**
 * processFilterProgram is the second filter, the one the executor installs on itself once it
 * runs (bwrap's filter applies before bwrap executes the interpreter, so it cannot forbid exec):
 * - execve, execveat, fork and vfork fail with EPERM;
 * - the system calls of KERNEL_SURFACE_SYSCALLS fail with EPERM;
 * - clone succeeds only for a new thread (CLONE_THREAD in its flags), else EPERM;
 * - clone3 fails with ENOSYS, so the C library falls back to clone, whose flags a filter can read
 *   (clone3 passes them in memory);
 * - another ABI kills the process.
 * Processes are then refused by the kernel, whatever Python module (a re-imported
 * `_posixsubprocess`, ctypes) asks.
 */
export function processFilterProgram(arch: SeccompArch): BpfInstruction[] {
  const nr = PROCESS_SYSCALLS[arch];
  const body: { code: number; k: number; jumpTrueTo?: ProcessTarget; jumpFalseTo?: ProcessTarget }[] = [];
  body.push(...archPrologue<ProcessTarget>(arch));
  body.push({ code: JEQ_K, k: nr.clone, jumpTrueTo: "clone" });
  body.push({ code: JEQ_K, k: nr.clone3, jumpTrueTo: "enosys" });
  for (const n of nr.denied) body.push({ code: JEQ_K, k: n, jumpTrueTo: "deny" });
  for (const n of Object.values(KERNEL_SURFACE_SYSCALLS[arch])) body.push({ code: JEQ_K, k: n, jumpTrueTo: "deny" });
  body.push({ code: RET_K, k: SECCOMP_RET_ALLOW });
  const cloneAt = body.length;
  body.push({ code: LD_W_ABS, k: OFFSET_ARG0_LOW });
  body.push({ code: JSET_K, k: CLONE_THREAD, jumpFalseTo: "deny" });
  body.push({ code: RET_K, k: SECCOMP_RET_ALLOW });
  const denyAt = body.length;
  body.push({ code: RET_K, k: SECCOMP_RET_ERRNO_EPERM });
  const enosysAt = body.length;
  body.push({ code: RET_K, k: SECCOMP_RET_ERRNO_ENOSYS });
  const killAt = body.length;
  body.push({ code: RET_K, k: SECCOMP_RET_KILL_PROCESS });
  return resolveJumps(body, { kill: killAt, clone: cloneAt, deny: denyAt, enosys: enosysAt });
}

/** archPrologue: kill a system call of another ABI, then load the system call number. */
function archPrologue<T extends string>(arch: SeccompArch): { code: number; k: number; jumpTrueTo?: T | "kill"; jumpFalseTo?: T | "kill" }[] {
  return [
    { code: LD_W_ABS, k: OFFSET_ARCH },
    { code: JEQ_K, k: AUDIT_ARCH[arch], jumpFalseTo: "kill" },
    { code: LD_W_ABS, k: OFFSET_NR },
    ...(arch === "x86_64" ? [{ code: JGE_K, k: X32_SYSCALL_BIT, jumpTrueTo: "kill" as const }] : []),
  ];
}

type ProcessTarget = "kill" | "clone" | "deny" | "enosys";

function resolveJumps<T extends string>(body: readonly { code: number; k: number; jumpTrueTo?: T; jumpFalseTo?: T }[], at: Record<T, number>): BpfInstruction[] {
  return body.map((ins, i) => {
    const offset = (to: T | undefined): number => {
      if (to === undefined) return 0;
      const o = at[to] - (i + 1);
      if (o < 0 || o > 255) throw new Error(`seccomp filter: jump from ${i} to ${to} out of range`);
      return o;
    };
    return { code: ins.code, jt: offset(ins.jumpTrueTo), jf: offset(ins.jumpFalseTo), k: ins.k };
  });
}

/** socketFilterBytes encodes the socket program as `bwrap --seccomp` reads it. */
export function socketFilterBytes(arch: SeccompArch): Uint8Array {
  return encodeProgram(socketFilterProgram(arch));
}

/** processFilterBytes encodes the process program, which the executor passes to prctl(PR_SET_SECCOMP). */
export function processFilterBytes(arch: SeccompArch): Uint8Array {
  return encodeProgram(processFilterProgram(arch));
}

function encodeProgram(program: readonly BpfInstruction[]): Uint8Array {
  const out = new Uint8Array(program.length * 8);
  const view = new DataView(out.buffer);
  program.forEach((ins, i) => {
    view.setUint16(i * 8, ins.code, true);
    view.setUint8(i * 8 + 2, ins.jt);
    view.setUint8(i * 8 + 3, ins.jf);
    view.setUint32(i * 8 + 4, ins.k, true);
  });
  return out;
}

/** hostSeccompArch: the architecture of this process (and of the executors it starts), or null when we ship none for it. */
export function hostSeccompArch(nodeArch: string = process.arch): SeccompArch | null {
  if (nodeArch === "x64") return "x86_64";
  if (nodeArch === "arm64") return "aarch64";
  return null;
}
