"""``kernel-plugins completion bash|zsh``: a shell completion script generated from the parser.

Commands, options and positional choices come from :func:`~kernel_plugins.cli.main.build_parser`,
so the script cannot drift from the command line; file names complete values and
positional arguments. zsh
runs the same script through its ``bashcompinit``.
"""

from __future__ import annotations

import argparse

NAME = "completion"
HELP = ("print a shell completion script: eval \"$(kernel-plugins completion bash)\" in "
        "~/.bashrc, or the same with zsh in ~/.zshrc")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: SHELL."""
    parser.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete in")


def _words(parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """(options and positional choices, options that take a value) of one parser."""
    words = [s for a in parser._actions for s in a.option_strings if s != "-h"]
    words += [str(c) for a in parser._actions if not a.option_strings for c in a.choices or ()]
    return words, [s for a in parser._actions if a.nargs != 0 for s in a.option_strings]


def script(parser: argparse.ArgumentParser) -> str:
    """The bash script (a ``_kernel_plugins`` function and its ``complete`` line)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    top, top_values = _words(parser)
    arms = "".join(f"        {name}) words={' '.join(w)!r} values={' '.join(v)!r};;\n"
                   for name, (w, v) in ((n, _words(p)) for n, p in sub.choices.items()))
    return f"""_kernel_plugins() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} cmd="" i words values
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${{COMP_WORDS[i]}} in
            {'|'.join(top_values) or '--'}) ((i++));;
            -*) ;;
            *) cmd=${{COMP_WORDS[i]}}; break;;
        esac
    done
    case $cmd in
{arms}        *) words={' '.join(top)!r} values={' '.join(top_values)!r};;
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

    text = script(build_parser())
    print(("autoload -U +X bashcompinit && bashcompinit\n" if args.shell == "zsh" else "") + text)
    return 0
