"""Sigstore signatures of kernel builds (``metadata.json.sigstore``); see docs/signatures.md.

Per variant, in order: the bundle over the raw ``metadata.json`` bytes (before parsing),
the signer against the policy (:func:`signers`), the metadata digest against the files (a
signed ``metadata.json`` without a usable digest is refused on every path).
``sigstore`` (the ``signatures`` extra) is imported only to check a bundle; a
load contacts sigstore only when a signature is required (:func:`requiring`).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import functools
import importlib.util
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ._record import record
from .errors import KernelPluginsError, MetadataError, SignatureError

if TYPE_CHECKING:
    from .fetching import Fetched
    from .hub import HubRef

__all__ = ["BUNDLE_NAME", "DEFAULT_SIGNERS", "GITHUB_ACTIONS", "Signer", "SignatureCheck", "add_signer",
           "check_bundle", "check_fetched", "requiring", "signature_required", "signers"]
BUNDLE_NAME = "metadata.json.sigstore"
MAX_BUNDLE_BYTES = 256 << 10  #: refused unread above this (real bundles are a few KiB)
MAX_ROOT_BYTES = 1 << 20  #: trust roots larger than this are refused unread (real ones: ~10 KiB)
GITHUB_ACTIONS = "https://token.actions.githubusercontent.com"
INSTALL = "pip install 'sigstore>=4,<5' (the signatures extra)"
_DOCS = "see docs/signatures.md"


@record
class Signer:
    """A signer: ``identity`` and OIDC ``issuer`` as sigstore's ``--cert-identity`` and
    ``--cert-oidc-issuer`` name them; ``orgs``: the Hub organisations it may sign for (empty: any).
    A GitHub workflow identity also requires the build to run in that workflow's repository."""

    identity: str
    issuer: str
    orgs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.identity or not self.issuer:
            raise SignatureError(f"a signer needs an identity and an OIDC issuer, got identity="
                                 f"{self.identity!r} issuer={self.issuer!r} (GitHub: {GITHUB_ACTIONS})")
        if not self.issuer.startswith("https://"):
            raise SignatureError(f"OIDC issuer {self.issuer!r} is not an https:// URL")

    def repository(self) -> str | None:
        """For a GitHub workflow identity, the repository the build must run in."""
        parts = self.identity.split("/")
        github = self.issuer == GITHUB_ACTIONS and self.identity.startswith("https://github.com/")
        return "/".join(parts[:5]) if github and parts[5:7] == [".github", "workflows"] else None


#: The build workflows of kernels-community and kernels-community-rs (the signers HF ``kernels``
#: 0.19.1 trusts), each vouching for the Hub organisation kernels-community only.
DEFAULT_SIGNERS: tuple[Signer, ...] = tuple(
    Signer(f"https://github.com/huggingface/{r}/.github/workflows/{w}.yaml@refs/heads/main", GITHUB_ACTIONS,
           ("kernels-community",)) for r, ws in (("kernels-community", ("build", "build-mac", "build-windows",
           "sign-old-builds")), ("kernels-community-rs", ("build",))) for w in ws)
_added: list[Signer] = []
_blocks: list[tuple[bool, str | None]] = []  # (required, trusted root) of the requiring() blocks open now
_root_file: contextvars.ContextVar[str | None] = contextvars.ContextVar("kp_root", default=None)


def add_signer(identity: str, issuer: str, *, orgs: Sequence[str] = ()) -> Signer:
    """Trust ``identity`` from ``issuer`` too (for ``orgs`` only, when given), for this process."""
    _added.append(Signer(identity, issuer, tuple(orgs)))
    return _added[-1]


def _env_signer(prefix: str) -> tuple[Signer, ...]:
    """The signer ``KERNEL_PLUGINS_<prefix>_IDENTITY`` and ``_OIDC_ISSUER`` name (``_CERT_ORGS=a,b``)."""
    identity, issuer = (os.environ.get(f"KERNEL_PLUGINS_{prefix}_{k}") for k in ("IDENTITY", "OIDC_ISSUER"))
    if bool(identity) != bool(issuer):
        raise SignatureError(f"KERNEL_PLUGINS_{prefix}_IDENTITY and KERNEL_PLUGINS_{prefix}_OIDC_ISSUER go "
                             "together: set both (the signer's identity and its OIDC issuer URL) or neither")
    orgs = [o.strip() for o in os.environ.get("KERNEL_PLUGINS_CERT_ORGS", "").split(",") if o.strip()]
    return (Signer(identity, issuer, tuple(orgs)),) if identity and issuer else ()


def signers(extra: Sequence[Signer] = (), *, required: Sequence[Signer] = ()) -> tuple[Signer, ...]:
    """The policy. A required signer (``required``, else ``KERNEL_PLUGINS_CERT_IDENTITY`` with
    ``KERNEL_PLUGINS_CERT_OIDC_ISSUER``) is the whole policy, as sigstore's ``--cert-identity``;
    otherwise the defaults, :func:`add_signer`'s, ``KERNEL_PLUGINS_ADD_CERT_IDENTITY`` with
    ``KERNEL_PLUGINS_ADD_CERT_OIDC_ISSUER``, then ``extra``."""
    return tuple(required) or _env_signer("CERT") or (*DEFAULT_SIGNERS, *_added, *_env_signer("ADD_CERT"), *extra)


def signature_required() -> bool:
    """Whether loads must be signed now (:func:`requiring`, ``KERNEL_PLUGINS_REQUIRE_SIGNATURE``)."""
    value = os.environ.get("KERNEL_PLUGINS_REQUIRE_SIGNATURE", "")
    if value not in ("", "0", "1"):
        raise SignatureError(f"KERNEL_PLUGINS_REQUIRE_SIGNATURE={value!r}: set it to 1 (require) or 0")
    return any(req for req, _ in list(_blocks)) or value == "1"


@contextlib.contextmanager
def requiring(required: bool = True, *, trusted_root: str | os.PathLike[str] | None = None) -> Iterator[None]:
    """While the block runs, every load (kernelize, the compat module) in **every thread** of the
    process (those it starts, others too: the safe side) requires a signature when ``required``,
    checked against ``trusted_root`` when given (this thread's block first, else the newest)."""
    block = (required, os.fspath(trusted_root) if trusted_root is not None else None)
    token = _root_file.set(block[1] or _root_file.get())
    _blocks.append(block)  # list.append and list.remove are atomic: no lock
    try:
        yield
    finally:
        _blocks.remove(block)
        _root_file.reset(token)


@record
class SignatureCheck:
    """One variant's outcome: ``state`` (``signed``, ``unsigned``, ``bundle invalid``, ``signature
    invalid``, ``signer not allowed``, ``digest mismatch`` or ``cannot check``), ``detail`` (why,
    what to do), ``signer`` (``identity (issuer)``, when known)."""

    variant: str
    state: str
    detail: str
    signer: str | None = None

    ok = property(lambda self: self.state == "signed", doc="Signed by an allowed signer.")


def _read_root(path: Path) -> Any:
    """The trust root in ``path``, read once, with the lock file's rules (see ``jsonfile``)."""
    from .jsonfile import JSONFileError, parse_json, read_regular_file, written_by_others

    def check(st: os.stat_result) -> None:
        if why := written_by_others(st):
            raise JSONFileError(f"{path}: refusing it: {why}")

    try:
        raw = read_regular_file(path, max_bytes=MAX_ROOT_BYTES, follow=False, check=check)
        parse_json(raw, where=str(path), max_bytes=MAX_ROOT_BYTES)
    except FileNotFoundError:
        raise SignatureError(f"trusted root {path}: no such file; give a sigstore trusted_root.json") from None
    except (OSError, JSONFileError) as e:
        why = f"{path}: refusing it: it is a symbolic link" if getattr(e, "errno", None) == errno.ELOOP else e
        raise SignatureError(f"trusted root {path}: cannot be read as JSON ({why}); give a sigstore "
                             "trusted_root.json that only you (or root) may write, not a link") from None
    return _root_from_bytes(raw, str(path))


@functools.lru_cache(maxsize=8)
def _root_from_bytes(raw: bytes, path: str) -> Any:
    from sigstore.models import TrustedRoot
    from sigstore_models.trustroot import v1

    try:
        return TrustedRoot(v1.TrustedRoot.from_json(raw))
    except Exception as e:  # noqa: BLE001 - pydantic and sigstore errors alike
        raise SignatureError(f"trusted root {path}: not a sigstore trusted_root.json: {str(e).splitlines()[0]}") from None


def _cached_root() -> Path:
    """Where sigstore's TUF cache keeps the public-good ``trusted_root.json`` (sigstore's layout)."""
    from urllib.parse import quote

    import platformdirs

    cache = Path(platformdirs.user_cache_dir("sigstore-python", "sigstore"))
    return cache / "tuf" / quote("https://tuf-repo-cdn.sigstore.dev", safe="") / "trusted_root.json"


@functools.lru_cache(maxsize=2)
def _public_good(fetch: bool) -> tuple[Any, str]:
    from .hub import is_offline

    cached, note = _cached_root(), ""
    if fetch and not is_offline():
        from sigstore.models import ClientTrustConfig

        try:
            return ClientTrustConfig.production(offline=False).trusted_root, "sigstore public-good"
        except Exception as e:  # noqa: BLE001 - TUF and network errors alike
            note = f"; refreshing it online failed: {e} ({e.__cause__!r})"
    if not cached.is_file():
        return None, (f"no sigstore trust root is cached ({cached}){note or ' and the network is not used'}; "
                      "run kernel-plugins verify-signature once online, or pass --trusted-root FILE "
                      "/ KERNEL_PLUGINS_TRUSTED_ROOT=FILE")
    return _read_root(cached), f"sigstore public-good (cached{note})"


def _given_root(path: str | os.PathLike[str] | None = None) -> str | os.PathLike[str] | None:
    """The trust root file asked for: ``path``, else :func:`requiring`'s, else
    ``KERNEL_PLUGINS_TRUSTED_ROOT`` (None: sigstore's public-good instance)."""
    newest = next((root for _, root in reversed(list(_blocks)) if root), None)
    return path or _root_file.get() or newest or os.environ.get("KERNEL_PLUGINS_TRUSTED_ROOT")


def _trusted_root(path: str | os.PathLike[str] | None, fetch: bool) -> tuple[Any, str]:
    """(root or None, its name or why there is none)."""
    if given := _given_root(path):
        return _read_root(Path(given).expanduser()), str(Path(given).expanduser())
    return _public_good(fetch)


def _who(cert: Any) -> str:
    """``identity (issuer)`` of a signing certificate."""
    from cryptography import x509

    ext = {e.oid.dotted_string: e.value for e in cert.extensions}
    san, issuer = ext.get("2.5.29.17"), ext.get("1.3.6.1.4.1.57264.1.1")
    ids = [*san.get_values_for_type(x509.UniformResourceIdentifier),
           *san.get_values_for_type(x509.RFC822Name)] if san is not None else []
    return f"{' '.join(ids) or 'no identity'} ({issuer.value.decode(errors='replace') if issuer else 'no issuer'})"


def _allowed(cert: Any, signer: Signer, org: str | None) -> bool:
    from sigstore.errors import VerificationError
    from sigstore.verify import policy

    if org is not None and signer.orgs and org not in signer.orgs:
        return False
    checks: list[Any] = [policy.Identity(identity=signer.identity, issuer=signer.issuer)]
    if (repo := signer.repository()) is not None:
        checks.append(policy.OIDCSourceRepositoryURI(repo))
    try:
        policy.AllOf(checks).verify(cert)
    except (VerificationError, ValueError, TypeError, LookupError):
        return False
    return True


def check_bundle(metadata: bytes, bundle: bytes | None, *, variant: str, org: str | None,
                 trusted_root: str | os.PathLike[str] | None = None, fetch: bool = True,
                 extra_signers: Sequence[Signer] = (), required_signers: Sequence[Signer] = ()) -> SignatureCheck:
    """Verify ``bundle`` over the raw ``metadata`` bytes, then the signer against the policy
    (:func:`signers`: ``extra_signers`` added to it, or ``required_signers`` instead of it).

    ``org``: the kernel's Hub organisation (None: a local folder, no org rule); ``fetch``: may
    refresh sigstore's root online. :raises SignatureError: unusable trust root or signer variables.
    """
    def out(state: str, detail: str, signer: str | None = None) -> SignatureCheck:
        return SignatureCheck(variant, state, detail, signer)

    if bundle is None:
        return out("unsigned", f"no {BUNDLE_NAME}: the publisher did not sign this build; accept "
                   f"it by loading without a required signature, or ask them to sign it ({_DOCS})")
    if len(bundle) > MAX_BUNDLE_BYTES:
        return out("bundle invalid", f"{BUNDLE_NAME} is larger than {MAX_BUNDLE_BYTES} bytes; "
                   "refusing to read it: do not use this build")
    if importlib.util.find_spec("sigstore") is None:
        return out("cannot check", f"the sigstore library is not installed: {INSTALL}")
    from sigstore.models import Bundle

    try:
        parsed = Bundle.from_json(bundle)
    except Exception as e:  # noqa: BLE001 - any parse failure means an unusable bundle
        return out("bundle invalid", f"{BUNDLE_NAME} is not a sigstore bundle "
                   f"({str(e).splitlines()[0][:200]}): do not use this build; fetch it again or "
                   "report it to the publisher")
    allowed = signers(extra_signers, required=required_signers)
    root, root_name = _trusted_root(trusted_root, fetch)
    if root is None:
        return out("cannot check", root_name)
    from sigstore.verify import Verifier

    try:
        accept: Any = SimpleNamespace(verify=lambda cert: None)  # the signer is checked next, alone
        Verifier(trusted_root=root).verify_artifact(metadata, parsed, accept)
    except Exception as e:  # noqa: BLE001 - sigstore raises several types for a bad bundle
        return out("signature invalid", f"{BUNDLE_NAME} does not verify over metadata.json with "
                   f"the trust root {root_name} ({str(e).splitlines()[0][:200]}): metadata.json or "
                   "the bundle was changed after signing, or it was signed elsewhere; do not use "
                   "this build")
    who = _who(parsed.signing_certificate)
    if not any(_allowed(parsed.signing_certificate, s, org) for s in allowed):
        where = f" for organisation {org!r}" if org else ""
        policy, fix = "the signer policy", ("if you trust it, add it with --add-cert-identity and --add-cert-"
                                            "oidc-issuer (or KERNEL_PLUGINS_ADD_CERT_IDENTITY and "
                                            "KERNEL_PLUGINS_ADD_CERT_OIDC_ISSUER)")
        if required_signers or _env_signer("CERT"):  # sigstore's --cert-identity: that signer only
            policy, fix = f"the signer required ({', '.join(f'{s.identity} ({s.issuer})' for s in allowed)})", \
                "do not use this build unless you trust its signer"
        return out("signer not allowed", f"signed by {who}, which {policy} does not allow{where}; {fix}; {_DOCS}", who)
    return out("signed", f"signed by {who}", who)


def read_metadata(fetched: Fetched) -> bytes:
    """The raw ``metadata.json`` of a fetched variant (size capped first, links checked).
    :raises MetadataError: missing. :raises IntegrityError: a link leading out of the variant."""
    from .integrity import read_small_file
    from .metadata import MAX_METADATA_BYTES

    if not (path := fetched.path / "metadata.json").is_file():
        raise MetadataError(f"{path}: missing; every build variant needs a metadata.json (is this a variant folder?)")
    return read_small_file(path, max_bytes=MAX_METADATA_BYTES, roots=(fetched.path, *fetched.link_roots))


def read_bundle(fetched: Fetched) -> bytes | None:
    """The variant's bundle bytes (at most :data:`MAX_BUNDLE_BYTES` + 1), None when absent."""
    from .integrity import read_small_file

    path = fetched.path / BUNDLE_NAME
    return read_small_file(path, max_bytes=MAX_BUNDLE_BYTES, roots=(fetched.path, *fetched.link_roots)) \
        if os.path.lexists(path) else None


def org_of(fetched: Fetched) -> str | None:
    """The Hub organisation a fetched variant belongs to (None for a local folder)."""
    repo_id = fetched.offer.source.repo_id
    return repo_id.split("/", 1)[0] if repo_id and fetched.offer.source.kind != "local" else None


def on_load(fetched: Fetched, metadata: bytes, res: SignatureCheck | None = None) -> str | None:
    """Check a variant about to be loaded, before its ``metadata.json`` is parsed.

    Required (:func:`signature_required`): anything but an allowed signature raises. Not
    required: a bundle is checked only when sigstore and a trust root are available offline,
    and one that is broken or does not verify raises; unsigned builds load.

    :param res: the check of this variant already made with the network allowed (a required
        check makes the same one), or None.
    :return: who signed, for the provenance (None: unsigned or not checked).
    :raises SignatureError: refused; nothing from the variant may be imported.
    """
    if fetched.offer.source.kind in ("plugin", "reference"):
        return None  # installed with the library or a plugin: pip's trust, not the Hub's
    required = signature_required()
    if res is None or not required:
        bundle = read_bundle(fetched)
        if not required and (bundle is None or importlib.util.find_spec("sigstore") is None
                             or not (_given_root() or _cached_root().is_file())):
            return None  # nothing to check it against without the network: sigstore is not imported
        res = check_bundle(metadata, bundle, variant=fetched.variant, org=org_of(fetched), fetch=required)
    if res.ok or (not required and res.state in ("signer not allowed", "cannot check")):
        return _covered(f"{fetched.offer.where} {fetched.variant}", res, metadata).signer
    why = "a signature is required" if required else "its signature bundle does not verify"
    raise SignatureError(f"{fetched.offer.where} {fetched.variant}: refused, {why}: {res.state}: {res.detail}")


def _digest(metadata: bytes) -> tuple[Any, str | None]:
    """(the digest of a signed ``metadata.json``, None), or (None, why it covers nothing)."""
    from .integrity.digest import digest_algorithm
    from .metadata import parse_metadata_bytes

    try:
        digest = parse_metadata_bytes(metadata, where="metadata.json").digest
    except (KernelPluginsError, ValueError) as e:
        return None, f"metadata.json is unusable: {e}"
    if digest is None or digest_algorithm(digest) is None:
        return None, "metadata.json has no usable digest, so nothing covers the other files"
    return digest, None


def _covered(where: str, res: SignatureCheck, metadata: bytes) -> SignatureCheck:
    """``res``, once a signed ``metadata`` names a usable digest (checked against the files
    later), the rule of :func:`check_fetched`. :raises SignatureError: it names none."""
    if res.signer is not None and (problem := _digest(metadata)[1]):
        raise SignatureError(f"{where}: refused, digest mismatch: {res.detail}, but {problem}")
    return res


def files_problem(fetched: Fetched, metadata: bytes) -> str | None:
    """Why the files of a variant do not match the digest in ``metadata`` (None: they match)."""
    from .integrity import check_digest, read_variant
    from .integrity.digest import digest_algorithm

    digest, problem = _digest(metadata)
    if problem:
        return problem
    snap = read_variant(fetched.path, link_roots=fetched.link_roots, algorithms=[digest_algorithm(digest) or ""],
                        preread={"metadata.json": metadata})
    found = check_digest(snap, digest)
    return ("the files do not match its digest: " + "; ".join(m.describe() for m in found[:5])
            + "; delete the folder and fetch it again") if found else None


def check_fetched(fetched: Fetched, *, trusted_root: str | os.PathLike[str] | None = None,
                  extra_signers: Sequence[Signer] = (), required_signers: Sequence[Signer] = ()) -> SignatureCheck:
    """The full check of one variant folder (``kernel-plugins verify-signature``): bundle,
    signer (see :func:`check_bundle`), then the metadata digest against the files."""
    raw = read_metadata(fetched)
    res = check_bundle(raw, read_bundle(fetched), variant=fetched.variant, org=org_of(fetched),
                       trusted_root=trusted_root, extra_signers=extra_signers, required_signers=required_signers)
    if not res.ok:
        return res
    problem = files_problem(fetched, raw)
    state, detail = ("digest mismatch", f"{res.detail}, but {problem}") if problem else \
        ("signed", f"{res.detail}; files match the digest")
    return SignatureCheck(fetched.variant, state, detail, res.signer)


def check_locked(fetched: Fetched, metadata: bytes, signer: str) -> SignatureCheck:
    """Refuse a variant the lock records as signed by ``signer`` that now is not (``download``,
    ``verify``); returns the check (for :func:`on_load`, which would make the same one).
    :raises SignatureError: unsigned, invalid, or signed by someone else now."""
    res = check_bundle(metadata, read_bundle(fetched), variant=fetched.variant, org=org_of(fetched))
    if res.signer != signer or res.state not in ("signed", "signer not allowed"):
        raise SignatureError(f"{fetched.offer.where} {fetched.variant}: kernels.lock records it as signed by "
                             f"{signer}, but now it is {res.state}: {res.detail}. Do not use it; if the "
                             "change is expected, lock again (kernel-plugins lock)")
    return _covered(f"{fetched.offer.where} {fetched.variant}", res, metadata)


def lock_signers(ref: HubRef, listing: Mapping[str, Mapping[str, object]]) -> dict[str, str]:
    """Who signed each variant of ``ref`` with a bundle (``kernel-plugins lock``); downloads
    only their ``metadata.json`` and bundle. :raises SignatureError: a bundle does not verify."""
    from .fetching import Fetched, commit_offer
    from .hub import blobs_folder, download_file

    signed = sorted(v for v, files in listing.items() if BUNDLE_NAME in files)
    if not signed or importlib.util.find_spec("sigstore") is None:
        return {}  # nothing to record (without sigstore, the lock records no signers)
    out, off = {}, commit_offer(ref, signed)
    for v in signed:  # one GET per file (as lock/_project.py fetches metadata.json, and why)
        folder = [download_file(ref, f"build/{v}/{n}") for n in (BUNDLE_NAME, "metadata.json")][-1].parent
        fetched = Fetched(off, v, folder, (blobs_folder(ref),))
        res = check_bundle(raw := read_metadata(fetched), read_bundle(fetched), variant=v, org=org_of(fetched))
        if res.signer is None:
            raise SignatureError(f"{ref} {v}: cannot record who signed it: {res.state}: {res.detail}")
        _covered(f"{ref} {v}", res, raw)
        out[v] = res.signer
    return out
