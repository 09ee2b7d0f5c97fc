"""A thresholds file records the hardware its runs ran on, and a run of other hardware filed
under the same machine name (a generic host name) is told apart: the report then leaves
the thresholds out and says why."""
import json

import pandas as pd
import pytest

from compare_fixtures import BASE, HEAD, MACHINE, RATE, base_values, measure, write_run
from impls.harness.report import build, noise, results

EPYC = {"cpu": "AMD EPYC", "num_cpu": "2", "ram": "25276182528", "os": "Linux 6.18", "arch": "x86_64"}
XEON = {"cpu": "Intel Xeon Platinum 8480", "num_cpu": "112", "ram": "1081145204736", "os": "Linux 5.15",
        "arch": "x86_64"}


def _with_hardware(path, hardware):
    document = json.loads(path.read_text())
    document["params"].update(hardware)
    path.write_text(json.dumps(document))


def _noise(hardware=None) -> noise.Noise:
    return noise.Noise("m", "2026-12-03T00:00:00+00:00", [],
                       {(RATE, "p"): noise.Threshold(RATE, "p", 2, 0.01, 0.03, "1")}, hardware=hardware or {})


def test_make_noise_records_the_hardware_its_runs_ran_on(results):
    for path in sorted((results.parent / "runs" / MACHINE).glob("*.json")):
        _with_hardware(path, EPYC)
    _with_hardware(results / MACHINE / f"{BASE[:8]}-existing-py.json", EPYC)
    written = json.loads(measure(results).read_text())
    assert written["hardware"] == EPYC
    assert noise.load_noise(results.parent / "noise.json").hardware == EPYC


def test_the_newest_run_and_then_machine_json_give_the_record(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    for path, hardware in ((old, EPYC), (new, {"cpu": "Intel Xeon Platinum 8480", "num_cpu": ""})):
        path.write_text(json.dumps({"params": {"machine": "m", **hardware}}))
    (tmp_path / "damaged.json").write_text("{not json")
    record = noise.runs_hardware([old, new, tmp_path / "damaged.json"], {"num_cpu": "8", "ram": "1"})
    # the newest run that records a key gives it; an empty one says nothing
    assert record == {**EPYC, "cpu": "Intel Xeon Platinum 8480"}
    assert noise.runs_hardware([], {"num_cpu": 8, "cpu": ""}) == {"num_cpu": "8"}


def test_a_thresholds_file_without_hardware_still_loads_and_cannot_mismatch(tmp_path):
    path = tmp_path / "n.json"
    noise.save_noise(_noise(), path)
    assert "hardware" not in json.loads(path.read_text())
    loaded = noise.load_noise(path)
    assert loaded.hardware == {} and loaded.get(RATE, "p") is not None
    assert noise.machine_mismatch(loaded, XEON) is None


@pytest.mark.parametrize("bad", ["AMD EPYC", {"cpu": ["AMD"]}, {"num_cpu": True}])
def test_a_malformed_hardware_record_is_one_line(tmp_path, bad):
    path = tmp_path / "n.json"
    noise.save_noise(_noise(EPYC), path)
    path.write_text(json.dumps({**json.loads(path.read_text()), "hardware": bad}))
    with pytest.raises(noise.NoiseError, match="'hardware'") as err:
        noise.load_noise(path)
    assert "\n" not in str(err.value)


def test_machine_mismatch_compares_cpu_count_arch_and_ram_within_a_tolerance():
    held = _noise(EPYC)
    assert noise.machine_mismatch(held, EPYC) is None
    assert noise.machine_mismatch(held, {**EPYC, "cpu": "amd  epyc", "os": "Linux 6.19"}) is None
    assert noise.machine_mismatch(held, {**EPYC, "ram": str(int(25276182528 * 1.05))}) is None
    assert noise.machine_mismatch(held, {}) is None
    line = noise.machine_mismatch(held, XEON)
    assert "'AMD EPYC' there, 'Intel Xeon Platinum 8480' here" in line and "2 CPUs there, 112 here" in line
    assert "RAM 23.5 GiB there, 1007 GiB here" in line and "\n" not in line
    assert "4 CPUs there" not in noise.machine_mismatch(held, {**EPYC, "num_cpu": "4"})
    assert "RAM" in noise.machine_mismatch(held, {**EPYC, "ram": str(2 * 25276182528)})
    assert "aarch64" in noise.machine_mismatch(held, {**EPYC, "arch": "aarch64"})


def _points() -> pd.DataFrame:
    return pd.DataFrame({"benchmark": [RATE], "param_label": ["p"], "value": [1.0], "version": ["1"]})


def test_the_report_leaves_out_thresholds_of_other_hardware(tmp_path, monkeypatch):
    path = tmp_path / "m.json"
    monkeypatch.setattr(build, "default_noise_path", lambda machine: path)
    noise.save_noise(_noise(EPYC), path)
    history, claims, notes = build._usable_noise("m", _points(), False, EPYC)
    assert history is not None and claims.get(RATE, "p") is not None and notes == []
    history, claims, notes = build._usable_noise("m", _points(), False, XEON)
    [note] = notes
    assert history is None and claims is None
    assert build.OTHER_HARDWARE_NOTE in note and "not used" in note and "make noise" in note and str(path) in note
    noise.save_noise(_noise(), path)            # an older file: used, with a mild note
    history, claims, notes = build._usable_noise("m", _points(), False, XEON)
    assert claims.get(RATE, "p") is not None and [n for n in notes if build.NO_HARDWARE_NOTE in n]


def test_the_report_checks_the_hardware_of_the_newest_commits_runs(tmp_path):
    results_dir = tmp_path / "results"
    older = write_run(results_dir / MACHINE, BASE, 100, base_values(), date_s=1_700_000_000)
    newer = write_run(results_dir / MACHINE, HEAD, 200, base_values(), date_s=1_700_100_000)
    _with_hardware(older, EPYC)
    _with_hardware(newer, XEON)
    frame = results.read_results(results_dir, MACHINE, [])
    record = build._newest_hardware(results_dir, MACHINE, results.commits(frame), {"cpu": "from machine.json"}, [])
    assert record == XEON
    record = build._newest_hardware(results_dir, MACHINE, results.commits(frame), EPYC, [(str(newer), "damaged")])
    assert record == EPYC       # a file left out says nothing; machine.json does


def test_compare_refuses_thresholds_measured_on_other_hardware(results):
    # the committed file of a 2-core VM named "vm" must not judge a 112-core box also named "vm"
    from compare_fixtures import add_earlier_runs, run_compare

    add_earlier_runs(results)                                         # enough runs to judge a halved rate
    for path in sorted((results.parent / "runs" / MACHINE).glob("*.json")):
        _with_hardware(path, EPYC)
    _with_hardware(results / MACHINE / f"{BASE[:8]}-existing-py.json", EPYC)
    thresholds = measure(results)
    head = write_run(results / MACHINE, HEAD, 300, base_values(rate=500.0))
    _with_hardware(head, XEON)
    refused = run_compare(results, thresholds, "--base", BASE, "--head", HEAD)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "measured on other hardware than this run: CPU 'AMD EPYC' there, 'Intel Xeon Platinum 8480' here" \
        in refused.stderr and "REGRESSION" not in refused.stdout
    _with_hardware(head, EPYC)                                        # the same box: judged
    judged = run_compare(results, thresholds, "--base", BASE, "--head", HEAD)
    assert judged.returncode == 1 and "REGRESSION" in judged.stdout, judged.stdout + judged.stderr


def test_make_noise_refuses_runs_of_two_boxes_under_one_name(results):
    # a generic host name shared by two boxes: their repeats would pool two machines' noise
    from compare_fixtures import script

    stored = sorted((results.parent / "runs" / MACHINE).glob("*.json"))
    _with_hardware(stored[0], XEON)
    for path in stored[1:]:
        _with_hardware(path, EPYC)
    _with_hardware(results / MACHINE / f"{BASE[:8]}-existing-py.json", EPYC)
    out = results.parent / "noise.json"
    done = script("measure_noise.py", "--results", str(results), "--machine", MACHINE, "--out", str(out))
    assert done.returncode == 2 and not out.exists(), done.stdout + done.stderr
    assert f"{stored[0].name} ran on other hardware than" in done.stderr and "112" in done.stderr, done.stderr
    _with_hardware(stored[0], EPYC)
    assert measure(results).is_file()                                  # one box: measured
