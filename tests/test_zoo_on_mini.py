"""Every in-tree detector's default card trains on the demo data (`mini`) with
decreasing loss and gives a record for each standard case it can serve.

Slow (the real-size networks train on CPU from random weights; about ten
minutes on 2 cores): run with ``python -m pytest -m slow tests/test_zoo_on_mini.py``.
"""

from __future__ import annotations

import pytest

from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.runner import Runner

DETECTORS = ("segformer", "deeplabv3plus", "fcn8s", "cnnspot", "universalfakedet")


@pytest.mark.slow
@pytest.mark.parametrize("family", DETECTORS)
def test_default_card_trains_and_records_on_mini(family):
    card = get_registry().get("detector", family).card
    request = RunRequest(detector=family, suite="standard", dataset="mini", pretrained=False,
                         iterations=60, bootstrap=0, device="cpu")
    output = Runner(request).run()
    logs = {r.data["detector"]["task"]: r.data["training"] for r in output.records}
    for task, log in logs.items():
        assert log["final_loss"] < log["first_loss"], (card.name, task, log)
    cases = sorted(r.data["case"]["name"] for r in output.records)
    expected = ["image"] if card.tasks == ("classification",) else ["binary", "image", "semantic"]
    assert cases == expected
