"""pylance 14's pure-Python modules in lancer, each call run through ``import lance`` and
``import lancer`` and compared: ``lancer.log`` (LANCE_LOG), ``lancer.torch.dist`` (against
a stand-in torch), ``lancer.commit``, ``lancer.optimize.CompactionOptions`` and
``compact_files``' options, ``lancer.pydantic`` and ``LanceDataset.from_pydantic_model``,
``DataFile.create``, and ``lancer.udf`` (``batch_udf(checkpoint_file=)`` resuming an
interrupted ``add_columns``, either library's checkpoint file)."""

import datetime as dt
import enum
import importlib
import importlib.util
import inspect
import io
import logging
import os
import pathlib
import sqlite3
import sys
import types
from typing import Any, Dict, List, Optional, Tuple, Union

import pyarrow as pa
import pydantic
import pytest

import lance
import lance.commit
import lance.fragment
import lance.log
import lance.optimize
import lance.pydantic
import lance.udf
import lancer
import lancer.commit
import lancer.fragment
import lancer.log
import lancer.optimize
import lancer.pydantic
import lancer.torch
import lancer.torch.dist
import lancer.udf

LIBS = {"lance": lance, "lancer": lancer}


def outcome(f, *args, **kwargs):
    """("ok", value) or ("error", exception type name, message)."""
    try:
        return ("ok", f(*args, **kwargs))
    except Exception as e:  # the type and text are compared
        return ("error", type(e).__name__, str(e))


# --- lancer.log ---------------------------------------------------------------------------

LOG_VALUES = [None, "", "debug", "DEBUG", "trace", "TRACE", "Trace", "info", "warn", "warning", "error",
              "lance=debug", "lance=debug,error", "info,lance=debug", "lance::io=trace,warn,info",
              ",debug", " debug", "verbose", "lance=trace,trace"]


@pytest.mark.parametrize("value", LOG_VALUES)
def test_log_level_comes_from_lance_log_as_pylance(value, monkeypatch):
    if value is None:
        monkeypatch.delenv("LANCE_LOG", raising=False)
    else:
        monkeypatch.setenv("LANCE_LOG", value)
    assert lancer.log.get_log_level() == lance.log.get_log_level()


@pytest.mark.parametrize("name", ["trace", "TRACE", "tRaCe", "debug", "info", "WARN", "", "x", "traces"])
def test_python_log_level_of_a_rust_level_as_pylance(name):
    assert lancer.log.get_python_log_level(name) == lance.log.get_python_log_level(name)


@pytest.mark.parametrize("value", ["debug", "trace", "error", "lance=debug", None])
def test_import_sets_the_pylance_loggers_level_as_pylance(value, monkeypatch):
    logger = logging.getLogger("pylance")
    before = logger.level
    if value is None:
        monkeypatch.delenv("LANCE_LOG", raising=False)
    else:
        monkeypatch.setenv("LANCE_LOG", value)
    try:
        importlib.reload(lance.log)
        theirs = logger.level
        logger.setLevel(logging.NOTSET)
        importlib.reload(lancer.log)
        assert logger.level == theirs and lancer.log.LOGGER is logger
    finally:
        logger.setLevel(before)


def test_an_unknown_level_leaves_the_logger_where_pylances_import_fails(monkeypatch):
    logger = logging.getLogger("pylance")
    before = logger.level
    monkeypatch.setenv("LANCE_LOG", "verbose")
    try:
        with pytest.raises(ValueError, match="VERBOSE"):
            importlib.reload(lance.log)
        logger.setLevel(logging.WARNING)
        importlib.reload(lancer.log)  # (documented: lancer's import does not fail)
        assert logger.level == logging.WARNING
    finally:
        monkeypatch.delenv("LANCE_LOG")
        importlib.reload(lance.log)
        importlib.reload(lancer.log)
        logger.setLevel(before)


def _log_through(lib, name, timed=True, **kwargs):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    lib.log.set_logger(name=name, log_handler=handler, **kwargs)
    lib.log.LOGGER.debug("quiet")
    lib.log.LOGGER.warning("loud %d", 7)
    logger = logging.getLogger(name)
    out = (lib.log.LOGGER is logger, logger.level, handler.level, handler.formatter._fmt,
           [(line.split(" ", 2)[2] if timed else line).replace(name, "NAME")
            for line in stream.getvalue().splitlines()])
    logger.removeHandler(handler)
    return out


@pytest.mark.parametrize("kwargs", [{}, {"level": logging.DEBUG}, {"level": logging.ERROR},
                                    {"format_string": "%(name)s|%(levelname)s|%(message)s"}])
def test_set_logger_as_pylance(kwargs):
    old = (lance.log.LOGGER, lancer.log.LOGGER)
    try:
        timed = "format_string" not in kwargs  # (pylance's format starts with the time)
        theirs = _log_through(lance, "pl-test-theirs", timed, **kwargs)
        ours = _log_through(lancer, "pl-test-ours", timed, **kwargs)
    finally:
        lance.log.LOGGER, lancer.log.LOGGER = old
    assert ours == theirs
    level = kwargs.get("level", logging.INFO)
    assert len(ours[4]) == {logging.DEBUG: 2, logging.INFO: 1, logging.ERROR: 0}[level]
    assert all(line.endswith(("quiet", "loud 7")) for line in ours[4])


def test_set_logger_writes_its_file_as_pylance(tmp_path):
    old = (lance.log.LOGGER, lancer.log.LOGGER)
    texts = {}
    try:
        for name, lib in LIBS.items():
            path = tmp_path / f"{name}.log"
            lib.set_logger(str(path), name=f"pl-file-{name}", format_string="%(levelname)s %(message)s")
            lib.log.LOGGER.info("hello")
            for h in list(lib.log.LOGGER.handlers):
                h.close()
                lib.log.LOGGER.removeHandler(h)
            texts[name] = path.read_text()
    finally:
        lance.log.LOGGER, lancer.log.LOGGER = old
    assert texts["lancer"] == texts["lance"] == "INFO hello\n"
    assert str(inspect.signature(lancer.set_logger)) == str(inspect.signature(lance.set_logger)).replace(
        "file_path='pylance.log', name='pylance', level=20",
        "file_path: Optional[str] = 'pylance.log', name: str = 'pylance', level: int = 20").replace(
        "format_string=None, log_handler=None",
        "format_string: Optional[str] = None, log_handler: Optional[logging.Handler] = None") + " -> None"


# --- lancer.torch.dist --------------------------------------------------------------------

PYLANCE_DIR = pathlib.Path(lance.__file__).parent


def _fake_torch(monkeypatch, initialized, rank, world, worker):
    """A stand-in torch (torch is not installed here): torch.distributed and
    torch.utils.data.get_worker_info with the given answers."""
    torch = types.ModuleType("torch")
    dist = types.ModuleType("torch.distributed")
    dist.is_initialized = lambda: initialized
    dist.is_available = lambda: True
    dist.get_rank = lambda: rank
    dist.get_world_size = lambda: world
    utils = types.ModuleType("torch.utils")
    data = types.ModuleType("torch.utils.data")
    data.get_worker_info = lambda: worker
    data.IterableDataset = object
    torch.distributed, torch.utils, utils.data = dist, utils, data
    for name, mod in [("torch", torch), ("torch.distributed", dist), ("torch.utils", utils),
                      ("torch.utils.data", data)]:
        monkeypatch.setitem(sys.modules, name, mod)


def _pylance_dist():
    spec = importlib.util.spec_from_file_location("_pylance_torch_dist", PYLANCE_DIR / "torch" / "dist.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


DIST_NAMES = ["get_dist_rank", "get_dist_world_size", "get_global_rank", "get_global_world_size",
              "get_mp_rank", "get_mp_world_size"]


@pytest.mark.parametrize("initialized,rank,world,worker", [
    (False, 3, 8, None), (True, 0, 1, None), (True, 3, 8, None), (True, 5, 8, (2, 4)), (False, 0, 1, (1, 3)),
    (True, 7, 8, (3, 4)),
])
def test_dist_ranks_as_pylance_with_torch(initialized, rank, world, worker, monkeypatch):
    info = None if worker is None else types.SimpleNamespace(id=worker[0], num_workers=worker[1])
    _fake_torch(monkeypatch, initialized, rank, world, info)
    theirs = _pylance_dist()
    answers = {n: (getattr(lancer.torch.dist, n)(), getattr(theirs, n)()) for n in DIST_NAMES}
    assert all(a == b for a, b in answers.values()), answers
    assert lancer.torch.dist.get_global_rank() < lancer.torch.dist.get_global_world_size()


def test_dist_without_torch_answers_rank_0_of_1_where_pylances_cannot_import():
    assert importlib.util.find_spec("torch") is None
    with pytest.raises(ImportError):
        _pylance_dist()
    answers = [getattr(lancer.torch.dist, n)() for n in DIST_NAMES]
    assert answers == [0, 1, 0, 1, 0, 1]
    assert sorted(lancer.torch.dist.__all__) == sorted(
        n for n in dir(_dist_source_names()) if not n.startswith("_"))


def _dist_source_names():
    import ast

    tree = ast.parse((PYLANCE_DIR / "torch" / "dist.py").read_text())
    return types.SimpleNamespace(**{n.name: None for n in tree.body if isinstance(n, ast.FunctionDef)})


def test_torch_package_still_holds_the_iterable_dataset(tmp_path):
    uri = str(tmp_path / "t.lance")
    lancer.write_dataset(pa.table({"x": list(range(10))}), uri)
    ds = lancer.torch.LanceIterableDataset(uri, columns=["x"], batch_size=4)
    assert ds.rank == 0 and ds.world_size == 1
    assert sorted(v for b in ds for v in b["x"].tolist()) == list(range(10))


# --- lancer.commit ------------------------------------------------------------------------

def test_commit_module_names_as_pylance():
    assert lancer.commit.CommitConflictError is lancer.CommitConflictError
    assert lancer.commit.CommitLock == lance.commit.CommitLock
    for cls in (lancer.commit.CommitConflictError, lance.commit.CommitConflictError):
        assert issubclass(cls, OSError) and issubclass(cls, Exception)


@pytest.mark.parametrize("args,kwargs", [((), {}), (("m",), {}), (("m", False), {}), (("m",), {"retryable": False}),
                                         ((), {"message": "x", "retryable": True})])
def test_commit_conflict_error_constructs_as_pylance(args, kwargs):
    def shape(cls):
        e = cls(*args, **kwargs)
        return e.args, str(e), e.retryable, e.errno, isinstance(e, OSError)

    assert shape(lancer.commit.CommitConflictError) == shape(lance.commit.CommitConflictError)


def test_a_lancer_conflict_is_caught_as_lancer_commit_conflict(tmp_path):
    uri = str(tmp_path / "c.lance")
    lancer.write_dataset(pa.table({"id": list(range(100))}), uri)
    stale = lancer.dataset(uri)._inner
    lancer.dataset(uri).delete("id < 10")
    with pytest.raises(lancer.commit.CommitConflictError) as info:
        stale.delete("id >= 90")
    assert isinstance(info.value, OSError) and info.value.retryable is True


# --- lancer.optimize.CompactionOptions ---------------------------------------------------

def test_compaction_options_keys_as_pylance():
    ours, theirs = lancer.optimize.CompactionOptions, lance.optimize.CompactionOptions
    assert ours.__total__ is theirs.__total__ is False
    assert ours.__required_keys__ == theirs.__required_keys__ == frozenset()
    assert list(ours.__annotations__) == list(theirs.__annotations__)
    assert ours(target_rows_per_fragment=5) == theirs(target_rows_per_fragment=5) == {"target_rows_per_fragment": 5}


def test_compact_files_takes_pylances_parameters():
    ours = inspect.signature(lancer.optimize.DatasetOptimizer.compact_files).parameters
    theirs = inspect.signature(importlib.import_module("lance.dataset").DatasetOptimizer.compact_files).parameters
    assert list(ours) == list(theirs)
    for name, p in theirs.items():
        assert ours[name].kind == p.kind and ours[name].default == p.default, name


def _fragmented(lib, uri):
    ds = lib.write_dataset(pa.table({"a": list(range(60))}), uri, max_rows_per_file=10)
    ds.delete("a % 7 = 0")
    return lib.dataset(uri)


COMPACTIONS = [
    {},
    {"target_rows_per_fragment": 25},
    {"target_rows_per_fragment": 25, "materialize_deletions": False},
    {"materialize_deletions_threshold": 0.5, "target_rows_per_fragment": 5},
    {"max_rows_per_group": 4, "num_threads": 1, "batch_size": 8},
    {"compaction_mode": "reencode", "binary_copy_read_batch_bytes": 1 << 16},
    {"compaction_mode": "try_binary_copy", "target_rows_per_fragment": 30},
    {"max_bytes_per_file": 1 << 30, "defer_index_remap": False, "excluded_fragment_ids": None},
]


@pytest.mark.parametrize("opts", COMPACTIONS)
def test_compact_files_with_compaction_options_as_pylance(opts, tmp_path):
    got = {}
    for name, lib in LIBS.items():
        ds = _fragmented(lib, str(tmp_path / f"{name}.lance"))
        m = ds.optimize.compact_files(**lib.optimize.CompactionOptions(**opts))
        ds = lib.dataset(ds.uri)
        got[name] = ((m.fragments_removed, m.fragments_added), len(ds.get_fragments()),
                     sorted(ds.to_table()["a"].to_pylist()))
    assert got["lancer"] == got["lance"]


@pytest.mark.parametrize("opts", [{"compaction_mode": "force_binary_copy"}, {"max_source_fragments": 2},
                                  {"max_source_rows": 10}, {"excluded_fragment_ids": [1]},
                                  {"data_storage_version": "2.1"}, {"defer_index_remap": True}])
def test_compaction_options_lancer_cannot_honour_are_refused_by_name(opts, tmp_path):
    ds = _fragmented(lancer, str(tmp_path / "r.lance"))
    with pytest.raises(NotImplementedError, match=next(iter(opts))):
        ds.optimize.compact_files(**opts)
    assert len(lancer.dataset(ds.uri).get_fragments()) == 6


@pytest.mark.parametrize("kwargs", [{"target_rows": 5}, {"io_buffer_size": 1 << 20}])
def test_an_unknown_compaction_keyword_is_a_type_error_as_pylance(tmp_path, kwargs):
    # (io_buffer_size is a CompactionOptions key pylance's compact_files does not take)
    for name, lib in LIBS.items():
        ds = _fragmented(lib, str(tmp_path / f"{name}.lance"))
        with pytest.raises(TypeError, match=next(iter(kwargs))):
            ds.optimize.compact_files(**kwargs)


def test_an_unknown_compaction_mode_is_a_value_error_as_pylance(tmp_path):
    msgs = []
    for name, lib in LIBS.items():
        ds = _fragmented(lib, str(tmp_path / f"{name}.lance"))
        with pytest.raises(ValueError) as info:
            ds.optimize.compact_files(compaction_mode="bogus")
        msgs.append(_strip(str(info.value)).replace("Invalid user input: ", ""))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("opts", [{"io_buffer_size": 1 << 20, "target_rows_per_fragment": 25},
                                  {"compaction_mode": "reencode", "target_rows_per_fragment": 15}])
def test_compaction_plans_take_compaction_options_as_pylance(tmp_path, opts):
    plans = []
    for name, lib in LIBS.items():
        ds = _fragmented(lib, str(tmp_path / f"{name}.lance"))
        plan = lib.optimize.Compaction.plan(ds, lib.optimize.CompactionOptions(**opts))
        plans.append(sorted(sorted(f.id for f in t.fragments) for t in plan.tasks))
    assert plans[0] == plans[1] and plans[0]


# --- lancer.pydantic ----------------------------------------------------------------------

class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    A = 1
    B = "b"


class Ratio(enum.Enum):
    HALF = 0.5


class Empty(enum.Enum):
    pass


class Pair(enum.Enum):
    P = (1, 2)


def _models(pv):
    """Models built on a pydantic module: the library's own Vector types and models
    built with either library's, so each library converts its own and pylance's
    conversion of the same shapes is compared."""
    BaseModel, Field = pydantic.BaseModel, pydantic.Field

    def make(name, annotations, defaults=None, base=BaseModel):
        ns = {"__annotations__": annotations, **(defaults or {})}
        return type(name, (base,), ns)

    Inner = make("Inner", {"x": int, "y": Optional[str]})
    Deep = make("Deep", {"inner": Inner, "items": List[Inner], "maybe": Optional[Inner]})
    return {
        "scalars": make("Scalars", {"i": int, "f": float, "s": str, "b": bool, "by": bytes, "d": dt.date,
                                    "t": dt.datetime}),
        "optional": make("Opt", {"i": Optional[int], "s": Union[str, None], "n": "int | None", "d": Optional[dt.date]}),
        "defaults": make("Defaults", {"i": int, "s": str, "o": Optional[int]}, {"i": 3, "s": "x", "o": None}),
        "lists": make("Lists", {"a": List[int], "b": list[str], "c": List[Optional[int]], "d": Optional[List[float]],
                                "e": List[List[int]], "f": Tuple[int, ...], "g": tuple[str, str],
                                "h": list[Optional[dt.datetime]]}),
        "nested": Deep,
        "enums": make("Enums", {"c": Color, "l": Level, "m": Mixed, "r": Ratio, "e": Empty, "o": Optional[Color],
                                "lc": List[Color]}),
        "vectors": make("Vecs", {"v": pv.Vector(8), "w": pv.Vector(3, pa.float16()), "n": pv.Vector(4, nullable=False),
                                 "o": Optional[pv.Vector(2, nullable=False)], "mv": pv.MultiVector(5),
                                 "mn": pv.MultiVector(2, pa.float64(), nullable=False),
                                 "lv": List[pv.Vector(2)]}),
        "tz": make("Tz", {"t": dt.datetime, "u": Optional[dt.datetime]},
                   {"t": Field(json_schema_extra={"tz": "UTC"}),
                    "u": Field(None, json_schema_extra={"tz": "Asia/Tokyo"})}),
        "extras_other": make("Ex", {"t": dt.datetime}, {"t": Field(json_schema_extra={"unit": "s"})}),
        "empty": make("Nothing", {}),
        "bad_union": make("BadUnion", {"u": Union[int, str]}),
        "bad_union3": make("BadUnion3", {"u": Optional[Union[int, str]]}),
        "bad_pipe": make("BadPipe", {"u": "int | str"}),
        "bad_dict": make("BadDict", {"d": Dict[str, int]}),
        "bad_any": make("BadAny", {"a": Any}),
        "bad_bare_list": make("BadBare", {"a": List}),
        "bad_builtin_list": make("BadBuiltin", {"a": list}),
        "bad_tuple_enum": make("BadTupleEnum", {"p": Pair}),
        "bad_nested": make("BadNested", {"i": Inner, "z": Dict[str, str]}),
        "bad_decimal": make("BadDecimal", {"x": __import__("decimal").Decimal}),
        "bad_time": make("BadTime", {"x": dt.time}),
    }


MODEL_NAMES = list(_models(lancer.pydantic))


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_pydantic_schema_as_pylance(name):
    ours = outcome(lancer.pydantic.pydantic_to_schema, _models(lancer.pydantic)[name])
    theirs = outcome(lance.pydantic.pydantic_to_schema, _models(lance.pydantic)[name])
    if theirs[0] == "ok":
        assert ours[0] == "ok", ours
        assert ours[1] == theirs[1], (ours[1], theirs[1])
        assert [f.nullable for f in ours[1]] == [f.nullable for f in theirs[1]]
    else:
        assert ours[:2] == theirs[:2] and ours[2] == theirs[2], (ours, theirs)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_each_library_converts_the_others_vectors(name):
    # a model built with pylance's Vector converts in lancer as in pylance, and back
    for model_lib, conv_lib in [(lance.pydantic, lancer.pydantic), (lancer.pydantic, lance.pydantic)]:
        model = _models(model_lib)[name]
        a, b = outcome(conv_lib.pydantic_to_schema, model), outcome(model_lib.pydantic_to_schema, model)
        if b[0] == "ok" and "vectors" in name:
            # a Vector is recognised only by its own library's FixedSizeListMixin
            assert a[0] == "error" and a[1] == "TypeError"
        else:
            assert a[:2] == b[:2]


@pytest.mark.parametrize("name", ["scalars", "optional", "defaults", "vectors", "tz", "nested", "lists"])
def test_is_nullable_and_get_extras_per_field_as_pylance(name):
    ours, theirs = _models(lancer.pydantic)[name], _models(lance.pydantic)[name]
    for (n, fo), (_, ft) in zip(ours.model_fields.items(), theirs.model_fields.items()):
        assert lancer.pydantic.is_nullable(fo) == lance.pydantic.is_nullable(ft), n
        for key in ("tz", "unit", "nope"):
            assert lancer.pydantic.get_extras(fo, key) == lance.pydantic.get_extras(ft, key)


def test_v1_models_as_pylance():
    import pydantic.v1 as v1

    def models(pv):
        class Old(v1.BaseModel):
            i: int
            o: Optional[str]
            l: List[int]
            v: pv.Vector(4)
            n: pv.Vector(2, nullable=False)
            t: dt.datetime = v1.Field(..., json_schema_extra={"tz": "UTC"})

        class OldBad(v1.BaseModel):
            d: Dict[str, int]

        return Old, OldBad

    (ours, ours_bad), (theirs, theirs_bad) = models(lancer.pydantic), models(lance.pydantic)
    assert lancer.pydantic.pydantic_to_schema(ours) == lance.pydantic.pydantic_to_schema(theirs)
    for (_, fo), (_, ft) in zip(ours.__fields__.items(), theirs.__fields__.items()):
        assert lancer.pydantic.is_nullable(fo) == lance.pydantic.is_nullable(ft)
        assert lancer.pydantic.get_extras(fo, "tz") == lance.pydantic.get_extras(ft, "tz")
    o, t = outcome(lancer.pydantic.pydantic_to_schema, ours_bad), outcome(lance.pydantic.pydantic_to_schema, theirs_bad)
    assert o == t and o[1] == "TypeError"
    vec_ok = [outcome(m, i=1, o=None, l=[1], v=[1, 2, 3, 4], n=[1, 2], t=dt.datetime(2020, 1, 1))[0]
              for m in (ours, theirs)]
    vec_bad = [outcome(m, i=1, o=None, l=[1], v=[1, 2], n=[1, 2], t=dt.datetime(2020, 1, 1))[:2]
               for m in (ours, theirs)]
    assert vec_ok == ["ok", "ok"] and vec_bad[0] == vec_bad[1] == ("error", "ValidationError")


@pytest.mark.parametrize("value", [[1.0, 2.0, 3.0], [1, 2, 3], [1.0, 2.0], [1.0, 2.0, 3.0, 4.0], "abc", None,
                                   [[1.0, 2.0, 3.0]], [1.0, "x", 3.0]])
def test_vector_validation_as_pylance(value):
    def check(pv):
        class M(pydantic.BaseModel):
            v: pv.Vector(3)
            m: Optional[pv.MultiVector(3)] = None

        single = outcome(lambda: list(M(v=value).v))
        multi = outcome(lambda: [list(x) for x in M(v=[0.0, 0.0, 0.0], m=value).m or []])
        return (single[0], single[1] if single[0] == "ok" else single[1:2],
                multi[0], multi[1] if multi[0] == "ok" else multi[1:2],
                repr(pv.Vector(3)([1.0])), repr(pv.MultiVector(3)([])), pv.Vector(3).dim(),
                pv.MultiVector(7).value_arrow_type(), pv.MultiVector(7).is_multi_vector())

    assert check(lancer.pydantic) == check(lance.pydantic)


def test_vector_types_are_fixed_size_list_mixins():
    for pv in (lancer.pydantic, lance.pydantic):
        v = pv.Vector(4, pa.float64(), nullable=False)
        assert issubclass(v, pv.FixedSizeListMixin) and issubclass(v, list)
        assert (v.dim(), v.value_arrow_type(), v.nullable()) == (4, pa.float64(), False)
        assert not hasattr(v, "is_multi_vector")
    assert inspect.isabstract(lancer.pydantic.FixedSizeListMixin)


# --- LanceDataset.from_pydantic_model -------------------------------------------------------

def _item_models():
    class Inner(pydantic.BaseModel):
        x: int
        y: Optional[str] = None

    def for_lib(pv):
        class UserEvent(pydantic.BaseModel):
            id: int
            name: str
            score: Optional[float] = None
            tags: List[str] = []
            when: dt.datetime
            inner: Inner
            emb: pv.Vector(3)

        return UserEvent

    return Inner, for_lib


def _events(model, inner, n=3):
    return [model(id=i, name=f"n{i}", score=None if i % 2 else i / 2, tags=["a"] * i,
                  when=dt.datetime(2024, 1, 1 + i), inner=inner(x=i, y=None), emb=[0.5, i, 1.0]) for i in range(n)]


def test_from_pydantic_model_writes_what_pylance_writes(tmp_path):
    inner, for_lib = _item_models()
    got = {}
    for name, lib in LIBS.items():
        model = for_lib(getattr(lib, "pydantic") if name == "lancer" else lance.pydantic)
        ds = lib.LanceDataset.from_pydantic_model(model, _events(model, inner), str(tmp_path / f"{name}.lance"))
        ds = lib.LanceDataset.from_pydantic_model(model, _events(model, inner, 2), ds.uri, mode="append")
        got[name] = (ds.schema, ds.to_table().to_pylist(), ds.version)
    assert got["lancer"] == got["lance"]
    # the schema comes from the annotations: score is float64 although a batch's values are all None
    assert got["lancer"][0].field("score").type == pa.float64()
    assert lance.dataset(str(tmp_path / "lancer.lance")).to_table() == lancer.dataset(
        str(tmp_path / "lance.lance")).to_table()


def test_from_pydantic_model_names_the_dataset_after_the_class_as_pylance(tmp_path, monkeypatch):
    made = {}
    for name, lib in LIBS.items():
        d = tmp_path / name
        d.mkdir()
        monkeypatch.chdir(d)

        class HTTPRequestLog(pydantic.BaseModel):
            code: int

        lib.LanceDataset.from_pydantic_model(HTTPRequestLog, [HTTPRequestLog(code=200)])
        made[name] = sorted(os.listdir(d))
    assert made["lancer"] == made["lance"] == ["h_t_t_p_request_log"]


def test_from_pydantic_model_errors_as_pylance(tmp_path):
    class A(pydantic.BaseModel):
        i: int

    class B(A):
        j: int = 0

    cases = [(A, (A(i=1) for _ in range(2))), (A, [A(i=1), B(i=2)]), (A, []), (dict, [{}]), (A(i=1), [A(i=1)]),
             (A, [{"i": 1}]), (A, (A(i=1),))]
    for k, (model, data) in enumerate(cases):
        ours = outcome(lancer.LanceDataset.from_pydantic_model, model, data, str(tmp_path / f"o{k}"))
        theirs = outcome(lance.LanceDataset.from_pydantic_model, model, data, str(tmp_path / f"t{k}"))
        assert theirs[0] == "error" and ours == theirs, (k, ours, theirs)
    assert inspect.ismethod(lancer.LanceDataset.from_pydantic_model)
    ours = inspect.signature(lancer.LanceDataset.from_pydantic_model).parameters
    theirs = inspect.signature(lance.LanceDataset.from_pydantic_model).parameters
    def shape(params):
        return [(p.name, p.kind, p.default) for p in params.values()]

    assert shape(ours) == shape(theirs)


# --- DataFile.create ------------------------------------------------------------------------

def _with_files(tmp_path):
    """A dataset (written by pylance) and Lance files in its data directory."""
    t = pa.table({"a": [1, 2, 3], "s": [{"p": 1, "q": 2}] * 3,
                  "ls": pa.array([[{"x": 1, "y": "a"}]] * 3,
                                 pa.list_(pa.struct([("x", pa.int64()), ("y", pa.string())]))),
                  "v": pa.array([[1.0, 2.0]] * 3, pa.list_(pa.float32(), 2)),
                  "e": pa.array([[1]] * 3, pa.large_list(pa.int32())),
                  "b": ["x", "y", "z"], "c": [[1.0], [2.0], [3.0]]})
    uri = str(tmp_path / "d.lance")
    lance.write_dataset(t, uri)
    files = {
        "b": t.select(["b"]), "ab": t.select(["a", "b"]), "s": t.select(["s"]), "ca": t.select(["c", "a"]),
        "ls": t.select(["ls"]), "v": t.select(["v"]), "e": t.select(["e"]), "va": t.select(["v", "a"]),
        "all": t, "wrong_type": pa.table({"a": ["str"]}),
        "extra": pa.table({"zz": [1]}), "sp": pa.table({"s": [{"p": 1}]}), "sqp": pa.table({"s": [{"q": 1, "p": 2}]}),
        "sx": pa.table({"s": [{"p": 1, "zz": 3}]}),
    }
    for name, tab in files.items():
        with lance.file.LanceFileWriter(f"{uri}/data/{name}.lance") as w:
            w.write_batch(tab)
    with lance.file.LanceFileWriter(f"{uri}/data/v21.lance", version="2.1") as w:
        w.write_batch(t.select(["a", "s"]))
    os.makedirs(f"{uri}/data/sub")
    with lance.file.LanceFileWriter(f"{uri}/data/sub/in.lance") as w:
        w.write_batch(t.select(["a"]))
    return uri, list(files) + ["v21"]


def _data_file(d):
    return (str(d.path), d.fields, d.column_indices, d.file_major_version, d.file_minor_version, d.file_size_bytes,
            d.base_id)


def _strip(msg):
    return msg.split(", /home/")[0].split(", src/")[0]


def test_data_file_create_as_pylance(tmp_path):
    import lance.file  # noqa: F401

    uri, names = _with_files(tmp_path)
    paths = [f"{n}.lance" for n in names] + ["missing.lance", "sub/in.lance", "sub%2Fin.lance", "é.lance",
                                             "a b#c.lance", "x~y.lance"]
    for odd in ("é.lance", "a b#c.lance", "x~y.lance"):
        with lance.file.LanceFileWriter(f"{uri}/data/{odd}") as w:
            w.write_batch(pa.table({"a": [1]}))
    with lance.file.LanceFileWriter(f"{uri}/data/x%7Ey.lance") as w:  # (what pylance opens for "x~y.lance")
        w.write_batch(pa.table({"b": ["s"]}))
    for path in paths:
        ours = outcome(lancer.fragment.DataFile.create, lancer.dataset(uri), path)
        theirs = outcome(lance.fragment.DataFile.create, lance.dataset(uri), path)
        if theirs[0] == "ok":
            assert ours[0] == "ok" and _data_file(ours[1]) == _data_file(theirs[1]), (path, ours, theirs)
        else:
            assert ours[0] == "error" and theirs[1] == "ValueError", (path, ours, theirs)
            assert _strip(ours[2]) == _strip(theirs[2]), path
    assert inspect.signature(lancer.fragment.DataFile.create).parameters.keys() == \
        inspect.signature(lance.fragment.DataFile.create).parameters.keys()


@pytest.mark.parametrize("is_root", [True, False])
def test_data_file_create_in_a_base_as_pylance(tmp_path, is_root):
    import lance.file  # noqa: F401

    t = pa.table({"a": [1, 2, 3]})
    uri, base = str(tmp_path / "d.lance"), str(tmp_path / "base")
    lance.write_dataset(t, uri, initial_bases=[lance.DatasetBasePath(base, name="b1", is_dataset_root=is_root)],
                        target_bases=["b1"])
    where = base + ("/data" if is_root else "")
    os.makedirs(where, exist_ok=True)
    with lance.file.LanceFileWriter(f"{where}/x.lance") as w:
        w.write_batch(t)
    for bid, path in [(1, "x.lance"), (2, "x.lance"), (1, "y.lance"), (None, "x.lance")]:
        ours = outcome(lancer.fragment.DataFile.create, lancer.dataset(uri), path, base_id=bid)
        theirs = outcome(lance.fragment.DataFile.create, lance.dataset(uri), path, base_id=bid)
        if theirs[0] == "ok":
            assert ours[0] == "ok" and _data_file(ours[1]) == _data_file(theirs[1])
        else:
            assert ours[0] == "error" and _strip(ours[2]) == _strip(theirs[2]), (bid, path, ours, theirs)


def test_a_created_data_file_replaces_a_column(tmp_path):
    import lance.file  # noqa: F401

    uri = str(tmp_path / "r.lance")
    ds = lancer.write_dataset(pa.table({"a": [1, 2, 3]}), uri)
    ds.add_columns({"b": "a + 3"})  # (b in a data file of its own, as a replacement needs)
    with lance.file.LanceFileWriter(f"{uri}/data/newb.lance") as w:
        w.write_batch(pa.table({"b": [40, 50, 60]}))
    ds = lancer.dataset(uri)
    df = lancer.fragment.DataFile.create(ds, "newb.lance")
    assert _data_file(df) == _data_file(lance.fragment.DataFile.create(lance.dataset(uri), "newb.lance"))
    op = lancer.LanceOperation.DataReplacement([lancer.LanceOperation.DataReplacementGroup(0, df)])
    done = lancer.LanceDataset.commit(uri, op, read_version=ds.version)
    assert done.to_table().to_pydict() == {"a": [1, 2, 3], "b": [40, 50, 60]}
    assert lance.dataset(uri).to_table().to_pydict() == {"a": [1, 2, 3], "b": [40, 50, 60]}


# --- lancer.udf ---------------------------------------------------------------------------

def test_udf_module_names_as_pylance():
    assert sorted(lancer.udf.__all__) == ["BatchUDF", "BatchUDFCheckpoint", "batch_udf", "normalize_transform"]
    assert lancer.batch_udf is lancer.udf.batch_udf and lancer.BatchUDF is lancer.udf.BatchUDF
    for name in ("BatchUDF", "batch_udf", "normalize_transform"):
        assert list(inspect.signature(getattr(lancer.udf, name)).parameters) == list(
            inspect.signature(getattr(lance.udf, name)).parameters)
    members = {"cleanup", "get_batch", "insert_batch", "get_fragment", "insert_fragment", "BatchInfo"}
    assert members <= set(dir(lancer.udf.BatchUDFCheckpoint)) and members <= set(dir(lance.udf.BatchUDFCheckpoint))
    assert lancer.udf.BatchUDFCheckpoint.BatchInfo._fields == lance.udf.BatchUDFCheckpoint.BatchInfo._fields


def _tables(path):
    with sqlite3.connect(path) as db:
        names = sorted(r[0] for r in db.execute("select name from sqlite_master where type = 'table'"))
        return {n: [(c[1], c[2]) for c in db.execute(f"pragma table_info({n})")] for n in names}


def test_checkpoint_files_have_pylances_tables_and_read_each_other(tmp_path):
    ours = lancer.udf.BatchUDFCheckpoint(str(tmp_path / "o.sqlite"))
    theirs = lance.udf.BatchUDFCheckpoint(str(tmp_path / "t.sqlite"))
    assert _tables(ours.path) == _tables(theirs.path) == {
        "batches": [("fragment_id", "INT"), ("batch_index", "INT"), ("result", "BLOB")],
        "fragments": [("fragment_id", "INT"), ("data", "BLOB")]}
    batch = pa.record_batch([pa.array([1, 2, None])], ["x"])
    for writer, reader_cls in [(ours, lance.udf.BatchUDFCheckpoint), (theirs, lancer.udf.BatchUDFCheckpoint)]:
        writer.insert_batch(writer.BatchInfo(3, 1), batch)
        writer.insert_batch(writer.BatchInfo(4, 0), batch.slice(0, 1))
        reader = reader_cls(writer.path)
        assert reader.get_batch(reader.BatchInfo(3, 1)) == batch
        assert reader.get_batch(reader.BatchInfo(3, 0)) is None
        reader.insert_fragment(3, '{"id":3}')
        assert writer.get_fragment(3) == '{"id":3}' and writer.get_fragment(4) is None
        assert writer.get_batch(writer.BatchInfo(3, 1)) is None  # (a recorded fragment's batches go)
        assert writer.get_batch(writer.BatchInfo(4, 0)) == batch.slice(0, 1)
        reader.cleanup()
        assert not os.path.exists(writer.path)


def test_batch_udf_holds_its_checkpoint_as_pylance(tmp_path):
    schema = pa.schema([pa.field("y", pa.int64())])
    for name, lib in LIBS.items():
        path = str(tmp_path / f"{name}.sqlite")
        f = lib.batch_udf(output_schema=schema, checkpoint_file=path)(lambda b: b)
        g = lib.batch_udf()(lambda b: b)
        assert isinstance(f, lib.udf.BatchUDF) and isinstance(f.cache, lib.udf.BatchUDFCheckpoint)
        assert f.cache.path == path and os.path.exists(path) and g.cache is None and g.output_schema is None
        assert f.output_schema == schema and f(pa.record_batch([pa.array([1])], ["z"])).num_rows == 1


def _interrupted_run(lib, uri, ck, fail_at, calls, deletions=False):
    """add_columns of a checkpointed function that fails on its ``fail_at``-th call."""
    ds = lib.write_dataset(pa.table({"a": list(range(10))}), uri, max_rows_per_file=4)
    if deletions:
        ds.delete("a = 5")
        ds = lib.dataset(uri)
    udf = _udf(lib, ck, calls, fail_at)
    with pytest.raises(Exception, match="boom"):
        ds.add_columns(udf, batch_size=3)
    return ds


def _udf(lib, ck, calls, fail_at=None):
    @lib.batch_udf(output_schema=pa.schema([pa.field("b", pa.int64())]), checkpoint_file=ck)
    def times_ten(batch):
        calls.append(batch["a"].to_pylist())
        if fail_at is not None and len(calls) == fail_at:
            raise RuntimeError("boom")
        return pa.record_batch([pa.array([x * 10 for x in batch["a"].to_pylist()], pa.int64())], ["b"])

    return times_ten


def _checkpoint_state(ck):
    with sqlite3.connect(ck) as db:
        return (sorted(tuple(r) for r in db.execute("select fragment_id, batch_index from batches")),
                sorted(r[0] for r in db.execute("select fragment_id from fragments")))


@pytest.mark.parametrize("fail_at", [1, 2, 3, 4, 5])
def test_an_interrupted_add_columns_resumes_from_its_checkpoint_as_pylance(tmp_path, fail_at):
    got = {}
    for name, lib in LIBS.items():
        uri, ck = str(tmp_path / f"{name}.lance"), str(tmp_path / f"{name}.sqlite")
        first, again = [], []
        ds = _interrupted_run(lib, uri, ck, fail_at, first)
        state = _checkpoint_state(ck)
        version = lib.dataset(uri).version
        ds = lib.dataset(uri)
        ds.add_columns(_udf(lib, ck, again), batch_size=3)
        got[name] = (first, state, version, again, os.path.exists(ck), ds.to_table().to_pydict(),
                     lib.dataset(uri).version)
    assert got["lancer"] == got["lance"], got
    assert got["lancer"][5]["b"] == [10 * a for a in range(10)]


@pytest.mark.parametrize("writer,resumer", [("lance", "lancer"), ("lancer", "lance")])
def test_either_library_resumes_the_others_checkpoint(tmp_path, writer, resumer):
    uri, ck = str(tmp_path / "d.lance"), str(tmp_path / "ck.sqlite")
    first, again = [], []
    _interrupted_run(LIBS[writer], uri, ck, 4, first)  # fragment 0 recorded, fragment 1's first batch saved
    assert _checkpoint_state(ck) == ([(1, 0)], [0])
    lib = LIBS[resumer]
    lib.dataset(uri).add_columns(_udf(lib, ck, again), batch_size=3)
    assert again == [[7], [8, 9]]  # nothing recomputed
    assert not os.path.exists(ck)
    for other in LIBS.values():
        assert other.dataset(uri).to_table().to_pydict() == {"a": list(range(10)), "b": [10 * a for a in range(10)]}


def test_lancer_resumes_pylances_checkpoint_of_a_dataset_with_deletions(tmp_path):
    # pylance leaves deleted rows out of the batches it passes, lancer passes them: a
    # saved batch of another length is computed again, the others are taken
    uri, ck = str(tmp_path / "d.lance"), str(tmp_path / "ck.sqlite")
    first, again = [], []
    _interrupted_run(lance, uri, ck, 5, first, deletions=True)
    assert first == [[0, 1, 2], [3], [4, 6], [7], [8, 9]]
    assert _checkpoint_state(ck) == ([], [0, 1])
    lancer.dataset(uri).add_columns(_udf(lancer, ck, again), batch_size=3)
    assert again == [[8, 9]]
    want = {"a": [0, 1, 2, 3, 4, 6, 7, 8, 9], "b": [0, 10, 20, 30, 40, 60, 70, 80, 90]}
    assert lancer.dataset(uri).to_table().to_pydict() == lance.dataset(uri).to_table().to_pydict() == want

    uri2, ck2 = str(tmp_path / "e.lance"), str(tmp_path / "ck2.sqlite")
    first, again = [], []
    _interrupted_run(lance, uri2, ck2, 4, first, deletions=True)  # fragment 1's batch 0 saved without row 5
    lancer.dataset(uri2).add_columns(_udf(lancer, ck2, again), batch_size=3)
    assert again == [[4, 5, 6], [7], [8, 9]]
    assert lancer.dataset(uri2).to_table().to_pydict() == want


def test_checkpointed_add_columns_commits_what_a_plain_one_does(tmp_path):
    got = []
    for k, ck in enumerate([None, str(tmp_path / "ck.sqlite")]):
        uri = str(tmp_path / f"{k}.lance")
        ds = lancer.write_dataset(pa.table({"a": list(range(10)), "c": ["x"] * 10}), uri, max_rows_per_file=4)
        ds.add_columns(_udf(lancer, ck, []), read_columns=["a"], batch_size=3)
        ds = lancer.dataset(uri)
        got.append((ds.schema, ds.to_table().to_pydict(), ds.version, [f.physical_rows for f in ds.get_fragments()],
                    [[d.fields for d in f.data_files()] for f in ds.get_fragments()], ds.max_field_id))
    assert got[0] == got[1]
    assert lance.dataset(str(tmp_path / "1.lance")).to_table().to_pydict() == got[0][1]


def test_a_checkpointed_function_is_refused_per_fragment_as_pylance(tmp_path):
    for name, lib in LIBS.items():
        uri = str(tmp_path / f"{name}.lance")
        ds = lib.write_dataset(pa.table({"a": [1, 2]}), uri)
        udf = _udf(lib, str(tmp_path / f"{name}.sqlite"), [])
        with pytest.raises(ValueError, match="checkpoint file cannot be used .* LanceFragment.merge_columns"):
            ds.get_fragments()[0].merge_columns(udf)


def _norm_shape(x):
    if isinstance(x, (lance.udf.BatchUDF, lancer.udf.BatchUDF)):
        return ("BatchUDF", x.output_schema)
    if isinstance(x, pa.RecordBatchReader):
        return ("reader", x.read_all())
    return ("value", x)


@pytest.mark.parametrize("case", ["dict", "bad_key", "bad_value", "udf", "udf_schema", "func", "func_pandas",
                                  "func_fails", "table", "batches", "gen", "int", "rowid", "empty_func",
                                  "empty_udf"])
def test_normalize_transform_as_pylance(tmp_path, case):
    def run(lib):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        ds = lib.write_dataset(pa.table({"a": [1, 2, 3], "s": ["x", "y", "z"]}), uri)
        if case.startswith("empty"):
            ds.delete("true")
            ds = lib.dataset(uri)
        plus = lambda b: pa.record_batch([pa.array([v + 1 for v in b["a"].to_pylist()])], ["p"])  # noqa: E731
        inputs = {
            "dict": ({"x": "a + 1"}, None), "bad_key": ({1: "a"}, None), "bad_value": ({"x": 1}, None),
            "udf": (lib.batch_udf()(plus), None),
            "udf_schema": (lib.batch_udf(output_schema=pa.schema([pa.field("p", pa.int32())]))(plus), None),
            "func": (plus, ["a"]), "func_pandas": (lambda b: b.to_pandas()[["a"]].rename(columns={"a": "q"}), None),
            "func_fails": (lambda b: b["nope"], None), "table": (pa.table({"n": [7, 8, 9]}), None),
            "batches": (pa.table({"n": [1, 2, 3]}).to_reader(), None), "int": (5, None),
            "gen": ((b for b in [pa.record_batch([pa.array([1, 2, 3])], ["n"])]), None),
            "rowid": (lambda b: pa.record_batch([b["_rowid"]], ["r"]), ["a", "_rowid"]),
            "empty_func": (plus, None), "empty_udf": (lib.batch_udf()(plus), None),
        }
        value, cols = inputs[case]
        try:
            return ("ok", _norm_shape(lib.udf.normalize_transform(value, ds, cols)))
        except BaseException as e:  # (StopIteration included)
            return ("error", type(e).__name__, str(e).replace("lancer.udf", "lance.udf"))

    ours, theirs = run(lancer), run(lance)
    if theirs[0] == "error":
        assert ours[:2] == theirs[:2], (ours, theirs)
        # (the text up to the detail; pylance's names the key's type where a value is wrong)
        assert ours[2].split(":")[0].split(" Got ")[0] == theirs[2].split(":")[0].split(" Got ")[0]
    else:
        assert ours == theirs
