"""Which Hub organisations may supply kernel code without an explicit opt-in.

A kernel is Python (and native) code that runs inside the user's process, so loading one from the Hub is running
someone else's code. Kernels from an organisation on the allowlist, or one the Hub marks as a trusted kernel
publisher (as kernels 0.17.2 reads it; asked once, then remembered: :func:`kernel_plugins.hub.trusted_publisher`),
load as usual; any other organisation needs ``trust_remote_code=True`` (command line: ``--trust-remote-code``) or
its name in ``KERNEL_PLUGINS_TRUSTED_ORGS``.

The allowlist is ``kernels-community`` plus the comma-separated entries of ``KERNEL_PLUGINS_TRUSTED_ORGS`` (read at
every check). An entry is an organisation (``acme``) or one repository (``acme/activation``). Names compare
case-insensitively, as the Hub does. Local folders and ``LOCAL_KERNELS`` overrides are the user's own choice and are
never checked.
"""

from __future__ import annotations

import os

from .errors import TrustError

__all__ = ["DEFAULT_TRUSTED_ORGS", "TRUSTED_ORGS_ENV", "trusted_entries", "is_trusted", "check_trusted"]

#: Organisations trusted without any configuration.
DEFAULT_TRUSTED_ORGS: tuple[str, ...] = ("kernels-community",)
#: Environment variable with more trusted organisations (or ``org/name`` repositories).
TRUSTED_ORGS_ENV = "KERNEL_PLUGINS_TRUSTED_ORGS"


def trusted_entries() -> tuple[str, ...]:
    """The allowlist now: the defaults, then the entries of ``KERNEL_PLUGINS_TRUSTED_ORGS`` (stripped; empty
    ones ignored, order kept, duplicates dropped)."""
    extra = [e.strip() for e in os.environ.get(TRUSTED_ORGS_ENV, "").split(",") if e.strip()]
    return tuple(dict.fromkeys((*DEFAULT_TRUSTED_ORGS, *extra)))


def is_trusted(repo_id: str) -> bool:
    """Whether ``repo_id`` (``org/name``) is on the allowlist, by organisation or by name
    (the Hub is not asked)."""
    full, org = repo_id.lower(), repo_id.split("/", 1)[0].lower()
    entries = [e.lower().rstrip("/") for e in trusted_entries()]
    return any(e == full or ("/" not in e and e == org) for e in entries)


def check_trusted(repo_id: str, trust_remote_code: bool = False) -> None:
    """Refuse to load Hub code from ``repo_id`` unless it is trusted.

    :param repo_id: the Hub repository, ``org/name``.
    :param trust_remote_code: the caller's explicit opt-in; when True nothing is checked.
    :raises TrustError: the organisation is not on the allowlist, the Hub does not mark it
        as a trusted kernel publisher (or could not say so), and no opt-in was given;
        the message names both ways to allow it, or, for a name a small edit away from a
        trusted organisation (a typo, or typosquatting), asks whether that one was meant
        and advises nothing else."""
    if trust_remote_code or is_trusted(repo_id):
        return
    from .hub import trusted_publisher

    org = repo_id.split("/", 1)[0]
    trusted, why = trusted_publisher(org)
    if trusted:
        return
    if (look_alike := _look_alike(org)) is not None:  # a typo, or typosquatting: never advise trusting it
        name = repo_id.split("/", 1)[1] if "/" in repo_id else ""
        raise TrustError(f"Refusing to load kernel code from {repo_id!r}: did you mean {look_alike!r} ({look_alike}/"
                         f"{name})? The organisation {org!r} is not trusted and its name is close to the trusted "
                         f"{look_alike!r}: check the spelling. A look-alike name is how typosquatting brings in "
                         "someone else's code.")
    raise TrustError(f"Refusing to load kernel code from {repo_id!r}: the organisation {org!r} is not trusted (trusted: "
                     f"{', '.join(trusted_entries())}), and {why}. A kernel runs as code inside this process. If you "
                     f"trust {org!r}, either pass trust_remote_code=True (command line: --trust-remote-code), or add "
                     f"it to the allowlist with the environment variable {TRUSTED_ORGS_ENV}={org} (comma-separated; "
                     f"an entry may also name one repository, e.g. {repo_id}).")


def _look_alike(org: str) -> str | None:
    """The trusted organisation that ``org`` differs from by a small edit, or None."""
    from ._suggest import closest

    orgs = {e.split("/", 1)[0].lower() for e in trusted_entries()}
    return None if org.lower() in orgs else closest(org.lower(), orgs, cutoff=0.85)
