#!/usr/bin/env python3
"""Writes golden full-text-search (INVERTED) index datasets and pylance's answers for them.

    .venv/pylance-14/bin/python scripts/gen_golden_fts.py DIR [CASE ...]

writes into DIR/pylance-<major version>. Run it once per pylance venv (11, 12, 14).
Format notes: docs/fts-index-format.md. For every case it builds a small dataset with one
(or two) INVERTED indexes and records what pylance writes and answers:

  <out>/<case>/          the dataset: 480 rows (ids 0..479) in 3 fragments of 160, columns
                         id int64, text utf8 (multilingual, nulls, empty and blank strings,
                         a few long documents), title utf8; `id % 10 = 3` deleted before
                         the index is built; then 40 rows appended (ids 480..519, left
                         unindexed); then `id % 17 = 5` deleted (indexed and appended rows).
                         The "optimize" cases first append 30 rows (ids 480..509) and fold
                         them in with optimize_indices, then append 40 more (510..549).
  <out>/<case>.json      the case description, the decoded manifest index entries, a summary
                         of every file under _indices/<uuid>/ (schema, metadata, global
                         buffers), the fully decoded index (token dictionary from the fst,
                         document table, posting lists with doc ids / frequencies / block
                         max scores / impacts / positions), self-checks of the decoding
                         (frequency sums = _num_tokens, block scores recomputed, lance.tokenize
                         agreeing with the document lengths, ...), pylance's token streams for
                         sample texts (lance.tokenize) and, per query: the spec, the scan
                         options, pylance's `id` list and `_score` list in result order, and
                         the score of the same rows under the BM25 model of the doc
                         (`model_*` fields; only for query kinds the model covers)
  <out>/index.json       pylance version, cases, status per case (ok / failed + error),
                         query counts, model agreement summary, and tokenizer probes (which
                         English stop-word candidates are removed, English stems, token
                         streams of tricky samples)

The index files are deterministic (built with num_workers=1; uuids and timestamps aside); the
input data is the same for every pylance version (11 writes Lance file 2.1, 12/14 write 2.2),
so answers can be compared across versions. NOT deterministic in pylance: the order of rows
with equal scores for plain string/match/phrase queries, and which tied rows survive a limit
(`tied_at_cut` marks the latter); compare score sequences and the rows above the last score.
Segments with more than MAX_FULL_POSTINGS tokens keep per-token summaries only in the json.
A failure in one case is recorded and the run continues. Runtime: 6-8 s per version on
2 cores, 12-15 MB of output per version.
"""
import json
import math
import os
import random
import shutil
import struct
import sys
import time
import traceback

import numpy as np
import pyarrow as pa
import lance
from lance.file import LanceFileReader

try:
    from lance.query import BooleanQuery, BoostQuery, FullTextOperator, MatchQuery, MultiMatchQuery, Occur, PhraseQuery
except ImportError:  # pragma: no cover - every pinned version has them
    MatchQuery = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pbraw import fields as _fields  # noqa: E402
from lance_manifest import manifest_indices as _manifest_indices, roaring32  # noqa: E402

N_ROWS = 480
ROWS_PER_FILE = 160
N_DELTA = 30
N_APPEND = 40
MAX_FULL_POSTINGS = 8000  # larger segments keep only per-token summaries in the json
MAJOR = int(lance.__version__.split(".")[0])

# ---------------------------------------------------------------- corpus

EN = ("the quick brown fox jumps over lazy dog and a cat running runs ran runner connection connected "
      "connecting connections search engine index query database lance format vector text full ranking "
      "score document token stem stemming stop words is of to in it this that with for on are be was "
      "apple banana cherry river mountain valley ocean forest city street house garden book library "
      "music story history science nature light dark fast slow happy happily happiness running").split()
ACC = ["café", "naïve", "Straße", "STRASSE", "Ærø", "résumé", "façade", "über", "Zürich", "crème",
       "brûlée", "Ångström", "jalapeño", "Øresund", "ﬁnance", "São", "Paulo", "İstanbul", "Dvořák"]
CJK = ["日本語のテキスト", "東京タワー", "中文分词测试", "北京 上海", "한국어 문장", "漢字", "ひらがな", "カタカナ"]
PUN = ["don't", "e-mail", "C++", "foo_bar", "U.S.A.", "3.14", "1,000", "42", "2024-01-15", "#hashtag",
       "@user", "x/y", "a.b.c", "AT&T", "co-operate", "(parenthesis)", "wow!!!", "Hello", "HELLO", "hello",
       "supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis"]


def make_text(rng, k):
    if k % 29 == 0:
        return None
    if k % 31 == 0:
        return ""
    if k % 37 == 0:
        return "   "
    n = rng.choice([1, 2, 3, 5, 8, 12, 20])
    if k % 53 == 7:
        n = 150 + k % 60  # long documents (more than 128 positions)
    words = []
    for _ in range(n):
        r = rng.random()
        if r < 0.70:
            words.append(rng.choice(EN))
        elif r < 0.82:
            words.append(rng.choice(ACC))
        elif r < 0.90:
            words.append(rng.choice(CJK))
        else:
            words.append(rng.choice(PUN))
    if k % 3 == 0:
        words.insert(rng.randrange(len(words) + 1), "fox")
    if k % 5 == 0:
        words.append("fox")
    s = " ".join(words)
    if k % 7 == 0:
        s = s.capitalize() + "."
    if k % 11 == 0:
        s = s.replace(" ", ", ", 2)
    return s


def make_title(rng, k):
    if k % 23 == 0:
        return None
    return " ".join(rng.choice(EN[:40]) for _ in range(rng.choice([1, 2, 3, 4])))


def table(start, n):
    ids, texts, titles = [], [], []
    for k in range(start, start + n):
        rng = random.Random(1234 * 100003 + k)
        ids.append(k)
        texts.append(make_text(rng, k))
        titles.append(make_title(rng, k))
    return pa.table({"id": pa.array(ids, pa.int64()), "text": pa.array(texts, pa.string()),
                     "title": pa.array(titles, pa.string())})


# ---------------------------------------------------------------- decoding helpers

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        if c < 0x80:
            return v, i
        s += 7


def unpack_lanes(b, num_bits, lanes):
    """bitpacking-crate BitPacker4x (lanes=4, 128 values) / BitPacker8x (lanes=8, 256 values)
    layout: value k lives in lane k % lanes at slot k // lanes; each lane is a little-endian
    bit stream of 32 values of num_bits bits, cut into u32 words; word w of lane j is the u32
    at index w * lanes + j. Payload = num_bits * 4 * lanes bytes. -> (values, bytes used)"""
    n = 32 * lanes
    if num_bits == 0:
        return [0] * n, 0
    words = struct.unpack_from(f"<{num_bits * lanes}I", b, 0)
    out = [0] * n
    mask = (1 << num_bits) - 1
    for j in range(lanes):
        stream = 0
        for w in range(num_bits):
            stream |= words[w * lanes + j] << (32 * w)
        for s in range(32):
            out[s * lanes + j] = (stream >> (s * num_bits)) & mask
    return out, num_bits * 4 * lanes


def decode_posting(blocks, length, block_size, tail_codec):
    """One `_posting` list -> (doc ids, frequencies, per-block max score or None)."""
    lanes = block_size // 32
    docs, freqs, scores = [], [], []
    nfull = length // block_size
    for bi, blk in enumerate(blocks):
        pos = 0
        if block_size == 128:
            scores.append(struct.unpack_from("<f", blk, 0)[0])
            pos = 4
        else:
            scores.append(None)
        if bi < nfull:
            first, nb = struct.unpack_from("<IB", blk, pos)
            pos += 5
            d, used = unpack_lanes(blk[pos:], nb, lanes)
            pos += used
            acc = first
            for k, x in enumerate(d):
                acc = first + x if k == 0 else acc + x
                docs.append(acc)
            if block_size == 128:
                nb = blk[pos]
                pos += 1
                f, used = unpack_lanes(blk[pos:], nb, lanes)
                pos += used
            else:  # patched frame-of-reference
                width, nexc = blk[pos], blk[pos + 1]
                pos += 2
                f, used = unpack_lanes(blk[pos:], width, lanes)
                pos += used
                for _ in range(nexc):
                    idx = blk[pos]
                    hi, pos = varint(blk, pos + 1)
                    f[idx] |= hi << width
            freqs += f
        else:
            n = length - nfull * block_size
            if tail_codec == "fixed32_v1":
                docs += list(struct.unpack_from(f"<{n}I", blk, pos))
                freqs += list(struct.unpack_from(f"<{n}I", blk, pos + 4 * n))
                pos += 8 * n
            else:
                prev = 0
                for k in range(n):
                    dlt, pos = varint(blk, pos)
                    prev = dlt if k == 0 else prev + dlt
                    docs.append(prev)
                for k in range(n):
                    f, pos = varint(blk, pos)
                    freqs.append(f)
        if pos != len(blk):
            raise ValueError(f"posting block {bi}: {len(blk) - pos} trailing bytes")
    if len(docs) != length:
        raise ValueError("posting length mismatch")
    return docs, freqs, scores


FST_COMMON_INPUTS = (b"te/oasripcnw.hlm-du012g=:bf3y5&_4v9678k%?xCDASFIBEjPTzRNM+LOqHGWUV,YKJZXQ;)(~[]$!'*@"
                     + bytes(range(0, 32)) + b' "#<>\\^`{|}' + bytes(range(0x7F, 256)))


def _uint(b, at, n):
    return int.from_bytes(b[at:at + n], "little") if n else 0


def fst_items(b):
    """An `fst` crate 0.4 Map -> (format version, [(key bytes, u64 value)] in key order)."""
    version, fst_type = struct.unpack_from("<QQ", b, 0)
    tail = 4 if version >= 3 else 0
    nkeys, root = struct.unpack_from("<QQ", b, len(b) - 16 - tail)
    out = []

    def node(addr):
        if addr == 0:
            return True, 0, []
        st = b[addr]
        kind = st >> 6
        if kind == 3:  # one transition to the node just below, no output
            ci = st & 0x3F
            ilen = 0 if ci else 1
            inp = FST_COMMON_INPUTS[ci - 1] if ci else b[addr - 1]
            return False, 0, [(inp, 0, addr - ilen - 1)]
        if kind == 2:  # one transition with packed delta address and output
            ci = st & 0x3F
            ilen = 0 if ci else 1
            inp = FST_COMMON_INPUTS[ci - 1] if ci else b[addr - 1]
            sz = b[addr - ilen - 1]
            tsize, osize = sz >> 4, sz & 15
            end = addr - ilen - 1 - tsize - osize
            delta = _uint(b, addr - ilen - 1 - tsize, tsize)
            o = _uint(b, end, osize)
            return False, 0, [(inp, o, 0 if delta == 0 else end - delta)]
        final = bool(st & 0x40)
        n, nlen = st & 0x3F, 0
        if n == 0:
            nlen, n = 1, b[addr - 1]
            if n == 1:
                n = 256
        sz = b[addr - nlen - 1]
        tsize, osize = sz >> 4, sz & 15
        isz = 256 if (version >= 2 and n > 32) else 0
        base = addr - nlen - 1 - isz
        total = n + n * tsize + isz
        end = addr - nlen - 1 - total - n * osize - (osize if final else 0)
        trans = []
        for i in range(n):
            inp = b[base - i - 1]
            delta = _uint(b, base - n - i * tsize - tsize, tsize)
            o = _uint(b, addr - nlen - 1 - total - i * osize - osize, osize) if osize else 0
            trans.append((inp, o, 0 if delta == 0 else end - delta))
        fout = _uint(b, end, osize) if (final and osize) else 0
        return final, fout, trans

    def walk(addr, prefix, acc):
        final, fout, trans = node(addr)
        if final:
            out.append((bytes(prefix), acc + fout))
        for inp, o, tgt in sorted(trans):
            walk(tgt, prefix + bytes([inp]), acc + o)

    if nkeys:
        sys.setrecursionlimit(10000)
        walk(root, b"", 0)
    if len(out) != nkeys:
        raise ValueError(f"fst: decoded {len(out)} keys, header says {nkeys}")
    return version, fst_type, out


def quantize_len(v):
    """Lucene SmallFloat-like 8-bit code for a document length (exact below 8)."""
    nb = v.bit_length()
    if nb < 4:
        return v
    sh = nb - 4
    return ((v >> sh) & 7) | ((sh + 1) << 3)


def dequantize_len(c):
    return c if c < 8 else ((c & 7) | 8) << ((c >> 3) - 1)


def impact_entry(b):
    """One `_impacts` entry -> (doc_up_to, [(freq, doc_len code)])."""
    up_to, pos = varint(b, 0)
    n, pos = varint(b, pos)
    pairs, f, norm = [], 0, 0
    for _ in range(n):
        p, pos = varint(b, pos)
        f += (p >> 1) + 1
        if p & 1:
            nd = b[pos]
            pos += 1
        else:
            nd = 1
        norm += nd
        pairs.append([f, norm])
    if pos != len(b):
        raise ValueError("impact entry trailing bytes")
    return up_to, pairs


def impact_frontier(entries):
    """(freq, doc_len) pairs of a block -> Pareto frontier (max freq per min length), quantized."""
    best = {}
    for f, dl in entries:
        best[f] = min(best.get(f, 1 << 40), dl)
    raw, cur = [], 1 << 40
    for f in sorted(best, reverse=True):
        if best[f] < cur:
            raw.append((f, best[f]))
            cur = best[f]
    raw.reverse()
    out = []
    for f, dl in raw:
        q = quantize_len(dl)
        if out and out[-1][1] == q:
            out[-1][0] = f
        else:
            out.append([f, q])
    return out


def decode_positions_stream(src, freqs):
    """packed_delta_v1 block: groups of 128 deltas as [num_bits u8][BitPacker4x payload], the
    remaining deltas as varints; deltas restart (absolute first value) at every document."""
    total = sum(freqs)
    pos, deltas = 0, []
    for _ in range(total // 128):
        nb = src[pos]
        v, used = unpack_lanes(src[pos + 1:], nb, 4)
        pos += 1 + used
        deltas += v
    for _ in range(total % 128):
        v, pos = varint(src, pos)
        deltas.append(v)
    if pos != len(src):
        raise ValueError("position block trailing bytes")
    out, k = [], 0
    for f in freqs:
        cur, ps = 0, []
        for i in range(f):
            cur = deltas[k] if i == 0 else cur + deltas[k]
            k += 1
            ps.append(cur)
        out.append(ps)
    return out


def decode_legacy_positions(blobs):
    """format v1 per-document positions: [u32 count], then 128-value blocks as
    [u32 first][num_bits u8][BitPacker4x sorted-delta payload], then the rest as raw u32."""
    n, = struct.unpack("<I", blobs[0])
    out = []
    for blk in blobs[1:1 + n // 128]:
        first, nb = struct.unpack_from("<IB", blk, 0)
        d, _ = unpack_lanes(blk[5:], nb, 4)
        acc = first
        for k, x in enumerate(d):
            acc = first + x if k == 0 else acc + x
            out.append(acc)
    if n % 128:
        out += list(struct.unpack_from(f"<{n % 128}I", blobs[1 + n // 128], 0))
    return out


# ---------------------------------------------------------------- BM25 (float32, as pylance)

F32 = np.float32
K1, B = F32(1.2), F32(0.75)


try:  # pylance calls glibc's logf (dynamic import of logf@GLIBC_2.27); use the same function
    import ctypes
    _libm = ctypes.CDLL("libm.so.6")
    _libm.logf.restype = ctypes.c_float
    _libm.logf.argtypes = [ctypes.c_float]
    LOGF = "glibc logf"

    def _logf(x):
        return F32(_libm.logf(float(x)))
except OSError:  # pragma: no cover - non-glibc host: correctly rounded ln, differs in rare halfway cases
    LOGF = "math.log rounded to f32"

    def _logf(x):
        return F32(math.log(float(x)))


def idf(nt, n):
    # numpy's float32 log is not glibc's logf (differs in the last bit for ~4% of arguments);
    # a correctly rounded ln differs from glibc's logf in rare near-halfway cases
    x = F32(F32(F32(F32(n) - F32(nt)) + F32(0.5)) / F32(F32(nt) + F32(0.5)) + F32(1.0))
    return _logf(x)


def doc_weight(freq, dl, avgdl):
    f = F32(freq)
    norm = F32(K1 * F32(F32(F32(1.0) - B) + F32(B * F32(dl)) / avgdl))
    return F32(F32(F32(K1 + F32(1.0)) * f) / F32(f + norm))


# ---------------------------------------------------------------- index files

def _meta(md):
    return {k.decode(): v.decode() for k, v in sorted((md.schema.metadata or {}).items())}


def file_summary(path):
    r = LanceFileReader(path)
    md = r.metadata()
    s = {
        "file_version": f"{md.major_version}.{md.minor_version}",
        "size": os.path.getsize(path),
        "num_rows": md.num_rows,
        "num_global_buffers": len(md.global_buffers),
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in md.schema],
        "schema_metadata": _meta(md),
    }
    return s, r.read_all().to_table()


def decode_partition(d, pid, meta):
    """The three files of partition `pid` -> decoded dict."""
    bs = int(meta.get("posting_block_size", "128"))
    tail = meta.get("posting_tail_codec", "fixed32_v1")
    pfx = f"part_{pid}_" if pid is not None else ""
    summaries = {}
    s, tok = file_summary(os.path.join(d, pfx + "tokens.lance"))
    summaries[pfx + "tokens.lance"] = s
    out = {"id": pid}
    if "_token_fst_bytes" in tok.column_names:
        fb = tok["_token_fst_bytes"][0].as_py()
        ver, typ, items = fst_items(fb)
        out["token_set"] = {"format": "fst", "fst_version": ver, "fst_type": typ, "fst_bytes": len(fb),
                            "next_id": tok["_token_next_id"][0].as_py(),
                            "total_length": tok["_token_total_length"][0].as_py()}
        by_id = {v: k.decode("utf-8") for k, v in items}
        out["tokens"] = [by_id[i] for i in range(len(by_id))]
        out["checks"] = {"token_ids_dense": sorted(by_id) == list(range(len(by_id))),
                         "total_length_is_sum_of_key_bytes": out["token_set"]["total_length"] == sum(len(k) for k, _ in items),
                         "next_id_is_count": out["token_set"]["next_id"] == len(items)}
    else:
        pairs = sorted(zip(tok["_token_id"].to_pylist(), tok["_token"].to_pylist()))
        out["token_set"] = {"format": "arrow"}
        out["tokens"] = [t for _, t in pairs]
        out["checks"] = {"token_ids_dense": [i for i, _ in pairs] == list(range(len(pairs)))}
    s, docs = file_summary(os.path.join(d, pfx + "docs.lance"))
    summaries[pfx + "docs.lance"] = s
    out["docs"] = {"row_ids": docs["_rowid"].to_pylist(), "num_tokens": docs["_num_tokens"].to_pylist()}
    if "total_tokens" in s["schema_metadata"]:
        out["checks"]["total_tokens_is_sum"] = int(s["schema_metadata"]["total_tokens"]) == sum(out["docs"]["num_tokens"])
    s, inv = file_summary(os.path.join(d, pfx + "invert.lance"))
    summaries[pfx + "invert.lance"] = s
    imeta = s["schema_metadata"]
    bs = int(imeta.get("posting_block_size", bs))
    tail = imeta.get("posting_tail_codec", "fixed32_v1")
    ntok = out["docs"]["num_tokens"]
    n_docs, total = len(ntok), sum(ntok)
    avgdl = F32(total) / F32(n_docs) if n_docs else F32(0)
    postings, sums = [], [0] * n_docs
    score_ok = max_ok = impacts_ok = pos_ok = True
    cols = inv.column_names
    P = inv["_posting"].to_pylist()
    L = inv["_length"].to_pylist()
    M = inv["_max_score"].to_pylist()
    I = inv["_impacts"].to_pylist() if "_impacts" in cols else None
    CP = inv["_compressed_position"].to_pylist() if "_compressed_position" in cols else None
    PO = inv["_position_block_offset"].to_pylist() if "_position_block_offset" in cols else None
    LP = inv["_position"].to_pylist() if "_position" in cols else None
    for tid in range(inv.num_rows):
        docs_, freqs, bscores = decode_posting(P[tid], L[tid], bs, tail)
        for a, f in zip(docs_, freqs):
            sums[a] += f
        e = {"token": out["tokens"][tid] if tid < len(out["tokens"]) else None, "length": L[tid],
             "max_score": M[tid], "blocks": len(P[tid]), "doc_ids": docs_, "freqs": freqs}
        if bs == 128:
            e["block_max_scores"] = bscores
        # recompute block maxima: max over the block of idf * doc_weight, stored as f32
        w = idf(L[tid], n_docs)
        exp = []
        for k in range(0, len(docs_), bs):
            best = F32(-3.4e38)
            for a, f in zip(docs_[k:k + bs], freqs[k:k + bs]):
                fl = F32(f)
                norm = F32(K1 * F32(F32(F32(1.0) - B) + F32(B * F32(ntok[a])) / avgdl))
                best = max(best, F32(fl / F32(fl + norm)))
            exp.append(float(F32(best * F32(w * F32(K1 + F32(1.0))))))
        if bs == 128 and exp != bscores:
            score_ok = False
        if F32(max(exp)) != F32(M[tid]):
            max_ok = False
        if I is not None:
            ents = [impact_entry(x) for x in I[tid]]
            e["impacts"] = [[u, p] for u, p in ents]
            nb = len(P[tid])
            want = []
            for k in range(0, len(docs_), bs):
                want.append([docs_[min(k + bs, len(docs_)) - 1],
                             impact_frontier([(f, ntok[a]) for a, f in zip(docs_[k:k + bs], freqs[k:k + bs])])])
            for g in range(0, nb, 32):
                hi = min((g + 32) * bs, len(docs_))
                want.append([docs_[hi - 1], impact_frontier([(f, ntok[a]) for a, f in zip(docs_[g * bs:hi], freqs[g * bs:hi])])])
            if [list(x) for x in e["impacts"]] != want:
                impacts_ok = False
        if CP is not None:
            stream, offs = CP[tid], PO[tid]
            ends = offs[1:] + [len(stream)]
            poss = []
            for bi, (a, z) in enumerate(zip(offs, ends)):
                poss += decode_positions_stream(stream[a:z], freqs[bi * bs:(bi + 1) * bs])
            e["positions"] = poss
            e["position_block_offsets"] = offs
            pos_ok &= all(len(p) == f for p, f in zip(poss, freqs))
        elif LP is not None:
            e["positions"] = [decode_legacy_positions(x) for x in LP[tid]]
            pos_ok &= all(len(p) == f for p, f in zip(e["positions"], freqs))
        postings.append(e)
    out["postings"] = postings
    out["block_size"] = bs
    out["tail_codec"] = tail
    out["checks"].update({
        "freq_sums_equal_num_tokens": sums == ntok,
        "block_max_scores_recomputed": score_ok,
        "max_score_recomputed": max_ok,
        "impacts_recomputed": impacts_ok if I is not None else None,
        "positions_match_freqs": pos_ok if (CP is not None or LP is not None) else None,
        "doc_row_ids_sorted": out["docs"]["row_ids"] == sorted(out["docs"]["row_ids"]),
    })
    return out, summaries


def _details(type_url, b):
    names = {1: "base_tokenizer", 2: "language", 3: "with_position", 4: "max_token_length", 5: "lower_case",
             6: "stem", 7: "remove_stop_words", 8: "ascii_folding", 9: "min_ngram_length",
             10: "max_ngram_length", 11: "prefix_only", 12: "block_size", 13: "code_config",
             14: "document_granularity", 15: "posting_format_version", 16: "json_tokenizer_mode",
             17: "disable_cross_array_unnest"}
    d = {}
    for num, wt, v in _fields(b):
        key = names.get(num, f"field_{num}")
        if wt == 2:
            try:
                d[key] = v.decode() if num not in (13,) else {str(n): x for n, _, x in _fields(v)}
            except UnicodeDecodeError:
                d[key] = v.hex()
        elif num in (3, 5, 6, 7, 8, 11, 17):
            d[key] = bool(v)
        else:
            d[key] = v
    d["_fields_present"] = sorted({n for n, _, _ in _fields(b)})
    return d


def decode_index(path, im):
    d = os.path.join(path, "_indices", im["uuid"])
    files, parts = {}, []
    names = sorted(os.listdir(d))
    meta = {}
    if "metadata.lance" in names:
        s, mt = file_summary(os.path.join(d, "metadata.lance"))
        files["metadata.lance"] = s
        meta = s["schema_metadata"]
        if "deleted_fragments" in mt.column_names:
            b = mt["deleted_fragments"][0].as_py()
            s["deleted_fragments_hex"] = b.hex()
            s["deleted_fragments"] = roaring32(b, 0)[0]
    pids = json.loads(meta["partitions"]) if "partitions" in meta else [None]
    for pid in pids:
        p, sums = decode_partition(d, pid, meta)
        files.update(sums)
        parts.append(p)
    for fn in names:
        if fn not in files:
            files[fn] = {"size": os.path.getsize(os.path.join(d, fn))}
    return {"uuid": im["uuid"], "files": files, "params": json.loads(meta["params"]) if "params" in meta else None,
            "partitions": parts}


# ---------------------------------------------------------------- BM25 model of pylance's answers

class Model:
    """Scores match-style queries from the decoded index segments plus the unindexed rows,
    following docs/fts-index-format.md §8."""

    def __init__(self, ds, segments, column, tok_kwargs):
        self.tk = tok_kwargs
        self.ngram = tok_kwargs.get("base_tokenizer") == "ngram"
        t = ds.to_table(columns=["id", column], with_row_address=True)
        self.live = dict(zip(t["_rowaddr"].to_pylist(), t["id"].to_pylist()))
        text_of = dict(zip(t["_rowaddr"].to_pylist(), t[column].to_pylist()))
        covered = set()
        self.parts = []
        for seg in segments:
            covered |= set(seg["fragment_ids"])
            for p in seg["partitions"]:
                self.parts.append(({tk: i for i, tk in enumerate(p["tokens"])}, p))
        self.n0 = sum(len(p["docs"]["num_tokens"]) for _, p in self.parts)
        self.t0 = sum(sum(p["docs"]["num_tokens"]) for _, p in self.parts)
        self.unindexed = []  # (id, tokens) of live unindexed rows with at least one token
        self.unindexed_pos = []
        self._pos = None
        for ra, txt in text_of.items():
            if (ra >> 32) in covered:
                continue
            tp = self.tokens(txt)
            if tp:
                self.unindexed.append((self.live[ra], [x for x, _ in tp]))
                self.unindexed_pos.append((self.live[ra], tp))
        self.n1 = self.n0 + len(self.unindexed)
        self.t1 = self.t0 + sum(len(x) for _, x in self.unindexed)

    def tokens(self, s):
        if s is None:
            return []
        return [(x.text, x.position) for x in lance.tokenize(s, **self.tk)]

    def nt0(self, tkn):
        return sum(p["postings"][ti[tkn]]["length"] for ti, p in self.parts if tkn in ti)

    def _indexed(self, uniq, scores, hits):
        """Index part: index statistics only; per partition the terms are summed in
        (query position, token id) order. `uniq` = distinct (token, position) pairs."""
        avg0 = F32(self.t0) / F32(self.n0) if self.n0 else F32(0)
        for ti, p in self.parts:
            quant = p["block_size"] == 256  # format v3 / 256-doc blocks score with quantized lengths
            for _, _, tkn in sorted((pos, ti[t], t) for t, pos in uniq if t in ti):
                e = p["postings"][ti[tkn]]
                w = idf(self.nt0(tkn), self.n0)
                for dd, f in zip(e["doc_ids"], e["freqs"]):
                    ra = p["docs"]["row_ids"][dd]
                    if ra not in self.live:
                        continue
                    i = self.live[ra]
                    dl = p["docs"]["num_tokens"][dd]
                    if quant:
                        dl = dequantize_len(quantize_len(dl))
                    scores[i] = F32(scores.get(i, F32(0)) + F32(w * doc_weight(f, dl, avg0)))
                    hits.setdefault(i, set()).add(tkn)

    def _unindexed(self, qt, keep, scores, hits):
        """Flat part: statistics of the index plus the (prefiltered) unindexed rows that have at
        least one token; every query token counted, in query order."""
        un = self.unindexed if keep is None else [u for u in self.unindexed if u[0] in keep]
        n1 = self.n0 + len(un)
        t1 = self.t0 + sum(len(x) for _, x in un)
        avg1 = F32(t1) / F32(n1) if n1 else F32(0)
        for tkn, _ in qt:
            docs = [(i, x.count(tkn), len(x)) for i, x in un if tkn in x]
            if not docs:
                continue
            w = idf(self.nt0(tkn) + len(docs), n1)
            for i, f, dl in docs:
                scores[i] = F32(scores.get(i, F32(0)) + F32(w * doc_weight(f, dl, avg1)))
                hits.setdefault(i, set()).add(tkn)

    def match(self, text, operator="OR", boost=1.0, keep=None):
        qt = self.tokens(text)
        if self.ngram:
            operator = "OR"  # pylance ignores AND for ngram indexes (observed)
        scores, hits = {}, {}
        self._indexed(list(dict.fromkeys(qt)), scores, hits)  # the index drops repeated (token, position)
        self._unindexed(qt, keep, scores, hits)
        if operator == "AND":
            need = {t for t, _ in qt}
            scores = {i: s for i, s in scores.items() if hits[i] >= need}
        if boost != 1.0:
            scores = {i: F32(s * F32(boost)) for i, s in scores.items()}
        return scores

    def doc_positions(self):
        """id -> {token: [positions]} for live rows (indexed from the decoded postings, unindexed
        from lance.tokenize); None when the index has no positions."""
        if getattr(self, "_pos", None) is None:
            if any("positions" not in e for _, p in self.parts for e in p["postings"][:1]):
                return None
            pos = {}
            for ti, p in self.parts:
                for tkn, k in ti.items():
                    e = p["postings"][k]
                    for dd, ps in zip(e["doc_ids"], e["positions"]):
                        ra = p["docs"]["row_ids"][dd]
                        if ra in self.live:
                            pos.setdefault(self.live[ra], {})[tkn] = ps
            for i, toks in self.unindexed_pos:
                d = pos.setdefault(i, {})
                for t, q in toks:
                    d.setdefault(t, []).append(q)
            self._pos = pos
        return self._pos

    def phrase(self, text, slop=0, keep=None):
        """Rows where the query tokens occur in query order, each gap between consecutive
        tokens exceeding the query's by at most `slop`; scored like an AND match."""
        pos = self.doc_positions()
        if pos is None:
            return None
        qt = self.tokens(text)
        scores = self.match(text, "AND", 1.0, keep)
        if len(qt) < 2:
            return scores

        def ok(dp):
            def rec(k, prev):
                if k == len(qt):
                    return True
                for pk in dp.get(qt[k][0], []):
                    d = pk - prev - (qt[k][1] - qt[k - 1][1])
                    if 0 <= d <= slop and rec(k + 1, pk):
                        return True
                return False
            return any(rec(1, p0) for p0 in dp.get(qt[0][0], []))
        return {i: s for i, s in scores.items() if ok(pos.get(i, {}))}

    def fuzzy(self, text, fuzziness, prefix_length=0, max_expansions=50, boost=1.0, keep=None):
        """Index part: every query token of the analyzer *without stemming* is replaced by the
        index tokens within Levenshtein distance `fuzziness` sharing its first `prefix_length`
        characters, the first `max_expansions` in byte order; each scored as its own term.
        Unindexed part: the plain (stemmed, exact) match."""
        tk = dict(self.tk)
        tk["stem"] = False
        qt = [(x.text, x.position) for x in lance.tokenize(text, **tk)] if text else []
        vocab = sorted({t for ti, _ in self.parts for t in ti}, key=lambda t: t.encode())
        terms = []
        for t, pos in qt:
            fz = fuzziness
            if fz is None:
                n = len(t)
                fz = 0 if n <= 2 else 1 if n <= 5 else 2
            exp = [x for x in vocab if x[:prefix_length] == t[:prefix_length] and levenshtein(t, x) <= fz]
            terms += [(x, pos) for x in exp[:max_expansions]]
        scores, hits = {}, {}
        self._indexed(list(dict.fromkeys(terms)), scores, hits)
        self._unindexed(self.tokens(text), keep, scores, hits)
        if boost != 1.0:
            scores = {i: F32(s * F32(boost)) for i, s in scores.items()}
        return scores


def levenshtein(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def model_scores(models, spec, keep):
    """pylance's answer set and scores under the model, or None where the model does not
    cover the query (fuzzy AND / automatic fuzziness / fuzzy on ngram, phrases without positions)."""
    t = spec["type"]
    if t in ("string", "dict"):
        cols = spec.get("columns") or list(models)
        if len(cols) == 1:
            return models[cols[0]].match(spec["query"], keep=keep)
        return model_scores(models, dict(type="multi_match", query=spec["query"], columns=cols), keep)
    if t == "match":
        m = models[spec.get("column", "text")]
        if spec.get("fuzziness", 0) is None and not m.ngram:
            # documented as "automatic", but pylance 11/12/14 treat None like 0 (exact)
            return m.match(spec["query"], spec.get("operator", "OR"), spec.get("boost", 1.0), keep)
        if spec.get("fuzziness", 0) != 0:
            if spec.get("operator", "OR") != "OR" or spec["fuzziness"] is None or m.ngram:
                return None  # not modelled: fuzzy AND, fuzzy on ngram indexes
            return m.fuzzy(spec["query"], spec["fuzziness"], spec.get("prefix_length", 0),
                           spec.get("max_expansions", 50), spec.get("boost", 1.0), keep)
        return m.match(spec["query"], spec.get("operator", "OR"), spec.get("boost", 1.0), keep)
    if t == "phrase":
        return models[spec.get("column", "text")].phrase(spec["query"], spec.get("slop", 0), keep)
    if t == "multi_match":
        boosts = spec.get("boosts") or [1.0] * len(spec["columns"])
        out = {}
        for c, bo in zip(spec["columns"], boosts):  # best field: max over the columns
            for i, s in models[c].match(spec["query"], spec.get("operator", "OR"), bo, keep).items():
                out[i] = max(out.get(i, s), s)
        return out
    if t == "boolean":
        subs = []
        for occ, q in spec["clauses"]:
            r = model_scores(models, q, keep)
            if r is None:
                return None
            subs.append((occ, r))
        must = [r for o, r in subs if o == "MUST"]
        cand = set.intersection(*[set(r) for r in must]) if must else set().union(*[set(r) for o, r in subs if o == "SHOULD"])
        for o, r in subs:
            if o == "MUST_NOT":
                cand -= set(r)
        out = {}
        for i in cand:  # MUST and SHOULD scores summed in clause order
            s = None
            for o, r in subs:
                if o != "MUST_NOT" and i in r:
                    s = r[i] if s is None else F32(s + r[i])
            out[i] = s
        return out
    if t == "boost":
        pos = model_scores(models, spec["positive"], keep)
        neg = model_scores(models, spec["negative"], keep)
        if pos is None or neg is None:
            return None
        nb = F32(spec.get("negative_boost", 0.5))
        return {i: F32(s - F32(nb * neg[i])) if i in neg else s for i, s in pos.items()}
    return None


# ---------------------------------------------------------------- queries

def build_query(spec):
    t = spec["type"]
    if t == "string":
        return spec["query"]
    if t == "dict":
        return {"query": spec["query"], "columns": spec["columns"]}
    if t == "match":
        kw = {k: spec[k] for k in ("boost", "fuzziness", "max_expansions", "prefix_length") if k in spec}
        if "operator" in spec:
            kw["operator"] = FullTextOperator[spec["operator"]]
        return MatchQuery(spec["query"], spec.get("column", "text"), **kw)
    if t == "phrase":
        return PhraseQuery(spec["query"], spec.get("column", "text"), slop=spec.get("slop", 0))
    if t == "boolean":
        return BooleanQuery([(Occur[o], build_query(q)) for o, q in spec["clauses"]])
    if t == "boost":
        return BoostQuery(build_query(spec["positive"]), build_query(spec["negative"]),
                          negative_boost=spec.get("negative_boost", 0.5))
    if t == "multi_match":
        kw = {}
        if "boosts" in spec:
            kw["boosts"] = spec["boosts"]
        if "operator" in spec:
            kw["operator"] = FullTextOperator[spec["operator"]]
        return MultiMatchQuery(spec["query"], spec["columns"], **kw)
    raise ValueError(t)


def M(q, **kw):
    return dict(type="match", query=q, **kw)


def S(q):
    return dict(type="string", query=q)


BASE_QUERIES = [
    (S("fox"), {}),
    (S("fox"), {"limit": 10}),
    (S("quick brown fox"), {"limit": 10}),
    (S("running runner runs"), {"limit": 100}),
    (S("café naïve"), {}),
    (S("Straße STRASSE strasse"), {}),
    (S("日本語のテキスト 東京タワー"), {}),
    (S("hello hello world"), {}),
    (S("the of and"), {}),
    (S("42 3.14 1,000"), {}),
    (S("don't e-mail C++"), {}),
    (S("zzzzqq"), {}),
    (S(""), {}),
    (S("apple"), {"limit": 5}),
    (S("fox"), {"limit": 5, "filter": "id < 200", "prefilter": True}),
    (S("fox"), {"limit": 5, "filter": "id < 200", "prefilter": False}),
    (S("fox"), {"limit": 5, "filter": "id < 200"}),
    (S("fox dog"), {"filter": "id >= 400"}),
    (S("fox dog"), {"limit": 100, "filter": "title IS NOT NULL AND id % 2 = 0", "prefilter": True}),
    (S("fox"), {"limit": 10, "fast_search": True}),
    (dict(type="dict", query="connection search", columns=["text"]), {"limit": 10}),
    (M("fox dog", operator="AND"), {}),
    (M("quick brown", operator="AND"), {"limit": 10}),
    (M("running cat", operator="OR"), {"limit": 10}),
    (M("apple", boost=2.5), {}),
    (M("apple river", boost=0.5, operator="OR"), {"limit": 10}),
    (M("fxo", fuzziness=1), {"limit": 100}),
    (M("conection", fuzziness=2), {"limit": 100}),
    (M("conection", fuzziness=2, prefix_length=3, max_expansions=3), {"limit": 100}),
    (M("banan", fuzziness=1, max_expansions=1), {}),
    (M("cofee cafe", fuzziness=1), {}),
    (M("lake", fuzziness=2, max_expansions=2), {}),
    (M("connectd brwn", fuzziness=None), {"limit": 50}),
    (M("fxo", fuzziness=1, operator="AND"), {}),
    (dict(type="boolean", clauses=[["MUST", M("fox")], ["SHOULD", M("dog")], ["MUST_NOT", M("cat")]]), {"limit": 100}),
    (dict(type="boolean", clauses=[["SHOULD", M("apple")], ["SHOULD", M("banana")]]), {}),
    (dict(type="boolean", clauses=[["MUST", M("fox")], ["MUST", M("quick")]]), {}),
    (dict(type="boolean", clauses=[["MUST_NOT", M("fox")]]), {"limit": 10}),
    (dict(type="boolean", clauses=[["SHOULD", M("river")], ["MUST_NOT", M("fox")]]), {}),
    (dict(type="boost", positive=M("fox"), negative=M("dog"), negative_boost=0.5), {"limit": 20}),
    (dict(type="boost", positive=M("apple banana"), negative=M("banana"), negative_boost=0.1), {}),
]

PHRASE_QUERIES = [
    (dict(type="phrase", query="quick brown"), {}),
    (dict(type="phrase", query="brown fox", slop=1), {}),
    (dict(type="phrase", query="fox brown", slop=2), {}),
    (dict(type="phrase", query="running fox", slop=0), {}),
    (dict(type="phrase", query="connection search", slop=3), {"limit": 5}),
    (dict(type="phrase", query="the quick", slop=0), {}),
    (dict(type="phrase", query="fox"), {"limit": 10}),
    (dict(type="phrase", query="fox brown", slop=5), {}),
    (dict(type="phrase", query="quick brown fox", slop=2), {}),
    (dict(type="phrase", query="fox jumps over the lazy dog", slop=0), {}),
    (dict(type="phrase", query="jumps lazy", slop=2), {"limit": 100}),
    (dict(type="phrase", query="lazy dog", slop=1), {"limit": 5, "filter": "id > 100", "prefilter": True}),
    (dict(type="phrase", query="東京タワー 中文分词测试", slop=5), {}),
    (dict(type="boolean", clauses=[["MUST", dict(type="phrase", query="brown fox", slop=1)], ["SHOULD", M("quick")]]), {}),
]

MULTI_QUERIES = [
    (dict(type="multi_match", query="fox", columns=["text", "title"]), {"limit": 20}),
    (dict(type="multi_match", query="quick dog", columns=["text", "title"], boosts=[1.0, 3.0]), {"limit": 20}),
    (dict(type="multi_match", query="running stop", columns=["text", "title"], operator="AND"), {}),
    (dict(type="dict", query="fox", columns=["title"]), {"limit": 10}),
    (dict(type="dict", query="fox", columns=["text", "title"]), {"limit": 10}),
    (S("quick"), {"limit": 10}),
    (M("quick", column="title"), {"limit": 10}),
    (dict(type="boolean", clauses=[["MUST", M("fox")], ["SHOULD", M("quick", column="title")]]), {"limit": 20}),
]

EXTRA = {
    "ngram": [(S("ell"), {}), (S("tok"), {"limit": 20}), (S("xyz"), {}), (S("fo"), {"limit": 10}),
              (M("quick", operator="AND"), {"limit": 10}), (S("東京"), {})],
    "ngram_prefix": [(S("fo"), {"limit": 20}), (S("ap"), {}), (S("quic"), {}), (S("ick"), {})],
    "raw": [(S("fox"), {}), (S("Fox naïve"), {}), (S("fox naïve"), {}), (S("apple engine"), {})],
    "whitespace": [(S("don't"), {}), (S("c++"), {}), (S("fox."), {}), (S("u.s.a."), {}), (S("wow!!!"), {})],
    "max_token_length_8": [(S("supercalifragilisticexpialidocious"), {}), (S("connection"), {}), (S("connect"), {})],
    "no_stem_no_stop": [(S("the"), {"limit": 10}), (S("running"), {}), (S("run"), {})],
    "no_lower_case": [(S("Hello"), {}), (S("HELLO"), {}), (S("hello"), {})],
    "no_ascii_folding": [(S("cafe"), {}), (S("café"), {}), (S("strasse"), {})],
    "custom_stop_words": [(S("fox"), {}), (S("the"), {}), (S("dog cat"), {})],
}

TOKEN_SAMPLES = ["The Quick Brown Fox jumps over the lazy dog!", "Café naïve Straße STRASSE Ærø ﬁnance İstanbul",
                 "日本語のテキスト 東京タワー 한국어 문장", "don't e-mail C++ foo_bar U.S.A. 3.14 1,000 2024-01-15",
                 "running runs ran runner connections happily", "supercalifragilisticexpialidocious x",
                 "", "   ", "Hello, HELLO; hello."]


# candidate English stop words (union of the NLTK, Snowball and Lucene/tantivy lists plus
# contractions); the probe records which ones each pylance version removes
STOP_CANDIDATES = """i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
yourselves he him his himself she she's her hers herself it it's its itself they them their theirs
themselves what which who whom this that that'll these those am is are was were be been being have has
had having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few more most other some such no
nor not only own same so than too very s t can will just don don't should should've now d ll m o re ve y
ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't
ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won
won't wouldn wouldn't i'm i've i'll i'd we're we've we'll we'd he'd he'll he's she'd she'll they're
they've they'll they'd let's there's here's what's when's where's why's how's who's can't cannot could
ought would b c e f g h j k l n p q r u v w x z also however yet whose upon via etc one two""".split()

STEM_PROBES = ("running runs ran runner connection connections connected connecting happily happiness "
               "studies studying generously internal added emergency evening interfering erring anthropologist "
               "ponies caresses cats feed agreed plastered motoring sing conflated troubled sized hopping tanned "
               "falling hissing fizzed failing filing happy sky relational conditional rational valenci hesitanci "
               "digitizer conformabli radicalli differentli vileli analogousli vietnamization predication operator "
               "feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate formative "
               "formalize electriciti electrical hopeful goodness revival allowance inference airliner gyroscopic "
               "adjustable defensible irritant replacement adjustment dependent adoption homologou communism activate "
               "angulariti homologous effective bowdlerize probate rate cease controll roll generalization oscillators "
               "cafés naïve straße").split()


def tokenizer_probes():
    out = {"stop_words_english": {}, "stems_english": {}, "samples": []}
    base = dict(base_tokenizer="simple", language="English", stem=False, remove_stop_words=True,
                lower_case=True, ascii_folding=False, max_token_length=None)
    removed = []
    for w in STOP_CANDIDATES:
        toks = [x.text for x in lance.tokenize(w, **base)]
        plain = [x.text for x in lance.tokenize(w, **dict(base, remove_stop_words=False))]
        out["stop_words_english"][w] = {"plain": plain, "kept": toks}
        if plain and not toks:
            removed.append(w)
    out["stop_words_removed"] = removed
    st = dict(base, stem=True, remove_stop_words=False)
    for w in STEM_PROBES:
        out["stems_english"][w] = [x.text for x in lance.tokenize(w, **st)]
    samples = [
        ("simple", "Hello, World! ĲSSEL Ǆungla ﬁnance ½ café-au-lait über_cool l'été"),
        ("whitespace", "Hello, World! don't C++ a-b"),
        ("raw", "Hello, World!  Two  spaces"),
        ("icu", "hello_world こんにちは世界 東京タワー 中文分词测试"),
        ("icu/split", "hello_world こんにちは世界"),
        ("simple", "东京 北京上海 한국어문장 ไทย ελληνικά Русский текст"),
        ("simple", "x" * 45 + " " + "y" * 40 + " " + "é" * 25),
    ]
    for bt, text in samples:
        for kw in ({}, {"max_token_length": None}, {"ascii_folding": False, "lower_case": False}):
            try:
                toks = [[x.text, x.position] for x in lance.tokenize(text, base_tokenizer=bt, **kw)]
                out["samples"].append({"base_tokenizer": bt, "options": kw, "text": text, "tokens": toks})
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, KeyboardInterrupt):
                    raise
                out["samples"].append({"base_tokenizer": bt, "options": kw, "text": text, "error": str(e)[:200]})
    return out


def run_query(ds, spec, opts, models):
    res = {"query": spec, "options": opts}
    try:
        q = build_query(spec)
        kw = dict(columns=["id", "_score"], full_text_query=q)
        for k in ("limit", "filter", "prefilter", "fast_search"):
            if k in opts:
                kw[k] = opts[k]
        t = ds.to_table(**kw)
        res["ids"] = t["id"].to_pylist()
        res["scores"] = t["_score"].to_pylist()
    except BaseException as e:  # noqa: BLE001 - pyo3 panics are BaseException
        if isinstance(e, KeyboardInterrupt):
            raise
        res["error"] = f"{type(e).__name__}: {str(e)[:400]}"
        return res
    if models:
        try:
            keep = None
            if "filter" in opts:
                keep = set(ds.to_table(columns=["id"], filter=opts["filter"])["id"].to_pylist())
            # a prefilter also restricts the unindexed rows that feed the statistics
            if opts.get("fast_search"):  # only the indexed fragments are searched
                scores = model_scores(models, spec, set())
            else:
                scores = model_scores(models, spec, keep if opts.get("prefilter") else None)
            if scores is None:
                return res
            if keep is not None:
                scores = {i: s for i, s in scores.items() if i in keep}
            res["model_scores"] = [float(scores[i]) if i in scores else None for i in res["ids"]]
            errs = [abs(a - b) / max(abs(a), 1e-30) for a, b in zip(res["scores"], res["model_scores"]) if b is not None]
            res["model_max_rel_err"] = max(errs) if errs else 0.0
            res["model_missing"] = sum(1 for b in res["model_scores"] if b is None)
            want = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
            lim = opts.get("limit")
            if lim is not None and not opts.get("prefilter") and "filter" in opts:
                res["model_count"] = None  # postfilter: the count depends on the unfiltered top-k
            else:
                res["model_count"] = len(want) if lim is None else min(lim, len(want))
            # pylance's scores must be the model's top scores (ties may be ordered differently)
            res["tied_at_cut"] = bool(lim is not None and len(want) > lim and want[lim][1] == want[lim - 1][1]) \
                if res["model_count"] is not None else None
            res["model_top_scores_match"] = [float(s) for _, s in want[:len(res["ids"])]] == [float(F32(x)) for x in res["scores"]] \
                if res["model_count"] is not None else None
        except Exception as e:  # noqa: BLE001
            res["model_error"] = f"{type(e).__name__}: {e}"
    return res


# ---------------------------------------------------------------- cases

# name, create_scalar_index kwargs, extra
CASES = [
    ("default", {}, {}),
    ("positions", {"with_position": True}, {"phrase": True}),
    ("whitespace", {"base_tokenizer": "whitespace"}, {}),
    ("raw", {"base_tokenizer": "raw"}, {}),
    ("ngram", {"base_tokenizer": "ngram", "min_ngram_length": 2, "max_ngram_length": 4}, {}),
    ("ngram_prefix", {"base_tokenizer": "ngram", "min_ngram_length": 2, "max_ngram_length": 5, "prefix_only": True}, {}),
    ("no_lower_case", {"lower_case": False}, {}),
    ("no_stem_no_stop", {"stem": False, "remove_stop_words": False}, {}),
    ("stem_stop_english", {"stem": True, "remove_stop_words": True, "language": "English"}, {}),
    ("no_ascii_folding", {"ascii_folding": False}, {}),
    ("custom_stop_words", {"custom_stop_words": ["fox", "dog", "the"]}, {}),
    ("max_token_length_8", {"max_token_length": 8}, {}),
    ("max_token_length_none", {"max_token_length": None}, {}),
    ("icu", {"base_tokenizer": "icu"}, {}),
    ("format_v1_positions", {"format_version": 1, "with_position": True}, {"phrase": True}),
    ("format_v3_block128", {"format_version": 3}, {}),
    ("format_v3_block256_positions", {"block_size": 256, "with_position": True}, {"phrase": True}),
    ("multi_partition", {"base_tokenizer": "ngram", "min_ngram_length": 1, "max_ngram_length": 6,
                         "memory_limit": 1}, {"few_queries": True}),
    ("two_columns", {}, {"title_index": True}),
    ("optimize_merged", {"with_position": True}, {"optimize": "merge", "phrase": True}),
    ("optimize_delta", {}, {"optimize": "delta"}),
]


def tok_kwargs(params):
    kw = {k: params[k] for k in ("base_tokenizer", "language", "lower_case", "stem", "remove_stop_words",
                                 "ascii_folding", "custom_stop_words", "prefix_only") if k in params}
    kw["max_token_length"] = params.get("max_token_length")
    if "min_ngram_length" in params:
        kw["min_ngram_length"] = params["min_ngram_length"]
        kw["max_ngram_length"] = params["max_ngram_length"]
    if params.get("lance_tokenizer") == "code":
        kw["analyzer"] = "code"
    return kw


def build_case(out, name, params, extra):
    path = os.path.join(out, name)
    shutil.rmtree(path, ignore_errors=True)
    steps = []
    ds = lance.write_dataset(table(0, N_ROWS), path, max_rows_per_file=ROWS_PER_FILE)
    steps.append(f"write {N_ROWS} rows (ids 0..{N_ROWS - 1}) as {N_ROWS // ROWS_PER_FILE} fragments")
    ds.delete("id % 10 = 3")
    steps.append("delete id % 10 = 3 (before indexing)")
    kw = dict(params)
    kw.setdefault("num_workers", 1)
    ds.create_scalar_index("text", "INVERTED", **kw)
    steps.append(f"create_scalar_index(text, INVERTED, {json.dumps(kw, ensure_ascii=False)})")
    if extra.get("title_index"):
        ds = lance.dataset(path)
        ds.create_scalar_index("title", "INVERTED", num_workers=1)
        steps.append("create_scalar_index(title, INVERTED, num_workers=1)")
    ds = lance.dataset(path)
    start = N_ROWS
    if extra.get("optimize"):
        ds = lance.write_dataset(table(start, N_DELTA), path, mode="append", max_rows_per_file=ROWS_PER_FILE)
        if extra["optimize"] == "delta":
            ds.optimize.optimize_indices(num_indices_to_merge=0)
            how = "optimize_indices(num_indices_to_merge=0)"
        else:
            ds.optimize.optimize_indices()
            how = "optimize_indices()"
        steps.append(f"append {N_DELTA} rows (ids {start}..{start + N_DELTA - 1}); {how}")
        start += N_DELTA
        ds = lance.dataset(path)
    ds = lance.write_dataset(table(start, N_APPEND), path, mode="append", max_rows_per_file=ROWS_PER_FILE)
    steps.append(f"append {N_APPEND} rows (ids {start}..{start + N_APPEND - 1}), left unindexed")
    ds = lance.dataset(path)
    ds.delete("id % 17 = 5")
    steps.append("delete id % 17 = 5 (indexed and appended rows)")
    ds = lance.dataset(path)

    version, indices = _manifest_indices(path, _details)
    segs = []
    for im in indices:
        seg = decode_index(path, im)
        seg["name"] = im["name"]
        seg["fragment_ids"] = im.get("fragment_ids", [])
        segs.append(seg)
    try:
        stats = ds.stats.index_stats("text_idx")
        stats.pop("updated_at_timestamp_ms", None)
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        stats = {"error": str(e)[:300]}

    text_segs = [s for s in segs if s["name"] == "text_idx"]
    params_json = next((s["params"] for s in text_segs if s["params"]), {})
    tk = tok_kwargs(params_json)
    checks = {}
    # lance.tokenize on every indexed row must give the stored document length
    t = ds.to_table(columns=["text"], with_row_address=True, with_row_id=False)
    text_of = dict(zip(t["_rowaddr"].to_pylist(), t["text"].to_pylist()))
    mism, total = 0, 0
    for s in text_segs:
        for p in s["partitions"]:
            for ra, n in zip(p["docs"]["row_ids"], p["docs"]["num_tokens"]):
                if ra in text_of:
                    total += 1
                    got = len(lance.tokenize(text_of[ra], **tk)) if text_of[ra] is not None else 0
                    mism += got != n
    checks["tokenize_matches_num_tokens"] = {"docs_checked": total, "mismatches": mism}
    for s in segs:
        for p in s["partitions"]:
            for k, v in p["checks"].items():
                if v is False:
                    checks.setdefault("failed_decode_checks", []).append(f"{s['name']}/{p['id']}: {k}")

    streams = []
    for txt in TOKEN_SAMPLES:
        try:
            streams.append({"text": txt, "tokens": [[x.text, x.position] for x in lance.tokenize(txt, **tk)]})
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            streams.append({"text": txt, "error": str(e)[:300]})

    models = {"text": Model(ds, text_segs, "text", tk)}
    title_segs = [s for s in segs if s["name"] == "title_idx"]
    if title_segs:
        models["title"] = Model(ds, title_segs, "title", tok_kwargs(title_segs[0]["params"]))
    model = models["text"]
    qs = list(BASE_QUERIES) if not extra.get("few_queries") else BASE_QUERIES[:8] + BASE_QUERIES[19:24]
    if extra.get("phrase"):
        qs += PHRASE_QUERIES
    elif name == "default":
        qs += PHRASE_QUERIES[:2]  # errors without positions
    if extra.get("title_index"):
        qs += MULTI_QUERIES
    qs += EXTRA.get(name, [])
    queries = [run_query(ds, spec, opts, models) for spec, opts in qs]

    return {
        "name": name,
        "params": params,
        "steps": steps,
        "pylance_version": lance.__version__,
        "dataset_version": version,
        "data_storage_version": ds.data_storage_version,
        "row_count": ds.count_rows(),
        "fragments": [{"id": f.fragment_id, "physical_rows": f.physical_rows, "rows": f.count_rows()}
                      for f in ds.get_fragments()],
        "manifest_indices": indices,
        "index_stats": stats,
        "segments": segs,
        "model_stats": {"indexed_docs": model.n0, "indexed_tokens": model.t0,
                        "unindexed_docs_with_tokens": len(model.unindexed), "combined_docs": model.n1,
                        "combined_tokens": model.t1},
        "checks": checks,
        "token_streams": streams,
        "queries": queries,
    }


def _json_default(o):
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.integer,)):
        return int(o)
    try:
        return sorted(int(x) for x in o)
    except TypeError:
        return str(o)


def dir_size(p):
    return sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(p) for f in fs)


def main(out):
    os.makedirs(out, exist_ok=True)
    only = set(sys.argv[2:])
    t0 = time.time()
    summary = {"pylance_version": lance.__version__, "pyarrow_version": pa.__version__, "logf": LOGF, "rows": N_ROWS,
               "rows_per_file": ROWS_PER_FILE, "appended_rows": N_APPEND, "delta_rows": N_DELTA, "cases": []}
    for name, params, extra in CASES:
        if only and name not in only:
            continue
        entry = {"name": name, "params": params, "extra": extra}
        c0 = time.time()
        try:
            case = build_case(out, name, params, extra)
            for seg in case["segments"]:
                big = sum(len(part["postings"]) for part in seg["partitions"]) > MAX_FULL_POSTINGS
                for part in seg["partitions"]:
                    part["postings_abridged"] = big
                    if big:
                        part["postings"] = [{k: e[k] for k in ("token", "length", "max_score", "blocks")}
                                            for e in part["postings"]]
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump(case, f, default=_json_default, ensure_ascii=False, separators=(",", ":"))
            qs = case["queries"]
            modeled = [q for q in qs if "model_max_rel_err" in q]
            entry.update(
                status="ok",
                seconds=round(time.time() - c0, 2),
                bytes=dir_size(os.path.join(out, name)),
                segments=len(case["segments"]),
                partitions=sum(len(s["partitions"]) for s in case["segments"]),
                queries=len(qs),
                query_errors=[f"{json.dumps(q['query'], ensure_ascii=False)}: {q['error'][:120]}" for q in qs if "error" in q],
                modeled_queries=len(modeled),
                model_max_rel_err=max([q["model_max_rel_err"] for q in modeled] or [0.0]),
                model_missing_rows=sum(q.get("model_missing", 0) for q in modeled),
                model_count_mismatch=sum(1 for q in modeled if q.get("model_count") is not None and q["model_count"] != len(q["ids"])),
                model_top_scores_mismatch=sum(1 for q in modeled if q.get("model_top_scores_match") is False),
                model_errors=[q["model_error"] for q in qs if "model_error" in q],
                checks=case["checks"],
            )
            print(f"{name}: ok {entry['seconds']}s, {len(qs)} queries ({len(entry['query_errors'])} errors), "
                  f"model: {len(modeled)} queries, max rel err {entry['model_max_rel_err']:.2e}, "
                  f"missing {entry['model_missing_rows']}, count mismatch {entry['model_count_mismatch']}, "
                  f"top mismatch {entry['model_top_scores_mismatch']}, model errors {len(entry['model_errors'])}"
                  + (f" CHECKS FAILED {case['checks'].get('failed_decode_checks')}" if case["checks"].get("failed_decode_checks") else ""))
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            entry.update(status="failed", error=f"{type(e).__name__}: {str(e)[:500]}",
                         traceback=traceback.format_exc(limit=4)[-2000:])
            print(f"{name}: FAILED {entry['error'][:300]}")
        summary["cases"].append(entry)
    summary["tokenizer_probes"] = tokenizer_probes()
    summary["seconds"] = round(time.time() - t0, 1)
    index_path = os.path.join(out, "index.json")
    if only and os.path.exists(index_path):
        with open(index_path) as f:
            previous = json.load(f)
        done = {c["name"] for c in summary["cases"]}
        summary["cases"] = [c for c in previous.get("cases", []) if c["name"] not in done] + summary["cases"]
        order = [c[0] for c in CASES]
        summary["cases"].sort(key=lambda c: order.index(c["name"]) if c["name"] in order else len(order))
    summary["total_queries"] = sum(c.get("queries", 0) for c in summary["cases"])
    summary["modeled_queries"] = sum(c.get("modeled_queries", 0) for c in summary["cases"])
    with open(index_path, "w") as f:
        json.dump(summary, f, indent=1, default=_json_default, ensure_ascii=False)
    print(f"total {dir_size(out)} bytes in {out}, {summary['seconds']} s, {summary['total_queries']} queries")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(os.path.join(sys.argv[1], "pylance-" + lance.__version__.split(".")[0]))
