"""A manifest's mistakes fail what uses that manifest, with its file, line and key; the others load."""
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import registry_fixtures
from impls.bandana.data.traces import generate_trace
from impls.harness import registry

ROOT = Path(__file__).resolve().parents[2]

RAMP = """\
name = "ramp"
[synthetic]
generator = "registry_fixtures:generate_ramp"
seed = 3
[synthetic.profiles.smoke]
rows = 10
"""

TYPO = RAMP.replace('name = "ramp"', 'name = "typo"').replace("seed = 3\n", "seed = 3\nsed = 4\n")


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / f"{name}.toml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def one_broken(tmp_path) -> tuple[Path, Path]:
    """(folder, the broken manifest's path): ``ramp`` is sound, ``typo`` has a misspelt key on line 5."""
    write(tmp_path, "ramp", RAMP)
    return tmp_path, write(tmp_path, "typo", TYPO)


# -- 1. a broken manifest fails only what uses it ------------------------------------------------

def test_a_broken_manifest_leaves_the_others_loadable_and_says_once_why(one_broken, capsys):
    folder, broken = one_broken
    assert registry.load("ramp", "smoke", directory=folder)["values"].shape == (10,)
    assert registry.load("ramp", "smoke", directory=folder).synthetic
    assert registry.made_by("registry_fixtures:", folder) == ["ramp"]
    assert list(registry.manifests(folder)) == ["ramp"]
    warnings = capsys.readouterr().err.splitlines()
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"warning: {broken}:5: unknown key(s) sed in [synthetic]")
    assert "'typo' is left out" in warnings[0]


def test_using_the_broken_manifest_fails_with_its_file_and_line(one_broken):
    folder, broken = one_broken
    expected = rf"^{broken}:5: unknown key\(s\) sed in \[synthetic\]"
    with pytest.raises(registry.ManifestError, match=expected):
        registry.load("typo", "smoke", directory=folder)
    with pytest.raises(registry.ManifestError, match=expected):
        registry.draw("typo", 1, "smoke", directory=folder)
    known = registry.manifests(folder)
    for ask in (lambda: known["typo"], lambda: "typo" in known, lambda: known.get("typo")):
        with pytest.raises(registry.ManifestError, match=expected):
            ask()
    assert set(known.broken) == {"typo"}
    with pytest.raises(KeyError, match="unknown dataset 'nope'; known: ramp"):
        registry.load("nope", "smoke", directory=folder)


def test_a_manifest_that_is_not_utf8_is_broken_with_its_path_not_unreadable_for_all(tmp_path):
    write(tmp_path, "ramp", RAMP)
    bad = tmp_path / "latin.toml"
    bad.write_bytes('name = "latin"\ndescription = "caf\xe9"\n'.encode("latin-1"))
    assert registry.load("ramp", "smoke", directory=tmp_path).synthetic
    with pytest.raises(registry.ManifestError, match=rf"^{bad}: not UTF-8 text"):
        registry.load("latin", "smoke", directory=tmp_path)


def test_impls_list_works_beside_a_broken_manifest_and_warns_once(tmp_path):
    root = tmp_path / "root"
    (root / "datasets").mkdir(parents=True)
    shutil.copy(ROOT / "asv.conf.json", root)
    for manifest in (ROOT / "datasets").glob("*.toml"):
        shutil.copy(manifest, root / "datasets")
    broken = write(root / "datasets", "typo", TYPO)
    env = {**os.environ, "DLSYSBENCH_ROOT": str(root), "DLSYSBENCH_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "impls", "list"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "bandana.layouts" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if str(broken) in line]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: {broken}:5: unknown key(s) sed"), done.stderr


# -- 2, 4. values of the wrong type or sign name the file, the line and the key -----------------

SIZED = RAMP.replace('name = "ramp"', 'name = "bad"') + "[synthetic.profiles.quick]\nrows = {quick}\n"

EXTERNAL = """\
name = "bad"
[external]
loader = "registry_fixtures:parse_numbers"
{key} = 5
"""


@pytest.mark.parametrize("text, message, line", [
    (RAMP.replace("seed = 3", "seed = -1").replace('"ramp"', '"bad"'),
     "`seed` must be a non-negative integer, got -1", 4),
    (EXTERNAL.format(key="path"), "`path` must be a string, got int", 4),
    (EXTERNAL.format(key="env"), "`env` must be a string, got int", 4),
    (EXTERNAL.format(key="url") + 'path = "x"\n', "`url` must be a string, got int", 4),
    ('name = "bad"\ndescription = 5\n[external]\nloader = "m:f"\npath = "x"\n', "`description` must be a string", 2),
    ('name = "bad"\nsynthetic = 5\n', r"\[synthetic\] must be a table, got int", 2),
    # a size is a positive integer; the line is the one in the profile's own table
    (SIZED.format(quick='"1000"'), r"\[synthetic.profiles.quick\] `rows` = '1000': .*a size must be a positive "
                                   "integer", 8),
    (SIZED.format(quick="1000.7"), r"`rows` = 1000.7: .*positive integer", 8),
    (SIZED.format(quick="1e12"), r"`rows` = 1000000000000.0: .*positive integer", 8),
    (SIZED.format(quick="0"), r"`rows` = 0: .*positive integer", 8),
    (SIZED.format(quick="-3"), r"`rows` = -3: .*positive integer", 8),
    (SIZED.format(quick="true"), r"`rows` = True: .*positive integer", 8),
])
def test_a_value_of_the_wrong_type_or_sign_names_file_line_and_key(tmp_path, text, message, line):
    path = write(tmp_path, "bad", text)
    with pytest.raises(registry.ManifestError, match=message) as err:
        registry.parse_manifest(path)
    assert str(err.value).startswith(f"{path}:{line}: "), err.value


def test_a_bad_path_is_refused_by_load_as_a_manifest_error_not_a_type_error(tmp_path):
    write(tmp_path, "bad", EXTERNAL.format(key="path"))
    with pytest.raises(registry.ManifestError, match=r"bad.toml:4: `path` must be a string"):
        registry.load("bad", "smoke", directory=tmp_path)


# -- 3. an external set is not parsed into a cache that cannot be written ------------------------

def test_an_unwritable_cache_fails_before_the_external_file_is_parsed(tmp_path, monkeypatch):
    data = tmp_path / "numbers.txt"
    data.write_text("1\n2\n")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(blocker))
    monkeypatch.setenv("DLSYSBENCH_TEST_NUMBERS", str(data))
    write(tmp_path, "numbers", 'name = "numbers"\n[external]\nenv = "DLSYSBENCH_TEST_NUMBERS"\n'
                               'loader = "registry_fixtures:parse_numbers"\n')
    before = registry_fixtures.CALLS["parse"]
    with pytest.raises(OSError, match="set DLSYSBENCH_CACHE to a folder this user can write"):
        registry.load("numbers", "smoke", directory=tmp_path)
    assert registry_fixtures.CALLS["parse"] == before


# -- 5. a trace's popularity exponents must be finite -------------------------------------------

@pytest.mark.parametrize("key", ["zipf_exponent", "member_exponent"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_the_trace_generator_refuses_a_non_finite_exponent(key, value):
    with pytest.raises(ValueError, match=rf"^{key} must be a finite number, got {value}$"):
        generate_trace(1, num_vectors=200, num_lookups=1000, dim=4, with_vectors=False, **{key: value})


def test_a_manifest_with_a_nan_exponent_gives_no_trace(tmp_path):
    write(tmp_path, "nan-trace", 'name = "nan-trace"\n[synthetic]\n'
                                 'generator = "impls.bandana.data.traces:generate_trace"\nseed = 1\n'
                                 '[synthetic.params]\ndim = 4\nzipf_exponent = nan\nwith_vectors = false\n'
                                 '[synthetic.profiles.smoke]\nnum_vectors = 200\nnum_lookups = 1000\n')
    with pytest.raises(ValueError, match="zipf_exponent must be a finite number, got nan"):
        registry.load("nan-trace", "smoke", directory=tmp_path)


def test_finite_exponents_still_give_a_normalised_popularity():
    trace = generate_trace(1, num_vectors=200, num_lookups=1000, dim=4, with_vectors=False,
                           zipf_exponent=0.8, member_exponent=0.4)
    assert np.isfinite(trace["popularity"]).all() and math.isclose(trace["popularity"].sum(), 1.0)
