"""``write_dataset(progress=)`` (issue 61): a ``FragmentWriteProgress`` told of each
fragment a write begins and completes, next to pylance 14 on the same writes (create,
append, overwrite; one and several fragments; several storage versions), the
file-system tracker's files, and a callback that raises."""

import json
import os

import pyarrow as pa
import pytest

import lance
import lancer
import lancer.progress


def recorder(mod):
    base = __import__(mod.__name__ + ".progress", fromlist=["FragmentWriteProgress"]).FragmentWriteProgress

    class Recorder(base):
        def __init__(self):
            self.events = []

        def begin(self, fragment, **kwargs):
            self.events.append(("begin", fragment.physical_rows, len(fragment.files)))

        def complete(self, fragment, **kwargs):
            self.events.append(("complete", fragment.physical_rows, len(fragment.files)))

    return Recorder()


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("rows,per_file", [(5, 10), (25, 10), (30, 10), (1, 1)])
@pytest.mark.parametrize("mode", ["create", "append", "overwrite"])
def test_write_progress_events_as_pylance(tmp_path, version, rows, per_file, mode):
    t = pa.table({"a": list(range(rows)), "s": [f"s{i}" for i in range(rows)]})
    seen = {}
    for mod in (lance, lancer):
        path = str(tmp_path / f"{mod.__name__}.lance")
        if mode != "create":
            lance.write_dataset(t, path, data_storage_version=version)
        rec = recorder(mod)
        mod.write_dataset(t, path, mode=mode, max_rows_per_file=per_file, progress=rec,
                          data_storage_version=version)
        written = -(-rows // per_file)  # the fragments this write adds
        new = lance.dataset(path).get_fragments()[-written:]
        seen[mod.__name__] = (rec.events, [f.count_rows() for f in new])
    ours, theirs = seen["lancer"], seen["lance"]
    begins = lambda ev: [e for e in ev if e[0] == "begin"]  # noqa: E731
    completes = lambda ev: [e for e in ev if e[0] == "complete"]  # noqa: E731
    # one begin per fragment, before it has files or rows, as pylance's
    assert begins(ours[0]) == begins(theirs[0]) == [("begin", None, 0)] * len(ours[1])
    # a complete per fragment with its rows and its data file; pylance 14 tells only
    # those its row cap closed (a write's last, partly filled file never), the same
    assert completes(ours[0]) == [("complete", n, 1) for n in ours[1]]
    assert completes(theirs[0]) == [c for c in completes(ours[0]) if c[1] == per_file]
    # begin / complete alternate
    assert [e[0] for e in ours[0]] == ["begin", "complete"] * len(ours[1])
    assert ours[1] == theirs[1]


def test_file_system_progress_records_fragments(tmp_path):
    t = pa.table({"a": list(range(25))})
    for mod in (lance, lancer):
        track = str(tmp_path / f"track-{mod.__name__}")
        os.makedirs(track)
        fs = __import__(mod.__name__ + ".progress", fromlist=["x"]).FileSystemFragmentWriteProgress(
            track, {"worker": "w1"})
        mod.write_dataset(t, str(tmp_path / f"{mod.__name__}.lance"), max_rows_per_file=10, progress=fs)
    ours = sorted(os.listdir(tmp_path / "track-lancer"))
    theirs = sorted(os.listdir(tmp_path / "track-lance"))
    assert "fragment_0.json" in ours and "fragment_0.json" in theirs
    # pylance 14 never completes the last (partly filled) fragment, so its marker stays
    assert theirs == ["fragment_0.in_progress", "fragment_0.json"]
    assert ours == ["fragment_0.json"]
    d = json.loads((tmp_path / "track-lancer" / "fragment_0.json").read_text())
    assert d["files"] == [] and d["physical_rows"] is None


def test_a_failing_progress_callback_fails_the_write(tmp_path):
    class Broken(lancer.progress.FragmentWriteProgress):
        def begin(self, fragment, **kwargs):
            raise RuntimeError("tracker is down")

        def complete(self, fragment, **kwargs):
            pass

    path = str(tmp_path / "x.lance")
    with pytest.raises(Exception) as e:
        lancer.write_dataset(pa.table({"a": [1, 2]}), path, progress=Broken())
    assert "tracker is down" in str(e.value)
    with pytest.raises(Exception):
        lancer.dataset(path)
    with pytest.raises(TypeError):
        lancer.write_dataset(pa.table({"a": [1]}), str(tmp_path / "y.lance"), progress=object())
