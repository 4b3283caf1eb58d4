"""`theus login`: save the chat endpoint (base URL, key, model) for every later run."""

from __future__ import annotations

import argparse
import getpass
import sys

from theus.service.command_line import err
from theus.service.project import UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "login",
        help="save the chat model endpoint and key",
        description="Save the OpenAI-compatible endpoint Theus talks to. Asks "
        "for what the flags do not give. Stored with file mode 0600; an endpoint "
        "set by THEUS_*/OPENAI_* variables or config.toml still takes precedence.",
    )
    p.add_argument("--base-url", default=None, help="e.g. http://localhost:11434/v1")
    p.add_argument(
        "--api-key", default=None, help="API key (prefer the prompt: flags end up in shell history)"
    )
    p.add_argument("--model", dest="login_model", default=None, metavar="MODEL", help="model name")
    p.set_defaults(func=run)


def _ask(label: str, *, secret: bool = False, default: str = "") -> str:
    if not sys.stdin.isatty():
        raise UsageError(f"{label} missing: pass it as a flag (stdin is not a terminal)")
    prompt = f"{label}" + (f" [{default}]" if default else "") + ": "
    value = getpass.getpass(prompt) if secret else input(prompt)
    return value.strip() or default


def run(args: argparse.Namespace) -> int:
    from knowledge.core.credentials import ChatCredentials, save_credentials

    base_url = (args.base_url or _ask("Base URL", default="https://api.openai.com/v1")).strip()
    if not base_url.startswith(("http://", "https://")):
        raise UsageError(f"base URL must start with http:// or https://, got {base_url!r}")
    api_key = (
        args.api_key if args.api_key is not None else _ask("API key (empty if none)", secret=True)
    )
    model = (args.login_model or _ask("Model")).strip()
    if not model:
        raise UsageError("a model name is required (e.g. --model gpt-4o-mini)")
    path = save_credentials(ChatCredentials(base_url.rstrip("/"), api_key.strip(), model))
    err(f"theus: saved {model} at {base_url} to {path} (mode 0600)\n")
    return 0
