"""Reading user files and writing outputs, the one way (issue 19): nothing a user types crashes the
program, runs away with memory, or clobbers a file.

Reading: :func:`read_text` turns every way a user file can be unreadable (missing, a folder, too
large, not UTF-8, a permission error) into a ``CatalogError`` naming the file (and the input
``field`` that named it); :func:`parse_json`, :func:`parse_toml`, :func:`parse_yaml` and
:func:`csv_rows` do the same for syntax errors *and* for nesting deep enough to exhaust Python's
recursion limit (``[[[[...]]]]`` is valid JSON but ``json.loads`` raises ``RecursionError``).

Writing: :func:`check_output` vets an output path *before any work starts* (suffix, folder exists,
not a folder itself, writable); :func:`atomic_path` / :func:`write_text` / :func:`write_bytes`
write to a temporary file in the same folder and ``os.replace`` it over the target only when the
whole write succeeded, so a failing run leaves an existing file as it was and a reader never sees
half a file (``os.replace`` is atomic on POSIX and Windows within one file system).
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import io
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import CatalogError, SpecError

#: the largest user file read into memory (a CSV of ~10 million rows); a bigger file is refused
#: before it is read, with this limit in the message
MAX_INPUT_BYTES = 1 << 30


def read_text(path: str | os.PathLike, *, field: str | None = None, what: str = "file",
              fix: str | None = None, max_bytes: int = MAX_INPUT_BYTES, error: type = CatalogError) -> str:
    """The UTF-8 text of user file ``path`` (a leading BOM is dropped), else ``error`` (a LlmeconError
    class) naming the file, what is wrong and ``fix``; ``field`` is the input that named the file
    (``"trace"``), ``what`` what the file is ("trace", "price file")."""
    p = Path(path)
    fix = fix or f"give the path of a readable UTF-8 {what}"

    def fail(problem: str):
        return error(f"{what} {p} {problem}", field=field, fix=fix, show_value=False)

    try:
        if not p.exists():
            rule = f"no such file {p}" if field else f"{p}: no such file ({what})"
            raise error(rule, field=field, fix=fix, show_value=False)
        if p.is_dir():
            raise fail("is a folder, not a file")
        size = p.stat().st_size
        if size > max_bytes:
            raise fail(f"is {size:,} bytes, more than the {max_bytes:,} bytes llmecon reads into memory")
        data = p.read_bytes()
    except OSError as exc:
        raise fail(f"cannot be read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise fail(f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}, line {line})") from None


def parse_json(text: str, where: str):
    """``json.loads(text)``; a syntax error or too-deep nesting is a CatalogError naming ``where``."""
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise CatalogError(f"{where}: JSON nested too deeply to read; a config is a few levels deep") from None


def parse_toml(text: str, where: str) -> dict:
    """``tomllib.loads(text)``; a syntax error (with line and column) or too-deep nesting is a
    CatalogError naming ``where``."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # message carries "(at line L, column C)"
        raise CatalogError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:
        raise CatalogError(f"{where}: invalid TOML: nested too deeply to read") from None


def parse_yaml(text: str, where: str):
    """``yaml.safe_load(text)``; errors as :func:`parse_json`."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogError(f"{where}: invalid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise CatalogError(f"{where}: YAML nested too deeply to read") from None


def csv_rows(text: str, where: str) -> tuple[list[str] | None, list[dict]]:
    """(header, rows as dicts) of CSV ``text``; a malformed file (NUL bytes, a field over the csv
    module's size limit) is a CatalogError naming ``where`` and the line. Keys and values are as
    ``csv.DictReader`` gives them (extra cells under the key None, missing ones None)."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames
        if header is not None:
            unique_header(header, where)
        rows = list(reader)
    except csv.Error as exc:
        raise CatalogError(f"{where} line {reader.line_num}: not valid CSV ({exc})") from None
    return (None if header is None else list(header)), rows


def unique_header(header, where: str) -> None:
    """A CSV header names each column once: a duplicated column made ``csv.DictReader`` keep the last
    cell of the two without a word (issue 31)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(header, 1):
        if name in seen:
            raise CatalogError(f"{where}: column '{name}' appears twice in the header (columns {seen[name]} and {i}); "
                               "a row would keep only one of its two cells", fix="remove or rename one of them")
        seen[name] = i


def check_input(path: str | os.PathLike, *, field: str | None = None, what: str = "file",
                fix: str | None = None, error: type = CatalogError) -> Path:
    """``path`` if it names a readable file (``read_text``'s checks and messages, without reading it
    or limiting its size: for inputs read as a stream)."""
    p = Path(path)
    fix = fix or f"give the path of a readable UTF-8 {what}"
    if not p.exists():
        rule = f"no such file {p}" if field else f"{p}: no such file ({what})"
        raise error(rule, field=field, fix=fix, show_value=False)
    if p.is_dir():
        raise error(f"{what} {p} is a folder, not a file", field=field, fix=fix, show_value=False)
    if not os.access(p, os.R_OK):
        raise error(f"{what} {p} cannot be read (permission denied)", field=field, fix=fix, show_value=False)
    return p


def csv_dict_chunks(path: Path, where: str, rows_per_chunk: int) -> Iterator[tuple[list[str], list[dict], int]]:
    """(header, rows, index of the chunk's first row) of a CSV file read ``rows_per_chunk`` rows at a time:
    ``csv_rows``'s rows and errors (cells stripped, missing cells ''), in memory flat in the file's length."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            try:
                header = list(reader.fieldnames or [])
                unique_header(header, where)
                chunk, start = [], 0
                for r in reader:
                    chunk.append({k: (v or "").strip() for k, v in r.items() if k is not None})
                    if len(chunk) == rows_per_chunk:
                        yield header, chunk, start
                        start += len(chunk)
                        chunk = []
                if chunk or not start:
                    yield header, chunk, start
            except csv.Error as exc:
                raise CatalogError(f"{where} line {reader.line_num}: not valid CSV ({exc})") from None
            except UnicodeDecodeError as exc:
                raise CatalogError(f"{where} is not UTF-8 text near line {reader.line_num + 1} "
                                   f"(byte 0x{exc.object[exc.start]:02x})",
                                   fix="save the file as UTF-8") from None
    except OSError as exc:
        raise CatalogError(f"{where} cannot be read ({exc.strerror or exc})") from None


# ---- writing ------------------------------------------------------------------------------------


def check_output(path: str | os.PathLike, *, field: str, suffixes: Iterable[str] | None = None,
                 folder: bool = False) -> Path:
    """``path`` as a Path if a run can write it: the suffix is one of ``suffixes`` (lower case, with
    the dot), its folder exists and is writable, and it is not a folder itself (``folder=True``:
    it must be a folder or not exist). Else SpecError on ``field`` with the fix. Called before any
    work starts, so a run never fails after the work for want of a place to put it."""
    p = Path(path)
    suffixes = tuple(suffixes or ())

    def fail(rule: str, fix: str):
        return SpecError(rule, field=field, value=str(path), fix=fix)

    if not str(path).strip():
        raise fail("is empty", "give a file name")
    if "\0" in str(path):
        raise fail("contains a NUL character", "give a plain file name")
    try:
        checked = _check_output(p, fail, suffixes, folder)
        _FIELDS[os.path.realpath(checked)] = field  # a later write error names this flag, not a temporary file
        return checked
    except OSError as exc:  # a name too long, a loop of links: what the OS says, on the field
        raise fail(f"cannot be used ({exc.strerror or exc})", "pick another path") from None


def _check_output(p: Path, fail, suffixes: tuple[str, ...], folder: bool) -> Path:
    if suffixes and p.suffix.lower() not in suffixes:
        listing = suffixes[0] if len(suffixes) == 1 else f"{', '.join(suffixes[:-1])} or {suffixes[-1]}"
        raise fail(f"use a file name ending in {listing}", f"e.g. out{suffixes[0]}")
    if p.is_dir() and not folder:
        raise fail("is a folder", f"give a file name{' ending in ' + suffixes[0] if suffixes else ''}")
    if p.exists() and not p.is_dir() and folder:
        raise fail("is a file, not a folder", "give a folder name")
    parent = p.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise fail(f"folder {parent} {what}", "create it or pick another path")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise fail(f"cannot write in {parent if not p.exists() else p} (permission denied)",
                   "pick a writable path")
    return p


#: the field (flag) that named each output path, recorded by ``check_output``: a write error names it
_FIELDS: dict[str, str] = {}
#: outputs of the run in progress, staged by ``all_or_nothing`` (None: each write is renamed at once)
_STAGED: contextvars.ContextVar[list | None] = contextvars.ContextVar("llmecon_staged_outputs", default=None)


@contextlib.contextmanager
def all_or_nothing() -> Iterator[None]:
    """Every ``atomic_path`` write inside is renamed over its target only when the whole block
    succeeded (a command run: ``cli.command``); on any error every one is removed, so a failed run
    leaves every existing file byte-identical (issue 31: ``simulate --requests-out keep.csv --plot
    /proc/x.png`` rewrote keep.csv, then failed). A click exit with code 0 counts as success."""
    staged: list[tuple[str, Path]] = []
    token = _STAGED.set(staged)
    try:
        yield
    except BaseException as exc:
        if getattr(exc, "exit_code", None) == 0:
            _commit(staged)
        else:
            for tmp, _ in staged:
                Path(tmp).unlink(missing_ok=True)
        raise
    else:
        _commit(staged)
    finally:
        _STAGED.reset(token)


def _commit(staged: list[tuple[str, Path]]) -> None:
    for i, (tmp, target) in enumerate(staged):
        try:
            os.replace(tmp, target)
        except OSError as exc:
            for rest, _ in staged[i:]:
                Path(rest).unlink(missing_ok=True)
            raise _write_error(target, exc) from None


def _write_error(path, exc: OSError) -> SpecError:
    """A failed write as one line naming the output and its flag (not the temporary file)."""
    field = _FIELDS.get(os.path.realpath(path))
    rule = f"cannot be written ({exc.strerror or exc})"
    fix = "check that the folder is writable and has free space, or pick another path"
    if field:
        return SpecError(rule, field=field, value=str(path), fix=fix)
    return SpecError(f"{path}: {rule}", fix=fix)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def clean_stale(p: Path, *, older_than_s: float = 3600.0) -> None:
    """Remove temporary files of ours beside ``p`` left by a killed write: ``.NAME.PID.*.tmpSUFFIX`` whose
    process is gone, or (names without a pid, written before pids were added) older than ``older_than_s``."""
    import glob
    import time

    for f in p.parent.glob(f".{glob.escape(p.name)}.*.tmp{glob.escape(p.suffix)}"):
        pid = f.name[len(p.name) + 2:].split(".", 1)[0]
        try:
            stale = not _alive(int(pid)) if pid.isdigit() else time.time() - f.stat().st_mtime > older_than_s
            if stale and f.is_file():
                f.unlink()
        except OSError:
            pass


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, mode: int = 0o644) -> Iterator[Path]:
    """A temporary path beside ``path`` (same folder, same suffix, so writers that pick a format by
    suffix still do) for the caller to write; on success it replaces ``path`` (``os.replace``) — at
    the end of the run inside ``all_or_nothing`` — on any error it is removed and ``path`` is left as it
    was. A link is followed (the file it names is replaced, not the link); a target that is no regular
    file (``/dev/stdout``, a FIFO) is written in place, as nothing can be renamed over it. The temporary
    name carries this process's id, so a later write removes those of killed runs (``clean_stale``);
    an OS error while writing (disk full, no permission) is a SpecError naming ``path`` and its flag."""
    p = Path(os.path.realpath(path))
    if p.exists() and not p.is_file():
        yield p
        return
    clean_stale(p)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.{os.getpid()}.", suffix=f".tmp{p.suffix}", dir=p.parent)
    except OSError as exc:
        raise _write_error(path, exc) from None
    os.close(fd)
    staged = _STAGED.get()
    try:
        yield Path(tmp)
        os.chmod(tmp, mode)  # mkstemp makes 0600; outputs are meant to be shared
        if staged is None:
            os.replace(tmp, p)
        else:
            staged.append((tmp, p))
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None or os.path.realpath(exc.filename) in (os.path.realpath(tmp), str(p)):
            raise _write_error(path, exc) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
