"""Read the TOML text of a ``build.toml`` into a dict, refusing what is not sensible TOML.

Size, encoding and syntax are checked here; what the keys mean is checked by the models
(``_models``) and the rules (``_rules``, ``_editions``). ``tomllib`` (Python 3.11+) or
``tomli`` (Python 3.10) is imported when text is first decoded.
"""

from __future__ import annotations

from typing import Any

from kernel_plugins.errors import BuildConfigError

#: build.toml files larger than this are refused (the biggest real one is ~20 KiB).
MAX_BUILD_TOML_BYTES = 1 << 20


def _toml_loads() -> Any:
    try:
        import tomllib

        return tomllib.loads
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli  # type: ignore[import-not-found]
        except ModuleNotFoundError:
            raise BuildConfigError(
                "reading build.toml needs the TOML parser of Python 3.11+ (tomllib); on "
                "Python 3.10 install it with: pip install tomli"
            ) from None
        return tomli.loads


def loads_toml(raw: bytes | str, *, where: str = "build.toml") -> dict[str, Any]:
    """Decode TOML text into a dict; :class:`BuildConfigError` for size, encoding, syntax.

    :param raw: the file's bytes (or text).
    :param where: how to name the file in messages.
    """
    size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
    if size > MAX_BUILD_TOML_BYTES:
        raise BuildConfigError(
            f"{where}: {size} bytes, larger than the {MAX_BUILD_TOML_BYTES} allowed for a "
            "build.toml; is this the right file?"
        )
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BuildConfigError(
                f"{where}: not UTF-8 text ({e}); save the file as UTF-8"
            ) from None
    else:
        text = raw
    loads = _toml_loads()
    try:
        data = loads(text)
    except RecursionError:
        raise BuildConfigError(
            f"{where}: malformed TOML: values are nested too deeply; flatten the file"
        ) from None
    except ValueError as e:  # tomllib.TOMLDecodeError is a ValueError
        raise BuildConfigError(
            f"{where}: malformed TOML: {e}; fix the syntax there (strings need quotes, "
            "tables are [name], lists are [\"a\", \"b\"])"
        ) from None
    return data
