#!/usr/bin/env bash
# Installs the pinned pylance oracles used by the interop tests and the golden-file
# generator: one virtualenv per pylance major version under .venv/ (git-ignored).
# Idempotent: a venv whose marker file matches the pin is left as it is.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
# version -> pip requirement line(s)
declare -A pins=(
  [14]="pylance==14.0.2"
  [12]="pylance==12.0.0"
  [11]="pylance==11.0.0"
)
for major in "${!pins[@]}"; do
  venv="$root/.venv/pylance-$major"
  want="${pins[$major]} pyarrow numpy pandas"
  if [ -f "$venv/.pinned" ] && [ "$(cat "$venv/.pinned")" = "$want" ]; then
    continue
  fi
  echo "setup-python: creating $venv (${pins[$major]})" >&2
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want
  echo "$want" > "$venv/.pinned"
done

# The S3-compatible server the object-storage tests start (moto's server mode).
venv="$root/.venv/moto"
want="moto[server]==5.2.5"
if ! { [ -f "$venv/.pinned" ] && [ "$(cat "$venv/.pinned")" = "$want" ]; }; then
  echo "setup-python: creating $venv ($want)" >&2
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$want"
  echo "$want" > "$venv/.pinned"
fi

# The Python package's test environment: maturin builds `lancer` into it; pytest runs the
# drop-in suite against pylance 14 and DuckDB / polars / pandas.
venv="$root/.venv/py"
want="pylance==14.0.2 pyarrow numpy pandas polars==2.1.0 duckdb==2.0.0 pytest==9.2.0 maturin==1.16.0"
if ! { [ -f "$venv/.pinned" ] && [ "$(cat "$venv/.pinned")" = "$want" ]; }; then
  echo "setup-python: creating $venv ($want)" >&2
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want
  echo "$want" > "$venv/.pinned"
fi
