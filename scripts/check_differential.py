#!/usr/bin/env python3
"""Pylance reads a dataset Lancer wrote (the replay of a gen_differential.py case), at every
version, for the differential test.

    <venv>/bin/python scripts/check_differential.py DATASET OUT.json OUTDIR
    <venv>/bin/python scripts/check_differential.py --batch LIST.json

(--batch: LIST.json is a list of [DATASET, OUT.json, OUTDIR] triples, each checked as by
the first form, in one process: the test reads every replay with one interpreter start.)

Writes OUTDIR/v<v>-scan.arrow (Arrow IPC file: to_table(with_row_id=True), plus _rowaddr
when this pylance's to_table has with_row_address) for every version, and OUT.json:
    {"pylance": "14.0.2", "rowaddr": true,
     "versions": [{"version": v, "count": n, "scan": "v3-scan.arrow"}        # scan: relative to OUTDIR
                  | {"version": v, "error": {"error": "<class>", "message": "<first 300 chars>"}}, ...]}
The versions are those ds.versions() lists (1..latest if that raises). A version pylance
cannot open, scan or count is recorded with its error, never raised; if the dataset cannot
be opened at all, OUT.json has "error" and no versions. Exit status 0 unless the arguments
are wrong.
"""
import json
import os
import sys

import lance

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the generator's answer-file writer and error record, so both sides encode alike
from gen_differential import HAS_ROWADDR, err, write_ipc  # noqa: E402


def main(path, out_json, outdir):
    os.makedirs(outdir, exist_ok=True)
    doc = {"pylance": lance.__version__, "rowaddr": HAS_ROWADDR, "versions": []}
    try:
        latest = lance.dataset(path)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - the error is the answer
        doc["error"] = err(e)
        latest = None
    if latest is not None:
        try:
            versions = sorted(int(v["version"]) for v in latest.versions())
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # noqa: BLE001
            versions = list(range(1, latest.version + 1))
        kw = {"with_row_id": True}
        if HAS_ROWADDR:
            kw["with_row_address"] = True
        for v in versions:
            try:
                ds = lance.dataset(path, version=v)
                table = ds.to_table(**kw)
                count = ds.count_rows()
                rel = f"v{v}-scan.arrow"
                write_ipc(os.path.join(outdir, rel), table)
                doc["versions"].append({"version": v, "count": count, "scan": rel})
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:  # noqa: BLE001
                doc["versions"].append({"version": v, "error": err(e)})
    with open(out_json, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--batch":
        with open(sys.argv[2]) as f:
            for triple in json.load(f):
                main(*triple)
    elif len(sys.argv) == 4:
        main(*sys.argv[1:])
    else:
        sys.exit(__doc__)
