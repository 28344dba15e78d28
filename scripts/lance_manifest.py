"""Decoding of a Lance dataset's manifest index section without a protobuf dependency,
shared by the golden generators (scripts/gen_golden_indexes.py,
scripts/gen_golden_scalar_indexes.py). Field numbers as in protos/table.proto upstream
(IndexMetadata) and as observed in pylance output (docs/*-index-format.md).
"""
import os
import struct
import uuid as uuid_mod

from pbraw import fields as _fields, varint as _varint





def packed(b):
    """A packed repeated varint field."""
    i, out = 0, []
    while i < len(b):
        v, i = _varint(b, i)
        out.append(v)
    return out


def roaring32(b, pos=0):
    """Portable 32-bit roaring bitmap at b[pos:] -> (sorted values, bytes consumed).
    Handles array, bitset and run containers (cookies 12346 and 12347)."""
    start = pos
    cookie, = struct.unpack_from("<I", b, pos)
    if cookie & 0xFFFF == 12347:
        n = (cookie >> 16) + 1
        runs = b[pos + 4:pos + 4 + (n + 7) // 8]
        pos += 4 + (n + 7) // 8
        hdr = [struct.unpack_from("<HH", b, pos + 4 * k) for k in range(n)]
        pos += 4 * n
        if n >= 4:
            pos += 4 * n  # offsets
    elif cookie == 12346:
        n, = struct.unpack_from("<I", b, pos + 4)
        runs = None
        hdr = [struct.unpack_from("<HH", b, pos + 8 + 4 * k) for k in range(n)]
        pos += 8 + 8 * n
    else:
        raise ValueError(f"bad roaring cookie {cookie:#x}")
    vals = []
    for k, (key, card) in enumerate(hdr):
        card += 1
        if runs is not None and runs[k // 8] >> (k % 8) & 1:
            nr, = struct.unpack_from("<H", b, pos)
            pos += 2
            for _ in range(nr):
                s, ln = struct.unpack_from("<HH", b, pos)
                pos += 4
                vals.extend((key << 16) | x for x in range(s, s + ln + 1))
        elif card <= 4096:
            vals.extend((key << 16) | x for x in struct.unpack_from(f"<{card}H", b, pos))
            pos += 2 * card
        else:
            words = struct.unpack_from("<1024Q", b, pos)
            pos += 8192
            vals.extend((key << 16) | (w * 64 + t) for w, x in enumerate(words) if x for t in range(64) if x >> t & 1)
    return vals, pos - start


def fragment_bitmap(b):
    vals, _ = roaring32(b, 0)
    return vals


def index_metadata(b, details=None):
    """One IndexMetadata message as a dict; `details(type_url, bytes)` decodes its
    index_details (default: the raw bytes only)."""
    d = {"field_numbers": sorted({n for n, _, _ in _fields(b)})}
    for num, wt, v in _fields(b):
        if num == 1:
            d["uuid"] = str(uuid_mod.UUID(bytes=dict((n, x) for n, _, x in _fields(v))[1]))
        elif num == 2:
            d.setdefault("fields", []).extend(packed(v) if wt == 2 else [v])
        elif num == 3:
            d["name"] = v.decode()
        elif num == 4:
            d["dataset_version"] = v
        elif num == 5:
            d["fragment_bitmap_hex"] = v.hex()
            d["fragment_ids"] = fragment_bitmap(v)
        elif num == 6:
            a = {n: x for n, _, x in _fields(v)}
            d["index_details_type_url"] = a.get(1, b"").decode()
            d["index_details_hex"] = a.get(2, b"").hex()
            if details is not None:
                d["index_details"] = details(d["index_details_type_url"], a.get(2, b""))
        elif num == 7:
            d["index_version"] = v
        elif num == 8:
            d["created_at_ms"] = v
        elif num == 9:
            d["base_id"] = v
        elif num == 10:
            f = {n: x for n, _, x in _fields(v)}
            d.setdefault("files", []).append({"path": f.get(1, b"").decode(), "size": f.get(2)})
        else:
            d.setdefault("unknown_fields", []).append([num, wt, v if wt == 0 else v.hex()])
    return d


def manifest_indices(path, details=None):
    """Decode the IndexSection of the latest manifest (no protobuf dependency)."""
    best = None
    vdir = os.path.join(path, "_versions")
    for name in os.listdir(vdir):
        if not name.endswith(".manifest"):
            continue
        b = open(os.path.join(vdir, name), "rb").read()
        pos, = struct.unpack("<Q", b[-16:-8])
        n, = struct.unpack("<I", b[pos:pos + 4])
        man = _fields(b[pos + 4:pos + 4 + n])
        ver = next((v for num, _, v in man if num == 3), None)
        if best is None or ver > best[0]:
            best = (ver, b, man)
    ver, b, man = best
    for num, _, v in man:
        if num == 6:
            ln, = struct.unpack("<I", b[v:v + 4])
            sec = b[v + 4:v + 4 + ln]
            return ver, [index_metadata(x, details) for n2, _, x in _fields(sec) if n2 == 1]
    return ver, []
