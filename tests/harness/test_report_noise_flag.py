"""render_report.py --noise: the thresholds file the report's intervals and history steps
read, for results kept outside the checkout (the default stays reports/noise/<machine>.json)."""
from __future__ import annotations

import json
from pathlib import Path

from impls.harness.report import noise

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = ROOT / "reports" / "claims.toml"
RATIO = "bench_salus.SrtfOverFifo.track_ratio"
MACHINE = "noiseflagbox-quick"      # no reports/noise/ file of this name in the checkout
DAY = 86_400_000   # ms


def _results(tmp_path: Path) -> Path:
    """One asv 0.6 result file of MACHINE: track_ratio's three points."""
    results = tmp_path / "results"
    (results / MACHINE).mkdir(parents=True)
    version = json.loads((ROOT / "benchmarks" / "versions.json").read_text())[RATIO]
    doc = {"commit_hash": "1" * 40, "env_name": "existing-py", "date": 10 * DAY, "params": {"machine": MACHINE},
           "python": "3.11", "requirements": {}, "env_vars": {}, "durations": {}, "version": 2,
           "result_columns": ["result", "params", "version", "started_at", "duration"],
           "results": {RATIO: [[3.2, 2.0, 2.0], [["'real'", "'sim'", "'sim_inrun'"]], version, 10 * DAY, 1.0]}}
    (results / MACHINE / "11111111-existing-py.json").write_text(json.dumps(doc))
    (tmp_path / "artifacts").mkdir()
    return results


def _claim(out: Path) -> dict:
    document = json.loads((out / "report.json").read_text())
    return next(c for c in document["claims"] if c["id"] == "salus-jct-srtf-vs-fifo")


def test_the_report_reads_the_thresholds_file_given_with_noise(tmp_path, load_script, capsys):
    results = _results(tmp_path)
    thresholds = tmp_path / "kept-elsewhere.json"
    noise.save_noise(noise.Noise(MACHINE, "2026-12-03T00:00:00+00:00", [], {
        (RATIO, "source='real'"): noise.Threshold(RATIO, "source='real'", 5, 0.02, 0.05, "", sigma=0.01, df=4)}),
        thresholds)
    common = ["--machine", MACHINE, "--results", str(results), "--artifacts", str(tmp_path / "artifacts"),
              "--claims", str(CLAIMS)]
    rc = load_script("render_report").main([*common, "--out", str(tmp_path / "default")])
    assert rc == 0, capsys.readouterr().err
    assert _claim(tmp_path / "default")["no_noise"] is True      # no reports/noise/<machine>.json
    rc = load_script("render_report").main([*common, "--out", str(tmp_path / "given"), "--noise", str(thresholds)])
    assert rc == 0, capsys.readouterr().err
    claim = _claim(tmp_path / "given")
    assert claim["no_noise"] is False and claim["measured"] == 3.2
    assert "No measured noise" not in (tmp_path / "given" / "report.md").read_text()


def test_a_noise_file_that_is_not_there_or_with_several_machines_is_refused(tmp_path, load_script, capsys):
    results = _results(tmp_path)
    rc = load_script("render_report").main(["--machine", MACHINE, "--results", str(results), "--out",
                                            str(tmp_path / "out"), "--noise", str(tmp_path / "typo.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "--noise" in err and "no such file" in err and not (tmp_path / "out").exists()
    rc = load_script("render_report").main(["--machines", MACHINE, "other", "--results", str(results), "--out",
                                            str(tmp_path / "out"), "--noise", str(CLAIMS)])
    err = capsys.readouterr().err
    assert rc == 2 and "--noise with --machines" in err and not (tmp_path / "out").exists()
