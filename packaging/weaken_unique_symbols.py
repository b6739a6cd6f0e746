#!/usr/bin/env python3
"""Turns an ELF64 object's STB_GNU_UNIQUE symbols into weak ones, in place.

A GNU unique symbol (a static inside an inline function or template of gRPC, Protobuf, Abseil)
is merged at run time with every same-named one in the process, which would tie the library's
private copies to a program's own gRPC or Protobuf. objcopy cannot localize unique symbols, but
it can localize weak ones, so this runs before it. Both bindings sort after the local symbols,
so the symbol table's order stays valid.
"""
import struct
import sys

STB_WEAK = 2
STB_GNU_UNIQUE = 10
SHT_SYMTAB = 2


def weaken(path):
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            sys.exit(f"{path}: not a little-endian ELF64 object")
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        changed = 0
        for i in range(shnum):
            header = shoff + i * shentsize
            sh_type, = struct.unpack_from("<I", data, header + 4)
            if sh_type != SHT_SYMTAB:
                continue
            offset, size, _, _, _, entsize = struct.unpack_from("<QQIIQQ", data, header + 0x18)
            for entry in range(offset, offset + size, entsize):
                info = data[entry + 4]
                if info >> 4 == STB_GNU_UNIQUE:
                    data[entry + 4] = (STB_WEAK << 4) | (info & 0xF)
                    changed += 1
        f.seek(0)
        f.write(data)
    print(f"{path}: {changed} unique symbols made weak")


if __name__ == "__main__":
    weaken(sys.argv[1])
