#!/usr/bin/env bash
# Install the optional IMDL-BenCo backend (detectors benco.*) into the active
# virtual environment, beside an existing diffzoo install (docs/detectors.md,
# "IMDL-BenCo's localizers").
#
# Why a script and not an extra: imdlbenco 0.1.45 pins numpy<2 and
# albumentations==1.3.0 and does not declare torch. Installed with its pins it
# would replace diffzoo's numpy 2 (and whatever pulls torch could replace the
# pinned torch). Its model zoo runs as it is on diffzoo's numpy and torch (the
# backend's tests check every model), so this installs imdlbenco and exactly the
# modules its package imports, each pinned, with --no-deps: nothing already
# installed changes, torch least of all (checked below).
#
#   . .venv/bin/activate && bash scripts/install-benco.sh
set -euo pipefail
cd "$(dirname "$0")/.."
before="$(python -c "import torch, diffzoo; print(torch.__version__)" 2>/dev/null)" || {
    echo "install-benco: install diffzoo (and torch) first: see README 'Set up'" >&2; exit 1; }
PINS=(
    imdlbenco==0.1.45            # the models (IMDLBenCo.model_zoo)
    albumentations==1.3.0        # imported by IMDLBenCo's package (its transforms), at its own pin
    qudida==0.0.4                # imported by albumentations 1.3.0
    fvcore==0.1.5.post20221221   # imported by IMDLBenCo (model complexity)
    iopath==0.1.10               # imported by fvcore
    portalocker==4.4.2           # imported by iopath
    termcolor==3.3.0             # imported by fvcore
    yacs==0.1.8                  # PSCC-Net's and CAT-Net's configs
    jpegio==0.2.8                # CAT-Net's JPEG DCT coefficients (as IMDL-BenCo reads them); built from
                                 # its sdist: needs a C++ compiler, ~30 s
)
pip install -q --no-deps "${PINS[@]}"
after="$(python -c "import torch; print(torch.__version__)")"
if [ "$before" != "$after" ]; then
    echo "install-benco: torch changed from $before to $after; reinstall it (README 'Set up')" >&2; exit 1
fi
python -c "import IMDLBenCo, numpy; print(f'IMDL-BenCo {IMDLBenCo.__version__} installed (numpy {numpy.__version__}, torch $after)')"
