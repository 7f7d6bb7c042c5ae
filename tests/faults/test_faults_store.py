"""Fault suite: a hostile or damaged record store, and the files the store and ``publish`` write.

A store copied from elsewhere (a tarball, a shared folder) may hold a FIFO, a device, a symbolic
link out of the store, a file too large or JSON nested too deep where a record, a state, a version
or the folder's marker belongs: every command finishes, names the file, and the read-only ones
skip it and say so.  Every file the store and ``publish`` write is whole or absent after a full
disk or a kill.  Commands that could block on a FIFO run in a subprocess with a timeout, so that
a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.store import RecordStore

from helpers.cli import cli, one_line
from helpers.records import make_record, make_state

pytestmark = pytest.mark.isolated_cache  # fault tests start from an empty cache

LIMIT_S = 120
"""A command that reads a FIFO blocks for ever; one that works takes seconds."""


def verified(detector: str = "det", seed: int = 0, task: str = "binary") -> ResultRecord:
    """A record whose numbers its state reproduces."""
    return make_record(detector, task=task, case=task, state=make_state(task, seed=seed))


def stored(tmp_path: Path, *records: ResultRecord, name: str = "store") -> Path:
    """A store holding ``records`` (default: one verified record)."""
    root = tmp_path / name
    store = RecordStore(root)
    for record in records or (verified(),):
        store.add(record)
    return root


def state_path(root: Path, record: ResultRecord) -> Path:
    assert record.body.state is not None
    return root / record.body.state.file


def run(*args, timeout: float = LIMIT_S) -> tuple[int, str]:
    """``python -m diffzoo *args`` in a subprocess: (exit code, stdout + stderr on one line);
    a command still running after ``timeout`` seconds fails the test (it blocked)."""
    try:
        done = subprocess.run([sys.executable, "-m", "diffzoo", *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, env=dict(os.environ, COLUMNS="400"))
    except subprocess.TimeoutExpired:
        pytest.fail(f"`diffzoo {' '.join(map(str, args))}` blocked (still running after {timeout} s)")
    return done.returncode, one_line(done.stdout + done.stderr)


def fifo(path: Path) -> Path:
    """Replace ``path`` (if any) by a FIFO that nobody writes: reading it would block for ever."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def nested(depth: int = 10_000) -> str:
    """A JSON object nested ``depth`` levels deep (json.loads overflows Python's stack on it)."""
    return '{"schema_version": 2, "deep": ' + "[" * depth + "]" * depth + "}"


# -- (A) a hostile file in the store: a FIFO, JSON nested too deep, a file too large, a link out ----------------
def test_a_fifo_as_a_record_is_named_and_skipped_by_list_and_bad_for_verify(tmp_path):
    root = stored(tmp_path)
    pipe = fifo(root / "records" / ("f" * 16 + ".json"))
    code, out = run("leaderboard", "list", "--store", root)
    assert code == 0 and "1 record(s)" in out and "skipped 1 file(s)" in out and pipe.name in out
    assert "FIFO" in out
    code, out = run("leaderboard", "verify", "--store", root)
    assert code == 1 and "1 good, 1 bad record(s)" in out and pipe.name in out and "FIFO" in out
    code, out = run("leaderboard", "publish", "--store", root, "--out", tmp_path / "pub")
    assert code == 0 and "skipped 1 file(s)" in out and pipe.name in out and (tmp_path / "pub" / "leaderboard.md").is_file()


def test_a_fifo_as_a_state_file_is_named_by_verify_and_add(tmp_path):
    record = verified()
    source = stored(tmp_path, record, name="source")
    pipe = fifo(state_path(stored(tmp_path, record, name="copied"), record))
    code, out = run("leaderboard", "verify", "--store", pipe.parent.parent)
    assert code == 1 and "1 bad record(s)" in out and pipe.name in out and "FIFO" in out
    # `add` finds a FIFO where it would write the state the record brings: rejected, the FIFO left alone
    target = stored(tmp_path, verified("other", seed=2), name="target")
    fifo(state_path(target, record))
    code, out = run("leaderboard", "add", source, "--store", target)
    assert code == 1 and "1 rejected" in out and pipe.name in out and "FIFO" in out
    assert not (target / "records" / f"{record.id}.json").exists()
    # and a FIFO where the source's state should be
    fifo(state_path(source, record))
    code, out = run("leaderboard", "add", source, "--store", tmp_path / "new")
    assert code == 1 and "1 rejected" in out and "FIFO" in out and not list((tmp_path / "new").glob("records/*"))


def test_a_fifo_as_a_version_file_or_marker_is_named(tmp_path):
    root = stored(tmp_path)
    pipe = fifo(root / "versions" / "v1.json")
    code, out = run("leaderboard", "versions", "--store", root)
    assert code == 1 and "v1.json" in out and "FIFO" in out and "internal error" not in out
    code, out = run("leaderboard", "verify", "--store", root)
    assert code == 1 and "1 frozen-version problem(s)" in out and "v1.json" in out
    assert pipe.exists()  # not a leftover: --clean removes only what diffzoo's own writes leave
    fifo(root / ".diffzoo-out.json")
    code, out = run("leaderboard", "publish", "--store", root, "--out", root)
    assert code == 2 and ".diffzoo-out.json" in out and "FIFO" in out


def test_a_fifo_given_to_add_or_validate_is_named(tmp_path):
    pipe = fifo(tmp_path / "in" / "r.json")
    code, out = run("leaderboard", "validate", pipe)
    assert code == 1 and "r.json" in out and "FIFO" in out and "0 valid, 1 invalid" in out
    code, out = run("leaderboard", "add", pipe, "--store", tmp_path / "store")
    assert code == 1 and "r.json" in out and "FIFO" in out and "1 rejected" in out


def test_a_record_nested_too_deep_is_named_and_skipped_never_an_internal_error(tmp_path, capsys):
    root = stored(tmp_path)
    deep = root / "records" / ("d" * 16 + ".json")
    deep.write_text(nested())
    for args in (("list",), ("publish", "--out", tmp_path / "pub")):
        code, out, err = cli(capsys, "leaderboard", *args, "--store", root)
        text = one_line(out + err)
        assert code == 0 and "skipped 1 file(s)" in text and deep.name in text and "deeper than" in text
        assert "internal error" not in text
    assert (tmp_path / "pub" / "leaderboard.md").is_file()
    code, out, err = cli(capsys, "leaderboard", "verify", "--store", root)
    assert code == 1 and "1 good, 1 bad record(s)" in one_line(out) and deep.name in one_line(out)
    code, out, err = cli(capsys, "leaderboard", "freeze", "v1", "--store", root)
    assert code == 1 and deep.name in one_line(err) and "not valid records" in one_line(err)
    assert not (root / "versions" / "v1.json").exists()  # a version never leaves a record out unseen
    loose = tmp_path / "in" / "deep.json"
    loose.parent.mkdir()
    loose.write_text(nested())
    for args in (("validate", loose), ("add", loose, "--store", tmp_path / "other")):
        code, out, err = cli(capsys, "leaderboard", *args)
        lines = [line for line in (out + err).splitlines() if "deeper than" in line]
        assert code == 1 and len(lines) == 1 and "deep.json" in lines[0] and "deeper than 100 levels" in lines[0]
        assert "internal error" not in out + err and "RecursionError" not in out + err


def test_a_record_whose_config_nests_500_levels_is_named_not_a_recursion_error(tmp_path, capsys):
    """500 levels parse, but every recursive walk over the value (its digests, its id) overflows
    Python's stack: the bound is checked before parsing, far below that."""
    root = stored(tmp_path)
    data = json.loads(verified("deep", seed=3).to_json())
    data["config"]["deep"] = "NESTED"
    deep = root / "records" / f"{data['record_id']}.json"
    deep.write_text(json.dumps(data).replace('"NESTED"', "[" * 500 + "]" * 500))
    code, out, err = cli(capsys, "leaderboard", "verify", "--store", root)
    assert code == 1 and "1 good, 1 bad record(s)" in one_line(out) and deep.name in one_line(out)
    assert "deeper than 100 levels" in one_line(out) and "internal error" not in out + err


def test_an_integer_of_5000_digits_in_a_record_or_version_is_named_never_an_internal_error(tmp_path, capsys):
    """json.loads refuses an integer longer than Python converts (4300 digits) with a ValueError of
    its own: verify, list and versions stopped with an internal error."""
    from diffzoo.leaderboard.versions import freeze

    root = stored(tmp_path)
    version = freeze(RecordStore(root), "v1")
    long = root / "records" / ("e" * 16 + ".json")
    long.write_text('{"schema_version": ' + "9" * 5000 + "}")
    version.write_text(version.read_text().replace('"schema_version": 2', '"schema_version": ' + "9" * 5000))
    said = f"holds an integer of more than {sys.get_int_max_str_digits()} digits; diffzoo reads none that long"
    code, out, err = cli(capsys, "leaderboard", "list", "--store", root)
    assert code == 0 and f"skipped {long}: {said}" in one_line(out + err), out + err
    code, out, err = cli(capsys, "leaderboard", "verify", "--store", root)
    assert code == 1 and f"bad {long}: {said}" in one_line(out) and f"version file {version} {said}" in one_line(out)
    code, out, err = cli(capsys, "leaderboard", "versions", "--store", root)
    assert code == 1 and one_line(err) == f"error: version file {version} {said}", err


def test_an_oversize_file_in_the_store_is_named_and_never_read(tmp_path, capsys):
    record = verified()
    root = stored(tmp_path, record)
    huge = root / "records" / ("a" * 16 + ".json")
    with open(huge, "wb") as fh:  # sparse: its size is what counts, nothing is read
        fh.truncate(65 << 20)
    code, out, err = cli(capsys, "leaderboard", "list", "--store", root)
    assert code == 0 and "skipped 1 file(s)" in one_line(err) and "holds more than the 67.1 MB" in one_line(err)
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", root)
    assert code == 1 and huge.name in one_line(out) and "1 bad record(s)" in one_line(out)
    state = state_path(root, record)
    with open(state, "r+b") as fh:
        fh.truncate((1 << 30) + 1)
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", root)
    assert code == 1 and state.name in one_line(out) and "holds more than the 1.1 GB" in one_line(out)


def test_a_symbolic_link_out_of_the_store_is_refused(tmp_path, capsys):
    a, b = verified("a"), verified("b", seed=1)
    root = stored(tmp_path, a, b)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    record_file = root / "records" / f"{b.id}.json"
    shutil.move(record_file, outside / "b.json")
    record_file.symlink_to(outside / "b.json")
    code, out, err = cli(capsys, "leaderboard", "list", "--store", root)
    assert code == 0 and "1 record(s)" in one_line(out) and f"{b.id}.json" in one_line(err)
    assert "outside" in one_line(err)
    state = state_path(root, a)
    shutil.move(state, outside / "state.json")
    state.symlink_to(outside / "state.json")
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", root)
    assert code == 1 and "0 good, 2 bad record(s)" in one_line(out) and state.name in one_line(out)
    # a link that stays inside the store is a file of the store
    state.unlink()
    shutil.move(outside / "state.json", root / "states" / "kept.json")
    state.symlink_to(root / "states" / "kept.json")
    record_file.unlink()
    shutil.move(outside / "b.json", record_file)
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", root)
    assert code == 0 and "2 good, 0 bad record(s)" in one_line(out)


# -- (B) whole or absent: a full disk at any write, and a kill -------------------------------------------------
def enospc_at(monkeypatch, n: int) -> list[int]:
    """The ``n``-th fsync (each atomic write makes one, just before its file gets its name) fails
    with a full disk; returns the running count of fsyncs (``n`` 0: none fails)."""
    calls = [0]
    real = os.fsync

    def fsync(fd):
        calls[0] += 1
        if calls[0] == n:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("fmt", ["md", "csv", "latex", "json", "html"])
def test_a_full_disk_at_any_write_of_publish_names_the_file_and_leaves_no_part(tmp_path, capsys, monkeypatch, fmt):
    root = stored(tmp_path, verified("a"), verified("b", seed=1, task="semantic"))
    calls = enospc_at(monkeypatch, 0)
    code, _, _ = cli(capsys, "leaderboard", "publish", "--store", root, "--format", fmt, "--out", tmp_path / "all")
    writes = calls[0]
    assert code == 0 and writes >= 2  # the folder's marker, then the format's files
    picks = range(1, writes + 1) if writes <= 4 else (1, 2, writes // 2, writes)
    for n in picks:
        out = tmp_path / f"pub{n}"
        enospc_at(monkeypatch, n)
        code, stdout, err = cli(capsys, "leaderboard", "publish", "--store", root, "--format", fmt, "--out", out)
        line = one_line(err)
        assert code == 2 and line.startswith(f"error: disk full while writing {out}"), (n, line)
        named = Path(line.removeprefix("error: disk full while writing ").split(" (")[0])
        assert "free on that filesystem" in line and not named.exists() and leftovers(out) == []
    monkeypatch.undo()


def test_a_full_disk_while_adding_leaves_no_part_of_a_record_or_state(tmp_path, capsys, monkeypatch):
    record = verified()
    source = stored(tmp_path, record, name="source")
    target = tmp_path / "target"
    RecordStore(target).add(verified("other", seed=2))  # an existing store: its marker is not rewritten
    for n, what in ((1, record.body.state.file), (2, f"records/{record.id}.json")):  # type: ignore[union-attr]
        enospc_at(monkeypatch, n)
        code, _, err = cli(capsys, "leaderboard", "add", source, "--store", target)
        assert code == 2 and f"disk full while writing {target / what} (" in one_line(err)
        assert not (target / "records" / f"{record.id}.json").exists() and leftovers(target) == []
    monkeypatch.undo()
    code, out, _ = cli(capsys, "leaderboard", "add", source, "--store", target)
    assert code == 0 and "1 added" in one_line(out)
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", target)
    assert code == 0 and "2 good, 0 bad" in one_line(out)


KILLED_WRITE = """
import os, signal, sys
from pathlib import Path
from diffzoo.leaderboard.store import RecordStore
from helpers.records import make_record, make_state

writes = [0]
real = os.replace
def replace(src, dst):  # killed at the moment the second file (the record) would get its name
    writes[0] += 1
    if writes[0] == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst)
os.replace = replace
RecordStore(Path(sys.argv[1])).add(make_record("det", state=make_state("binary")))
"""


def test_a_store_write_killed_midway_leaves_whole_files_and_verify_clean_repairs_it(tmp_path, capsys):
    root = stored(tmp_path, verified("other", seed=2))
    tests = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")]))
    for n in (1, 2):  # the state, then the record
        done = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(root), str(n)], env=env, timeout=LIMIT_S,
                              capture_output=True, text=True)
        assert done.returncode == -signal.SIGKILL, done.stderr
        code, out, _ = cli(capsys, "leaderboard", "verify", "--store", root)
        assert code == 1 and "1 good, 0 bad record(s)" in one_line(out) and "1 temp file(s) left" in one_line(out)
        code, out, _ = cli(capsys, "leaderboard", "verify", "--clean", "--store", root)
        assert code == 0 and "removed temp file" in one_line(out) and leftovers(root) == []
    done = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(root), "0"], env=env, timeout=LIMIT_S)
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", root)
    assert done.returncode == 0 and code == 0 and "2 good, 0 bad record(s)" in one_line(out)


# -- (C) publish --out into a folder diffzoo did not make ------------------------------------------------------
def test_publish_refuses_a_folder_diffzoo_did_not_make_and_force_never_overwrites(tmp_path, capsys):
    root = stored(tmp_path)
    theirs = tmp_path / "site"
    theirs.mkdir()
    mine = {"index.html": "<p>my page</p>", "leaderboard.md": "# my notes"}
    for name, text in mine.items():
        (theirs / name).write_text(text)
    for fmt in ("md", "html"):
        code, _, err = cli(capsys, "leaderboard", "publish", "--store", root, "--format", fmt, "--out", theirs)
        assert code == 2 and "was not made by diffzoo" in one_line(err) and "--force" in one_line(err)
    assert sorted(p.name for p in theirs.iterdir()) == sorted(mine)
    for fmt in ("md", "html"):
        code, _, err = cli(capsys, "leaderboard", "publish", "--store", root, "--format", fmt, "--out", theirs,
                           "--force")
        assert code == 2 and "never overwrites files it did not make" in one_line(err)
    assert all((theirs / name).read_text() == text for name, text in mine.items())
    code, out, _ = cli(capsys, "leaderboard", "publish", "--store", root, "--format", "csv", "--out", theirs,
                       "--force")
    assert code == 0 and (theirs / "leaderboard.csv").is_file()  # beside their files, which stay theirs
    assert all((theirs / name).read_text() == text for name, text in mine.items())
    code, out, _ = cli(capsys, "leaderboard", "publish", "--store", root, "--format", "md", "--out", tmp_path / "new")
    code2, _, _ = cli(capsys, "leaderboard", "publish", "--store", root, "--format", "md", "--out", tmp_path / "new")
    assert code == code2 == 0 and json.loads((tmp_path / "new" / ".diffzoo-out.json").read_text())["foreign"] == []


def test_an_out_inside_a_stores_own_folders_is_refused_even_with_force(tmp_path, capsys):
    """Published files in records/ read as bad records (a freeze then refuses the store); a run's
    store nested in versions/ was the same."""
    from diffzoo.leaderboard.outdir import claim_output_dir

    root = stored(tmp_path)
    claim_output_dir(root)  # a store diffzoo made (run, add) is marked
    before = sorted(p.name for p in root.rglob("*"))
    for out, args in ((root / "records", ["leaderboard", "publish", "--store", root, "--format", "json"]),
                      (root / "states" / "site", ["report", "paper", "--store", root]),
                      (root / "versions", ["run", "-d", "segformer.tiny", "--suite", "standard"])):
        code, _, err = cli(capsys, *args, "--out", out, "--force")
        assert code == 2 and f"is inside {out if out.name != 'site' else out.parent}, a record store's own" in \
            one_line(err), err
    assert sorted(p.name for p in root.rglob("*")) == before
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", root, "--format", "md", "--out",
                       tmp_path / "records" / "site")  # a user's folder merely named records is no store's
    assert code == 0, err


def test_a_file_where_a_store_folder_belongs_is_one_line_never_an_internal_error(tmp_path, capsys):
    """A file named `versions` (or `records`) where the store makes its folder was 'internal error:
    FileExistsError' at `freeze` (and at `add`, which takes such a folder for a store of an older diffzoo)."""
    source = tmp_path / "source"
    RecordStore(source).add(verified())
    store = tmp_path / "store"
    shutil.copytree(source, store)
    (store / "versions").write_text("notes")
    code, out, err = cli(capsys, "leaderboard", "freeze", "v1", "--store", store)
    assert (code, one_line(err)) == (2, f"error: {store / 'versions'} cannot be used: a part of the path is a file, "
                                        "not a folder; choose another path (--out DIR, $DIFFZOO_CACHE) or fix the files "
                                        "there"), err
    assert (store / "versions").read_text() == "notes"
    older = tmp_path / "older"
    older.mkdir()
    (older / "records").write_text("notes")
    code, out, err = cli(capsys, "leaderboard", "add", source, "--store", older)
    assert (code, one_line(err)) == (2, f"error: {older / 'records'} cannot be used: a part of the path is a file, "
                                        "not a folder; choose another path (--out DIR, $DIFFZOO_CACHE) or fix the files "
                                        "there"), err
    assert (older / "records").read_text() == "notes"
    site, semantic = tmp_path / "site", stored(tmp_path, verified(task="semantic"), name="semantic")
    assert cli(capsys, "leaderboard", "publish", "--store", semantic, "-f", "md", "--out", site)[0] == 0
    (site / "plots").write_text("notes")  # in a folder diffzoo made, after it made it; the site draws a figure
    code, out, err = cli(capsys, "leaderboard", "publish", "--store", semantic, "-f", "html", "--out", site)
    assert (code, one_line(err)) == (2, f"error: {site / 'plots'} cannot be used: a part of the path is a file, "
                                        "not a folder; choose another path (--out DIR, $DIFFZOO_CACHE) or fix the files "
                                        "there"), err
    assert (site / "plots").read_text() == "notes" and not (site / "index.html").exists()


def test_a_file_where_the_versions_folder_belongs_fails_verify_and_versions_naming_it(tmp_path, capsys):
    """A regular file ``versions`` hides every frozen version: no reader takes it for a store with none."""
    store = stored(tmp_path)
    (store / "versions").write_text("notes")
    said = (f"error: {store / 'versions'} is not a folder: a store keeps its frozen versions there; "
            "move it away (or back where it was)")
    for command in ("verify", "versions"):
        code, out, err = cli(capsys, "leaderboard", command, "--store", store)
        assert (code, one_line(err)) == (1, said), out + err
