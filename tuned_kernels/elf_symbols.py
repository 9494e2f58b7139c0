"""The symbol names an ELF file defines (a CUDA cubin, an AMD hsaco: both 64-bit little-endian ELF), read
from untrusted bytes: every offset and size is checked against the file before it is followed, and a file
that is not such an ELF, or is inconsistent, raises ValueError. Pure: bytes in, names out."""

from __future__ import annotations

import struct

_SECTION_TABLE = struct.Struct("<40xQ10xHH")  # from the file header: e_shoff, e_shentsize, e_shnum
_SECTION = struct.Struct("<IIQQQQIIQQ")  # name, type, flags, addr, offset, size, link, info, align, entsize
_SYMBOL = struct.Struct("<IBBHQQ")  # name, info, other, shndx, value, size
_SYMTAB = 2
MAX_SECTIONS = 4096
MAX_SYMBOLS = 1 << 20


def defined_symbols(data: bytes) -> frozenset[str]:
    """The names of the symbols defined in the ELF `data` (its .symtab's, those with a section)."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, shentsize, shnum = _SECTION_TABLE.unpack_from(data, 0)
    if shentsize != _SECTION.size or not 0 < shnum <= MAX_SECTIONS or shoff + shnum * shentsize > len(data):
        raise ValueError("its section table is out of bounds")
    sections = [_SECTION.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    names: set[str] = set()
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != _SYMTAB:
            continue
        if entsize != _SYMBOL.size or size % entsize or size // entsize > MAX_SYMBOLS or link >= shnum:
            raise ValueError("its symbol table is malformed")
        strings = _contents(data, sections[link][4], sections[link][5])
        table = _contents(data, offset, size)
        for i in range(0, size, entsize):
            name_at, _info, _other, shndx, _value, _size = _SYMBOL.unpack_from(table, i)
            if shndx != 0 and name_at < len(strings):
                end = strings.find(b"\0", name_at)
                names.add(strings[name_at : end if end >= 0 else len(strings)].decode("utf-8", "replace"))
    return frozenset(names)


def _contents(data: bytes, offset: int, size: int) -> bytes:
    if offset + size > len(data):
        raise ValueError("a section lies past the end of the file")
    return data[offset : offset + size]
