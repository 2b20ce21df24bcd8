#!/usr/bin/env python3
"""Whether two cubins hold byte-identical machine code for the kernels named.

    scripts/cubin-text-compare.py OLD.cubin NEW.cubin OLD_SUBSTRING NEW_SUBSTRING

Each substring picks one kernel's .text section by its mangled name in its cubin (exactly one
must match). Prints both sizes and "identical" or "differs"; exit 0 when identical, 1 when not,
2 on bad input. Used to show that a change left a kernel's code as it was (a new template
parameter whose old value must compile to the old kernel), where timing would need a GPU.
"""
import struct
import sys


def text_sections(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError(f"{path}: not a 64-bit ELF cubin")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)

    names = header(shstrndx)[4]
    sections = {}
    for i in range(shnum):
        h = header(i)
        name = data[names + h[0]:data.index(b"\0", names + h[0])].decode()
        if name.startswith(".text."):
            sections[name[len(".text."):]] = data[h[4]:h[4] + h[5]]
    return sections


def pick(sections, substring, path):
    found = [name for name in sections if substring in name]
    if len(found) != 1:
        raise ValueError(f"{path}: {len(found)} kernels match '{substring}': {found[:4]}")
    return sections[found[0]]


def main(argv):
    if len(argv) != 5:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        old = pick(text_sections(argv[1]), argv[3], argv[1])
        new = pick(text_sections(argv[2]), argv[4], argv[2])
    except (OSError, ValueError) as e:
        print(f"cubin-text-compare: {e}", file=sys.stderr)
        return 2
    same = old == new
    print(f"{len(old)} bytes, {len(new)} bytes: {'identical' if same else 'differs'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
