"""kernelize selection, fallback and error rules, with an injected loader (no files)."""

from __future__ import annotations

import copy
import types

import pytest
import torch
from torch import nn

from kernel_plugins.errors import (
    ContractError,
    HubError,
    IntegrityError,
    LayerError,
    NoCompatibleVariantError,
)
from kernel_plugins.layers import (
    CapabilityRange,
    FuncRepository,
    LayerRepository,
    Mode,
    ModeError,
    get_kernelized_layers,
    kernel_choice,
    kernelize,
    register_kernel_mapping,
    use_kernel_forward_from_hub,
    use_kernel_func_from_hub,
    use_kernel_mapping,
)
from kernel_plugins.layers.mode import describe_mode

INF, TRN, TC, FB = Mode.INFERENCE, Mode.TRAINING, Mode.TORCH_COMPILE, Mode.FALLBACK


@use_kernel_forward_from_hub("Scale")
class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.factor = 2.0

    def forward(self, x):
        return x * self.factor


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Scale()
        self.inner = nn.Sequential(nn.Identity(), Scale())

    def forward(self, x):
        return self.inner(self.a(x))


def kernel(tag: float, **attrs):
    """A kernel layer class computing x * factor + tag (so the choice is visible)."""

    def forward(self, x):
        return x * self.factor + tag

    return type(f"Kernel{tag}", (nn.Module,), {"forward": forward, **attrs})


def repo(name: str, layer: str = "Scale") -> LayerRepository:
    return LayerRepository(f"org/{name}", layer_name=layer)


X = torch.ones(3)


def out(model):
    return model(X)


def test_kernel_forward_is_bound_directly_on_the_instance(fake_loader):
    k = kernel(100.0)
    fake_loader.add("org/k", layers={"Scale": k})
    register_kernel_mapping({"Scale": {"cuda": repo("k")}})
    model = kernelize(Model(), mode=INF)
    for layer in (model.a, model.inner[1]):
        # no wrapper: the instance's forward is the kernel's function bound to the module
        assert isinstance(layer.__dict__["forward"], types.MethodType)
        assert layer.forward.__func__ is k.forward
        assert layer.forward.__self__ is layer
    assert torch.equal(out(model), (X * 2 + 100) * 2 + 100)
    assert len(fake_loader.calls) == 1  # loaded once per kernelize call
    choice = kernel_choice(model.a)
    assert choice.uses_kernel and choice.candidate.repo == repo("k")
    assert choice.device == "cuda (capability 8.0)"
    # a copy of the model runs the kernel and says so; its weights are all a state dict holds
    twin = copy.deepcopy(model)
    assert twin.a.forward.__func__ is k.forward and twin.a.forward.__self__ is twin.a
    assert kernel_choice(twin.a) == choice and torch.equal(out(twin), out(model))
    assert twin.state_dict().keys() == Model().state_dict().keys()


def test_unmarked_model_is_untouched_and_no_device_is_resolved(monkeypatch):
    from kernel_plugins.layers import _session as kz

    monkeypatch.setattr(kz, "_resolve_device", lambda d: pytest.fail("device resolved"))
    model = nn.Sequential(nn.Linear(2, 2))
    assert kernelize(model, mode=INF) is model
    assert "forward" not in model[0].__dict__


def test_kernelize_validates_its_arguments(fake_loader):
    with pytest.raises(ModeError, match="only be used to register"):
        kernelize(Model(), mode=FB)
    with pytest.raises(LayerError, match="expects a torch.nn.Module"):
        kernelize(lambda x: x, mode=INF)
    with pytest.raises(ContractError, match="unknown kernel property 'fast'"):
        kernelize(Model(), mode=INF, require={"fast"})


# ------------------------------------------------------------------ fallback table
@pytest.mark.parametrize(
    ("entry", "attrs", "mode", "uses_kernel", "reason"),
    [
        ("fb", {}, INF, True, None),
        ("fb", {}, TRN, True, None),
        ("fb", {}, INF | TC, False, "torch.compile support"),
        ("fb", {"can_torch_compile": True}, TRN | TC, True, None),
        ("fb", {"has_backward": False}, TRN, False, "backward support"),
        ("fb", {"has_backward": False}, INF, True, None),
        ("inf", {"has_backward": False}, INF, True, None),
        ("inf", {}, TRN, False, "nothing mapped for `Scale` fits"),  # TRAINING never uses INFERENCE
    ],
)
def test_mode_fit_and_fallback(fake_loader, entry, attrs, mode, uses_kernel, reason):
    fake_loader.add("org/k", layers={"Scale": kernel(100.0, **attrs)})
    key = FB if entry == "fb" else INF
    register_kernel_mapping({"Scale": {"cuda": {key: repo("k")}}})
    model = kernelize(Model(), mode=mode, use_fallback=True)
    assert kernel_choice(model.a).uses_kernel is uses_kernel
    expected = (X * 2 + 100) * 2 + 100 if uses_kernel else X * 4
    assert torch.equal(out(model), expected)
    if not uses_kernel:
        assert "forward" not in model.a.__dict__
        with pytest.raises(LayerError) as info:
            kernelize(Model(), mode=mode, use_fallback=False)
        text = str(info.value)
        assert reason in text
        assert (
            f"layer `Scale` (Scale) on cuda (capability 8.0) in mode {describe_mode(mode)}" in text
        )


def test_error_lists_every_candidate_and_what_it_lacked(fake_loader):
    fake_loader.add("org/nobw", layers={"Scale": kernel(1.0, has_backward=False)})
    fake_loader.add("org/nocompile", layers={"Scale": kernel(2.0)})
    register_kernel_mapping({"Scale": {"cuda": {INF: repo("nobw"), FB: repo("nocompile")}}})
    with pytest.raises(LayerError) as info:
        kernelize(Model(), mode=TRN | TC, use_fallback=False)
    text = str(info.value)
    assert "no kernel fits layer `Scale` (Scale) on cuda (capability 8.0)" in text
    assert "mode TRAINING | TORCH_COMPILE" in text
    assert "`org/nocompile` [cuda, mode FALLBACK]: lacks torch.compile support" in text
    assert "use_fallback=True" in text


def test_next_candidate_is_tried_when_the_first_does_not_fit(fake_loader):
    fake_loader.add("org/nocompile", layers={"Scale": kernel(1.0)})
    fake_loader.add("org/compile", layers={"Scale": kernel(2.0, can_torch_compile=True)})
    register_kernel_mapping(
        {
            "Scale": {
                "cuda": {
                    CapabilityRange(min=(8, 0), max=(8, 0)): repo("nocompile"),
                    CapabilityRange(min=(7, 0)): repo("compile"),
                }
            }
        }
    )
    model = kernelize(Model(), mode=INF | TC)
    choice = kernel_choice(model.a)
    assert choice.candidate.repo == repo("compile")
    assert "lacks torch.compile support" in choice.skipped[0]
    assert torch.equal(out(model), (X * 2 + 2) * 2 + 2)


def test_entry_registered_for_training_without_backward_is_a_mapping_error(fake_loader):
    fake_loader.add("org/k", layers={"Scale": kernel(1.0, has_backward=False)})
    register_kernel_mapping({"Scale": {"cuda": {TRN: repo("k")}}})
    with pytest.raises(LayerError, match="registered for mode TRAINING but has no backward"):
        kernelize(Model(), mode=TRN)


def test_registered_mode_is_checked_for_every_entry_of_a_repo(fake_loader):
    fake_loader.add("org/k", layers={"Scale": kernel(1.0)})  # no torch.compile support
    register_kernel_mapping({"Scale": {"cuda": {INF: repo("k"), TRN | TC: repo("k")}}})
    kernelize(Model(), mode=INF)
    # the INFERENCE entry is skipped for the contract, then the same (cached) kernel is
    # reached through the TRAINING | TORCH_COMPILE entry, which it cannot serve
    with pytest.raises(
        LayerError, match=r"registered for mode TRAINING \| TORCH_COMPILE but does not"
    ):
        kernelize(Model(), mode=INF, require={"deterministic"})


@pytest.mark.parametrize(
    "error",
    [
        NoCompatibleVariantError("no variant for cuda 8.0"),
        HubError("the Hub could not be reached"),
    ],
)
def test_unavailable_kernels_are_skipped_with_a_warning(fake_loader, error):
    fake_loader.fail("org/broken", error)
    fake_loader.add("org/ok", layers={"Scale": kernel(5.0)})
    register_kernel_mapping({"Scale": {"cuda": {INF: repo("broken"), FB: repo("ok")}}})
    with pytest.warns(UserWarning, match="skipping layer `Scale` of `org/broken`"):
        model = kernelize(Model(), mode=INF)
    assert kernel_choice(model.a).candidate.repo == repo("ok")
    assert "could not be loaded" in kernel_choice(model.a).skipped[0]


def test_other_load_errors_propagate(fake_loader):
    fake_loader.fail("org/k", IntegrityError("hash mismatch"))
    register_kernel_mapping({"Scale": {"cuda": repo("k")}})
    with pytest.raises(IntegrityError):
        kernelize(Model(), mode=INF)


@pytest.mark.parametrize(
    ("layers", "message"),
    [
        (None, "has no `layers` attribute"),
        ({"Other": kernel(1.0)}, "no layer `Scale` \\(layers: Other\\)"),
        ({"Scale": kernel(1.0, extra=3)}, "adds members extra"),
    ],
)
def test_broken_kernels_raise(fake_loader, layers, message):
    fake_loader.add("org/k", layers=layers)
    register_kernel_mapping({"Scale": {"cuda": repo("k")}})
    with pytest.raises(LayerError, match=message):
        kernelize(Model(), mode=INF)


def test_device_without_mapping_names_the_mapped_keys(fake_loader):
    register_kernel_mapping({"Scale": {"xpu": repo("k")}})
    with pytest.raises(LayerError, match="mapped device keys: xpu"):
        kernelize(Model(), mode=INF, use_fallback=False)


def test_restoring_after_a_context_mapping(fake_loader):
    fake_loader.add("org/k", layers={"Scale": kernel(100.0)})
    model = Model()
    with use_kernel_mapping({"Scale": {"cuda": repo("k")}}):
        kernelize(model, mode=INF)
    assert kernel_choice(model.a).uses_kernel
    kernelize(model, mode=INF)  # no mapping any more: back to the original forward
    assert "forward" not in model.a.__dict__
    assert kernel_choice(model.a).uses_kernel is False
    assert torch.equal(out(model), X * 4)


# ---------------------------------------------------------- DISABLE_KERNEL_MAPPING
def test_disable_kernel_mapping_restores_original_forwards(fake_loader, monkeypatch):
    fake_loader.add("org/k", layers={"Scale": kernel(100.0)})
    register_kernel_mapping({"Scale": {"cuda": repo("k")}})
    model = kernelize(Model(), mode=INF)
    assert kernel_choice(model.a).uses_kernel
    monkeypatch.setenv("DISABLE_KERNEL_MAPPING", "1")
    kernelize(model, mode=INF)
    assert "forward" not in model.a.__dict__ and kernel_choice(model.a) is None
    assert torch.equal(out(model), X * 4)
    monkeypatch.setenv("DISABLE_KERNEL_MAPPING", "0")
    kernelize(model, mode=INF)
    assert kernel_choice(model.a).uses_kernel


def test_disable_kernel_mapping_with_requirements_fails(fake_loader, monkeypatch):
    monkeypatch.setenv("DISABLE_KERNEL_MAPPING", "1")
    with pytest.raises(ContractError, match="DISABLE_KERNEL_MAPPING=1 keeps the original"):
        kernelize(Model(), mode=INF, require={"deterministic"})


def test_disable_kernel_mapping_bad_value(fake_loader, monkeypatch):
    monkeypatch.setenv("DISABLE_KERNEL_MAPPING", "maybe")
    with pytest.raises(LayerError, match="DISABLE_KERNEL_MAPPING='maybe' is not understood"):
        kernelize(Model(), mode=INF)


# --------------------------------------------------------------------- contracts
def test_required_property_never_picks_an_undeclaring_kernel(fake_loader):
    fake_loader.add("org/plain", layers={"Scale": kernel(1.0)})
    fake_loader.add(
        "org/det", layers={"Scale": kernel(2.0, kernel_properties=frozenset({"deterministic"}))}
    )
    register_kernel_mapping({"Scale": {"cuda": {INF: repo("plain"), FB: repo("det")}}})
    model = kernelize(Model(), mode=INF, require={"deterministic"})
    assert kernel_choice(model.a).candidate.repo == repo("det")
    assert "required property deterministic" in kernel_choice(model.a).skipped[0]


@pytest.mark.parametrize("use_fallback", [True, False])
def test_required_property_never_falls_back_to_the_original(fake_loader, use_fallback):
    fake_loader.add("org/plain", layers={"Scale": kernel(1.0)})
    register_kernel_mapping({"Scale": {"cuda": repo("plain")}})
    model = Model()
    with pytest.raises(ContractError) as info:
        kernelize(model, mode=INF, require={"deterministic"}, use_fallback=use_fallback)
    text = str(info.value)
    assert "layer `Scale` (Scale) on cuda (capability 8.0) in mode INFERENCE requires" in text
    assert "`org/plain` [cuda, mode FALLBACK]: lacks required property deterministic" in text
    assert "original forward of `Scale` declares no properties" in text


def test_required_property_without_any_mapping_fails(fake_loader):
    with pytest.raises(ContractError, match="`Scale` is not in the kernel mapping"):
        kernelize(Model(), mode=INF, require="deterministic")


# ------------------------------------------------------------------ marked functions
@use_kernel_forward_from_hub("add_bias")
def add_bias(x, bias=1.0):
    """Add a bias."""
    return x + bias


class WithFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = add_bias

    def forward(self, x):
        return self.fn(x)


def test_marked_function_is_a_module_that_calls_the_function():
    assert isinstance(add_bias, nn.Module)
    assert add_bias.__name__ == "add_bias" and add_bias.__doc__ == "Add a bias."
    assert torch.equal(add_bias(X), X + 1)
    assert str(__import__("inspect").signature(add_bias)) == "(x, bias=1.0)"


def test_marked_function_gets_the_kernel_function_as_forward(fake_loader):
    def fast_add_bias(x, bias=1.0):
        return x + bias + 10

    fake_loader.add("org/f", fast_add_bias=fast_add_bias)
    model = WithFunction()
    with use_kernel_mapping(
        {"add_bias": {"cuda": FuncRepository("org/f", func_name="fast_add_bias")}}
    ):
        kernelize(model, mode=INF)
    assert model.fn.forward is fast_add_bias  # no wrapper
    assert torch.equal(model(X), X + 11)
    found = get_kernelized_layers(model)  # kernels' structure: by module name
    assert list(found.layers) == ["fn"] and found.funcs == {}
    assert found.layers["fn"].module is model.fn and found.layers["fn"].repo == kernel_choice(model.fn).candidate.repo
    kernelize(model, mode=INF)  # mapping gone: original again
    assert torch.equal(model(X), X + 1)
    assert get_kernelized_layers(model).layers == {} and "_kernel_repo" not in model.fn.__dict__


def test_a_marked_function_may_be_served_by_a_layer_class(fake_loader):
    class FastAddBias(nn.Module):
        def forward(self, x, bias=1.0):
            return x + bias + 20

    fake_loader.add("org/f", layers={"FastAddBias": FastAddBias})
    model = WithFunction()
    with use_kernel_mapping({"add_bias": {"cuda": repo("f", layer="FastAddBias")}}):
        kernelize(model, mode=INF)
    assert torch.equal(model(X), X + 21)
    kernelize(model, mode=INF)
    assert torch.equal(model(X), X + 1)


def test_a_layer_class_for_a_function_must_match_its_signature_without_self(fake_loader):
    class TooFew(nn.Module):
        def forward(self, x):
            return x

    fake_loader.add("org/f", layers={"TooFew": TooFew})
    with use_kernel_mapping({"add_bias": {"cuda": repo("f", layer="TooFew")}}):
        with pytest.raises(LayerError, match=r"does not match `add_bias` \(x, bias=1.0\): 1 parameters instead of 2"):
            kernelize(WithFunction(), mode=INF)


def test_a_function_may_serve_a_layer_class_with_the_same_arguments(fake_loader):
    fake_loader.add("org/f", double=lambda x: x * 2)
    model = Model()
    with use_kernel_mapping({"Scale": {"cuda": FuncRepository("org/f", func_name="double")}}):
        kernelize(model, mode=INF)
    served = model.a.forward.__func__  # bound, dropping self, as HF kernels binds a function
    assert torch.equal(model.a(X), X * 2) and served is model.inner[1].forward.__func__
    assert served.__wrapped__ is fake_loader.modules["org/f"].double
    assert get_kernelized_layers(model).layers["a"].repo.member == "double"
    fake_loader.add("org/g", two=lambda x, y: x)
    with use_kernel_mapping({"Scale": {"cuda": FuncRepository("org/g", func_name="two")}}):
        with pytest.raises(LayerError, match="2 parameters instead of 1"):
            kernelize(Model(), mode=INF)


def test_use_kernel_func_from_hub_refuses_classes():
    with pytest.raises(LayerError, match="decorates a function"):
        use_kernel_func_from_hub("x")(Scale)
    with pytest.raises(LayerError, match="non-empty string"):
        use_kernel_forward_from_hub("")


@use_kernel_forward_from_hub("Shift")
class Shift(nn.Module):
    def forward(self, x):
        return x + 1


@pytest.mark.parametrize(
    "refusal",
    [
        pytest.param({}, id="nothing-mapped"),  # no kernel and use_fallback=False
        pytest.param({"require": {"deterministic"}}, id="property-missing"),
    ],
)
def test_a_refusal_after_many_kernelized_layers_changes_no_layer(fake_loader, refusal):
    # The layers that get a kernel come first and the refused one last, so a kernelize
    # that applied each decision as soon as it was made would have changed the others.
    k = kernel(100.0, kernel_properties=frozenset({"deterministic"}))
    fake_loader.add("org/k", layers={"Scale": k})
    register_kernel_mapping({"Scale": {"cuda": repo("k")}})
    if refusal:
        fake_loader.add("org/shift", layers={"Shift": type("Plain", (nn.Module,), {
            "forward": lambda self, x: x + 2})})
        register_kernel_mapping({"Shift": {"cuda": repo("shift", layer="Shift")}})
    model = nn.Sequential(Model(), Model(), Shift())
    with pytest.raises((LayerError, ContractError), match="Shift"):
        kernelize(model, mode=INF, use_fallback=False, **refusal)
    for layer in model.modules():
        assert "forward" not in layer.__dict__ and kernel_choice(layer) is None
    assert torch.equal(model(X), (((X * 2) * 2 * 2) * 2) + 1)
    earlier = Model()
    kernelize(earlier, mode=INF)  # a model kernelized before keeps its kernels too
    model = nn.Sequential(earlier, Shift())
    with pytest.raises((LayerError, ContractError), match="Shift"):
        kernelize(model, mode=INF, use_fallback=False, **refusal)
    assert earlier.a.forward.__func__ is k.forward and kernel_choice(earlier.a).uses_kernel


def test_kernelize_of_a_model_without_marked_layers_says_nothing_changed():
    # e.g. transformers' layers built before kernel_plugins.integrations.transformers.enable()
    with pytest.warns(UserWarning, match=r"no layer of `Sequential` is marked for a kernel, "
                      r"so nothing was replaced.*integrations\.transformers\.enable\(\) before"):
        kernelize(nn.Sequential(nn.Linear(2, 2)), mode=INF, device="cpu")

    @use_kernel_forward_from_hub("Never", condition=lambda module: False)
    class Never(nn.Module):
        def forward(self, x):
            return x

    with pytest.warns(UserWarning, match=r"kernel_condition of 2 marked ones excluded them"):
        kernelize(nn.Sequential(Never(), Never()), mode=INF, device="cpu")


def test_kernelize_that_replaces_no_forward_says_so_and_why(fake_loader, monkeypatch, recwarn):
    model = Model()
    with pytest.warns(UserWarning) as caught:
        kernelize(model, mode=INF)  # nothing mapped: every layer keeps its forward
    text = "\n".join(str(w.message) for w in caught)
    assert "none of the 2 marked layers of `Model` got a kernel on cuda (capability 8.0) in " \
           "mode INFERENCE, so nothing was replaced" in text
    assert "`Scale` is not in the kernel mapping" in text
    fake_loader.add("org/k", layers={"Scale": kernel(100.0)})
    register_kernel_mapping({"Scale": {"cuda": repo("k")}})
    recwarn.clear()
    kernelize(model, mode=INF)  # a kernel is used: nothing to say
    monkeypatch.setenv("DISABLE_KERNEL_MAPPING", "1")
    kernelize(model, mode=INF)  # the original forwards were asked for: nothing to say
    assert [str(w.message) for w in recwarn] == []
    assert "forward" not in model.a.__dict__


def test_kernelize_visits_the_modules_of_model_modules_in_its_order():
    from kernel_plugins.layers.kernelizing import _modules

    class Custom(nn.Module):  # its named_modules adds a module: that traversal must be used
        def __init__(self):
            super().__init__()
            object.__setattr__(self, "hidden", Scale())  # not a registered submodule

        def named_modules(self, memo=None, prefix="", remove_duplicate=True):
            yield from super().named_modules(memo, prefix, remove_duplicate)
            yield f"{prefix}.hidden", self.hidden

    shared = Scale()
    tree = nn.Sequential(nn.Sequential(shared, nn.ReLU()), shared, nn.ModuleList([Scale(), shared]))
    tree.add_module("empty", None)
    assert _modules(tree) == list(tree.modules())
    assert [id(m) for m in _modules(tree)].count(id(shared)) == 1
    custom = Custom()
    wrapped = nn.Sequential(tree, custom)
    assert _modules(wrapped) == list(wrapped.modules()) and custom.hidden in _modules(wrapped)
