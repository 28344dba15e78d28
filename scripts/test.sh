#!/usr/bin/env bash
# Lancer's full test suite: installs the pinned pylance oracles, writes a fresh set of
# golden files with each of them (live interop check), then runs every Rust test,
# which decodes both the checked-in and the freshly written files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup-python.sh
live="$root/target/golden-live"
rm -rf "$live"
mkdir -p "$live"
for v in 14 12 11; do
  echo "test.sh: writing live golden files with pylance $v" >&2
  ".venv/pylance-$v/bin/python" scripts/gen_golden_files.py "$live" > "$live/gen-$v.log" 2>&1 \
    || { cat "$live/gen-$v.log" >&2; exit 1; }
done
livedata="$root/target/golden-datasets-live"
rm -rf "$livedata"
mkdir -p "$livedata"
for v in 14 12 11; do
  echo "test.sh: writing live golden datasets with pylance $v" >&2
  ".venv/pylance-$v/bin/python" scripts/gen_golden_datasets.py "$livedata" > "$livedata/gen-$v.log" 2>&1 \
    || { cat "$livedata/gen-$v.log" >&2; exit 1; }
done
suite="$root/target/filter-suite-live"
rm -rf "$suite"
mkdir -p "$suite"
for v in 14 12 11; do
  echo "test.sh: running the filter suite with pylance $v" >&2
  ".venv/pylance-$v/bin/python" scripts/gen_filter_suite.py "$suite" > "$suite/gen-$v.log" 2>&1 \
    || { cat "$suite/gen-$v.log" >&2; exit 1; }
done
export LANCER_FILTER_SUITE_LIVE="$suite"
export LANCER_GOLDEN_DATASETS_LIVE="$livedata"
export LANCER_GOLDEN_LIVE="$live"
export LANCER_REQUIRE_PYLANCE=1
cargo test --workspace --all-targets
