"""Write the rendered report as a whole directory: build it aside, then swap it in.

A reader sees the old report or the new one, never a mix; on failure the old one
stays and the half-built one is removed. A marker file identifies a report
directory, so replacing one never deletes a directory that holds anything else.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from impls.harness import atomic

MARKER = ".dlsysbench-report"


class ReportOutputError(RuntimeError):
    """The output directory exists and is not a previous report."""


def _replaceable(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and ((path / MARKER).is_file() or not any(path.iterdir())))


def write_report_dir(out_dir: Path, files: dict[str, bytes]) -> list[Path]:
    """Write ``files`` ({relative path: content}) as directory ``out_dir``; return their paths.

    Raises ReportOutputError if ``out_dir`` exists and is neither empty nor a report.
    """
    out_dir = Path(out_dir).absolute()
    if not _replaceable(out_dir):
        raise ReportOutputError(
            f"refusing to replace {out_dir}: it exists and is not a report written by this tool "
            f"(no {MARKER} in it); choose another --out")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.new-"))
    old = None
    try:
        os.chmod(staging, 0o777 & ~atomic.umask())  # mkdtemp makes it private (0700)
        for relative, payload in {**files, MARKER: b""}.items():
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(payload)
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.old-"))
            os.replace(out_dir, old / "report")
        try:
            os.replace(staging, out_dir)
        except BaseException:
            if old is not None:
                os.replace(old / "report", out_dir)
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return [out_dir / relative for relative in files]
