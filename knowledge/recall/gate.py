"""Whether a chat message asks about the project: context only when it helps.

    gate(message) -> "fresh" | "extend" | "reuse" | "skip"

- skip: greetings, thanks, acknowledgements, farewells ("ok", "thanks!", "buenos días"):
  nothing to recall, nothing injected.
- reuse: a follow-up that adds nothing to recall on ("yes please, do it", "why?", "fix it",
  "no, the other one"): the previous turn's block is already in the conversation.
- extend: a short follow-up that names something new ("and the tests?", "¿y en windows?"):
  recall on the previous request together with it.
- fresh: anything else; a request, including one that opens with small talk ("thanks! now
  add a test for the parser").

Pure and cheap (word lists, English and Spanish, accents folded), measured on the labelled chat
messages in `tests/knowledge/fixtures/gate_messages.tsv`.
"""

from __future__ import annotations

import re
from typing import Literal

from knowledge.core.folding import fold
from knowledge.core.runs import ASKED_TO_REMEMBER

Decision = Literal["fresh", "extend", "reuse", "skip"]
EXTEND_WORDS = 6  # a follow-up this short that names something new extends the previous one
SHORT_WORDS = 3  # this short and half known chat words: chat, whatever the other word is


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SMALLTALK = _words("""
ok okay okey k kk thanks thank thx ty cheers appreciated much many lot so very good morning
afternoon evening night hello hi hiya hey there yo howdy how hows are you is it going whats
up nice great cool awesome perfect excellent amazing wonderful brilliant sweet neat job well
done work that's thats looks to me lgtm sounds got understood makes sense see alright all
right fine sure np no problem lol haha hmm oh ah wow interesting bye goodbye later tomorrow have
a day nevermind never mind nvm for now i
gracias muchas mil hola buenos buenas dias tardes noches que tal como estas vale perfecto genial
estupendo muy bien de acuerdo entendido entiendo ya veo listo claro guay chevere bacan buen
trabajo excelente jaja jajaja adios hasta luego manana chao nos vemos tengas un dia eso es todo
nada mas
""")
# Words that point back at the previous turn: go-aheads, pronouns, short questions about it.
_FOLLOWUP = _words("""
yes yeah yep y please do it go ahead for proceed continue keep going on carry try again retry
fix apply run them undo that revert commit ship same rest why how really sure mean explain more
details tell show me diff first second third other one option both not no nope this those
these
the what about also and now in
si hazlo dale adelante sigue continua intentalo de nuevo otra vez arreglalo aplicalo como
ejecutalo deshaz eso por que explicalo explicame mas muestramelo y lo mismo para el la los las
ahora en no otro otra segundo primero dos
""")
_GLUE = _words("the a an and in for to of on el la los las un una y en de para por")
# Opening a short follow-up that names something new.
_CONNECTORS = (
    "and ",
    "what about ",
    "also ",
    "same for ",
    "now ",
    "how about ",
    "y ",
    "que hay de ",
    "lo mismo para ",
    "ahora ",
    "tambien ",
)
_REMEMBER = (*ASKED_TO_REMEMBER, "what did we", "que hicimos", "did we decide")
_CODE_LIKE = re.compile(r"[A-Za-z0-9]+[._/:][A-Za-z0-9]|[a-z][A-Z]|`|\w_\w")
_WORD = re.compile(r"[a-z']+")


def gate(message: str) -> Decision:
    """What recall to run for `message` (see the module docstring)."""
    if _CODE_LIKE.search(message):  # a path, an identifier, an error text: always a request
        return "fresh"
    text = fold(message)
    if any(phrase in text for phrase in _REMEMBER):
        return "fresh"  # what the memory is for
    words = [w.replace("'", "") for w in _WORD.findall(text)]
    if not words:
        return "skip"  # an emoji, a smiley, punctuation
    content = [w for w in words if w not in _SMALLTALK and w not in _FOLLOWUP]
    if not content:  # "sure" thanks, "are you sure?" asks about the last answer
        return "reuse" if any(w in _FOLLOWUP for w in words) else "skip"
    if len(words) <= EXTEND_WORDS and text.lstrip(" ¿?¡!.,").startswith(_CONNECTORS):
        return "extend"
    known = [w for w in words if w not in _GLUE]
    if len(known) <= SHORT_WORDS and len(content) * 2 <= len(known):
        # "thanks mate", "great stuff": a word the lists lack beside ones they know (but
        # "the login" is a request: articles and prepositions know nothing)
        chat = sum(w in _SMALLTALK for w in known) >= sum(w in _FOLLOWUP for w in known)
        return "skip" if chat else "reuse"
    return "fresh"
