#!/usr/bin/env bash
# Installs the pinned Python environments the tests use, each a virtualenv under .venv/
# (git-ignored): the pylance oracles of the interop tests and golden-file generators
# (one per pylance major version), moto's S3 server, and the Python package's test
# environment. Idempotent: a venv whose marker file matches its pin is left as it is.
set -euo pipefail
set -f # requirements like moto[server] are not file globs
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}

# pinned_venv NAME REQUIREMENTS: .venv/NAME with exactly REQUIREMENTS installed. The
# installs run side by side (mostly downloads and unpacking: one after another they were
# several minutes of a clean run); `finish` waits for them all.
pids=()
names=()
pinned_venv() {
  local venv="$root/.venv/$1" want=$2
  if [ -f "$venv/.pinned" ] && [ "$(cat "$venv/.pinned")" = "$want" ]; then
    return
  fi
  echo "setup-python: creating $venv ($want)" >&2
  rm -rf "$venv"
  "$py" -m venv "$venv"
  (
    # shellcheck disable=SC2086 # one requirement per word
    "$venv/bin/pip" install --quiet --disable-pip-version-check $want > "$venv.log" 2>&1 \
      && echo "$want" > "$venv/.pinned"
  ) &
  pids+=($!)
  names+=("$1")
}

finish() {
  local failed=0 i
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      echo "setup-python: installing .venv/${names[$i]} failed:" >&2
      cat "$root/.venv/${names[$i]}.log" >&2
      failed=1
    fi
  done
  return $failed
}

pinned_venv pylance-14 "pylance==14.0.2 pyarrow numpy pandas"
pinned_venv pylance-12 "pylance==12.0.0 pyarrow numpy pandas"
pinned_venv pylance-11 "pylance==11.0.0 pyarrow numpy pandas"
# The S3-compatible server the object-storage tests start (moto's server mode).
pinned_venv moto "moto[server]==5.2.5"
# pylance 14's FFILanceTableProvider is built against DataFusion 54: DataFusion-Python 54
# registers it (the oracle of lancer's provider, which DataFusion-Python 55 registers).
pinned_venv df54 "pylance==14.0.2 pyarrow datafusion==54.1.0"
# The Python package's test environment: maturin builds `lancer` into it; pytest runs
# the drop-in suite against pylance 14 and DuckDB / polars / pandas, and `lancer.ray`'s
# tests on a local Ray cluster (Ray Data from PyPI); pytest-xdist runs the suite on two
# workers (it used ~1.1 of the 2 cores alone: 299 s -> 158 s).
pinned_venv py "pylance==14.0.2 pyarrow numpy pandas polars==2.1.0 duckdb==2.0.0 pytest==9.2.0 pytest-xdist==3.8.0 maturin==1.16.0 ray[data]==2.60.0 tpchgen-cli==4.0.0 datafusion==55.0.0"
finish
