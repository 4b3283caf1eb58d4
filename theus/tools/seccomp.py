"""The seccomp filter the shell's sandbox loads (bubblewrap's `--seccomp FD`).

Capabilities are already dropped inside the sandbox; the filter is the second wall, as in
Flatpak and Docker: the system calls that reach past a namespace (mount, setns, ptrace, keys,
kernel modules, BPF, new namespaces) fail with EPERM whoever calls them. A 32-bit or x32 call
on a 64-bit kernel, which would dodge the numbers below, fails too. `clone3` answers ENOSYS so
the C library falls back to `clone`, whose flags the filter can read.
"""

from __future__ import annotations

import errno
import platform
import struct

# Per architecture: the AUDIT_ARCH value, then the numbers of the calls refused outright,
# `clone`, `clone3`, and the first number of a foreign ABI (x32) or None.
_BLOCKED = (
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "setns",
    "unshare",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "acct",
    "quotactl",
    "syslog",
    "name_to_handle_at",
    "open_by_handle_at",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "fanotify_init",
    "clone",
    "clone3",
)
_NUMBERS = {  # from the kernel's unistd headers (asm/unistd_64.h, asm-generic/unistd.h)
    "x86_64": (
        0xC000003E,
        0x40000000,
        (
            165,
            166,
            155,
            161,
            308,
            272,
            101,
            310,
            311,
            438,
            250,
            248,
            249,
            321,
            298,
            323,
            425,
            246,
            320,
            175,
            313,
            176,
            169,
            167,
            168,
            428,
            429,
            430,
            431,
            432,
            433,
            442,
            163,
            179,
            103,
            303,
            304,
            164,
            227,
            159,
            170,
            171,
            300,
            56,
            435,
        ),
    ),
    "aarch64": (
        0xC00000B7,
        None,
        (
            40,
            39,
            41,
            51,
            268,
            97,
            117,
            270,
            271,
            438,
            219,
            217,
            218,
            280,
            241,
            282,
            425,
            104,
            294,
            105,
            273,
            106,
            142,
            224,
            225,
            428,
            429,
            430,
            431,
            432,
            433,
            442,
            89,
            60,
            116,
            264,
            265,
            170,
            112,
            171,
            161,
            162,
            262,
            220,
            435,
        ),
    ),
}
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_NEW_NAMESPACES = (
    0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
)

_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16  # struct seccomp_data, little-endian


def supported() -> bool:
    return platform.machine() in _NUMBERS


def program() -> bytes:
    """The filter as bubblewrap reads it: an array of `struct sock_filter`."""
    arch, foreign_abi, numbers = _NUMBERS[platform.machine()]
    calls = dict(zip(_BLOCKED, numbers, strict=True))
    refused = [n for name, n in calls.items() if name not in ("clone", "clone3")]
    eperm, enosys, check_clone = "eperm", "enosys", "clone_flags"
    # (code, jump-if-true label or None, jump-if-false label or None, k); labels resolve below.
    ops: list[tuple[int, str | None, str | None, int] | str] = [
        (_LD_ABS, None, None, _OFFSET_ARCH),
        (_JEQ, None, eperm, arch),
        (_LD_ABS, None, None, _OFFSET_NR),
    ]
    if foreign_abi is not None:
        ops.append((_JGE, eperm, None, foreign_abi))
    ops += [(_JEQ, eperm, None, n) for n in refused]
    ops += [
        (_JEQ, enosys, None, calls["clone3"]),
        (_JEQ, check_clone, None, calls["clone"]),
        (_RET, None, None, _ALLOW),
        check_clone,
        (_LD_ABS, None, None, _OFFSET_ARG0),
        (_JSET, eperm, None, _NEW_NAMESPACES),
        (_RET, None, None, _ALLOW),
        eperm,
        (_RET, None, None, _ERRNO | errno.EPERM),
        enosys,
        (_RET, None, None, _ERRNO | errno.ENOSYS),
    ]
    labels: dict[str, int] = {}
    position = 0
    for op in ops:
        if isinstance(op, str):
            labels[op] = position
        else:
            position += 1
    code = b""
    index = 0
    for op in ops:
        if isinstance(op, str):
            continue
        opcode, if_true, if_false, k = op
        jt = labels[if_true] - index - 1 if if_true else 0  # BPF jumps only forward
        jf = labels[if_false] - index - 1 if if_false else 0
        code += struct.pack("=HBBI", opcode, jt, jf, k)
        index += 1
    return code
