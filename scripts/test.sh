#!/usr/bin/env bash
# Lancer's full test suite: installs the pinned pylance oracles; with each of them writes
# a fresh set of golden files, golden datasets and filter-suite answers (live interop
# checks); then runs every Rust test, which reads both the checked-in and the fresh ones.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# The front ends (CLI, Python) reach the engine through `lancer` only (and the loader):
# a source or manifest of theirs naming an inner crate fails the run.
if grep -rnE '\blancer_(table|format|index|io|util)\b|^lancer-(table|format|index|io|util)\b' \
    crates/lancer-cli crates/lancer-python; then
  echo "test.sh: the CLI / Python crates name an inner crate above; go through lancer's modules" >&2
  exit 1
fi
# What the front ends still take from below the API goes through `lancer::internal` (the
# `internal` feature); each use is a line of docs/architecture.md. The count may fall,
# never rise: lower MAX_INTERNAL_USES when it falls.
MAX_INTERNAL_USES=3
internal_uses=$(grep -rnE 'lancer::internal\b' crates/lancer-cli/src crates/lancer-python/src | grep -vE '^[^:]+:[0-9]+:\s*//' | wc -l)
echo "test.sh: front ends name lancer::internal $internal_uses times (at most $MAX_INTERNAL_USES)" >&2
if [ "$internal_uses" -gt "$MAX_INTERNAL_USES" ]; then
  grep -rnE 'lancer::internal\b' crates/lancer-cli/src crates/lancer-python/src >&2
  echo "test.sh: more uses of lancer::internal than the $MAX_INTERNAL_USES allowed; use lancer's API (or add it there)" >&2
  exit 1
fi

# Sibling modules name each other in one direction only where the layering is done
# (docs/architecture.md gives the order and the one known knot, in lancer-table).
python3 scripts/module_cycles.py crates/lancer/src:crate crates/lancer-index/src:crate \
  crates/lancer-index/src/vector:crate::vector crates/lancer-index/src/vector/ivf:super >&2

# pyo3 (crates/lancer-python) builds against the interpreter the venvs are made from
# (.venv/py is a venv of it; the module is abi3).
export PYO3_PYTHON
PYO3_PYTHON=$("${PYTHON:-python3}" -c "import sys; print(sys.executable)")
# No incremental caches: a test run compiles each crate once, and the caches took several
# GB of a disk that CI shares (stop 29's CI run failed with "No space left on device").
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# The Rust tests compile while the venvs install and the (mostly single-threaded) pylance
# generators below run: on 2 cores the build takes the other core (a clean run was
# ~26 min with the build after the generators, 27 min 40 s with it after the installs).
started=$SECONDS
mkdir -p "$root/target"
# The Python module is built in the same background job with the workspace's features
# and the test profile (`cargo build --profile test --workspace --lib`), so it reuses every
# unit the tests compiled: only the module itself links (8 s warm; the dev profile rebuilt
# the engine's crates, whose test-profile opt levels differ). `maturin develop` builds
# `-p lancer-python` alone: its own feature set recompiled most of the dependency tree
# (~7 of a clean run's 31 minutes).
{ cargo test --workspace --all-targets --no-run && cargo build --profile test --workspace --lib; } \
  > "$root/target/test-build.log" 2>&1 &
build_pid=$!
trap 'kill $build_pid 2>/dev/null || true' EXIT
bash scripts/setup-python.sh
echo "test.sh: Python environments ready at $((SECONDS - started)) s" >&2

# live WHAT SCRIPT DIR: runs SCRIPT DIR with pylance 14, 12 and 11 into a fresh DIR.
live() {
  local what=$1 script=$2 dir=$3
  rm -rf "$dir"
  mkdir -p "$dir"
  for v in 14 12 11; do
    echo "test.sh: $what with pylance $v" >&2
    ".venv/pylance-$v/bin/python" "scripts/$script" "$dir" > "$dir/gen-$v.log" 2>&1 \
      || { cat "$dir/gen-$v.log" >&2; exit 1; }
  done
}
live "writing live golden files" gen_golden_files.py "$root/target/golden-live"
live "writing live golden datasets" gen_golden_datasets.py "$root/target/golden-datasets-live"
live "running the filter suite" gen_filter_suite.py "$root/target/filter-suite-live"
live "writing live legacy (0.1) datasets" gen_golden_legacy.py "$root/target/golden-legacy-live"
# 2.3 files exist only in pylance 14; with 12 and 11 the generator writes an index.json
# saying "2.3 not supported" (and a probe file Lancer must refuse).
live "writing live 2.3 golden files" gen_golden_v23.py "$root/target/golden-v23-live"
live "writing live vector-index datasets" gen_golden_indexes.py "$root/target/golden-indexes-live"
live "writing live scalar-index datasets" gen_golden_scalar_indexes.py "$root/target/golden-scalar-live"
live "writing live vector shapes" gen_vector_shapes.py "$root/target/vector-shapes-live"
live "writing live full-text indexes" gen_golden_fts.py "$root/target/golden-fts-live"
live "writing live evolved datasets" gen_golden_evolution.py "$root/target/golden-evolution-live"
live "writing live full-text shapes" gen_fts_shapes.py "$root/target/fts-shapes-live"
# The differential test (crates/lancer/tests/differential.rs): random tables and
# histories drawn and run by each pylance; fixed seed ranges (so a run is repeatable) plus
# every seed that once found a difference (tests/data/differential-seeds.txt).
rm -rf "$root/target/differential-live"
for spec in "14 0-59" "12 1000-1029" "11 2000-2029"; do
  set -- $spec
  kept=$(sed -n "s/^$1: //p" tests/data/differential-seeds.txt)
  echo "test.sh: differential histories with pylance $1" >&2
  ".venv/pylance-$1/bin/python" scripts/gen_differential.py "$root/target/differential-live/pylance-$1" \
    --seeds "$2${kept:+,$kept}" > "$root/target/differential-$1.log" 2>&1 \
    || { cat "$root/target/differential-$1.log" >&2; exit 1; }
  ".venv/pylance-$1/bin/python" scripts/gen_differential_classes.py "$root/target/differential-live/pylance-$1" \
    >> "$root/target/differential-$1.log" 2>&1 \
    || { cat "$root/target/differential-$1.log" >&2; exit 1; }
done
export LANCER_DIFFERENTIAL_LIVE="$root/target/differential-live"
export LANCER_FTS_SHAPES_LIVE="$root/target/fts-shapes-live"
export LANCER_GOLDEN_EVOLUTION_LIVE="$root/target/golden-evolution-live"
export LANCER_GOLDEN_FTS_LIVE="$root/target/golden-fts-live"
export LANCER_VECTOR_SHAPES_LIVE="$root/target/vector-shapes-live"
export LANCER_GOLDEN_INDEXES_LIVE="$root/target/golden-indexes-live"
export LANCER_GOLDEN_SCALAR_LIVE="$root/target/golden-scalar-live"
export LANCER_GOLDEN_LIVE="$root/target/golden-live"
export LANCER_GOLDEN_DATASETS_LIVE="$root/target/golden-datasets-live"
export LANCER_FILTER_SUITE_LIVE="$root/target/filter-suite-live"
export LANCER_GOLDEN_LEGACY_LIVE="$root/target/golden-legacy-live"
export LANCER_GOLDEN_V23_LIVE="$root/target/golden-v23-live"
export LANCER_REQUIRE_PYLANCE=1

# A real S3-compatible server (moto's server mode, installed by setup-python.sh) for
# the object-storage tests; pylance and Lancer both reach it through the standard
# AWS_* environment.
port=$(.venv/moto/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.venv/moto/bin/moto_server -H 127.0.0.1 -p "$port" > "$root/target/moto.log" 2>&1 &
moto_pid=$!
trap 'kill $build_pid $moto_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  .venv/moto/bin/python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break
  sleep 0.2
done
export AWS_ACCESS_KEY_ID=lancer-test AWS_SECRET_ACCESS_KEY=lancer-test AWS_REGION=us-east-1
export AWS_ENDPOINT="http://127.0.0.1:$port" AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true
export LANCER_S3_BUCKET=lancer-tests
.venv/moto/bin/python -c "import urllib.request as u; u.urlopen(u.Request('http://127.0.0.1:$port/$LANCER_S3_BUCKET', method='PUT'))" \
  || { echo "test.sh: the S3 test server did not start (target/moto.log)" >&2; exit 1; }

# Azurite (the Azure Storage emulator, npm) for the Azure tests, when npm is there.
bash scripts/setup-azurite.sh
if [ -x .venv/azurite/node_modules/.bin/azurite-blob ]; then
  az_port=$(.venv/moto/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  rm -rf "$root/target/azurite"
  .venv/azurite/node_modules/.bin/azurite-blob --blobHost 127.0.0.1 --blobPort "$az_port" \
    --location "$root/target/azurite" --skipApiVersionCheck --loose > "$root/target/azurite.log" 2>&1 &
  az_pid=$!
  trap 'kill $build_pid $moto_pid $az_pid 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    .venv/moto/bin/python scripts/azurite_container.py "http://127.0.0.1:$az_port" lancer-tests 2>/dev/null && break
    sleep 0.2
  done
  export AZURE_STORAGE_USE_EMULATOR=true AZURITE_BLOB_STORAGE_URL="http://127.0.0.1:$az_port"
  export AZURE_STORAGE_ACCOUNT_NAME=devstoreaccount1
  export AZURE_STORAGE_ACCOUNT_KEY="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
  export LANCER_AZURE_CONTAINER=lancer-tests LANCER_REQUIRE_AZURITE=1
else
  echo "test.sh: Azurite is not installed (no npm): the Azure tests are skipped" >&2
fi
echo "test.sh: pylance oracles done at $((SECONDS - started)) s; waiting for the test build" >&2
wait $build_pid || { tail -50 "$root/target/test-build.log" >&2; exit 1; }
echo "test.sh: test build done at $((SECONDS - started)) s" >&2
cargo test --workspace --all-targets
echo "test.sh: Rust tests done at $((SECONDS - started)) s" >&2

# The Python package, installed into .venv/py as `maturin develop` installs it (the
# module built above copied beside python/lancer's sources, python/ on the venv's path),
# then the drop-in suite runs against pylance 14, DuckDB, polars and pandas.
echo "test.sh: installing the Python package (the module built above) and running its tests" >&2
bash scripts/install-python-dev.sh "$root/.venv/py" "$root/target/debug/lib_lancer.so"
# Two workers, each test file on one of them (module fixtures such as the Ray cluster
# stay whole): alone the suite kept ~1.1 of the 2 cores busy.
.venv/py/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile python/tests
