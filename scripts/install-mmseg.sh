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
# (default ~/.cache/diffzoo/wheels/...) so a second install against the same
# torch takes seconds; the ops link against torch's C++ ABI, so another torch
# version builds again.
#
#   . .venv/bin/activate && bash scripts/install-mmseg.sh    # MAX_JOBS=N: compile jobs
set -euo pipefail
cd "$(dirname "$0")/.."
torch_version="$(python -c "import torch; print(torch.__version__)" 2>/dev/null)" || {
    echo "install-mmseg: install diffzoo (and torch) first: see README 'Set up'" >&2; exit 1; }
wheels="${DIFFZOO_WHEELS:-$HOME/.cache/diffzoo/wheels}/torch-${torch_version}"
mkdir -p "$wheels"
# mmcv's setup.py imports torch, so it must build without isolation, which
# needs a setuptools that still ships pkg_resources' old APIs.
pip install -q "setuptools<81" wheel ninja
if ! ls "$wheels"/mmcv-2.1.0-*.whl >/dev/null 2>&1; then
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
    MMCV_WITH_OPS=1 FORCE_CUDA="${FORCE_CUDA:-0}" MAX_JOBS="${MAX_JOBS:-$(nproc)}" \
        pip wheel "$src"/mmcv-2.1.0 --no-deps --no-build-isolation -w "$wheels"
fi
pip install -q "$wheels"/mmcv-2.1.0-*.whl
pip install -q -e ".[mmseg]"
python - <<'PY'
import mmcv, mmseg
from mmcv.ops import nms  # fails when mmcv was built without ops
print(f"install-mmseg: mmcv {mmcv.__version__} (with ops), mmsegmentation {mmseg.__version__}")
PY
