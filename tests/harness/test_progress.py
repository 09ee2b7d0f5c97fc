"""Progress reaches the user during make reproduce: experiments log to a file the runner follows."""
from __future__ import annotations

import threading

from impls.harness import progress


def test_log_lines_and_bars_go_to_the_progress_log(tmp_path, monkeypatch):
    log = tmp_path / "progress.log"
    monkeypatch.setenv(progress.LOG_VARIABLE, str(log))
    monkeypatch.setenv("ASV", "true")  # under asv: nothing on the terminal, everything in the log
    progress.log("bandana.layouts (smoke, cpu): started")
    with progress.progress_bar(3, "layouts", "point") as bar:
        bar.update(3)
    text = log.read_text()
    assert "] bandana.layouts (smoke, cpu): started\n" in text
    assert "layouts: 100%" in text and "3/3" in text


def test_the_runner_prints_log_lines_and_the_newest_bar(tmp_path, capsys, load_script):
    log = tmp_path / "progress.log"
    log.write_text("[10:00:00] slide.sweeps (quick, cpu): started\nruns:  10%|#\rruns:  50%|#####\r")
    stop = threading.Event()
    follower = threading.Thread(target=load_script("run_suite").follow, args=(log, stop, 0.0))
    follower.start()
    threading.Event().wait(2.5)
    stop.set()
    follower.join()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "dlsysbench: [10:00:00] slide.sweeps (quick, cpu): started"
    assert out[1] == "dlsysbench:   runs:  50%|#####"
