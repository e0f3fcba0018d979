"""``kernel-plugins load``: load a kernel, print its provenance and public functions."""

from __future__ import annotations

import argparse
import inspect
from typing import Any

from ._output import clean, print_json

NAME = "load"
HELP = "load a kernel for the device and show where it came from and what it offers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: NAME_OR_PATH, ``--device``, revision, ``--json``, trust, fallback."""
    from .main import add_target_options
    from .verify_signature_cmd import add_trusted_root_option

    add_target_options(parser, "NAME_OR_PATH", "org/name, short name or local path")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="allow loading from a Hub organisation outside the trusted list")
    parser.add_argument("--no-fallback", action="store_true",
                        help="fail instead of using a portable reference kernel when no variant fits")
    parser.add_argument("--require-signature", action="store_true",
                        help="refuse a build not signed by an allowed signer (docs/signatures.md)")
    parser.add_argument("--no-check-arch", action="store_true",
                        help="load the best variant even if its backend.archs do not include "
                        "the device's (it may crash the process)")
    add_trusted_root_option(parser)


class _Annotation:
    """An annotation shown as plain text, whether it was written as a string or a type."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _plain(annotation: Any) -> Any:
    if annotation is inspect.Parameter.empty:
        return annotation
    if isinstance(annotation, str):  # quoted once more under `from __future__ import annotations`
        return _Annotation(annotation.strip("'\""))
    return _Annotation(inspect.formatannotation(annotation))


def signature_text(obj: object) -> str:
    """``(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor``, the same for every kernel.

    Annotations read the same whether the kernel wrote them as types or as strings
    (``from __future__ import annotations``); ``(...)`` when Python cannot tell.
    """
    if not callable(obj):
        return "(...)"
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    params = [p.replace(annotation=_plain(p.annotation)) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=_plain(sig.return_annotation)))


def public_functions(module: object) -> list[dict[str, str]]:
    """Public functions of a kernel module with their signatures (see :func:`signature_text`):
    those its ``__all__`` names, else those defined in the kernel's own package (a name it
    imports, such as ``get_kernel_dep``, is not one of its functions)."""
    names = getattr(module, "__all__", None)
    package = getattr(module, "__name__", "")
    out = []
    for name in sorted(names if isinstance(names, (list, tuple)) else dir(module)):
        obj = getattr(module, str(name), None)
        if str(name).startswith("_") or not (inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            continue
        if names is None and not f"{getattr(obj, '__module__', None)}.".startswith(f"{package}."):
            continue
        out.append({"name": name, "signature": signature_text(obj)})
    return out


def run(args: argparse.Namespace) -> int:
    """Load and print."""
    from ..loader import load

    module = load(args.target, device=args.device, revision=args.revision, version=args.version,
                  trust_remote_code=args.trust_remote_code, fallback="error" if args.no_fallback else "reference",
                  require_signature=args.require_signature, trusted_root=args.trusted_root,
                  check_arch=not args.no_check_arch)
    prov = module.__kernel_provenance__
    funcs = public_functions(module)
    if args.json:
        print_json({"provenance": prov.to_dict(), "functions": funcs})
        return 0
    for key, value in prov.to_dict().items():
        if key == "dependencies":  # each by repo id and variant (all of it with --json)
            value = ", ".join(f"{d.repo_id} ({d.variant})" for d in prov.dependencies)
        if key != "notes" and value not in (None, [], (), ""):
            print(clean(f"{key:12} {value}", one_line=True))
    for note in prov.notes:
        print(clean(f"note: {note}", one_line=True))
    if prov.emulated:
        print("note: the device is EMULATED on the CPU; this says nothing about real hardware")
    print("functions:")
    for f in funcs:
        print(clean(f"  {f['name']}{f['signature']}", one_line=True))
    return 0
