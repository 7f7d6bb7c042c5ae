"""Where pretrained weights come from, whether they may be fetched now, and
whether they are still the bytes diffzoo saw.

Every in-tree detector reads its pretrained weights through
:func:`hub_weights` (Hugging Face hub: SegFormer, smp encoders, open_clip)
or :func:`url_weights` (torch hub URLs: torchvision, mmseg backbones).  Both
resolve the local file (downloading it unless ``HF_HUB_OFFLINE`` is set),
then :func:`check_weights` hashes it: against the card's published
``weights_sha256`` when it has one, else against the sha256 recorded at the
file's first use in ``$DIFFZOO_CACHE/weights/<card>/``, keyed by the card
name, the weights source and the file name.  A file that changed since is
refused; nothing is silently re-recorded.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from diffzoo.harness.core.cards import DetectorCard, stable_hash
from diffzoo.harness.core.errors import ModelError, WeightsUnavailableError
from diffzoo.harness.core.fsutil import atomic_write_text, cache_root, sha256_file

log = logging.getLogger(__name__)

_TRUE = {"1", "true", "yes", "on"}


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set now.

    huggingface_hub reads the variable once, at import; diffzoo reads it at
    call time and honours it for every weight source (HF hub, torchvision,
    smp), so an offline run never attempts a download.
    """
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def record_path(card: DetectorCard, source: str, filename: str) -> Path:
    """Where the sha256 of ``card``'s weights file ``filename`` from ``source`` is recorded."""
    return cache_root() / "weights" / card.name / f"{stable_hash([source, filename])}.json"


def check_weights(card: DetectorCard, path: Path | str, source: str) -> str:
    """The sha256 of ``card``'s pretrained weights file ``path`` (from ``source``), checked.

    With a published ``card.weights_sha256`` the file must match it.  Without
    one the first use records the hash and every later use must match the
    record.  A mismatch is a :class:`ModelError` naming the card, the file
    and both hashes.
    """
    path = Path(path)
    digest = sha256_file(path)
    published = (card.weights_sha256 or "").strip().lower()
    if published:
        if digest != published:
            raise ModelError(
                f"detector {card.name}: weights file {path} has sha256 {digest}, but the card publishes "
                f"{published} for {source}; the file is damaged or not the published one. "
                "Delete it and fetch it again"
            )
        return digest
    record = record_path(card, source, path.name)
    if not record.exists():
        atomic_write_text(record, json.dumps({
            "card": card.name, "source": source, "file": path.name, "path": str(path), "sha256": digest,
            "recorded": datetime.now(UTC).isoformat(timespec="seconds"),
        }, indent=2, sort_keys=True))
        log.info("%s: first use of weights %s (%s), sha256 %s recorded in %s", card.name, path, source,
                 digest, record)
        return digest
    try:
        saved: Any = json.loads(record.read_text(encoding="utf-8"))
        expected = saved["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(
            f"detector {card.name}: the weights record {record} is unreadable ({exc}); "
            f"delete it to record the sha256 of {path} anew"
        ) from None
    if digest != expected:
        raise ModelError(
            f"detector {card.name}: weights file {path} has sha256 {digest}, but {expected} was recorded "
            f"at its first use ({saved.get('recorded', '?')}, in {record}): the file changed since "
            "(a new upstream revision, a damaged download or an edit). Delete the file and fetch it again; "
            f"if the new weights are intended, delete {record} (results made with the old weights will "
            "not be comparable)"
        )
    return digest


def hub_weights(card: DetectorCard, repo_id: str, filenames: Sequence[str], *, revision: str | None = None,
                also: Sequence[str] = (), what: str | None = None, detail: str = "") -> Path:
    """The local path of the first of ``filenames`` that hub repo ``repo_id`` has
    (downloaded unless offline), with the files in ``also`` (e.g. config.json)
    fetched beside it, hash-checked by :func:`check_weights`."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    offline = hub_offline()
    what = what or f"detector {card.name}"
    path = None
    try:
        for name in also:
            hf_hub_download(repo_id, filename=name, revision=revision, local_files_only=offline)
        for name in filenames:
            try:
                path = hf_hub_download(repo_id, filename=name, revision=revision, local_files_only=offline)
                break
            except EntryNotFoundError:  # not in the repo, or (offline) not in the cache: the next one
                continue
    except OSError as exc:  # LocalEntryNotFoundError, OfflineModeIsEnabled, HfHubHTTPError
        raise WeightsUnavailableError(what, repo_id, detail) from exc
    if path is None:
        raise WeightsUnavailableError(what, repo_id, f"none of {', '.join(filenames)}; {detail}".rstrip("; "))
    source = f"hf://{repo_id}" + (f"@{revision}" if revision else "")
    check_weights(card, path, source)
    return Path(path)


def url_weights(card: DetectorCard, url: str, *, label: str | None = None, detail: str = "") -> Path:
    """The torch hub cache file of ``url`` (downloaded unless offline, its name's
    hash prefix checked as torch.hub does), hash-checked by :func:`check_weights`."""
    import torch

    target = Path(torch.hub.get_dir()) / "checkpoints" / Path(urlparse(url).path).name
    fetch = f"download {url} to {target} (the torch hub cache; TORCH_HOME moves it)"
    if not target.exists():
        if hub_offline():
            raise WeightsUnavailableError(f"detector {card.name}", label or url, detail, fetch=fetch)
        match = torch.hub.HASH_REGEX.search(target.name)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            torch.hub.download_url_to_file(url, str(target), match.group(1) if match else None, progress=False)
        except (OSError, RuntimeError) as exc:  # URLError is an OSError; a wrong hash prefix a RuntimeError
            raise WeightsUnavailableError(f"detector {card.name}", label or url, f"{detail}; {exc}",
                                          fetch=fetch) from exc
    check_weights(card, target, url)
    return target


def url_state(card: DetectorCard, url: str, *, label: str | None = None, detail: str = "") -> Any:
    """What the torch file at ``url`` holds (see :func:`url_weights`), read with
    ``weights_only=True``: anything but tensors and plain containers is
    refused, never unpickled."""
    import torch

    path = url_weights(card, url, label=label, detail=detail)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ModelError(
            f"refusing to load {path}: it holds pickled objects other than tensors "
            f"(loaded with weights_only=True): {str(exc).splitlines()[0]}"
        ) from exc
    except (OSError, RuntimeError, EOFError, ValueError) as exc:
        raise ModelError(f"detector {card.name}: weights file {path} is unreadable ({exc}); "
                         "delete it and fetch it again") from exc
