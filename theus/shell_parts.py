"""A shell command as the simple commands it runs, for standing approval rules
(`theus.permissions`): `make test && git diff | head` is three, each the tuple of its words as
written (quotes kept, so `'$x'` and `$x` never compare equal).

What no rule can vouch for raises `Unchecked`, and the command is asked each time: command
substitution (`$(`, backticks, even single-quoted: bash evaluates array subscripts given to
builtins such as `printf -v`), `${` and `$'` (bash quotes inside them by rules of their own),
subshells and groups, here-documents, comments, redirection to or from a file (a write no rule
named), an unclosed quote. Conservative on purpose: a command it refuses is only asked again,
one it misreads could run unasked.
"""

from __future__ import annotations

import re

from knowledge.core.errors import TheusError

SEPARATORS = ";&|\n"
BLANKS = " \t"
_REDIRECT = re.compile(r"(?P<op>&>>|&>|>>|>\||>&|<&|<<|<>|>|<)")
# Redirections that move a stream without touching a file: `2>&1`, `>&2`, `2>/dev/null`.
_HARMLESS_TARGET = {">&": re.compile(r"\d+|-"), "<&": re.compile(r"\d+|-")}
_NULL_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<"})


class Unchecked(TheusError, ValueError):
    """The command holds something no rule can vouch for (the message says what)."""


def simple_commands(command: str) -> list[tuple[str, ...]]:
    """The simple commands of `command`, in order (empty ones dropped)."""
    if "$(" in command or "`" in command:
        raise Unchecked("it uses command substitution ($( ) or backticks)")
    if "${" in command or "$'" in command:
        raise Unchecked("it uses ${ } or $' ' quoting")
    parts: list[tuple[str, ...]] = []
    words: list[str] = []
    word = ""
    i = 0
    while i < len(command):
        c = command[i]
        if c in "<>" or (c == "&" and command[i + 1 : i + 2] == ">"):
            fd = word if word.isdigit() and c != "&" else ""
            if word and not fd:
                words.append(word)
            word = ""
            i = _skip_redirection(command, i)
            continue
        if c in BLANKS or c in SEPARATORS:
            if word:
                words.append(word)
            word = ""
            if c in SEPARATORS and words:
                parts.append(tuple(words))
                words = []
            i += 1
            continue
        if c in "()":
            raise Unchecked("it runs a subshell or a group")
        if c == "#" and not word:
            raise Unchecked("it holds a comment")
        end = _word_piece_end(command, i)
        word += command[i:end]
        i = end
    if word:
        words.append(word)
    if words:
        parts.append(tuple(words))
    return parts


def _word_piece_end(command: str, i: int) -> int:
    """Where the piece of a word that starts at `i` ends: a quoted string, an escaped
    character, or one plain character."""
    c = command[i]
    if c == "'":
        end = command.find("'", i + 1)
        if end < 0:
            raise Unchecked("a quote is not closed")
        return end + 1
    if c == '"':
        j = i + 1
        while j < len(command) and command[j] != '"':
            j += 2 if command[j] == "\\" else 1
        if j >= len(command):
            raise Unchecked("a quote is not closed")
        return j + 1
    if c == "\\":
        if i + 1 >= len(command):
            raise Unchecked("it ends with a backslash")
        return i + 2
    return i + 1


def _skip_redirection(command: str, i: int) -> int:
    """Past a redirection at `i` that touches no file; raises `Unchecked` for any other."""
    found = _REDIRECT.match(command, i)
    assert found is not None  # called on `<`, `>` or `&>`
    op = found["op"]
    if op == "<<":
        raise Unchecked("it holds a here-document")
    j = found.end()
    while j < len(command) and command[j] in BLANKS:
        j += 1
    start = j
    while j < len(command) and command[j] not in BLANKS + SEPARATORS + "<>()":
        j += 1
    target = command[start:j]
    harmless = _HARMLESS_TARGET.get(op)
    if (harmless is not None and harmless.fullmatch(target)) or (
        op in _NULL_OPS and target == "/dev/null"
    ):
        return j
    raise Unchecked("it redirects to or from a file")
