"""A CSV trace's bad rows are named all in one run, by kind; the rows Philly's reader leaves out
(a start before the arrival, an end before the start, a date a clock change hides, no length)
are left out and counted in a CSV too, the first line of each named."""
from __future__ import annotations

import json

import pytest

from impls.salus import jct
from impls.salus.core import trace_files


def _csv(path, text):
    path.write_text(text)
    return path


def test_every_refused_row_is_named_in_one_message_by_kind(tmp_path):
    rows = ["0,10"] * 20
    for line in (3, 5, 9):
        rows[line - 2] = f"{line},abc"            # line numbers count the header as line 1
    for line in (4, 6, 7, 10, 11, 12, 14):
        rows[line - 2] = f"{line},-1"
    rows[15 - 2] = "15,1,2"
    path = _csv(tmp_path / "t.csv", "submit_time,duration\n" + "\n".join(rows) + "\n")
    with pytest.raises(ValueError) as err:
        trace_files.read_csv(path)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{path}: 11 rows refused, of 3 kinds (each kind's first row in full, then the lines of "
                           "the next): ")
    assert (f"[3 rows: {path}:3: duration 'abc' is not a number; expected a job's length in seconds (for dates: "
            "start_time and end_time columns) (also lines 5, 9)]") in text
    assert (f"[7 rows: {path}:4: duration '-1'; expected seconds >= 0 and below 1e+12 (31,700 years) "
            "(also lines 6, 7, 10, 11 and 2 more)]") in text
    assert f"[1 row: {path}:15: a row of 3 fields under a header of 2; expected as many fields" in text


def test_the_command_names_them_on_one_line(tmp_path, capsys):
    path = _csv(tmp_path / "t.csv", "submit_time,duration\n0,10\n1,x\n2,y\n3,5\n")
    assert jct.main(["--trace", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"error: {path}: 2 rows refused, of 1 kind ")
    assert f"[2 rows: {path}:3: duration 'x' is not a number" in err and "(also lines 4)]" in err


def test_no_duration_is_left_out_as_no_end_is(tmp_path, capsys):
    """pandas writes a running job's NaN length as an empty field: it was refused while the
    same job as start_time and end_time, the end empty, was left out as still running."""
    lengths = _csv(tmp_path / "d.csv", "submit_time,duration\n0,10\n1,\n2,NaN\n3,5\n")
    trace = trace_files.read_csv(lengths)
    assert trace.duration_s.tolist() == [10.0, 5.0]
    assert trace.left_out == {trace_files.NO_DURATION: 2}
    assert trace.left_out_first == {trace_files.NO_DURATION: f"{lengths}:3"}
    ends = _csv(tmp_path / "e.csv", "submit_time,start_time,end_time\n0,0,10\n1,1,\n2,2,NaN\n3,3,8\n")
    assert trace_files.read_csv(ends).duration_s.tolist() == [10.0, 5.0]
    assert jct.main(["--trace", str(lengths), "--json", str(tmp_path / "r.json")]) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["left_out"] == {trace_files.NO_DURATION: 2}
    assert result["left_out_first"] == {trace_files.NO_DURATION: f"{lengths}:3"}
    assert jct.main(["--trace", str(lengths)]) == 0
    assert (f"left out 2 no duration (an empty field or NaN, as for a job still running: its length is unknown) "
            f"(the first at {lengths}:3)") in capsys.readouterr().out


def test_rows_philly_leaves_out_are_left_out_and_counted_with_their_first_line(tmp_path):
    path = _csv(tmp_path / "t.csv", "job_id,submit_time,start_time,end_time\n"
                                    "a,0,0,10\nb,5,3,9\nc,6,8,7\nd,7,9,12\ne,8,6,20\nf,9,12,11\n")
    trace = trace_files.read_csv(path)
    assert trace.ids == ["a", "d"]
    assert trace.left_out == {trace_files.STARTED_BEFORE_SUBMITTED: 2, trace_files.ENDS_BEFORE_START: 2}
    assert trace.left_out_first == {trace_files.STARTED_BEFORE_SUBMITTED: f"{path}:3",
                                    trace_files.ENDS_BEFORE_START: f"{path}:4"}
    assert trace.notes == [f"4 of 6 rows were left out for times that disagree (2 started before it was submitted, the "
                           f"first at {path}:3; 2 ends before it starts (end_time before start_time), the first at "
                           f"{path}:4): more than a tenth, which suggests columns written in other zones or units, "
                           "not a few dirty rows"]
    few = _csv(tmp_path / "f.csv", "submit_time,start_time,end_time\n"
               + "".join(f"{i},{i},{i + 5}\n" for i in range(10)) + "20,19,30\n")
    assert trace_files.read_csv(few).left_out == {trace_files.STARTED_BEFORE_SUBMITTED: 1}
    assert trace_files.read_csv(few).notes == []                  # one row in eleven: a dirty row, no warning


# ---------------------------------------------------------------- duration against end - start

def _helios(path, lengths, spans, start="2017-10-03 00:00:00"):
    """Rows of a Helios-like file: ``duration`` beside start_time and end_time dates ``spans`` s apart."""
    from datetime import datetime, timedelta
    t0 = datetime.fromisoformat(start)
    rows = [f"{i},{t0 + timedelta(seconds=60 * i)},{t0 + timedelta(seconds=60 * i)},"
            f"{t0 + timedelta(seconds=60 * i + span)},{length}\n"
            for i, (length, span) in enumerate(zip(lengths, spans))]
    return _csv(path, "job_id,submit_time,start_time,end_time,duration\n" + "".join(rows))


SPANS = [81, 796, 3600, 45, 600]


def test_a_duration_that_agrees_with_end_minus_start_is_read_without_a_word(tmp_path):
    trace = trace_files.read_csv(_helios(tmp_path / "t.csv", SPANS, SPANS))
    assert trace.duration_s.tolist() == SPANS and trace.notes == []


@pytest.mark.parametrize("lengths, unit, said", [
    ([s / 60 for s in SPANS], "s", "duration read as seconds is 1/60 of end_time - start_time (the median over the 5 "
                                   "rows that have all three; the first row off: {path}:2: 1.35 s against 81 s); "
                                   "expected them to agree within a factor of 2: duration in minutes? --time-unit min "
                                   "reads it so"),
    ([s * 1000 for s in SPANS], "s", "duration read as seconds is 1000x end_time - start_time"),
    ([s * 1000 for s in SPANS], "ms", None),
    ([s / 60 for s in SPANS], "min", None),
    (SPANS, "min", "duration read as minutes is 60x end_time - start_time (the median over the 5 rows that have all "
                   "three; the first row off: {path}:2: 4860 s against 81 s); expected them to agree within a factor "
                   "of 2: duration in seconds? --time-unit s reads it so"),
])
def test_a_duration_in_another_unit_than_its_dates_is_refused_with_the_ratio(tmp_path, lengths, unit, said):
    """A duration column in minutes read as seconds gave 1.64x where the trace's own is 45.7x;
    its dates, which --time-unit does not change, say what the unit was."""
    path = _helios(tmp_path / "t.csv", lengths, SPANS)
    if said is None:
        assert trace_files.read_csv(path, unit=unit).duration_s == pytest.approx(SPANS)
        return
    with pytest.raises(ValueError) as err:
        trace_files.read_csv(path, unit=unit)
    assert str(err.value).startswith(f"{path}: ") and said.format(path=path) in str(err.value)


def test_numbers_in_two_units_are_told_to_be_written_in_one(tmp_path):
    path = _csv(tmp_path / "t.csv", "submit_time,start_time,end_time,duration\n0,0,600,10\n5,10,190,3\n")
    with pytest.raises(ValueError, match="duration in minutes\\? the file's numbers are then in more than one unit"):
        trace_files.read_csv(path)


def test_a_few_rows_that_disagree_are_warned_of_and_the_duration_is_read(tmp_path, capsys):
    lengths = list(SPANS)
    lengths[2] = 1200                            # a third of end - start: a retry's gap, say
    path = _helios(tmp_path / "t.csv", lengths, SPANS)
    trace = trace_files.read_csv(path)
    assert trace.duration_s.tolist() == lengths
    assert trace.notes == [f"1 of 5 rows' duration differs from end_time - start_time by more than a factor of 2 "
                           f"(the first at {path}:4: 1200 s against 3600 s); duration is used"]
    assert jct.main(["--trace", str(path)]) == 0
    assert "warning: 1 of 5 rows' duration differs" in capsys.readouterr().err


def test_a_zero_duration_beside_no_start_or_no_end_is_counted_as_helios_means_it(tmp_path):
    """Helios writes a job cancelled in the queue with duration 0 and no start_time, and one
    running at the snapshot with a start and no end_time: never started, still running; a 0
    that ran from start to end is a zero duration."""
    path = _csv(tmp_path / "t.csv", "job_id,submit_time,start_time,end_time,duration\n"
                                    "a,2020-09-01 00:00:00,2020-09-01 00:00:05,2020-09-01 00:01:05,60\n"
                                    "b,2020-09-01 00:00:10,,,0\n"
                                    "c,2020-09-01 00:00:20,NaN,NaN,0\n"
                                    "d,2020-09-01 00:00:30,2020-09-01 00:00:31,,0\n"
                                    "e,2020-09-01 00:00:40,2020-09-01 00:00:41,2020-09-01 00:00:41,0\n")
    trace = trace_files.read_csv(path)
    assert trace.duration_s.tolist() == [60.0]
    assert trace.left_out == {trace_files.NEVER_STARTED: 2, trace_files.STILL_RUNNING: 1, "zero duration": 1}


def test_start_and_end_beside_a_duration_are_compared_only_where_readable(tmp_path):
    path = _csv(tmp_path / "t.csv", "submit_time,start_time,end_time,duration\n"
                                    "0,0,10,10\n1,,,5\n2,soon,later,7\n3,2017-10-03 00:00:00,NaN,4\n")
    assert trace_files.read_csv(path).duration_s.tolist() == [10.0, 5.0, 7.0, 4.0]


def test_a_short_row_that_reaches_the_last_column_read_is_padded_and_one_short_of_it_refused():
    """A row may stop after the last column the reader reads: its missing trailing columns are
    empty. One that stops before it is misaligned and refused."""
    from impls.salus.core.trace_rows import BadRow, fitted

    header = ["job", "arrival", "duration", "note", "extra"]
    used = ["job", "duration"]
    assert fitted(["a", "1", "5"], header, "row 2", used) == ["a", "1", "5", "", ""]      # reaches 'duration'
    assert fitted(["a", "1", "5", "x", "y", ""], header, "row 3", used) == ["a", "1", "5", "x", "y"]
    with pytest.raises(BadRow, match="row 4: a row of 2 fields under a header of 5"):
        fitted(["a", "1"], header, "row 4", used)
