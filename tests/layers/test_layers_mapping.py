"""Mapping shapes, device-key validation, merging, context stacking and capability ranges."""

from __future__ import annotations

import threading

import pytest

from kernel_plugins.detection import unknown_device_error
from kernel_plugins.errors import LockfileError, UnknownDeviceError
from kernel_plugins.layers import (
    CapabilityRange,
    FuncRepository,
    LayerRepository,
    LocalLayerRepository,
    LockedLayerRepository,
    MappingError,
    Mode,
    ModeError,
    current_mapping,
    register_kernel_mapping,
    use_kernel_mapping,
)

INF, TRN, TC, FB = Mode.INFERENCE, Mode.TRAINING, Mode.TORCH_COMPILE, Mode.FALLBACK


def repo(name: str) -> LayerRepository:
    return LayerRepository(f"org/{name}", layer_name="L")


def picked(layer, device, mode=INF):
    """Repo ids of the candidates, in order."""
    return [c.repo.repo_id for c in current_mapping().candidates(layer, device, mode)]


# ---------------------------------------------------------------- repositories
@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: LayerRepository("o/r", layer_name="L", revision="main", version=1), "not both"),
        (lambda: LayerRepository("o/r", layer_name="L", version="1"), "non-negative int"),
        (lambda: LayerRepository("o/r", layer_name="L", version=True), "non-negative int"),
        (lambda: LayerRepository("", layer_name="L"), "repo_id must be a non-empty"),
        (lambda: LayerRepository("o/r", layer_name=""), "layer_name must be a non-empty"),
        (lambda: FuncRepository("o/r", func_name=3), "func_name must be a non-empty"),
        (lambda: LocalLayerRepository(3, layer_name="L"), "repo_path must be a str or Path"),
    ],
)
def test_repository_validation(build, message):
    with pytest.raises(MappingError, match=message):
        build()


def test_repository_arguments_after_the_first_are_keyword_only():
    with pytest.raises(TypeError):
        LayerRepository("o/r", "L")  # type: ignore[misc]


def test_repositories_are_hashable_values():
    a = LayerRepository("o/r", layer_name="L", version=2)
    assert a == LayerRepository("o/r", layer_name="L", version=2)
    assert a != LayerRepository("o/r", layer_name="L", version=3)
    assert len({a, LayerRepository("o/r", layer_name="L", version=2)}) == 1
    assert a.load_options() == {"revision": None, "version": 2, "trust_remote_code": False}
    assert a.describe() == "layer `L` of `o/r` (version 2)"


def test_locked_repository_finds_the_nearest_lockfile(tmp_path, monkeypatch):
    # the search stops at the project root and never enters the temp folder (tmp_path's)
    monkeypatch.setattr("kernel_plugins.lock._discovery._temp_roots", lambda: [])
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "kernels.lock").write_text("[]")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    locked = LockedLayerRepository("o/r", layer_name="L")
    options = locked.load_options()
    assert (options["lockfile"].path, options["trust_remote_code"]) == (tmp_path / "kernels.lock", False)
    explicit = LockedLayerRepository("o/r", layer_name="L", lockfile=str(sub / "x.lock"))
    assert explicit.load_options() == {"lockfile": sub / "x.lock", "trust_remote_code": False}


def test_locked_repository_without_lockfile_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    locked = LockedLayerRepository("o/r", layer_name="L", origin=str(tmp_path / "m.py"))
    with pytest.raises(LockfileError, match="pass lockfile="):
        locked.load_options()


# ------------------------------------------------------------------- shapes
@pytest.mark.parametrize(
    ("mapping", "error", "message"),
    [
        ([("L", {})], MappingError, "must be a dict of layer name"),
        ({"": {"cuda": repo("a")}}, MappingError, "must be layer names"),
        ({"L": repo("a")}, MappingError, r"mapping\['L'\] must be a dict of device type"),
        ({"L": {"cuda": "org/a"}}, MappingError, "must be a repository"),
        ({"L": {"cuda": {INF: "org/a"}}}, MappingError, "must be a repository"),
        ({"L": {"cuda": {TC: repo("a")}}}, ModeError, "cannot key a mapping entry"),
        ({"L": {"cuda": {"x": repo("a"), CapabilityRange(): repo("b")}}}, MappingError, "keys"),
        ({"L": {3: repo("a")}}, MappingError, "must be strings"),
        ({"L": {"mlx": repo("a")}}, UnknownDeviceError, "unknown device type 'mlx'"),
    ],
)
def test_malformed_mappings_are_refused_and_nothing_is_registered(mapping, error, message):
    register_kernel_mapping({"Keep": {"cpu": repo("keep")}})
    with pytest.raises(error, match=message):
        register_kernel_mapping(mapping)
    assert current_mapping().layer_names() == ["Keep"]


@pytest.mark.parametrize("key", ["foo", "mlx", "gpu"])
def test_unknown_device_key_error_is_the_loaders(key):
    with pytest.raises(UnknownDeviceError) as info:
        register_kernel_mapping({"L": {key: repo("a")}})
    assert str(info.value) == str(unknown_device_error(key))


def test_known_plugin_backend_keys_are_accepted_even_when_not_installed():
    # a library may register mappings for every device at import time
    register_kernel_mapping({"L": {"npu": repo("a"), "musa": repo("b"), "tpu": repo("c")}})
    assert sorted(current_mapping().device_keys("L")) == ["musa", "npu", "tpu"]


@pytest.mark.parametrize("key", ["cpu", "cuda", "rocm", "xpu", "mps", "metal"])
def test_every_installed_backend_name_or_device_type_is_a_valid_key(key):
    register_kernel_mapping({"L": {key: repo("a")}})
    assert current_mapping().device_keys("L") == [key]


def test_repository_without_mode_dict_is_a_fallback_entry(make_device):
    register_kernel_mapping({"L": {"cuda": repo("a")}})
    cands = current_mapping().candidates("L", make_device("cuda"), TRN | TC)
    assert [(c.repo.repo_id, c.mode) for c in cands] == [("org/a", FB)]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (INF, ["org/inf", "org/infc", "org/train", "org/trainc", "org/fb"]),
        (TRN, ["org/train", "org/trainc", "org/fb"]),
        (INF | TC, ["org/infc", "org/trainc", "org/fb"]),
        (TRN | TC, ["org/trainc", "org/fb"]),
    ],
)
def test_mode_entries_are_tried_in_priority_order(mode, expected, make_device):
    register_kernel_mapping(
        {
            "L": {
                "cuda": {
                    FB: repo("fb"),
                    TRN | TC: repo("trainc"),
                    TRN: repo("train"),
                    INF | TC: repo("infc"),
                    INF: repo("inf"),
                }
            }
        }
    )
    assert picked("L", make_device("cuda"), mode) == expected


def test_merge_replaces_same_mode_and_keeps_others(make_device):
    register_kernel_mapping({"L": {"cuda": {INF: repo("a"), TRN: repo("b")}}})
    register_kernel_mapping({"L": {"cuda": {INF: repo("c")}}, "M": {"cpu": repo("m")}})
    assert picked("L", make_device("cuda"), INF) == ["org/c", "org/b"]
    assert current_mapping().layer_names() == ["L", "M"]


def test_register_without_inherit_replaces_everything(make_device):
    register_kernel_mapping({"L": {"cuda": repo("a")}, "M": {"cuda": repo("m")}})
    register_kernel_mapping({"L": {"cuda": repo("b")}}, inherit_mapping=False)
    assert current_mapping().layer_names() == ["L"]
    assert picked("L", make_device("cuda")) == ["org/b"]


# ----------------------------------------------------------------- contexts
def test_contexts_stack_and_restore(make_device):
    dev = make_device("cuda")
    register_kernel_mapping({"L": {"cuda": {INF: repo("global")}}})
    with use_kernel_mapping({"L": {"cuda": {TRN: repo("outer")}}}) as outer:
        assert picked("L", dev) == ["org/global", "org/outer"]
        with use_kernel_mapping({"L": {"cuda": {INF: repo("inner")}}}):
            assert picked("L", dev) == ["org/inner", "org/outer"]
        assert picked("L", dev) == ["org/global", "org/outer"]
        assert current_mapping() is outer
    assert picked("L", dev) == ["org/global"]


def test_inherit_false_hides_outer_and_global_mappings(make_device):
    dev = make_device("cuda")
    register_kernel_mapping({"L": {"cuda": repo("global")}, "M": {"cuda": repo("m")}})
    with use_kernel_mapping({"L": {"cuda": repo("outer")}}):
        with use_kernel_mapping({"L": {"cuda": {INF: repo("only")}}}, inherit_mapping=False):
            assert picked("L", dev) == ["org/only"]
            assert current_mapping().layer_names() == ["L"]
        assert picked("L", dev) == ["org/outer"]
    assert picked("L", dev) == ["org/global"]


def test_register_inside_a_context_is_undone_on_exit(make_device):
    dev = make_device("cuda")
    with use_kernel_mapping({"L": {"cuda": repo("ctx")}}):
        register_kernel_mapping({"M": {"cuda": repo("m")}})
        assert current_mapping().layer_names() == ["L", "M"]
    assert current_mapping().layer_names() == []
    assert picked("L", dev) == []


def test_context_is_restored_when_the_block_raises():
    with pytest.raises(RuntimeError):
        with use_kernel_mapping({"L": {"cuda": repo("ctx")}}):
            raise RuntimeError("boom")
    assert current_mapping().layer_names() == []


def test_context_mapping_is_local_to_the_thread():
    seen = []
    with use_kernel_mapping({"L": {"cuda": repo("ctx")}}):
        t = threading.Thread(target=lambda: seen.append(current_mapping().layer_names()))
        t.start()
        t.join()
    assert seen == [[]]


# --------------------------------------------------------------- device keys
def test_backend_key_comes_before_device_type_key(make_device):
    register_kernel_mapping({"L": {"cuda": repo("cuda"), "rocm": repo("rocm")}})
    assert picked("L", make_device("rocm", device_type="cuda")) == ["org/rocm", "org/cuda"]
    assert picked("L", make_device("cuda")) == ["org/cuda"]


def test_metal_is_reachable_by_backend_name_and_device_type(make_device):
    register_kernel_mapping({"L": {"mps": repo("mps"), "metal": repo("metal")}})
    assert picked("L", make_device("metal", device_type="mps")) == ["org/metal", "org/mps"]


# -------------------------------------------------------- capability ranges
@pytest.mark.parametrize(
    ("args", "contains", "excludes"),
    [
        ({"min": (7, 5), "max": (8, 9)}, [(7, 5), (8, 0), (8, 9)], [(7, 4), (9, 0), None]),
        ({"min": "8.0"}, [(8, 0), (12, 0)], [(7, 9)]),
        ({"max": [3, 0]}, [(0, 0), (3, 0)], [(3, 1), (5, 0)]),
        ({}, [(0, 0), (99, 9)], [None]),
        ({"min": 5}, [(5, 0)], [(4, 9)]),
    ],
)
def test_capability_range_bounds_are_inclusive(args, contains, excludes):
    rng = CapabilityRange(**args)
    assert all(rng.contains(c) for c in contains)
    assert not any(rng.contains(c) for c in excludes)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"min": (9, 0), "max": (8, 0)}, "is above max"),
        ({"min": 8.9}, "ambiguous"),
        ({"min": (8, -1)}, "non-negative"),
        ({"max": "8.x"}, "is not 'major.minor'"),
        ({"max": (1, 2, 3)}, "must be a"),
    ],
)
def test_bad_capability_ranges(args, message):
    with pytest.raises(MappingError, match=message):
        CapabilityRange(**args)


CAP_MAPPING = {
    "L": {
        "cuda": {
            CapabilityRange(min=(7, 0), max=(9, 0)): repo("wide"),
            CapabilityRange(min=(8, 0), max=(8, 9)): repo("ampere"),
            CapabilityRange(min=(8, 9), max=(8, 9)): repo("ada"),
            CapabilityRange(min=(9, 0)): {INF: repo("hopper")},
            FB: repo("any"),
        }
    }
}


@pytest.mark.parametrize(
    ("capability", "expected"),
    [
        ((8, 9), ["org/ada", "org/ampere", "org/wide", "org/any"]),
        ((8, 6), ["org/ampere", "org/wide", "org/any"]),
        ((7, 5), ["org/wide", "org/any"]),
        ((9, 0), ["org/wide", "org/hopper", "org/any"]),
        ((10, 0), ["org/hopper", "org/any"]),
        ((6, 1), ["org/any"]),
        (None, ["org/any"]),  # a device without capability matches only range-less entries
    ],
)
def test_narrowest_matching_range_wins(capability, expected, make_device):
    register_kernel_mapping(CAP_MAPPING)
    assert picked("L", make_device("cuda", capability=capability)) == expected


def test_capability_ranges_work_for_any_backend(make_device, monkeypatch):
    # an emulated-style backend reporting a capability (MUSA arch 2.1 / 2.2) is no special case
    register_kernel_mapping(
        {
            "L": {
                "xpu": {
                    CapabilityRange(max=(2, 1)): repo("qy1"),
                    CapabilityRange(min=(2, 2)): repo("qy2"),
                }
            }
        }
    )
    assert picked("L", make_device("xpu", capability=(2, 1), emulated=True)) == ["org/qy1"]
    assert picked("L", make_device("xpu", capability=(3, 1))) == ["org/qy2"]
    assert picked("L", make_device("xpu")) == []


def test_equal_width_ties_prefer_higher_min_then_later_registration(make_device):
    register_kernel_mapping({"L": {"cuda": {CapabilityRange(min=(8, 0), max=(8, 5)): repo("a")}}})
    register_kernel_mapping({"L": {"cuda": {CapabilityRange(min=(8, 2), max=(8, 7)): repo("b")}}})
    assert picked("L", make_device("cuda", capability=(8, 3))) == ["org/b", "org/a"]
    register_kernel_mapping({"L": {"cuda": {CapabilityRange(min=(8, 0), max=(8, 5)): repo("c")}}})
    # same range registered again: its entry is replaced, the order stays by width/min
    assert picked("L", make_device("cuda", capability=(8, 3))) == ["org/b", "org/c"]


def test_capability_range_with_mode_dict(make_device):
    register_kernel_mapping(
        {"L": {"cuda": {CapabilityRange(min=(8, 0)): {TRN: repo("t"), INF: repo("i")}}}}
    )
    assert picked("L", make_device("cuda", capability=(8, 0)), TRN) == ["org/t"]
    assert picked("L", make_device("cuda", capability=(8, 0)), INF) == ["org/i", "org/t"]
