import hashlib
import textwrap

import numpy as np
import pytest

import registry_fixtures
from impls.harness import registry

SYNTHETIC = """\
name = "ramp"
description = "a test recipe"
[synthetic]
generator = "registry_fixtures:generate_ramp"
seed = 3
[synthetic.params]
scale = 2.0
[synthetic.profiles.smoke]
rows = 10
[synthetic.profiles.quick]
rows = 100
[synthetic.profiles.full]
rows = 1000
"""


def write(directory, name, text):
    path = directory / f"{name}.toml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def manifests_dir(tmp_path):
    directory = tmp_path / "manifests"
    directory.mkdir()
    write(directory, "ramp", SYNTHETIC)
    return directory


def test_synthetic_dataset_is_generated_once_and_cached(manifests_dir):
    before = registry_fixtures.CALLS["generate"]
    first = registry.load("ramp", directory=manifests_dir)
    second = registry.load("ramp", directory=manifests_dir)
    assert registry_fixtures.CALLS["generate"] == before + 1
    expected = registry_fixtures.generate_ramp(seed=3, rows=10, scale=2.0)["values"]
    np.testing.assert_array_equal(first["values"], expected)
    np.testing.assert_array_equal(second["values"], expected)
    assert first.synthetic and first.params == {"scale": 2.0, "rows": 10}
    assert first.sha256 == hashlib.sha256(first.cache_path.read_bytes()).hexdigest()


def test_profiles_select_sizes_and_separate_caches(manifests_dir):
    smoke = registry.load("ramp", profile="smoke", directory=manifests_dir)
    quick = registry.load("ramp", profile="quick", directory=manifests_dir)
    assert len(smoke["ids"]) == 10 and len(quick["ids"]) == 100
    assert smoke.cache_path != quick.cache_path


def test_corrupt_cache_is_rebuilt_not_used(manifests_dir):
    good = registry.load("ramp", directory=manifests_dir)
    raw = bytearray(good.cache_path.read_bytes())
    raw[-20] ^= 0xFF
    good.cache_path.write_bytes(bytes(raw))
    before = registry_fixtures.CALLS["generate"]
    again = registry.load("ramp", directory=manifests_dir)
    assert registry_fixtures.CALLS["generate"] == before + 1
    np.testing.assert_array_equal(again["values"], good["values"])


def test_unknown_dataset_lists_known_ones(manifests_dir):
    with pytest.raises(KeyError, match="known: ramp"):
        registry.load("nope", directory=manifests_dir)


@pytest.mark.parametrize("text, message, line", [
    ('name = "bad"\n[synthetic]\nseed = 1\n', r"\[synthetic\] needs `generator`", 2),
    ('name = "bad"\n[synthetic]\ngenerator = "m:f"\nseed = "one"\n', "`seed` must be an integer, got str", 4),
    ('name = "other"\n[synthetic]\ngenerator = "m:f"\nseed = 1\n', "must match the file name 'bad'", 1),
    ('name = "bad"\n[synthetic]\ngenerator = "no colon"\nseed = 1\n', "package.module:function", 3),
    ('name = "bad"\n', "exactly one of", None),
    ('name = "bad"\n[external]\nloader = "m:f"\n', "needs `env` or `path`", 2),
    ('name = "bad"\n[external]\nloader = "m:f"\npath = "x"\nsha256 = "abc"\n', "64 lowercase hex", 5),
    ('name = "bad"\n[synthetic]\ngenerator = "m:f"\nseed = 1\n[synthetic.profiles.huge]\nrows = 1\n',
     "unknown profile", 5),
    ('name = "bad\n', "not valid TOML", None),
    ('name = "bad"\n[synthetic]\ngenerator = "m:f"\nseed = true\n', "`seed` must be an integer, got bool", 4),
    ('name = "bad"\n[synthetic]\ngenerator = "m:f"\nseed = 1\nprofiles = "smoke"\n',
     r"\[synthetic.profiles\] must be a table, got str", 5),
    ('name = "bad"\n[synthetic]\ngenerator = "m:f"\nseed = 1\n[synthetic.profiles]\nsmoke = 5\n',
     r"\[synthetic.profiles.smoke\] must be a table of parameters, got int", 6),
    # a profile sizes a set; a shape parameter set per profile (chosen for each size's result) is refused
    ('name = "bad"\n[synthetic]\ngenerator = "m:f"\nseed = 1\n[synthetic.params]\nnoise = 0.75\n'
     '[synthetic.profiles.smoke]\nrows = 1\nnoise = 1.25\n',
     r"\[synthetic.profiles.smoke\] overrides 'noise' of \[synthetic.params\]", 7),
])
def test_bad_manifest_names_file_line_and_expectation(tmp_path, text, message, line):
    path = write(tmp_path, "bad", text)
    with pytest.raises(registry.ManifestError, match=message) as err:
        registry.parse_manifest(path)
    assert str(path) in str(err.value)
    if line is not None:
        assert f"{path}:{line}:" in str(err.value)


def external(directory, sha=None, path=None):
    lines = ['name = "numbers"', "[external]", 'env = "DLSYSBENCH_TEST_NUMBERS"',
             'loader = "registry_fixtures:parse_numbers"', 'format = "text"',
             'url = "https://example.invalid/numbers"']
    if sha:
        lines.append(f'sha256 = "{sha}"')
    if path:
        lines.append(f'path = "{path}"')
    write(directory, "numbers", "\n".join(lines) + "\n")


def test_missing_external_file_says_where_to_get_it(tmp_path, monkeypatch):
    monkeypatch.delenv("DLSYSBENCH_TEST_NUMBERS", raising=False)
    external(tmp_path)
    with pytest.raises(registry.DatasetUnavailable,
                       match=r"DLSYSBENCH_TEST_NUMBERS is unset.*example.invalid/numbers.*set DLSYSBENCH_TEST_NUMBERS="):
        registry.load("numbers", directory=tmp_path)
    monkeypatch.setenv("DLSYSBENCH_TEST_NUMBERS", str(tmp_path / "absent.txt"))
    with pytest.raises(registry.DatasetUnavailable, match="absent.txt"):
        registry.load("numbers", directory=tmp_path)


def test_a_default_path_in_the_data_cache_follows_dlsysbench_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("DLSYSBENCH_TEST_NUMBERS", raising=False)
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "elsewhere"))
    external(tmp_path, path="datasets/cache/numbers/numbers.txt")
    (tmp_path / "elsewhere" / "numbers").mkdir(parents=True)
    (tmp_path / "elsewhere" / "numbers" / "numbers.txt").write_text("4\n5\n")
    np.testing.assert_array_equal(registry.load("numbers", directory=tmp_path)["numbers"], [4, 5])


def test_external_file_is_checksum_verified_and_cached(tmp_path, monkeypatch):
    data = tmp_path / "numbers.txt"
    data.write_text("1\n2\n3\n")
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    monkeypatch.setenv("DLSYSBENCH_TEST_NUMBERS", str(data))
    external(tmp_path, sha=digest)
    before = registry_fixtures.CALLS["parse"]
    loaded = registry.load("numbers", directory=tmp_path)
    registry.load("numbers", directory=tmp_path)
    assert registry_fixtures.CALLS["parse"] == before + 1
    assert not loaded.synthetic
    np.testing.assert_array_equal(loaded["numbers"], [1, 2, 3])

    data.write_text("1\n2\n4\n")
    with pytest.raises(registry.ChecksumMismatch, match=digest):
        registry.load("numbers", directory=tmp_path)


def test_external_cache_is_reread_when_the_loader_module_bumps_its_cache_version(tmp_path, monkeypatch):
    data = tmp_path / "numbers.txt"
    data.write_text("1\n2\n3\n")
    monkeypatch.setenv("DLSYSBENCH_TEST_NUMBERS", str(data))
    external(tmp_path)
    before = registry_fixtures.CALLS["parse"]
    first = registry.load("numbers", directory=tmp_path)
    registry.load("numbers", directory=tmp_path)
    assert registry_fixtures.CALLS["parse"] == before + 1
    monkeypatch.setattr(registry_fixtures, "CACHE_VERSION", 99, raising=False)
    second = registry.load("numbers", directory=tmp_path)
    assert registry_fixtures.CALLS["parse"] == before + 2
    assert second.cache_path != first.cache_path
    np.testing.assert_array_equal(second["numbers"], [1, 2, 3])


def test_repository_manifests_all_parse():
    known = registry.manifests()
    assert not known.broken, known.broken       # iterating leaves a broken one out
    for manifest in known.values():
        assert manifest.kind in ("synthetic", "external")


def _readme_manifests() -> list[str]:
    text = (registry.paths.datasets_dir() / "README.md").read_text()
    return [block.split("```", 1)[0] for block in text.split("```toml\n")[1:]]


def test_the_manifest_examples_in_datasets_readme_load(tmp_path, monkeypatch):
    synthetic, external = _readme_manifests()
    write(tmp_path, "example", synthetic)
    made = registry.load("example", profile="smoke", directory=tmp_path)
    assert made.synthetic and len(made["offsets"]) > 1 and made["vectors"].shape[1] == 32
    write(tmp_path, "amazon670k", external)
    manifest = registry.manifests(tmp_path)["amazon670k"]
    for key in ("loader", "also_reads"):
        assert callable(registry._resolve(manifest.spec[key], manifest, key))


@pytest.mark.parametrize("old, new, message", [
    ("registry_fixtures:generate_ramp", "registry_fixtures:generate", "has no function 'generate'"),
    ("registry_fixtures:generate_ramp", "no_such_module:generate", "there is no module 'no_such_module'"),
    ("rows = 10\n", "vectors = 10\n", r"does not take these params \(.*'rows'"),
    ("scale = 2.0\n", "scale = 2.0\nwidth = 3\n", "does not take these params .*'width'"),
])
def test_a_generator_that_does_not_resolve_or_take_the_params_names_the_manifest(tmp_path, old, new, message):
    write(tmp_path, "ramp", SYNTHETIC.replace(old, new))
    before = registry_fixtures.CALLS["generate"]
    with pytest.raises(registry.ManifestError, match=rf"ramp\.toml: .*{message}"):
        registry.load("ramp", profile="smoke", directory=tmp_path)
    assert registry_fixtures.CALLS["generate"] == before


def test_a_loader_that_does_not_resolve_is_named_before_the_file_is_read(tmp_path, monkeypatch):
    monkeypatch.delenv("DLSYSBENCH_TEST_NUMBERS", raising=False)    # no file: the name is checked first
    external(tmp_path)
    text = (tmp_path / "numbers.toml").read_text().replace("registry_fixtures:parse_numbers",
                                                            "registry_fixtures:parse")
    (tmp_path / "numbers.toml").write_text(text)
    with pytest.raises(registry.ManifestError, match=r"numbers\.toml: `loader` = .*has no function 'parse'"):
        registry.load("numbers", directory=tmp_path)


def test_a_home_of_no_such_user_is_a_missing_file_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("DLSYSBENCH_TEST_NUMBERS", "~no-such-user-here/numbers.txt")
    external(tmp_path)
    with pytest.raises(registry.DatasetUnavailable, match=r"is not at .*~no-such-user-here/numbers\.txt"):
        registry.load("numbers", directory=tmp_path)


def test_a_misspelled_also_reads_is_named_before_the_file_is_looked_for(tmp_path, monkeypatch):
    monkeypatch.delenv("DLSYSBENCH_TEST_NUMBERS", raising=False)
    external(tmp_path)
    with open(tmp_path / "numbers.toml", "a") as manifest:
        manifest.write('also_reads = "registry_fixtures:beside"\n')
    with pytest.raises(registry.ManifestError, match=r"`also_reads` = .*has no function 'beside'"):
        registry.load("numbers", directory=tmp_path)


def test_a_file_is_hashed_once_per_process_until_it_changes(tmp_path, monkeypatch):
    data = tmp_path / "f.bin"
    data.write_bytes(b"abc")
    first, second = registry.sha256_of(data), hashlib.sha256(b"abd").hexdigest()
    reads = []
    real_new = hashlib.sha256
    monkeypatch.setattr(registry.hashlib, "sha256", lambda *a: reads.append(1) or real_new(*a))
    assert registry.sha256_of(data) == first and reads == []          # the same file: not read again
    data.write_bytes(b"abd")                                          # same size, new contents
    assert registry.sha256_of(data) == second and reads == [1]


def test_a_change_beside_the_generator_regenerates_the_set(tmp_path, monkeypatch):
    """The cache is keyed by the generator's sources: an edited generator (or a kernel beside
    it) never serves the data its old code made."""
    import importlib
    import sys

    code = tmp_path / "code" / "gen44"
    code.mkdir(parents=True)
    (code / "__init__.py").write_text("")
    (code / "make.py").write_text("import numpy as np\nCALLS = []\n"
                                  "def ramp(seed, rows):\n    CALLS.append(rows)\n"
                                  "    return {'values': np.arange(rows) + seed}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    write(manifests, "g", 'name = "g"\ndescription = "d"\n[synthetic]\ngenerator = "gen44.make:ramp"\nseed = 1\n'
                          "[synthetic.params]\n[synthetic.profiles.smoke]\nrows = 4\n[synthetic.profiles.quick]\n"
                          "rows = 4\n[synthetic.profiles.full]\nrows = 4\n")
    first = registry.load("g", "smoke", directory=manifests)
    assert registry.load("g", "smoke", directory=manifests).cache_path == first.cache_path
    (code / "kernels.py").write_text("# a kernel the generator now uses\n")
    second = registry.load("g", "smoke", directory=manifests)
    assert second.cache_path != first.cache_path
    assert importlib.import_module("gen44.make").CALLS == [4, 4]
    for name in ("gen44.make", "gen44"):
        sys.modules.pop(name, None)


def test_a_partial_generator_is_keyed_by_the_code_it_wraps(tmp_path, monkeypatch):
    import sys

    code = tmp_path / "code"
    (code / "gen45").mkdir(parents=True)
    (code / "gen45" / "__init__.py").write_text("")
    (code / "gen45" / "base.py").write_text("import numpy as np\ndef ramp(seed, rows, step=1):\n"
                                            "    return {'values': np.arange(rows) * step + seed}\n")
    (code / "wrap45").mkdir()
    (code / "wrap45" / "__init__.py").write_text("")
    (code / "wrap45" / "gens.py").write_text("import functools\nfrom gen45.base import ramp\n"
                                             "ramp2 = functools.partial(ramp, step=2)\n")
    monkeypatch.syspath_prepend(str(code))
    manifest = registry.Manifest("w", tmp_path / "w.toml", "d", "synthetic", {"generator": "wrap45.gens:ramp2", "seed": 1})
    before = registry.generator_code(manifest)
    (code / "gen45" / "base.py").write_text((code / "gen45" / "base.py").read_text() + "# edited\n")
    assert registry.generator_code(manifest) != before          # the wrapped function's folder counts
    for name in ("wrap45.gens", "wrap45", "gen45.base", "gen45"):
        sys.modules.pop(name, None)


def test_a_module_the_generator_imports_from_another_folder_keys_the_set(tmp_path, monkeypatch):
    """A generator whose kernel calls into another package's module (as the SLIDE kernels call
    impls.slide.core.rng) is keyed by that module too; a file nothing imports is not."""
    import sys

    code = tmp_path / "code"
    (code / "gen47" / "data").mkdir(parents=True)
    (code / "gen47" / "core").mkdir()
    for folder in ("gen47", "gen47/data", "gen47/core"):
        (code / folder / "__init__.py").write_text("")
    (code / "gen47" / "core" / "rng.py").write_text("def mix(x):\n    return x * 3\n")
    (code / "gen47" / "core" / "unused.py").write_text("Y = 1\n")
    (code / "gen47" / "data" / "make.py").write_text(
        "import numpy as np\nfrom gen47.core.rng import mix\n"
        "def ramp(seed, rows):\n    return {'values': mix(np.arange(rows) + seed)}\n")
    monkeypatch.syspath_prepend(str(code))
    manifest = registry.Manifest("m", tmp_path / "m.toml", "d", "synthetic",
                                 {"generator": "gen47.data.make:ramp", "seed": 1})
    before = registry.generator_code(manifest)
    (code / "gen47" / "core" / "unused.py").write_text("Y = 2\n")
    assert registry.generator_code(manifest) == before          # not imported: same data
    (code / "gen47" / "core" / "rng.py").write_text("def mix(x):\n    return x * 5\n")
    assert registry.generator_code(manifest) != before          # the callee changed: new key
    for name in [n for n in sys.modules if n == "gen47" or n.startswith("gen47.")]:
        sys.modules.pop(name, None)


def test_generating_into_an_unwritable_cache_fails_before_generating(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(blocker))
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    write(manifests, "g48", 'name = "g48"\ndescription = "d"\n[synthetic]\n'
                            'generator = "impls.harness.registry:never_called_48"\nseed = 1\n')
    calls = []
    monkeypatch.setattr(registry, "never_called_48", lambda seed: calls.append(seed) or {}, raising=False)
    with pytest.raises(OSError, match="DLSYSBENCH_CACHE"):
        registry.load("g48", "smoke", directory=manifests)
    assert calls == []


def _set_beside_an_older_cache(tmp_path, monkeypatch, name: str):
    """A synthetic set ``name`` whose cache folder holds an older smoke cache (and a quick one);
    returns its manifests folder."""
    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    write(manifests, name, f'name = "{name}"\ndescription = "d"\n[synthetic]\n'
                           f'generator = "impls.harness.registry:ramp_{name}"\nseed = 1\n')
    monkeypatch.setattr(registry, f"ramp_{name}", lambda seed: {"v": np.arange(3)}, raising=False)
    folder = tmp_path / "cache" / name
    folder.mkdir(parents=True)
    (folder / "smoke-0123456789abcdef.npz").write_bytes(b"x" * 1000)
    (folder / "quick-0123456789abcdef.npz").write_bytes(b"x")
    return manifests


def test_a_new_cache_beside_older_ones_says_they_remain(tmp_path, monkeypatch, caplog):
    manifests = _set_beside_an_older_cache(tmp_path, monkeypatch, "g49")
    with caplog.at_level("WARNING"):
        registry.load("g49", "smoke", directory=manifests)
    said = [r.getMessage() for r in caplog.records if "older" in r.getMessage()]
    assert len(said) == 1 and "1 older smoke cache of this set" in said[0]


def test_under_the_suite_runner_the_older_caches_warning_reaches_its_progress_log(tmp_path, monkeypatch,
                                                                                  caplog):
    progress_log = tmp_path / "progress.log"
    monkeypatch.setenv("DLSYSBENCH_PROGRESS_LOG", str(progress_log))    # what run_suite follows
    manifests = _set_beside_an_older_cache(tmp_path, monkeypatch, "g49b")
    with caplog.at_level("WARNING"):
        registry.load("g49b", "smoke", directory=manifests)
    lines = [line for line in progress_log.read_text().splitlines() if "older" in line]
    assert len(lines) == 1 and "warning:" in lines[0] and "1 older smoke cache of this set" in lines[0]
    assert not [r for r in caplog.records if "older" in r.getMessage()]     # said once


def test_a_generator_outside_impls_is_keyed_by_the_impls_modules_it_imports(tmp_path, monkeypatch):
    import sys

    from impls.harness import code_digest

    code = tmp_path / "code" / "ext50"
    code.mkdir(parents=True)
    (code / "__init__.py").write_text("")
    (code / "gen.py").write_text("import numpy as np\nfrom impls.slide.core.rng import mix64\n"
                                 "def ramp(seed, rows):\n    return {'values': np.arange(rows) + seed}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    files = dict(code_digest.imported_files(["ext50.gen"], ("ext50", "impls")))
    assert "impls.slide.core.rng" in files
    seen = []
    real = code_digest.imported_files
    monkeypatch.setattr(code_digest, "imported_files", lambda m, within: seen.append(within) or real(m, within))
    registry.generator_code(registry.Manifest("e", tmp_path / "e.toml", "d", "synthetic",
                                              {"generator": "ext50.gen:ramp", "seed": 1}))
    assert seen and "impls" in seen[0] and "ext50" in seen[0]
    for name in ("ext50.gen", "ext50"):
        sys.modules.pop(name, None)


def test_make_missing_generates_only_the_uncached_synthetic_sets_in_a_fresh_process(tmp_path, monkeypatch):
    from impls.harness import fresh_process

    monkeypatch.setenv("DLSYSBENCH_CACHE", str(tmp_path / "cache"))
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    for name in ("g51a", "g51b"):
        write(manifests, name, f'name = "{name}"\ndescription = "d"\n[synthetic]\n'
                               f'generator = "impls.harness.registry:ramp_{name}"\nseed = 1\n')
        monkeypatch.setattr(registry, f"ramp_{name}", lambda seed: {"v": np.arange(3)}, raising=False)
    real = registry.manifests
    monkeypatch.setattr(registry, "manifests", lambda directory=None: real(manifests))
    children = []
    monkeypatch.setattr(fresh_process, "call", lambda fn, kwargs: children.append(kwargs["name"]) or fn(kwargs))
    registry.load("g51b", "smoke")                       # cached already
    assert registry.make_missing({"g51a", "g51b"}, "smoke") == ["g51a"] and children == ["g51a"]
    assert registry.synthetic_cache("g51a", "smoke").exists()
    assert registry.make_missing(["g51a", "g51b"], "smoke") == [] and children == ["g51a"]


def test_a_sweep_makes_its_missing_sets_before_its_first_run(monkeypatch):
    from impls.slide.experiments import sweeps

    class Made(Exception):
        pass

    def made(names, profile, isolate):
        assert names == {"slide-amazon670k"} and profile == "smoke" and isolate
        raise Made

    monkeypatch.setattr(registry, "make_missing", made)
    monkeypatch.setattr(sweeps, "_call", lambda *a: pytest.fail("a run started before its data were made"))
    with pytest.raises(Made):
        sweeps.time_to_accuracy_sweep("smoke", progress=False, isolate=True)


def test_a_sweep_makes_no_set_its_runs_would_refuse(monkeypatch):
    from impls.slide.experiments import sweeps

    asked = []
    monkeypatch.setattr(registry, "make_missing", lambda names, profile, isolate: asked.append(set(names)))
    s = {**sweeps.sizes("smoke"), "runs": [{**sweeps.sizes("smoke")["runs"][0], "dataset": "bandana-user"}]}
    monkeypatch.setattr(sweeps, "_call", lambda fn, kwargs, isolate: fn(kwargs))
    with pytest.raises(KeyError, match="not an extreme-classification dataset"):
        sweeps.time_to_accuracy_sweep("smoke", progress=False, isolate=True, s=s)
    assert asked == [set()]          # bandana-user is not generated for a run that cannot read it


def test_an_archive_whose_bytes_changed_after_writing_does_not_read_back(tmp_path):
    """The generated arrays are dropped before the read-back: what checks the written file is
    each member's CRC-32, which zip computed from the arrays as they were written. A byte
    changed on disk fails it, even beside a sidecar that matches the changed file."""
    from impls.harness import registry as reg

    path = tmp_path / "x.npz"
    reg._save_npz(path, {"a": np.arange(100_000)})
    assert reg._load_npz_checked(path) is not None
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 1
    path.write_bytes(bytes(raw))
    (tmp_path / "x.sha256").write_text(reg.sha256_of(path))
    assert reg._load_npz_checked(path) is None


@pytest.mark.parametrize("kind", ["synthetic", "external"])
def test_the_made_arrays_are_dropped_before_the_cache_is_read_back(tmp_path, monkeypatch, kind):
    """A set is held once at the first load's peak, not as made and as read back (a full
    trace, or a real Amazon-670K parse, is gigabytes); what is returned is the file's."""
    import weakref

    made = []
    if kind == "synthetic":
        write(tmp_path, "ramp", SYNTHETIC)
        name, real_make = "ramp", registry_fixtures.generate_ramp
        monkeypatch.setattr(registry_fixtures, "generate_ramp",
                            lambda *a, **k: made.append(weakref.ref(out := real_make(*a, **k)["values"])) or {"values": out})
    else:
        data = tmp_path / "numbers.txt"
        data.write_text("1\n2\n3\n")
        monkeypatch.setenv("DLSYSBENCH_TEST_NUMBERS", str(data))
        external(tmp_path)
        name, real_make = "numbers", registry_fixtures.parse_numbers
        monkeypatch.setattr(registry_fixtures, "parse_numbers",
                            lambda path: made.append(weakref.ref(out := real_make(path)["numbers"])) or {"numbers": out})
    alive_at_read = []
    real_read = registry._load_npz_checked
    monkeypatch.setattr(registry, "_load_npz_checked",
                        lambda path: alive_at_read.append([ref() is not None for ref in made]) or real_read(path))
    loaded = registry.load(name, directory=tmp_path)
    assert len(made) == 1 and alive_at_read == [[], [False]]     # first: no cache yet; then: the file's
    assert made[0]() is None and list(loaded.arrays)


def test_a_changed_seed_or_parameter_is_another_cache():
    """A manifest whose seed or a parameter changed must never be served the old draw."""
    import dataclasses

    manifest = registry.manifests()["bandana-post"]
    key = registry.recipe_key(manifest, "smoke")[1]
    reseeded = dataclasses.replace(manifest, spec={**manifest.spec, "seed": manifest.spec["seed"] + 1})
    assert registry.recipe_key(reseeded, "smoke")[1] != key
    params = {**manifest.spec.get("params", {}), "zz_new_param": 1}
    assert registry.recipe_key(dataclasses.replace(manifest, spec={**manifest.spec, "params": params}), "smoke")[1] != key
