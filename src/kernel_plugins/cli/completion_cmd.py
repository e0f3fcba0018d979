"""``kernel-plugins completion bash|zsh``: a completion script generated from the parser (so
it cannot drift): commands, options, positional choices; file names for values and
positional arguments. zsh runs the bash script through its ``bashcompinit``."""

from __future__ import annotations

import argparse

NAME = "completion"
HELP = 'print a shell completion script: eval "$(kernel-plugins completion bash)" in ~/.bashrc'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: SHELL."""
    parser.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete in")


def _words(p: argparse.ArgumentParser) -> str:
    """``words='options and positional choices' values='options that take a value'``."""
    acts = p._actions
    words = [s for a in acts for s in a.option_strings if s != "-h"]
    words += [str(c) for a in acts if not a.option_strings for c in a.choices or ()]
    values = [s for a in acts if a.nargs != 0 for s in a.option_strings]
    return f"words={' '.join(words)!r} values={' '.join(values)!r}"


def script(parser: argparse.ArgumentParser) -> str:
    """The bash script: a ``_kernel_plugins`` function and its ``complete`` line."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    arms = "".join(f"        {name}) {_words(p)};;\n" for name, p in sub.choices.items())
    top = [s for a in parser._actions if a.nargs != 0 for s in a.option_strings]
    return f"""_kernel_plugins() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} cmd="" i words values
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${{COMP_WORDS[i]}} in
            {'|'.join(top) or '--'}) ((i++));;
            -*) ;;
            *) cmd=${{COMP_WORDS[i]}}; break;;
        esac
    done
    case $cmd in
{arms}        *) {_words(parser)};;
    esac
    if [[ " $values " == *" $prev "* ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    elif [[ -z $cmd || $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur") $(compgen -W "$words" -- "$cur"))
    fi
}}
complete -o filenames -F _kernel_plugins kernel-plugins
"""


def run(args: argparse.Namespace) -> int:
    """Print the script for ``args.shell``."""
    from .main import build_parser

    zsh = "autoload -U +X bashcompinit && bashcompinit\n" if args.shell == "zsh" else ""
    print(zsh + script(build_parser()))
    return 0
