"""llmecon.files: reading user files and writing outputs (issue 19). Each class of bad file becomes a
LlmeconError naming the file; an output is checked before any work and written atomically."""

from __future__ import annotations

import os

import pytest

from llmecon.errors import CatalogError, LlmeconError, SpecError
from llmecon.files import (atomic_path, check_output, csv_rows, parse_json, parse_toml, parse_yaml, read_text,
                           write_text)

DEEP = 100_000  # far past CPython's recursion limit (1000): json/tomllib raise RecursionError on it


# ---- reading ---------------------------------------------------------------------------------------------


def test_read_text_decodes_utf8_and_drops_a_bom(tmp_path):
    p = tmp_path / "a.json"
    p.write_bytes(b"\xef\xbb\xbf{\"k\": \"\xc3\xa9\"}")
    assert read_text(p) == '{"k": "é"}'


@pytest.mark.parametrize("setup, words", [
    (lambda d: d / "missing.csv", "no such file"),
    (lambda d: d, "is a folder"),
    (lambda d: (d / "latin1.csv").write_bytes(b"a,b\n1,\xe9\n") and d / "latin1.csv",
     "not UTF-8 text (byte 0xe9 at offset 6, line 2)"),
])
def test_read_text_refuses_unreadable_files_naming_them(tmp_path, setup, words):
    path = setup(tmp_path)
    with pytest.raises(CatalogError) as info:
        read_text(path, field="trace", what="trace")
    text = info.value.render()
    assert words in text and str(path) in text and text.startswith("trace: ")


def test_read_text_refuses_a_file_over_the_size_limit_before_reading_it(tmp_path):
    p = tmp_path / "big.csv"
    p.write_bytes(b"x" * 101)
    with pytest.raises(CatalogError, match="101 bytes, more than the 100 bytes"):
        read_text(p, max_bytes=100)


def test_read_text_raises_the_error_class_asked_for(tmp_path):
    with pytest.raises(SpecError):
        read_text(tmp_path / "nope.csv", error=SpecError)


@pytest.mark.parametrize("parse, text", [
    (parse_json, "[" * DEEP + "]" * DEEP),
    (parse_json, '{"a": ' * DEEP + "1" + "}" * DEEP),
    (parse_toml, "a = " + "[" * DEEP + "]" * DEEP),
    (parse_yaml, "[" * DEEP + "]" * DEEP),
])
def test_deep_nesting_is_a_one_line_error_not_a_recursion_error(parse, text):
    with pytest.raises(CatalogError, match="x.file: .*nested too deeply|x.file: invalid"):
        parse(text, "x.file")


@pytest.mark.parametrize("parse, text, words", [
    (parse_json, '{"a": 1,}', "not valid JSON (line 1, column 9"),
    (parse_toml, "a = [1,", "invalid TOML"),
    (parse_yaml, "a: [1,", "invalid YAML"),
])
def test_syntax_errors_name_the_file(parse, text, words):
    with pytest.raises(CatalogError, match="^x.file: ") as info:
        parse(text, "x.file")
    assert words in str(info.value) and "\n" not in str(info.value)


def test_csv_rows_reads_header_and_rows():
    header, rows = csv_rows("a,b\n1,2\n3\n", "t.csv")
    assert header == ["a", "b"] and rows == [{"a": "1", "b": "2"}, {"a": "3", "b": None}]


@pytest.mark.parametrize("text", ['a\n"' + "x" * 200_000, "a\n" + "x" * 200_000 + "\n"])
def test_csv_errors_name_the_file_and_line(text):
    """A field over the csv module's limit (here lowered to 100,000 characters) is csv.Error."""
    import csv

    limit = csv.field_size_limit()
    csv.field_size_limit(100_000)
    try:
        with pytest.raises(CatalogError, match=r"^t\.csv line \d+: not valid CSV"):
            csv_rows(text, "t.csv")
    finally:
        csv.field_size_limit(limit)


# ---- writing ---------------------------------------------------------------------------------------------


def test_check_output_accepts_a_new_or_existing_file_in_an_existing_folder(tmp_path):
    assert check_output(tmp_path / "a.csv", field="out", suffixes=(".csv",)) == tmp_path / "a.csv"
    (tmp_path / "b.csv").write_text("x")
    assert check_output(tmp_path / "b.csv", field="out", suffixes=(".csv",)) == tmp_path / "b.csv"


@pytest.mark.parametrize("name, words", [
    ("a.txt", "use a file name ending in .csv or .parquet"),
    ("", "is empty"),
    ("missing/a.csv", "does not exist"),
    ("file.csv/a.csv", "is not a folder"),
    ("dir.csv", "is a folder"),
])
def test_check_output_refuses_paths_a_run_cannot_write(tmp_path, name, words):
    (tmp_path / "file.csv").write_text("x")
    (tmp_path / "dir.csv").mkdir()
    path = str(tmp_path / name) if name else ""
    with pytest.raises(SpecError) as info:
        check_output(path, field="requests_out", suffixes=(".csv", ".parquet"))
    assert info.value.field == "requests_out" and words in info.value.render()


def test_check_output_refuses_a_folder_without_write_permission(tmp_path, monkeypatch):
    """os.access is what the check asks; as root every folder is writable, so it is stubbed here."""
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(SpecError, match="permission denied"):
        check_output(tmp_path / "a.csv", field="out")


def test_check_output_folder_mode(tmp_path):
    (tmp_path / "f").write_text("x")
    assert check_output(tmp_path / "ds", field="out", folder=True) == tmp_path / "ds"
    with pytest.raises(SpecError, match="is a file, not a folder"):
        check_output(tmp_path / "f", field="out", folder=True)


def test_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    p = tmp_path / "out.csv"
    p.write_text("old")
    write_text(p, "new")
    assert p.read_text() == "new" and sorted(os.listdir(tmp_path)) == ["out.csv"]
    assert oct(p.stat().st_mode & 0o777) == oct(0o644)


def test_a_failing_write_leaves_the_existing_file_untouched(tmp_path):
    p = tmp_path / "out.svg"
    p.write_text("precious")
    with pytest.raises(RuntimeError):
        with atomic_path(p) as tmp:
            assert tmp.parent == tmp_path and tmp.suffix == ".svg"  # same folder, same suffix
            tmp.write_text("half a fi")
            raise RuntimeError("the run fails half-way")
    assert p.read_text() == "precious" and sorted(os.listdir(tmp_path)) == ["out.svg"]


def test_a_failing_write_creates_no_file(tmp_path):
    p = tmp_path / "new.csv"
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(p) as tmp:
            tmp.write_text("x")
            raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_errors_are_llmecon_errors():
    assert issubclass(CatalogError, LlmeconError) and issubclass(SpecError, LlmeconError)


def test_atomic_write_through_a_link_replaces_the_target_and_keeps_the_link(tmp_path):
    target, link = tmp_path / "real.csv", tmp_path / "link.csv"
    target.write_text("old")
    link.symlink_to(target)
    write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_target_that_is_no_regular_file_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with atomic_path(fifo) as tmp:
        assert tmp == fifo  # nothing can be renamed over a FIFO or a device: written directly


@pytest.mark.parametrize("name, words", [("a\0b.csv", "NUL character"), ("x" * 300 + ".csv", "cannot be used")])
def test_check_output_turns_os_refusals_into_one_line(tmp_path, name, words):
    with pytest.raises(SpecError, match=words):
        check_output(str(tmp_path / name), field="out", suffixes=(".csv",))


def test_a_hostile_quantization_config_beside_a_config_is_one_line(tmp_path):
    """``hf_quant_config.json`` is read when present beside a config.json: not UTF-8 or too deep is refused."""
    import shutil
    from importlib import resources

    from llmecon.catalog.models import get_model

    shutil.copy(resources.files("llmecon.catalog") / "models" / "llama-3.1-8b.json", tmp_path / "config.json")
    for data in (b"\xff", b"[" * 100_000 + b"]" * 100_000):
        (tmp_path / "hf_quant_config.json").write_bytes(data)
        with pytest.raises(CatalogError, match="hf_quant_config.json"):
            get_model(str(tmp_path / "config.json"))
