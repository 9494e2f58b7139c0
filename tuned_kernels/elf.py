"""What a CUDA cubin or AMD hsaco (64-bit little-endian ELF) holds, read from untrusted bytes: its sections
by name and the symbols it defines. Every offset and size is checked against the file before it is
followed; a file that is not such an ELF, or is inconsistent, raises ValueError. Pure: bytes in, names out."""

from __future__ import annotations

import struct
from dataclasses import dataclass

_SECTION_TABLE = struct.Struct(
    "<40xQ10xHHH"
)  # from the file header: e_shoff, e_shentsize, e_shnum, e_shstrndx
_SECTION = struct.Struct("<IIQQQQIIQQ")  # name, type, flags, addr, offset, size, link, info, align, entsize
_SYMBOL = struct.Struct("<IBBHQQ")  # name, info, other, shndx, value, size
_SYMTAB = 2
_NOBITS = 8  # a section with no bytes in the file (.bss, .nv.shared)
MAX_SECTIONS = 4096
MAX_SYMBOLS = 1 << 20


@dataclass(frozen=True)
class Elf:
    sections: dict[str, bytes]  # by name, the bytes of those stored in the file
    symbols: frozenset[str]  # the names of the symbols defined (those of .symtab with a section)


def read_elf(data: bytes) -> Elf:
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, shentsize, shnum, shstrndx = _SECTION_TABLE.unpack_from(data, 0)
    if shentsize != _SECTION.size or not 0 < shnum <= MAX_SECTIONS or shoff + shnum * shentsize > len(data):
        raise ValueError("its section table is out of bounds")
    if shstrndx >= shnum:
        raise ValueError("its section names are out of bounds")
    headers = [_SECTION.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    contents = [b"" if h[1] == _NOBITS else _contents(data, h[4], h[5]) for h in headers]
    names = contents[shstrndx]
    sections = {_string(names, h[0]): c for h, c in zip(headers, contents, strict=True)}
    symbols: set[str] = set()
    for (_name, kind, _flags, _addr, _offset, size, link, _info, _align, entsize), table in zip(
        headers, contents, strict=True
    ):
        if kind != _SYMTAB:
            continue
        if entsize != _SYMBOL.size or size % entsize or size // entsize > MAX_SYMBOLS or link >= shnum:
            raise ValueError("its symbol table is malformed")
        for i in range(0, size, entsize):
            name_at, _info, _other, shndx, _value, _size = _SYMBOL.unpack_from(table, i)
            if shndx != 0:
                symbols.add(_string(contents[link], name_at))
    return Elf(sections, frozenset(symbols))


def _contents(data: bytes, offset: int, size: int) -> bytes:
    if offset + size > len(data):
        raise ValueError("a section lies past the end of the file")
    return data[offset : offset + size]


def _string(table: bytes, at: int) -> str:
    end = table.find(b"\0", at)
    return table[at : end if end >= 0 else len(table)].decode("utf-8", "replace") if at < len(table) else ""
