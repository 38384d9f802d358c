"""One name for one thing: the options that were renamed, refused with the name to use.

Every command names the same thing the same way (docs/cli.md has the table): a workload file
is ``--trace FILE``, one figure ``--figure FILE``, a folder of several outputs ``--out-dir
DIR``, a number of steps to run ``--steps N``, a window of a trace's steps ``--step-range A:B``.
The spellings below were used before; they are refused with one line naming the new one, so a
script written against an old version stops at once instead of doing something else.
"""

from __future__ import annotations

from collections.abc import Sequence

from grapeshot.model.errors import InputError

#: ``(command, old option) -> what to write instead``.
RENAMED: dict[tuple[str, str], str] = {
    ("place", "--workload"): "--trace FILE",
    ("charm-compare", "--workload"): "--trace FILE",
    ("simulate", "--steps"): "--step-range A:B (--steps N is a number of steps to run)",
    ("simulate", "--out-dir"): "--figure FILE (simulate writes one figure)",
    ("simulate", "--figures"): "--figure FILE",
    ("simulate", "--no-figures"): "--no-figure",
}


def check_renamed(argv: Sequence[str]) -> None:
    """Refuse an old option spelling of the command in ``argv`` (``grapeshot``'s arguments).

    Raises
    ------
    InputError
        ``"<command> <old>: renamed: did you mean <new>? (docs/cli.md)"``.
    """
    command = next((a for a in argv if not a.startswith("-")), None)
    if command is None:
        return
    for arg in argv:
        if arg == "--":
            break
        old = arg.split("=", 1)[0]
        new = RENAMED.get((command, old))
        if new is not None:
            raise InputError(f"{command} {old}", f"renamed: did you mean {new}? (docs/cli.md)")
