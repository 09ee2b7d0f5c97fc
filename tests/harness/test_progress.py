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


def test_bars_share_a_thread_lock_not_a_multiprocessing_semaphore():
    """tqdm's default lock is a named semaphore; a child stopped by Ctrl-C left it behind and the
    resource tracker printed 'leaked semaphore' warnings after the suite's one-line error."""
    import threading

    from tqdm.auto import tqdm

    from impls.harness.progress import progress_bar

    bar = progress_bar(3, "t", progress=False)
    bar.close()
    assert isinstance(tqdm.get_lock(), type(threading.RLock()))
