"""Whether a chat message can carry a durable fact: what makes one extraction call worth it.

    can_carry_fact(message) -> bool

True for statements about the user ("I'm Ana", "I prefer tabs", "vivo en Madrid"), people
("Alice joined the team"), the project's and team's choices ("we use PostgreSQL", "our API is
REST", "el proyecto usa Poetry"), corrections ("actually it's MySQL, not PostgreSQL", "ya no
usamos Jenkins") and what the user asks the memory to keep ("remember ..."). False for
commands ("fix the typo", "añade un test"), questions ("why does X fail?"), bug reports ("my
build is broken") and small talk: there the extraction would find nothing and cost a call.

Pure and cheap (word lists, English and Spanish, accents folded as the chat gate does, whose
small-talk and follow-up decision it reuses), measured on the labelled messages in
`tests/knowledge/fixtures/fact_gate_*.tsv`. A miss costs a fact; a false alarm, one call.
"""

from __future__ import annotations

import re

from knowledge.core.folding import fold
from knowledge.core.runs import ASKED_TO_REMEMBER
from knowledge.recall.gate import gate


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Anywhere in a message: a correction, a standing rule, or a request to keep something.
_ALWAYS = (
    *ASKED_TO_REMEMBER,
    "recorda",  # "recordá que ...": the imperative as people in Argentina write it
    "actually",
    "correction",
    "no wait",
    "change of plans",
    "no longer",
    "from now on",
    "note that",
    "en realidad",
    "de hecho",
    "corrijo",
    "correccion",
    "cambio de planes",
    "ya no ",
    "a partir de ahora",
    "en vez de",
    "en lugar de",
)
# "it's MySQL, not PostgreSQL", "usamos yarn, no npm": a value set against another.
_INSTEAD = re.compile(r"\w, (?:not|no) \w")
# Opening a command or a question: what follows asks, it does not state.
_COMMANDS = _words("""
fix add write rename explain refactor remove migrate show run update make delete bump undo try
format list check look review simplify split optimize speed create implement change find
replace move use install test debug document generate help tell give can could would will
should please pls let's lets
arregla arreglalo anade agrega escribe ejecuta corre renombra elimina borra quita explica
explicame muestra muestrame haz hace crea actualiza cambia revisa busca mira sube formatea
deshaz optimiza divide agregale anadele implementa mueve instala genera ayudame dime dame
puedes podrias
""")
_QUESTIONS = _words("""
what whats what's where why how which who when does do did is are was were
donde cual cuando quien como por
""")
# Leading words that change nothing about what the rest of a clause is.
_LEAD = _words("please now then also and so but ok okay oh well y pero ahora entonces tambien ya")
# After "I" / "we": a lasting state or choice, or a task, a plan, a problem.
_STATES = _words("""
am 'm are 're 've have has use used using prefer like love hate work live moved switched
migrated decided chose dropped added renamed deploy host store target call write run build
building speak follow stopped changed replaced keep all
""")
_ADVERBS = _words("also still mostly only always never usually don't dont do not")
_PASSING = _words("""
getting seeing trying having stuck confused looking wondering not sure going
""")
_SUBJECTS = _words("i i'm i've we we're we've")
_BEING = _words("i'm we're")
# A possessive or a project's part opening a statement ("our API is REST", "the team prefers
# small pull requests") states a fact, unless the statement is a problem report.
_OWNERS = _words("my our mi mis nuestro nuestra nuestros nuestras")
_PARTS = _words("""
project team company app api database db backend frontend stack server service staging prod
production repo ci pipeline infrastructure product customers client deadline release mobile
proyecto equipo empresa aplicacion base servidor servicio produccion repositorio cliente
clientes infraestructura producto
""")
_PROBLEMS = _words("""
broken fails fail failing failed crash crashes crashing error errors wrong slow flaky bug bugs
hangs hang leak leaks exception traceback outdated missing
roto rota falla fallan fallando error errores mal lento lenta cuelga
""")
# Spanish first person, and what people say of others ("a Mateo le encanta").
_YO = _words("""
soy estoy vivo trabajo uso prefiero tengo odio estudio programo somos estamos usamos tenemos
""")
_STATE_PHRASES = (
    "me llamo",
    "me gusta",
    "me encanta",
    "le gusta",
    "le encanta",
    "se llama",
    "se unio",
    "likes",
    "loves",
    "hates",
    "prefers",
    "joined",
    "is called",
    "is named",
    "written in",
    "built with",
    "hecho con",
    "hecho en",
)
_NOT_YO = _words("necesitamos podemos deberiamos queremos")
_CLAUSE = re.compile(r"[^.;!?:,\n]+[?]?")
_WORD = re.compile(r"[a-z0-9']+")


def can_carry_fact(message: str) -> bool:
    """Whether `message` may state something durable (see the module docstring)."""
    if gate(message) in ("skip", "reuse"):  # small talk, a go-ahead: nothing said
        return False
    text = fold(message)
    if any(phrase in text for phrase in _ALWAYS) or _INSTEAD.search(text):
        return True
    return any(_states(clause) for clause in _CLAUSE.findall(text))


def _states(clause: str) -> bool:
    """Whether one clause (folded) states something rather than asks, orders or reports."""
    if clause.strip().startswith("¿") or clause.endswith("?"):
        return False
    words = _WORD.findall(clause)
    while words and words[0] in _LEAD:
        words.pop(0)
    if not words or words[0] in _COMMANDS or words[0] in _QUESTIONS:
        return False
    if any(phrase in clause for phrase in _STATE_PHRASES):
        return True
    subject = next((i for i, w in enumerate(words) if w in _SUBJECTS), None)
    if subject is not None and _first_person(words[subject:]):  # its first "I" or "we"
        return True
    if words[0] in _YO or (words[0].endswith(("amos", "imos")) and words[0] not in _NOT_YO):
        return not (words[0] == "tenemos" and words[1:2] == ["que"])
    if any(w in _PROBLEMS for w in words):  # "my build is broken", "la salida está mal"
        return False
    return any(w in _OWNERS for w in words) or any(w in _PARTS for w in words[:3])


def _first_person(words: list[str]) -> bool:
    """`words` open with "I" or "we": a lasting state or choice, not a task or a problem."""
    head, rest = words[0], words[1:]
    if head not in _BEING and rest[:1] in (["am"], ["are"]):
        head, rest = "i'm", rest[1:]
    if head in _BEING:  # "I'm building", "we're a team"; not "I'm getting an error"
        return bool(rest) and rest[0] not in _PASSING
    while rest and rest[0] in _ADVERBS:
        rest = rest[1:]
    return bool(rest) and rest[0] in _STATES
