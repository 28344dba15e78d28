#!/usr/bin/env bash
# Installs the `lancer` Python package into a venv for development, as `maturin develop`
# does, from a native module cargo already built: the module is copied to
# python/lancer/_lancer.abi3.so and a .pth file puts python/ on the venv's path.
# Usage: scripts/install-python-dev.sh VENV MODULE.so
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$1 module=$2
[ -f "$module" ] || { echo "install-python-dev.sh: no native module at $module (build crates/lancer-python first)" >&2; exit 1; }
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# a copy made beside the old one and moved over it: a running interpreter keeps its mapping
cp "$module" "$root/python/lancer/_lancer.abi3.so.tmp"
mv -f "$root/python/lancer/_lancer.abi3.so.tmp" "$root/python/lancer/_lancer.abi3.so"
# a wheel installed earlier would shadow the sources
"$venv/bin/python" -m pip uninstall -q -y lancer 2>/dev/null || true
echo "$root/python" > "$site/lancer.pth"
"$venv/bin/python" -c 'import lancer, sys; print(f"install-python-dev.sh: lancer {lancer.__version__} from {lancer.__file__}", file=sys.stderr)'
