"""A full disk says what could not be written where: the suite's atomic writes (dataset cache,
grid results, artifacts, the grid's shared arrays) raise an ``OSError`` naming the file, so the
one-line error names it and the setting that placed it. numpy's ``tofile`` reports a short
write with no errno ("20000 requested and 17904 written"): that is a full disk or quota.
The disk is faked by writes that fail as a full one does; nothing fills a real disk."""
from __future__ import annotations

import errno

import numpy as np
import pytest

from impls.harness import atomic, cli, grid


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")    # as a write to a full disk: no filename


def test_a_full_disk_while_replacing_a_file_names_the_file_and_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "cache" / "x.npz"
    monkeypatch.setattr(atomic.os, "fsync", _full_disk)   # ENOSPC at fsync: delayed allocation
    with pytest.raises(OSError) as raised:
        with atomic.replacing(target) as handle:
            handle.write(b"x" * 100)
    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, str(target))
    assert list((tmp_path / "cache").iterdir()) == []


def test_the_error_line_names_the_file_and_the_setting_that_placed_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_ARTIFACTS", str(tmp_path / "art"))
    target = tmp_path / "art" / "m" / "a.json"
    monkeypatch.setattr(atomic.os, "fsync", _full_disk)   # ENOSPC at fsync: delayed allocation
    with pytest.raises(OSError) as raised:
        atomic.write_json(target, {"a": 1})
    line = cli._message(raised.value)
    assert line.startswith(f"No space left on device, {target}, under DLSYSBENCH_ARTIFACTS={tmp_path / 'art'}"), line


def test_numpys_short_write_in_a_shared_array_reads_as_no_space_left_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))

    def short_write(handle, array, **kwargs):
        handle.write(b"\x93NUMPY")
        raise OSError("20000 requested and 17904 written")     # numpy's tofile: no errno, no path
    monkeypatch.setattr(np, "save", short_write)
    with pytest.raises(OSError) as raised:
        grid.share(np.arange(5000, dtype=np.float32))
    err = raised.value
    assert err.errno == errno.ENOSPC and err.filename.startswith(str(tmp_path / "cache" / "grid" / "arrays"))
    line = cli._message(err)
    assert line.startswith("No space left on device (20000 requested and 17904 written: the disk or a quota is full), "
                           f"{err.filename}, under DLSYSBENCH_CACHE="), line
    assert list((tmp_path / "cache" / "grid" / "arrays").iterdir()) == []


def test_an_error_that_names_another_file_is_kept_as_it_is(tmp_path):
    other = OSError(errno.EACCES, "Permission denied", "/elsewhere")
    assert atomic.unwritten(other, tmp_path / "x") is other
    odd = OSError("something else")                 # raised by the block's own reading, say
    assert atomic.unwritten(odd, tmp_path / "x") is odd
    tmp = str(tmp_path / ".x.pid1.tmp")
    ours = atomic.unwritten(OSError(errno.EACCES, "Permission denied", tmp), tmp_path / "x", tmp)
    assert (ours.errno, ours.filename) == (errno.EACCES, str(tmp_path / "x"))


def test_an_input_error_inside_the_block_is_not_taken_for_the_output(tmp_path):
    """A damaged gzip input read while writing (BadGzipFile: an OSError with no errno or path)
    is its own error, not the output file's."""
    import gzip

    bad = tmp_path / "in.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(gzip.BadGzipFile):
        with atomic.replacing(tmp_path / "out.txt") as handle:
            handle.write(gzip.open(bad).read())
    assert not (tmp_path / "out.txt").exists() and list(tmp_path.iterdir()) == [bad]
