"""Functions over batches that add columns (``LanceDataset.add_columns``), as pylance 14's
``lance.udf``: :func:`batch_udf` makes a :class:`BatchUDF`; ``checkpoint_file=`` keeps a
:class:`BatchUDFCheckpoint` (a SQLite file) of what has been computed, so an interrupted
``add_columns`` run with the same file resumes without calling the function again on the
batches and fragments it finished; :func:`normalize_transform` is pylance's check of what
``add_columns`` is given.

The checkpoint file has pylance's tables, so either library resumes the other's run:
``batches (fragment_id INT, batch_index INT, result BLOB)`` — a batch's result, pickled,
keyed by its fragment and its position in that fragment (batches of ``batch_size``
physical rows) — and ``fragments (fragment_id INT, data BLOB)`` — a fragment whose new
column files are written, as its JSON description (``FragmentMetadata``); a fragment's
batches are dropped when it is recorded. ``add_columns`` removes the file once it has
committed. A cached batch whose row count is not that of the batch it stands for (pylance
leaves deleted rows out of the batches it gives the function, lancer gives them) is
computed again.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Union

import pyarrow as pa

from ._util import _is_pandas, _reader

if TYPE_CHECKING:
    from .dataset import LanceDataset
    from .fragment import LanceFragment

__all__ = ["BatchUDF", "BatchUDFCheckpoint", "batch_udf", "normalize_transform"]


class BatchUDF:
    """A function over batches for :meth:`LanceDataset.add_columns`, with the schema of
    the columns it returns (``output_schema``; inferred from a first batch when None) and
    its checkpoint (``cache``: a :class:`BatchUDFCheckpoint`, or None). Calling it calls
    the function as written. Make one with :func:`batch_udf`."""

    def __init__(self, func: Callable[[pa.RecordBatch], Any], output_schema: Optional[pa.Schema] = None,
                 checkpoint_file: Optional[Union[str, Path]] = None) -> None:
        self.func = func
        self.output_schema = output_schema
        # (as pylance: the checkpoint file is opened, and created, here)
        self.cache: Optional[BatchUDFCheckpoint] = (
            None if checkpoint_file is None else BatchUDFCheckpoint(checkpoint_file))

    def __call__(self, batch: pa.RecordBatch) -> Any:
        return self.func(batch)

    def _call(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The function's result as a RecordBatch of ``output_schema`` (required)."""
        if self.output_schema is None:
            raise ValueError("output_schema must be provided when using a function that returns a RecordBatch")
        out = self.func(batch)
        if _is_pandas(out):
            out = pa.RecordBatch.from_pandas(out)
        if out.schema != self.output_schema:
            raise AssertionError(f"Output schema of function does not match the expected schema. "
                                 f"Expected:\n{self.output_schema}\nGot:\n{out.schema}")
        return out


def batch_udf(output_schema: Optional[pa.Schema] = None,
              checkpoint_file: Optional[Union[str, Path]] = None
              ) -> Callable[[Callable[[pa.RecordBatch], Any]], BatchUDF]:
    """A decorator making a function over batches (a ``pa.RecordBatch`` of the columns
    read in, returning a RecordBatch or pandas DataFrame of the new columns, one row per
    row) a :class:`BatchUDF` for ``add_columns``. ``output_schema`` is checked against
    every result (None: the first result's). ``checkpoint_file``: a SQLite file keeping
    finished batches and fragments, so a failed ``add_columns`` run again with the same
    file resumes where it stopped; it can grow to a data file's worth of results."""

    def wrap(func: Callable[[pa.RecordBatch], Any]) -> BatchUDF:
        return BatchUDF(func, output_schema, checkpoint_file)

    return wrap


class BatchUDFCheckpoint:
    """A SQLite file of a :class:`BatchUDF`'s finished results (see the module's text
    for its tables). Each method opens and closes its own connection, so the object can
    be used from any thread."""

    class BatchInfo(NamedTuple):
        """Which batch: its fragment and its index within the fragment."""

        fragment_id: int
        batch_index: int

    def __init__(self, path: Union[str, Path]):
        self.path = path
        with closing(sqlite3.connect(path)) as db:
            db.execute("CREATE TABLE IF NOT EXISTS batches (fragment_id INT, batch_index INT, result BLOB)")
            db.execute("CREATE TABLE IF NOT EXISTS fragments (fragment_id INT, data BLOB)")
            db.commit()

    def _one(self, sql: str, args: tuple) -> Any:
        with closing(sqlite3.connect(self.path)) as db:
            row = db.execute(sql, args).fetchone()
        return None if row is None else row[0]

    def cleanup(self) -> None:
        """Removes the file."""
        os.remove(self.path)

    def get_batch(self, info: "BatchUDFCheckpoint.BatchInfo") -> Optional[pa.RecordBatch]:
        """The saved result of this batch, or None."""
        blob = self._one("SELECT result FROM batches WHERE fragment_id = ? AND batch_index = ?",
                         (int(info.fragment_id), int(info.batch_index)))
        return None if blob is None else pickle.loads(blob)

    def insert_batch(self, info: "BatchUDFCheckpoint.BatchInfo", batch: pa.RecordBatch) -> None:
        """Saves the result of this batch."""
        with closing(sqlite3.connect(self.path)) as db:
            db.execute("INSERT INTO batches (fragment_id, batch_index, result) VALUES (?, ?, ?)",
                       (int(info.fragment_id), int(info.batch_index), pickle.dumps(batch)))
            db.commit()

    def _replace_batch(self, info: "BatchUDFCheckpoint.BatchInfo", batch: pa.RecordBatch) -> None:
        with closing(sqlite3.connect(self.path)) as db:
            db.execute("DELETE FROM batches WHERE fragment_id = ? AND batch_index = ?",
                       (int(info.fragment_id), int(info.batch_index)))
            db.execute("INSERT INTO batches (fragment_id, batch_index, result) VALUES (?, ?, ?)",
                       (int(info.fragment_id), int(info.batch_index), pickle.dumps(batch)))
            db.commit()

    def get_fragment(self, fragment_id: int) -> Optional[str]:
        """The saved fragment (its JSON text), or None."""
        return self._one("SELECT data FROM fragments WHERE fragment_id = ?", (int(fragment_id),))

    def insert_fragment(self, fragment_id: int, fragment: str) -> None:
        """Saves a finished fragment (JSON text) and drops its batches."""
        with closing(sqlite3.connect(self.path)) as db:
            db.execute("INSERT INTO fragments (fragment_id, data) VALUES (?, ?)", (int(fragment_id), fragment))
            db.execute("DELETE FROM batches WHERE fragment_id = ?", (int(fragment_id),))
            db.commit()


def _first_batch(source: Any, read_columns: Optional[List[str]]) -> pa.RecordBatch:
    """A one-row batch of ``source`` (``_rowid`` / ``_rowaddr`` in ``read_columns`` ask
    for row ids / addresses); StopIteration when it has no rows, as pylance's."""
    columns, kwargs = None, {}
    if read_columns is not None:
        columns = []
        for c in read_columns:
            if c == "_rowid":
                kwargs["with_row_id"] = True
            elif c == "_rowaddr":
                kwargs["with_row_address"] = True
            else:
                columns.append(c)
    return next(iter(source.to_batches(limit=1, columns=columns, **kwargs)))


def _as_batch(out: Any) -> Any:
    return pa.RecordBatch.from_pandas(out) if _is_pandas(out) else out


def normalize_transform(udf_like: Any, data_source: Union["LanceDataset", "LanceFragment"],
                        read_columns: Optional[List[str]] = None,
                        reader_schema: Optional[pa.Schema] = None
                        ) -> Union[Dict[str, str], BatchUDF, pa.RecordBatchReader]:
    """What ``add_columns`` makes of its ``transforms``, as pylance's: a
    :class:`BatchUDF` (its ``output_schema`` set from its result on one row of
    ``data_source`` when None), a ``{name: SQL}`` dict (checked: strings only, else
    TypeError), a plain function (wrapped in a BatchUDF of its result's schema; one that
    fails on a row is a TypeError) or anything readable as a ``pa.RecordBatchReader``
    (with ``reader_schema``; else TypeError): what lancer's ``add_columns`` reads, which
    takes a list of RecordBatches without ``reader_schema`` too (pylance's refuses it,
    a ValueError)."""
    if isinstance(udf_like, BatchUDF):
        if udf_like.output_schema is None:
            udf_like.output_schema = _as_batch(udf_like(_first_batch(data_source, read_columns))).schema
        return udf_like
    if isinstance(udf_like, dict):
        for name, expr in udf_like.items():
            if not isinstance(name, str):
                raise TypeError(f"Column names must be a string. Got {type(name)}")
            if not isinstance(expr, str):
                raise TypeError(f"Column expressions must be a string. Got {type(expr)}")
        return udf_like
    if callable(udf_like):
        try:
            schema = _as_batch(udf_like(_first_batch(data_source, read_columns))).schema
        except Exception as e:
            raise TypeError(f"transforms must be a BatchUDF, dict, map function, or ReaderLike value.  Received "
                            f"{type(udf_like)}, which is callable, but gave an error when called with a batch of "
                            f"data: {e}") from e
        return BatchUDF(udf_like, output_schema=schema)
    try:
        return _reader(udf_like, reader_schema)
    except TypeError as e:
        if reader_schema is None and hasattr(udf_like, "__iter__") and not isinstance(udf_like, (str, bytes)):
            # (pylance's: batches without their schema)
            raise ValueError("Must provide schema to write dataset from RecordBatch iterable") from e
        raise TypeError(f"transforms must be a BatchUDF, dict, map function, or ReaderLike  value.  Received "
                        f"{type(udf_like)}.  Could not coerce to a reader: {e}") from e

