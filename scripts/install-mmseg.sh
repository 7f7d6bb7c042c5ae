#!/usr/bin/env bash
# Install the optional MMSegmentation backend (detectors mmseg.*) into the
# active virtual environment, next to an existing diffzoo install.
#
# Why a script and not just `pip install diffzoo[mmseg]`: mmsegmentation 1.2.2
# needs mmcv 2.1.0 *with compiled ops*, and PyPI has mmcv 2.1.0 only as a
# source archive. A plain `pip install mmcv==2.1.0` silently builds it without
# ops, and mmseg then fails at import. This script builds the wheel with ops
# against the torch already installed (CPU ops; 73 minutes on 2 busy cores,
# see docs/mmseg.md) and keeps it in $DIFFZOO_WHEELS/torch-<version>
# (default: wheels/... in the diffzoo cache, $DIFFZOO_CACHE, else
# $XDG_CACHE_HOME/diffzoo or ~/.cache/diffzoo, as diffzoo finds it) so a second install against the same
# torch takes seconds; the ops link against torch's C++ ABI, so another torch
# version builds again.
#
# Which wheel it installs (docs/mmseg.md, "Install"):
# - one named in scripts/mmcv-wheel.sha256 (a prebuilt wheel, e.g. the one the CI
#   machines keep in a wheel folder beside the clone) only when its sha256 is the one pinned there;
# - one this script built records its sha256 in <wheel>.sha256 beside it and
#   is installed again only while it still matches;
# - any other wheel in the folder is refused.
#
#   . .venv/bin/activate && bash scripts/install-mmseg.sh    # MAX_JOBS=N: compile jobs
#   DIFFZOO_WHEELS=DIR bash scripts/install-mmseg.sh
set -euo pipefail
cd "$(dirname "$0")/.."
torch_version="$(python -c "import torch; print(torch.__version__)" 2>/dev/null)" || {
    echo "install-mmseg: install diffzoo (and torch) first: see README 'Set up'" >&2; exit 1; }
python_tag="$(python -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
folder="torch-${torch_version}"
wheels="${DIFFZOO_WHEELS:-${DIFFZOO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/diffzoo}/wheels}/$folder"
pins="$PWD/scripts/mmcv-wheel.sha256"
# mmcv's setup.py imports torch, so it must build without isolation, which
# needs a setuptools that still ships pkg_resources' old APIs.
pip install -q "setuptools<81" wheel ninja
wheel="$(ls "$wheels"/mmcv-2.1.0-"$python_tag"-*.whl 2>/dev/null | head -n 1)" || true
if [ -z "$wheel" ]; then
    echo "install-mmseg: building mmcv 2.1.0 with ops for torch ${torch_version} (over an hour on 2 cores)..."
    src="$(mktemp -d)"
    trap 'rm -rf "$src"' EXIT
    pip download -q mmcv==2.1.0 --no-deps --no-binary mmcv --no-build-isolation -d "$src"
    tar xzf "$src"/mmcv-2.1.0.tar.gz -C "$src"
    # mmcv 2.1.0 compiles its ops as C++14/17; torch >= 2.10's headers need
    # C++20 ("C++20 or later compatible compiler is required to use ATen").
    aten="$(python -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include/ATen/ATen.h"))')"
    if grep -q "C++20" "$aten"; then
        sed -i "s/-std=c++14/-std=c++20/g; s/-std=c++17/-std=c++20/g" "$src"/mmcv-2.1.0/setup.py
    fi
    mkdir -p "$wheels"
    MMCV_WITH_OPS=1 FORCE_CUDA="${FORCE_CUDA:-0}" MAX_JOBS="${MAX_JOBS:-$(nproc)}" \
        pip wheel "$src"/mmcv-2.1.0 --no-deps --no-build-isolation -w "$src/out"
    built="$(ls "$src"/out/mmcv-2.1.0-*.whl)"
    wheel="$wheels/$(basename "$built")"
    mv "$built" "$wheel"
    (cd "$wheels" && sha256sum "$(basename "$wheel")" >"$(basename "$wheel").sha256")  # the build's record
fi
# Hash a private copy and install that copy, so what is checked is what is installed.
name="$(basename "$wheel")"
copy="$(mktemp -d)"
trap 'rm -rf "$copy" "${src:-}"' EXIT
cp "$wheel" "$copy/$name"
actual="$(sha256sum "$copy/$name" | cut -d" " -f1)"
pinned="$(awk -v w="$folder/$name" '$1 !~ /^#/ && $2 == w {print $1}' "$pins")"
if [ -n "$pinned" ]; then
    expected="$pinned" origin="pinned in scripts/mmcv-wheel.sha256"
elif [ -f "$wheel.sha256" ]; then
    expected="$(cut -d" " -f1 "$wheel.sha256")" origin="recorded when this script built it ($wheel.sha256)"
else
    echo "install-mmseg: refusing $wheel: its sha256 is neither pinned in scripts/mmcv-wheel.sha256 nor recorded by a build of this script (delete it to build again, or if you built it yourself: cd $wheels && sha256sum $name > $name.sha256)" >&2
    exit 1
fi
if [ "$actual" != "$expected" ]; then
    echo "install-mmseg: refusing $wheel: sha256 $actual, expected $expected ($origin)" >&2
    exit 1
fi
echo "install-mmseg: $name, sha256 $actual ($origin)"
pip install -q "$copy/$name"
pip install -q -e ".[mmseg]"
python - <<'PY'
import mmcv, mmseg
from mmcv.ops import nms  # fails when mmcv was built without ops
print(f"install-mmseg: mmcv {mmcv.__version__} (with ops), mmsegmentation {mmseg.__version__}")
PY
