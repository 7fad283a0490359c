"""promptfoo prompts and providers as evalnb variants.

Prompts: inline text, ``{raw, label}`` / ``{raw, id}`` objects, ``file://`` text files
(several prompts split by a ``---`` line), globs (``file://prompts/*.txt``), and chat
prompt files (``.json``, ``.yaml``, ``.yml``: a list of messages; ``.jsonl``: one list a
line). A chat prompt of a system and a user message becomes a variant's ``system`` and
``template``; one of a user message, its ``template``; any other list of messages (few-shot
turns, an assistant message) a ``chat`` template: its messages, each rendered, are the
request, as promptfoo sends them. The Nunjucks filters Jinja2 lacks are written as Jinja2
(:data:`NUNJUCKS`); a template that still does not compile is refused, naming the filter.

Providers: each becomes the variants of every prompt, named by its ``label`` or ``id``
(with the prompt's name when there are several prompts), its request parameters kept as
the variant's ``params``. A provider of a protocol evalnb speaks (:data:`PROTOCOLS`:
``anthropic:messages:*``, ``openai:chat:*``, ``openai:responses:*``, ``azure:chat:*``,
``google:*``, ``vertex:*``, ``bedrock:*``) becomes the variant's own ``target`` (that
protocol, that model, the vendor's key variable) when its key is set where the import runs;
otherwise, and for any other provider, the model stays the run's (``--model``) and the
provider's model is listed as approximated.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Protocol

from evalnb._types import check_template
from evalnb.interop._suite import ImportNotes, source_error

__all__ = ["NUNJUCKS", "PARAMS", "PROTOCOLS", "Config", "Prompts", "globbed", "provider_variants"]

#: Nunjucks filters Jinja2 lacks or names otherwise, and their Jinja2 form.
NUNJUCKS = {
    "dump": "tojson",
    "nl2br": "replace('\\n', '<br />\\n')",
}

#: Provider ``config`` keys sent as request parameters (camelCase ones renamed).
PARAMS = {
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "maxTokens": "max_tokens",
    "top_p": "top_p",
    "topP": "top_p",
    "seed": "seed",
    "stop": "stop",
    "presence_penalty": "presence_penalty",
    "presencePenalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "frequencyPenalty": "frequency_penalty",
    "response_format": "response_format",
}

#: promptfoo provider id prefixes, the target type each becomes and the variables that
#: must be set for it to run with the user's key (any one of them).
PROTOCOLS = {
    "anthropic:messages:": ("anthropic", ("ANTHROPIC_API_KEY",)),
    "openai:responses:": ("responses", ("OPENAI_API_KEY",)),
    "openai:chat:": ("openai", ("OPENAI_API_KEY",)),
    "azure:chat:": ("azure", ("AZURE_OPENAI_API_KEY", "AZURE_API_KEY")),
    "google:": ("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    "vertex:": ("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    "bedrock:": ("bedrock", ("AWS_ACCESS_KEY_ID", "AWS_PROFILE")),
}

_TEXT_FILES = (".txt", ".md", ".j2", ".jinja", ".njk", "")
_CHAT_FILES = (".json", ".yaml", ".yml", ".jsonl")
#: How a text prompt whose rendering may be a message list begins.
_CHAT_TEXT = ("[", "- role:")
_FILTER = re.compile(r"\|\s*(" + "|".join(NUNJUCKS) + r")\b(?!\s*\()")


def _jinja(text: str) -> str:
    """``text`` with the Nunjucks filters of :data:`NUNJUCKS` written as Jinja2."""
    return _FILTER.sub(lambda m: "| " + NUNJUCKS[m[1]], text)


def globbed(base: Path, ref: str, where: str) -> list[Path]:
    """The files a ``file://`` glob names under ``base``, sorted (each is then read through
    the caps and the inside-the-folder rule); an absolute glob is refused."""
    pattern = ref.removeprefix("file://")
    try:
        return sorted(p for p in base.glob(pattern) if p.is_file())
    except (NotImplementedError, ValueError):
        raise source_error(
            Path(where.split(": ")[0]),
            f"the glob {ref!r} is not relative to the suite's folder; only files inside it "
            "are read",
        ) from None


def _compile_reason(error: str) -> str:
    """Why a prompt is refused; an unknown filter is named with what evalnb offers."""
    found = re.search(r"No filter named '([^']+)'", error)
    if found is None:
        return f"its template does not compile in Jinja2 ({error})"
    return (
        f"it uses the Nunjucks filter {found[1]!r}, which evalnb does not have ({error}); "
        f"evalnb writes {', '.join(NUNJUCKS)} as Jinja2 and takes the filters both share"
    )


class Config(Protocol):
    """What reading prompts needs of a config's importer: where the config is, its
    ledger, and its bounded reading of ``file://`` references."""

    path: Path
    notes: ImportNotes

    def read(self, ref: str, at: str) -> tuple[Path, str]: ...

    def data(self, file: Path, text: str) -> Any: ...


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "variant"


class Prompts:
    """Reads a config's ``prompts`` for one importer."""

    def __init__(self, importer: Config):
        self.importer = importer
        self.found: list[tuple[str | None, dict[str, Any], str]] = []

    def variants(self, raw: Any) -> list[dict[str, Any]]:
        importer = self.importer
        if raw is None:
            return [{"name": "baseline"}]
        items = raw if isinstance(raw, list) else [raw]
        for i, item in enumerate(items):
            line = getattr(item, "line", 0)
            where = f"{importer.path}{f':{line}' if line else ''}: prompts[{i}]"
            label = None
            if isinstance(item, dict):
                label = item.get("label") or item.get("id")
                item = item.get("raw", item.get("id"))
            if not isinstance(item, str):
                importer.notes.refuse("prompt", where, f"expected text or file://; got {item!r}")
                continue
            if item.startswith("file://"):
                self.file(item, label, where)
            elif self.bare_path(item):
                importer.notes.map("prompt path", where, f"{item} read as a file")
                self.file(f"file://{item}", label, where)
            else:
                self.inline(item, label, where)
        variants = []
        for n, (label, parts, where) in enumerate(self.found, start=1):
            name = _safe_name(str(label) if label else f"prompt-{n}")
            try:
                for text in parts.values():
                    if isinstance(text, str):
                        check_template(text)
            except ValueError as exc:
                importer.notes.refuse(f"prompt {n}", where, _compile_reason(str(exc)))
                # Kept aside (``_uncompiled``: its refusal): promptfoo's expansion, where it
                # runs, renders it for every case; else it is left out.
                refusal = importer.notes.unsupported[-1]
                variants.append(
                    {"name": name, "_prompt": n - 1, "_uncompiled": refusal, "_text": parts}
                )
                continue
            if "system" not in parts and str(parts["template"]).lstrip().startswith(_CHAT_TEXT):
                # promptfoo reads such a prompt's rendering as a message list when it is one.
                parts["chat"] = True
            # ``_prompt``: the prompt's place in the config, as promptfoo numbers its prompts.
            variants.append({"name": name, **parts, "_prompt": n - 1})
        if all("_uncompiled" in v for v in variants):
            refused = "; ".join(f"{u.name}: {u.reason}" for u in importer.notes.unsupported[:5])
            raise source_error(importer.path, f"no prompt could be imported ({refused})")
        return variants

    def bare_path(self, item: str) -> bool:
        """Whether ``item`` is a prompt file named without ``file://`` (promptfoo's older
        form, ``prompts/tutor.txt``): one line, no template, a known suffix, a file there."""
        text = item.strip()
        if "\n" in text or "{{" in text or " " in text:
            return False
        if Path(text).suffix not in (*_TEXT_FILES[:-1], *_CHAT_FILES):
            return False
        return (self.importer.path.parent / text).is_file()

    def add(self, label: str | None, parts: dict[str, Any], where: str) -> None:
        converted = {key: _jinja(v) if isinstance(v, str) else v for key, v in parts.items()}
        if converted != parts:
            texts = [t for t in parts.values() if isinstance(t, str)]
            filters = sorted(set(m[1] for t in texts for m in _FILTER.finditer(t)))
            self.importer.notes.map(
                "nunjucks filter",
                where,
                ", ".join(f"{f} as {NUNJUCKS[f]}" for f in filters),
            )
        self.found.append((label, converted, where))

    def inline(self, text: str, label: str | None, where: str) -> None:
        stripped = text.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            try:
                messages = json.loads(stripped)
            except json.JSONDecodeError:
                messages = None
            if (
                isinstance(messages, list)
                and messages
                and all(isinstance(m, dict) and "role" in m for m in messages)
            ):
                self.chat(messages, label, where)
                return
        self.add(label, {"template": text}, where)

    def file(self, ref: str, label: str | None, where: str) -> None:
        importer = self.importer
        pattern = ref.removeprefix("file://")
        if any(c in pattern for c in "*?["):
            base = importer.path.parent
            matches = globbed(base, ref, where)
            if not matches:
                importer.notes.refuse(f"prompt {pattern}", where, "the glob matches no file")
            for path in matches:
                self.file(f"file://{path.relative_to(base)}", None, where)
            return
        suffix = Path(pattern).suffix
        if suffix in _CHAT_FILES:
            file, text = importer.read(ref, where)
            self.chat_file(file, text, label, where)
            return
        if suffix not in _TEXT_FILES:
            importer.notes.refuse(
                f"prompt {Path(pattern).name}",
                where,
                "a prompt function (.py, .js) runs code; evalnb takes text and chat prompts",
            )
            return
        file, text = importer.read(ref, where)
        listed = _role_lines(text)
        if listed is not None:
            # promptfoo reads a text prompt of YAML "- role:" lines as a chat prompt.
            self.chat(listed, label or file.stem, f"{where} ({file.name})")
            return
        parts = [p.strip("\n") for p in re.split(r"\n-{3,}\n", text) if p.strip()]
        for j, part in enumerate(parts):
            name = label if label and len(parts) == 1 else f"{file.stem}-{j + 1}"
            self.add(name, {"template": part}, f"{where} ({file.name} part {j + 1})")

    def chat_file(self, file: Path, text: str, label: str | None, where: str) -> None:
        lists: list[Any]
        if file.suffix == ".jsonl":
            lists = [
                self.importer.data(file.with_suffix(".json"), line)
                for line in text.splitlines()
                if line.strip()
            ]
        else:
            lists = [_plain_data(self.importer.data(file, text))]
        for j, messages in enumerate(lists):
            name = label if label and len(lists) == 1 else f"{file.stem}-{j + 1}"
            if len(lists) == 1 and not label:
                name = file.stem
            self.chat(messages, name, f"{where} ({file.name})")

    def chat(self, messages: Any, label: str | None, where: str) -> None:
        importer = self.importer
        if not isinstance(messages, list) or not all(
            isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages
        ):
            importer.notes.refuse(
                "chat prompt", where, "expected a list of messages with text 'content'"
            )
            return
        roles = [m.get("role") for m in messages]
        parts: dict[str, Any]
        if roles == ["system", "user"]:
            parts = {"system": messages[0]["content"], "template": messages[1]["content"]}
            how = "system and template of a variant"
        elif roles == ["user"]:
            parts = {"template": messages[0]["content"]}
            how = "template of a variant"
        else:
            parts = {"template": json.dumps(messages, indent=2, ensure_ascii=False), "chat": True}
            shown = ", ".join(map(str, roles))
            how = f"a chat template: its {len(messages)} messages ({shown}) sent as a list"
        importer.notes.map("chat prompt", where, how)
        self.add(label, parts, where)


def _role_lines(text: str) -> list[Any] | None:
    """The messages of a text prompt written as YAML ``- role:`` lines, else None."""
    if not text.lstrip().startswith("- role:"):
        return None
    import yaml  # type: ignore[import-untyped]

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if isinstance(data, list) and all(isinstance(m, dict) and "role" in m for m in data):
        return data
    return None


def _plain_data(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _provider(
    importer: Config, raw: Any, where: str
) -> tuple[str, dict[str, Any], dict[str, Any] | None] | None:
    """``(name, params, target)`` of one provider entry, or None (listed as refused)."""
    if isinstance(raw, dict) and len(raw) == 1 and "id" not in raw:
        ((pid, body),) = raw.items()
        raw = {"id": pid, **(body if isinstance(body, dict) else {})}
    if isinstance(raw, str):
        raw = {"id": raw}
    if not isinstance(raw, dict) or not isinstance(raw.get("id") or raw.get("label"), str):
        importer.notes.refuse(
            "provider", where, f"expected an id or {{id, label, config}}; got {raw!r}"
        )
        return None
    pid = str(raw.get("id") or raw.get("label"))
    if pid.startswith(("file://", "exec:", "python:")):
        importer.notes.refuse(
            f"provider {pid}", where, "a provider that runs code is not a variant"
        )
        return None
    config = raw.get("config") or {}
    if not isinstance(config, dict):
        importer.notes.refuse(
            f"provider {pid}", where, f"'config' must be an object; got {config!r}"
        )
        return None
    params = {PARAMS[k]: _plain_data(v) for k, v in config.items() if k in PARAMS}
    target = _target(pid, config)
    native = {"apiHost", "apiBaseUrl", "region"} if target else set()
    left = sorted(k for k in config if k not in PARAMS and k not in native)
    if left:
        importer.notes.refuse(
            f"provider {pid} config", where, f"{', '.join(left)}: not request parameters"
        )
    if target is not None:
        how = f"the variant's target: {target['type']} {target['model']!r}"
        if target["type"] == "gemini" and pid.startswith("vertex:"):
            how += " through the Gemini API (generativelanguage), not Vertex AI"
        importer.notes.map(f"provider {pid}", where, how)
    else:
        model = pid.split(":")[-1]
        prefix = next((p for p in PROTOCOLS if pid.startswith(p)), None)
        unset = f" ({' or '.join(PROTOCOLS[prefix][1])} not set)" if prefix else ""
        importer.notes.approximate(
            f"provider {pid}",
            where,
            f"a variant with its parameters; the model is the run's (--model), not "
            f"{model!r}{unset}",
        )
    return str(raw.get("label") or pid), params, target


def _target(pid: str, config: dict[str, Any]) -> dict[str, Any] | None:
    """The variant's own target table for provider ``pid``: its protocol, model and key
    variable; None when evalnb speaks no such protocol or the key is not set here."""
    if pid.startswith("openai:") and pid.count(":") == 1:  # promptfoo's short chat form
        pid = "openai:chat:" + pid.removeprefix("openai:")
    prefix = next((p for p in PROTOCOLS if pid.startswith(p)), None)
    if prefix is None or not pid[len(prefix) :]:
        return None
    kind, names = PROTOCOLS[prefix]
    key = next((name for name in names if os.environ.get(name)), None)
    if key is None:
        return None
    model = pid[len(prefix) :].removeprefix("converse:")
    target: dict[str, Any] = {"type": kind, "model": model}
    if kind != "bedrock":
        target["api_key_env"] = key
    host = config.get("apiHost") or config.get("apiBaseUrl")
    if kind == "azure":
        host = host or os.environ.get("AZURE_OPENAI_ENDPOINT") or os.environ.get("AZURE_API_HOST")
        if not isinstance(host, str) or not host:
            return None
        target["base_url"] = host if "://" in host else f"https://{host}"
    elif kind == "openai":
        target["base_url"] = host if isinstance(host, str) and host else "https://api.openai.com/v1"
    elif kind in ("anthropic", "responses") and isinstance(host, str) and host:
        target["base_url"] = host
    if kind == "bedrock" and isinstance(config.get("region"), str):
        target["region"] = config["region"]
    return target


def provider_variants(
    importer: Config, prompts: list[dict[str, Any]], raw: Any
) -> list[dict[str, Any]]:
    """Every provider x prompt as a variant (see the module)."""
    items = raw if isinstance(raw, list) else ([raw] if raw else [])
    providers = []
    for i, item in enumerate(items):
        found = _provider(importer, item, f"{importer.path}: providers[{i}]")
        if found is not None:
            providers.append(found)
    if not providers:
        return prompts
    variants = []
    for name, params, target in providers:
        for prompt in prompts:
            variant = dict(prompt)
            if len(providers) > 1:
                variant["name"] = (
                    _safe_name(name)
                    if len(prompts) == 1
                    else f"{_safe_name(name)}_{prompt['name']}"
                )
            if params:
                variant["params"] = {**prompt.get("params", {}), **params}
            if target is not None:
                variant["target"] = target
            variants.append(variant)
    return variants
