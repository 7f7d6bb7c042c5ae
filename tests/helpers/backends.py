"""The optional backends (IMDL-BenCo, MMSegmentation): a test that needs one skips without it,
or fails where the environment variable that requires it is ``1`` (CI's backend venv)."""

from __future__ import annotations

import importlib
import importlib.util
import os

import pytest

REQUIRE_BENCO = "DIFFZOO_REQUIRE_BENCO"
REQUIRE_MMSEG = "DIFFZOO_REQUIRE_MMSEG"
MMSEG_SKIP_REASON = ("optional MMSeg backend not installed: pip install 'diffzoo[mmseg]' && "
                     "bash scripts/install-mmseg.sh")


def require_benco(*modules: str):
    """Skip (fail under DIFFZOO_REQUIRE_BENCO=1) without IMDL-BenCo, or without ``modules``."""
    from diffzoo.plugins.benco import specs as benco_specs

    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if benco_specs.installed() and not missing:
        return
    what = f" ({', '.join(missing)} missing)" if missing else ""
    reason = f"optional IMDL-BenCo backend not installed{what}: {benco_specs.INSTALL}"
    if os.environ.get(REQUIRE_BENCO) == "1":
        pytest.fail(f"{REQUIRE_BENCO}=1 but {reason}")
    pytest.skip(reason)


def require_backend():
    """diffzoo's mmseg model module, once mmseg and mmcv's compiled ops import;
    otherwise skip, or fail where ``DIFFZOO_REQUIRE_MMSEG=1`` (CI)."""
    for module, reason in (("mmseg", MMSEG_SKIP_REASON),
                           ("mmcv.ops", MMSEG_SKIP_REASON + " (mmcv has no compiled ops)")):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            if os.environ.get(REQUIRE_MMSEG) == "1":
                pytest.fail(f"{REQUIRE_MMSEG}=1 but {reason} ({type(exc).__name__}: {exc})")
            pytest.skip(reason)
    from diffzoo.plugins.mmseg import model

    return model
