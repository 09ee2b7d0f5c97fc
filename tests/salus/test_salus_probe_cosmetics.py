"""The Salus command lines on a user's own inputs: the probe's smaller findings."""
from __future__ import annotations

import io
import tarfile

import pytest

from impls.salus import jct
from impls.salus.core import philly_log, trace_files


def _tar(path, member, text, mode):
    data = text.encode()
    with tarfile.open(path, mode) as archive:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return path


# ---------------------------------------------------------------- a tar archive

@pytest.mark.parametrize("mode, packed", [("w:gz", "a gzipped tar archive"), ("w", "a tar archive")])
def test_a_tar_archive_is_named_with_the_file_to_extract(tmp_path, mode, packed, capsys):
    csv_tar = _tar(tmp_path / "jobs.tar", "trace/jobs.csv", "submit_time,duration\n0,1\n", mode)
    log_tar = _tar(tmp_path / "trace-data.tar", "trace-data/cluster_job_log", "[]", mode)
    with pytest.raises(ValueError) as err:
        trace_files.read_csv(csv_tar)
    assert str(err.value) == (f"{csv_tar}: {packed} (its first file: 'trace/jobs.csv'); expected a CSV file "
                              f"(or gzip of one): extract the CSV first (tar -xf {csv_tar}) and pass that file")
    with pytest.raises(ValueError) as err:
        philly_log.read_philly(log_tar)
    assert f"{packed} (its first file: 'trace-data/cluster_job_log'); expected Philly's cluster_job_log: " \
           "extract cluster_job_log first" in str(err.value)
    for flag, path in (("--trace", csv_tar), ("--philly", log_tar)):
        assert jct.main([flag, str(path)]) == 2
        assert "tar archive" in capsys.readouterr().err
