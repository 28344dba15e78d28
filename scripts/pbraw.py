#!/usr/bin/env python3
"""Developer tool: dump the raw protobuf structure of a Lance 2.x file's column metadata.

Usage: pbraw.py FILE.lance
Prints, per column and page, the encoding's type URL and its fields as a tree of
field numbers (no schema needed), so that unknown fields written by newer pylance
versions can be identified. Pure Python, no dependencies.
"""
import struct
import sys


def varint(b, i):
    shift = v = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v = b[i:i + 8]; i += 8
        elif wt == 5:
            v = b[i:i + 4]; i += 4
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]; i += n
        else:
            raise ValueError(f"wire type {wt}")
        out.append((num, wt, v))
    return out


def show(b, depth=0, maxdepth=12):
    pad = "  " * depth
    try:
        fs = fields(b)
    except Exception:
        print(f"{pad}<bytes {bytes(b[:32]).hex()} len={len(b)}>")
        return
    for num, wt, v in fs:
        if wt == 2:
            ok = True
            try:
                sub = fields(v)
                ok = len(v) > 0 and all(n > 0 for n, _, _ in sub)
            except Exception:
                ok = False
            if ok and depth < maxdepth:
                print(f"{pad}{num}: {{")
                show(v, depth + 1)
                print(f"{pad}}}")
            else:
                try:
                    s = bytes(v).decode()
                    if s.isprintable():
                        print(f"{pad}{num}: {s!r}")
                        continue
                except Exception:
                    pass
                print(f"{pad}{num}: bytes[{len(v)}] {bytes(v[:24]).hex()}")
        else:
            print(f"{pad}{num}: {v if wt == 0 else bytes(v).hex()}")


def main(path):
    data = open(path, "rb").read()
    cm_start, cmo, gbo, ngb, ncol, major, minor = struct.unpack("<QQQIIHH", data[-40:-4])
    print(f"version {major}.{minor} columns={ncol} global_buffers={ngb}")
    for c in range(ncol):
        pos, size = struct.unpack("<QQ", data[cmo + 16 * c: cmo + 16 * c + 16])
        print(f"== column {c} at {pos} size {size}")
        show(data[pos:pos + size])


if __name__ == "__main__":
    main(sys.argv[1])
