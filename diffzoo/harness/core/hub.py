"""Whether the Hugging Face hub may be asked now: not when ``HF_HUB_OFFLINE`` is set, nor when it does not answer."""

from __future__ import annotations

import os
import sys

_TRUE = {"1", "true", "yes", "on"}


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set now.

    huggingface_hub reads the variable once, at import; diffzoo reads it at
    call time and honours it for every weight source (HF hub, torchvision,
    smp), so an offline run never attempts a download.
    """
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def hub_unreachable(repo_id: str, repo_type: str = "model") -> bool:
    """Whether the hub gives no answer about ``repo_id`` (no network, a timeout), asked once and never
    retried: the hub library retries each file of a repository it cannot reach for many seconds."""
    import huggingface_hub
    from huggingface_hub.errors import HfHubHTTPError

    try:
        huggingface_hub.repo_info(repo_id, repo_type=repo_type, timeout=huggingface_hub.constants.HF_HUB_ETAG_TIMEOUT)
    except (HfHubHTTPError, ValueError):  # an answer (no such repository), or no repository id (a local folder)
        return False
    except _transport_errors():  # no answer; any other error is the library's, and propagates
        return True
    return False


def _transport_errors() -> tuple[type[BaseException], ...]:
    """What the hub's HTTP client raises when no answer comes: ``OfflineModeIsEnabled`` is a ``ConnectionError``;
    httpx's transport errors (huggingface_hub 1.x and later) and requests' (0.x) share no base with it. The
    hub imports its client with itself, so only a client already loaded can have raised."""
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for name in ("httpx2", "httpx"):
        if (client := sys.modules.get(name)) is not None:
            errors.append(client.TransportError)
    if (requests := sys.modules.get("requests")) is not None:
        errors += [requests.ConnectionError, requests.Timeout]
    return tuple(errors)
