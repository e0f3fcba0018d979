"""Property tests of variant names: the names we produce parse back; resolution never raises;
every backend's token form decodes what it encodes, a runtime whose major is 0 included."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from kernel_plugins.device import DeviceInfo, SystemInfo
from kernel_plugins.errors import VariantNameError
from kernel_plugins.plugins import PluginManager
from kernel_plugins.resolving import resolve
from kernel_plugins.variants import (
    NEW_NAMES,
    UNIVERSAL,
    Variant,
    VariantTokens,
    arch_variant_names,
    noarch_variant_names,
    parse_variant,
    split_token,
)

versions = st.tuples(st.integers(0, 9), st.integers(0, 30))
systems = st.builds(
    SystemInfo,
    cpu=st.sampled_from(["x86_64", "aarch64"]),
    os=st.sampled_from(["linux", "darwin", "windows"]),
    torch_version=st.none() | versions,
    cxx11_abi=st.none() | st.booleans(),
    tvm_ffi_version=st.none() | st.tuples(st.integers(0, 9), st.integers(0, 30)),
)
tokens = st.lists(st.from_regex(r"\A[a-z]{1,8}[0-9]{0,6}\Z"), min_size=1, max_size=4, unique=True)
backend_names = st.from_regex(r"\A[a-z][a-z0-9_]{0,31}\Z")


def compose(v: Variant) -> str:
    """Write a parsed variant back as a name (the inverse of parse_variant), in the grammar
    of its name (a 0.19 name has a ``-cpython-`` part, or is an sdk name)."""
    if v.kind in ("noarch", "universal"):
        return f"{v.framework or 'torch'}-{v.noarch_backend}"
    new = "-cpython-" in v.name or v.kind == "sdk"
    if new:
        backend = ""
        if v.token is not None:
            prefix, digits = split_token(v.token)
            form = VariantTokens(prefix=prefix, major_width=2 if prefix == "cu" else 1)
            decoded = form.decode(v.token) if digits else None
            backend = NEW_NAMES.get(prefix, prefix) + ("-{}.{}".format(*decoded) if decoded else "")
        py = "cpython-{}.{}-{}-{}-{}".format(*(v.python or (0, 0)), v.python_abi, v.cpu, v.os)
        if v.kind == "sdk":
            return "-".join(["sdk", *([v.noarch_backend] if v.noarch_backend else []),
                             *([backend] if backend else []), *([py] if v.python else [])])
        tail = f"{backend}-{py}"
    else:
        tail = f"{v.token}-{v.cpu}-{v.os}"
    assert v.version is not None
    major, minor = v.version
    version = f"-{major}.{minor}" if new else f"{major}{minor}"
    if v.kind == "stable-abi":
        return f"torch-stable-abi{version}-{tail}"
    if v.kind == "tvm-ffi":
        return f"tvm-ffi{version}-{tail}"
    abi = f"-{v.abi}" if v.abi else ""
    return f"torch{version}{abi}-{tail}" if not new else f"torch{version}{abi}-{tail}"


@given(systems, tokens)
def test_every_arch_name_parses_back_to_its_parts(system: SystemInfo, toks: list[str]) -> None:
    names = arch_variant_names(system, toks)
    assert len(names) == len(set(names))
    for name in names:
        v = parse_variant(name)
        assert compose(v) == name
        assert (v.cpu, v.os) == (system.cpu, system.os)
        assert v.token in toks
        if v.kind == "sdk":
            assert v.python == system.python_version and name.startswith(f"sdk-{v.token}-")
            continue
        assert v.kind in ("arch", "stable-abi", "tvm-ffi")
        if v.kind == "tvm-ffi":
            assert v.version == system.tvm_ffi_version
        elif v.kind == "arch":
            assert v.version == system.torch_version
            assert v.abi in (None, "cxx11" if system.cxx11_abi else "cxx98")
        else:
            assert system.torch_version is not None and v.version is not None
            assert v.version[0] == system.torch_version[0]
            assert v.version <= system.torch_version


@given(backend_names)
def test_every_noarch_name_parses_back(backend: str) -> None:
    assume(backend != "universal")  # torch-universal is the legacy universal variant
    noarch, universal = noarch_variant_names(backend)
    v = parse_variant(noarch)
    assert (v.kind, v.noarch_backend, compose(v)) == ("noarch", backend, noarch)
    assert parse_variant(universal).kind == "universal"


def test_a_backend_named_universal_collides_with_the_legacy_variant() -> None:
    """Documented edge: such a backend's noarch name is the universal variant."""
    assert parse_variant(noarch_variant_names("universal")[0]).kind == "universal"


variantish = st.one_of(
    st.text(max_size=40),
    st.from_regex(r"\Atorch[0-9]{2,3}(-cxx11)?-[a-z]{2,5}[0-9]{0,4}-(x86_64|aarch64)-linux\Z"),
    st.from_regex(r"\Atorch-[a-z]{1,8}\Z"),
    st.sampled_from([UNIVERSAL, "", "..", "a/b", "torch-cpu", "torch213-cxx11-cpu-x86_64-linux"]),
)
DEVICE = DeviceInfo(backend="cpu", device_type="cpu", count=1)


def dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


@given(
    available=st.lists(variantish, max_size=12),
    extra_preference=st.lists(variantish, max_size=6),
    picks=st.lists(st.integers(0, 20), max_size=10),
    system=systems,
    data=st.data(),
)
def test_resolution_never_raises_and_accepts_a_subset_in_preference_order(
    available: list[str],
    extra_preference: list[str],
    picks: list[int],
    system: SystemInfo,
    data: st.DataObject,
) -> None:
    # the preference mixes names that are available (some twice) with names that are not
    preference = [available[i % len(available)] for i in picks] if available else []
    preference = data.draw(st.permutations(preference + extra_preference))
    owners = {"cu": "cuda", "rocm": "rocm", "cpu": "cpu"}
    res = resolve(available, DEVICE, system, preference, token_owner=owners.get,
                  explain=lambda v: None)
    accepted = list(res.accepted)
    assert set(accepted) <= set(available)
    assert len(accepted) == len(set(accepted))
    owned = set()
    for name in preference:
        try:
            v = parse_variant(name)
            owned.add(v.token or v.noarch_backend)
        except VariantNameError:
            pass
    for name in accepted:  # a fit has a token (or noarch backend) of the preference's names
        v = parse_variant(name)
        assert v.kind == "sdk" or (v.token or v.noarch_backend) in owned, name
    assert len(res.decisions) == len(set(available))
    assert [d.variant for d in res.decisions if d.accepted] == accepted
    assert all(d.reason for d in res.decisions if not d.accepted)
    shuffled = data.draw(st.permutations(available))
    again = resolve(shuffled, DEVICE, system, preference, token_owner=owners.get)
    assert again.accepted == res.accepted
    assert again.decisions == res.decisions


@given(st.lists(st.one_of(st.text(), st.integers(), st.none(), st.binary()), max_size=8))
def test_resolution_rejects_non_strings_instead_of_raising(available: list[object]) -> None:
    res = resolve(available, DEVICE, SystemInfo(cpu="x86_64", os="linux"), ["torch-cpu"])
    assert set(res.accepted) <= {"torch-cpu"}
    assert all(not d.accepted for d in res.decisions if d.variant != "torch-cpu")


@given(st.text(max_size=300))
def test_parse_variant_raises_only_variant_name_errors(name: str) -> None:
    try:
        v = parse_variant(name)
    except VariantNameError as e:
        assert str(e)
    else:
        assert compose(v) == name


def _token_forms() -> dict[str, VariantTokens]:
    """The token form of every installed backend that has one (built-ins and plugins)."""
    records = PluginManager().backends().values()
    forms = {r.name: getattr(r.plugin, "tokens", None) for r in records}
    return {name: form for name, form in forms.items() if isinstance(form, VariantTokens)}


FORMS = _token_forms()


def versions_of(form: VariantTokens) -> st.SearchStrategy[tuple[int, int]]:
    """The versions ``form`` can write: a major of its width (or 0), a minor of its width."""
    if form.minor_width is not None:
        low = 0 if form.minor_width == 1 else 10 ** (form.minor_width - 1)
        return st.tuples(st.integers(0, 999), st.integers(low, 10**form.minor_width - 1))
    width = form.major_width
    majors = st.just(0) | st.integers(10 ** (width - 1), 10**width - 1)
    return st.tuples(majors, st.integers(0, 99))


def test_the_token_forms_include_the_built_in_backends() -> None:
    assert {"cuda", "rocm", "xpu"} <= set(FORMS), FORMS


@given(st.data())
def test_every_token_form_decodes_what_it_encodes_major_0_included(data: st.DataObject) -> None:
    name, form = data.draw(st.sampled_from(sorted(FORMS.items())), label="backend")
    version = data.draw(versions_of(form), label="version")
    if data.draw(st.booleans(), label="major 0"):
        version = (0, version[1])
    token = form.token(version)
    assert form.decode(token) == version, (name, token)
    assert form.token(form.decode(token) or (-1, -1)) == token
    system = data.draw(st.none() | versions_of(form), label="system")
    variant = parse_variant(f"torch213-cxx11-{token}-x86_64-linux")
    reason = form.explain(variant, "RT", system)
    assert reason is not None and "does not encode" not in reason, (name, token, reason)
    assert f"RT {version[0]}.{version[1]} " in reason, (name, token, reason)


@given(st.from_regex(r"\A[0-9]{0,8}\Z"), st.sampled_from(sorted(FORMS)))
def test_decoding_any_digits_gives_back_a_token_of_the_same_form_or_none(
    digits: str, name: str
) -> None:
    form = FORMS[name]
    decoded = form.decode(form.prefix + digits)
    if decoded is not None:
        major, minor = decoded
        assert major >= 0 and minor >= 0
        assert digits.startswith("0") == (major == 0)
        assert form.token(decoded) == form.prefix + str(major) + str(minor)
