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
    ('name = "bad"\n[synthetic]\ngenerator = "m:f"\nseed = "one"\n', "`seed` must be a int, got str", 4),
    ('name = "other"\n[synthetic]\ngenerator = "m:f"\nseed = 1\n', "must match the file name 'bad'", 1),
    ('name = "bad"\n[synthetic]\ngenerator = "no colon"\nseed = 1\n', "package.module:function", 3),
    ('name = "bad"\n', "exactly one of", None),
    ('name = "bad"\n[external]\nloader = "m:f"\n', "needs `env` or `path`", 2),
    ('name = "bad"\n[external]\nloader = "m:f"\npath = "x"\nsha256 = "abc"\n', "64 lowercase hex", 5),
    ('name = "bad"\n[synthetic]\ngenerator = "m:f"\nseed = 1\n[synthetic.profiles.huge]\nrows = 1\n',
     "unknown profile", 5),
    ('name = "bad\n', "not valid TOML", None),
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
    for manifest in registry.manifests().values():
        assert manifest.kind in ("synthetic", "external")
