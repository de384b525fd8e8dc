"""Host-path injections for the ledger: the spellings an agent (or an attacker steering
one) can give a host path, and every field of every input that can carry one.

A *shape* is a host path naming a user (``/home/<user>/…``, ``C:\\Users\\<user>\\…``,
``~<user>/…``, a path climbing out of the project …). A *form* dresses a shape the way
it reaches a field: quoted, after ``see:`` or ``--input=``, glued to a short option or
to CJK text, behind ``$IFS``, with escaped, percent-encoded or look-alike slashes, as
``user@host:``, inside a heredoc or a pasted diff. A *field* puts the dressed value
into one event of one input (app-server, ``codex exec --json``, rollout, attachments).

The user name is the marker: a leak is the marker in the written bytes (turn file or
``agent.db``), in any spelling a reader could undo (JSON escapes, percent-encoding,
HTML entities, Unicode compatibility forms, look-alike slashes).
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agc.ledger import TurnOutcome
from tests.ledger.helpers import completed, mcp, record_turn

Event = dict[str, Any]

# -- shapes: (name, build(user, project_root) -> host path) ------------------------------

SHAPES: dict[str, Callable[[str, str], str]] = {
    "posix-home": lambda u, _r: f"/home/{u}/docs/gdd.md",
    "mac-users": lambda u, _r: f"/Users/{u}/Desktop/gdd.md",
    "posix-srv": lambda u, _r: f"/srv/{u}/data/gdd.md",
    "posix-tmp": lambda u, _r: f"/tmp/{u}/gdd.md",
    "windows": lambda u, _r: f"C:\\Users\\{u}\\gdd.md",
    "windows-slashes": lambda u, _r: f"c:/Users/{u}/gdd.md",
    "unc": lambda u, _r: f"\\\\{u}-pc\\share\\gdd.md",
    "tilde-user": lambda u, _r: f"~{u}/gdd.md",
    "tilde-home": lambda u, _r: f"~/{u}/gdd.md",
    "env-home": lambda u, _r: f"$HOME/{u}/gdd.md",
    "climb-from-root": lambda u, r: f"{r}/../../{u}/gdd.md",
    "climb-relative": lambda u, _r: f"../../{u}/gdd.md",
}


def _slashes(value: str, slash: str, backslash: str | None = None) -> str:
    out = value.replace("/", slash)
    return out if backslash is None else out.replace("\\", backslash)


# -- forms: (name, dress(path, user) -> text) --------------------------------------------

FORMS: dict[str, Callable[[str, str], str]] = {
    "plain": lambda p, _u: p,
    "single-quoted": lambda p, _u: f"'{p}'",
    "double-quoted": lambda p, _u: f'"{p}"',
    "backticks": lambda p, _u: f"`{p}`",
    "curly-quotes": lambda p, _u: f"\u201c{p}\u201d",
    "corner-brackets": lambda p, _u: f"\u300c{p}\u300d",
    "guillemets": lambda p, _u: f"\u00ab{p}\u00bb",
    "see-colon": lambda p, _u: f"see:{p}",
    "see-fullwidth-colon": lambda p, _u: f"see\uff1a{p}",
    "hash-glued": lambda p, _u: f"#{p}",
    "long-option-equals": lambda p, _u: f"--input={p}",
    "long-option-space": lambda p, _u: f"--input {p}",
    "short-option-glued": lambda p, _u: f"-C{p}",
    "cjk-glued": lambda p, _u: f"\u89c1{p}\u7684\u8bbe\u8ba1",
    "cjk-reference": lambda p, _u: f"\u53c2\u8003{p}",
    "ifs-braces": lambda p, _u: f"cat${{IFS}}{p}",
    "ifs-bare": lambda p, _u: f"cat$IFS{p}",
    "ifs-trimmed": lambda p, _u: f"cat${{IFS%?}}{p}",
    "ifs-positional": lambda p, _u: f"cat$IFS$9{p}",
    "escaped-slashes": lambda p, _u: p.replace("/", "\\/"),
    "json-escaped-backslashes": lambda p, _u: p.replace("\\", "\\\\"),
    "percent-slashes": lambda p, _u: p.replace("/", "%2F").replace("\\", "%5C"),
    "percent-all": lambda p, _u: urllib.parse.quote(p, safe=""),
    "percent-double": lambda p, _u: p.replace("/", "%252F").replace("\\", "%255C"),
    "unicode-escapes": lambda p, _u: p.replace("/", "\\u002f").replace("\\", "\\u005c"),
    "octal-escapes": lambda p, _u: p.replace("/", "\\057"),
    "html-entities": lambda p, _u: p.replace("/", "&#47;").replace("\\", "&#x5C;"),
    "division-slash": lambda p, _u: _slashes(p, "\u2215", "\u2216"),
    "fullwidth-slash": lambda p, _u: _slashes(p, "\uff0f", "\uff3c"),
    "fraction-slash": lambda p, _u: _slashes(p, "\u2044"),
    "big-solidus": lambda p, _u: _slashes(p, "\u29f8", "\u29f9"),
    "yen-backslash": lambda p, _u: p.replace("\\", "\u00a5"),
    "fullwidth-letters": lambda p, _u: "".join(
        chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and c not in "/\\" else c for c in p
    ),
    "user-at-host": lambda p, u: f"{u}@build-host:{p}",
    "user-at-host-relative": lambda _p, u: f"{u}@build-host:src/gdd.md",
    "file-url": lambda p, _u: "file://" + p.replace("\\", "/"),
    "editor-url": lambda p, _u: "vscode://file" + ("" if p.startswith("/") else "/") + p,
    "heredoc": lambda p, _u: f"cat <<EOF > notes.md\n{p}\nEOF",
    "heredoc-quoted": lambda p, _u: f"cat <<'EOF' > notes.md\nsee {p} now\nEOF",
    "diff-headers": lambda p, _u: (
        f"diff --git a{_lead(p)} b{_lead(p)}\n--- a{_lead(p)}\n+++ b{_lead(p)}\n@@ -1 +1 @@\n-x\n+y"
    ),
    "diff-absolute": lambda p, _u: f"--- {p}\t2024-01-01 00:00:00\n+++ {p}\t2024-01-02",
    "newline-separated": lambda p, _u: f"notes\n{p}\nend",
}


def _lead(path: str) -> str:
    """A path as git prints it after ``a``/``b`` (``a/home/u/x`` for ``/home/u/x``)."""
    return path if path.startswith("/") else "/" + path


# -- fields: (name, source, build(value) -> events, attachments) -------------------------


@dataclass(frozen=True)
class Field:
    name: str
    events: Callable[[str], list[Event]]
    attachment: Callable[[str], dict[str, Any]] | None = None


def _app_command(actions: Callable[[str], list[dict[str, Any]]]) -> Callable[[str], list[Event]]:
    return lambda v: [
        completed(
            {
                "type": "commandExecution",
                "id": "c1",
                "command": "ls",
                "status": "completed",
                "commandActions": actions(v),
            }
        )
    ]


def _exec(item: dict[str, Any]) -> Event:
    return {"type": "item.completed", "item": item}


def _rollout_call(name: str, arguments: Any, *, custom: bool = False) -> list[Event]:
    payload: dict[str, Any] = {
        "type": "custom_tool_call" if custom else "function_call",
        "name": name,
        "call_id": "call_1",
    }
    if custom:
        payload["input"] = arguments
    else:
        payload["arguments"] = json.dumps(arguments)
    output_type = "custom_tool_call_output" if custom else "function_call_output"
    return [
        {"timestamp": "t", "type": "response_item", "payload": payload},
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {"type": output_type, "call_id": "call_1", "output": "OUT"},
        },
    ]


def _change(path: str, move: str | None = None) -> dict[str, Any]:
    kind: dict[str, Any] = (
        {"type": "update"} if move is None else {"type": "update", "movePath": move}
    )
    return {"path": path, "kind": kind}


FIELDS: tuple[Field, ...] = (
    Field("app.read.path", _app_command(lambda v: [{"type": "read", "path": v}])),
    Field("app.listFiles.path", _app_command(lambda v: [{"type": "listFiles", "path": v}])),
    Field("app.search.path", _app_command(lambda v: [{"type": "search", "query": "x", "path": v}])),
    Field("app.search.query", _app_command(lambda v: [{"type": "search", "query": v}])),
    Field(
        "app.command",
        lambda v: [completed({"type": "commandExecution", "id": "c1", "command": v})],
    ),
    Field(
        "app.fileChange.path",
        lambda v: [completed({"type": "fileChange", "id": "f1", "changes": [_change(v)]})],
    ),
    Field(
        "app.fileChange.movePath",
        lambda v: [completed({"type": "fileChange", "id": "f1", "changes": [_change("a.md", v)]})],
    ),
    Field(
        "app.imageView.path", lambda v: [completed({"type": "imageView", "id": "i1", "path": v})]
    ),
    Field(
        "app.webSearch.query", lambda v: [completed({"type": "webSearch", "id": "w1", "query": v})]
    ),
    Field("app.mcp.write.path", lambda v: [mcp("m1", "agc_write_file", {"path": v, "content": v})]),
    Field("app.mcp.list.path", lambda v: [mcp("m1", "agc_list_project_files", {"path": v})]),
    Field("app.mcp.list.query", lambda v: [mcp("m1", "agc_list_project_files", {"query": v})]),
    Field("app.mcp.outputPath", lambda v: [mcp("m1", "agc_generate_image", {"outputPath": v})]),
    Field("app.mcp.prompt", lambda v: [mcp("m1", "agc_generate_image", {"prompt": v})]),
    Field(
        "app.mcp.localPaths",
        lambda v: [mcp("m1", "agc_import_account_assets", {"localPaths": ["a.png", v]})],
    ),
    Field("app.mcp.brief", lambda v: [mcp("m1", "taonier_prepare_game_art", {"brief": v})]),
    Field(
        "app.mcp.json-string-arguments",
        lambda v: [mcp("m1", "agc_write_file", json.dumps({"path": v, "content": "x"}))],
    ),
    Field(
        "app.mcp.tool-name",
        lambda v: [mcp(v, v, {"path": "a.md"}, server=v)],
    ),
    Field(
        "exec.command",
        lambda v: [
            _exec({"id": "item_1", "type": "command_execution", "command": v, "exit_code": 0})
        ],
    ),
    Field(
        "exec.started-only.command",
        lambda v: [
            {
                "type": "item.started",
                "item": {"id": "item_1", "type": "command_execution", "command": v},
            }
        ],
    ),
    Field(
        "exec.fileChange.path",
        lambda v: [
            _exec({"id": "item_1", "type": "file_change", "changes": [{"path": v, "kind": "add"}]})
        ],
    ),
    Field(
        "exec.mcp.arguments",
        lambda v: [
            _exec(
                {
                    "id": "item_1",
                    "type": "mcp_tool_call",
                    "server": "agc_tools",
                    "tool": "agc_write_file",
                    "arguments": {"path": v},
                }
            )
        ],
    ),
    Field("rollout.exec_command.cmd", lambda v: _rollout_call("exec_command", {"cmd": v})),
    Field(
        "rollout.shell.command",
        lambda v: _rollout_call("shell", {"command": ["bash", "-lc", v]}),
    ),
    Field(
        "rollout.apply_patch.add",
        lambda v: _rollout_call(
            "apply_patch", f"*** Begin Patch\n*** Add File: {v}\n+x\n*** End Patch", custom=True
        ),
    ),
    Field(
        "rollout.apply_patch.move",
        lambda v: _rollout_call(
            "apply_patch",
            f"*** Begin Patch\n*** Update File: a.md\n*** Move to: {v}\n*** End Patch",
            custom=True,
        ),
    ),
    Field("rollout.view_image.path", lambda v: _rollout_call("view_image", {"path": v})),
    Field(
        "rollout.mcp.path",
        lambda v: _rollout_call("mcp__agc_tools__agc_write_file", {"path": v}),
    ),
    Field(
        "rollout.mcp.brief",
        lambda v: _rollout_call("mcp__agc_tools__taonier_prepare_game_art", {"brief": v}),
    ),
    Field(
        "rollout.web_search.query",
        lambda v: [
            {
                "timestamp": "t",
                "type": "response_item",
                "payload": {
                    "type": "web_search_call",
                    "id": "ws_1",
                    "status": "completed",
                    "action": {"type": "search", "query": v},
                },
            }
        ],
    ),
    Field("attachment.localPath", lambda _v: [], lambda v: {"name": "a.md", "localPath": v}),
    Field("attachment.name", lambda _v: [], lambda v: {"name": v, "localPath": "a.md"}),
)


# -- reading what was written back, in every spelling -------------------------------------

_SLASH_LIKE = str.maketrans(
    {
        "\u2215": "/",
        "\u2044": "/",
        "\uff0f": "/",
        "\u29f8": "/",
        "\u2216": "\\",
        "\uff3c": "\\",
        "\u29f9": "\\",
        "\u00a5": "\\",
    }
)


def readable_forms(text: str) -> Iterator[str]:
    """``text`` and what a reader could decode it into."""
    yield text
    decoded = text
    for _ in range(3):
        decoded = urllib.parse.unquote(decoded)
    yield decoded
    yield html.unescape(text)
    yield unicodedata.normalize("NFKC", text).translate(_SLASH_LIKE)
    yield re.sub(
        r"\\u([0-9a-fA-F]{4})|\\([0-7]{3})|\\(.)",
        lambda m: chr(int(m[1], 16)) if m[1] else chr(int(m[2], 8)) if m[2] else m[3],
        text,
    )


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield str(key)
            yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)
    elif isinstance(value, str):
        yield value


def written_strings(outcome: TurnOutcome) -> list[str]:
    """Every string value and key in the turn file and the project's ``agent.db``."""
    found: list[str] = []
    for line in outcome.turn_file.read_bytes().splitlines():
        found.extend(_strings(json.loads(line)))
    db = outcome.turn_file.parents[3] / "agent.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        for (body,) in conn.execute("SELECT body FROM agent_records"):
            found.extend(_strings(json.loads(body)))
    # the raw bytes too (a reader need not parse JSON)
    found.append(outcome.turn_file.read_bytes().decode("utf-8", "replace"))
    found.append(db.read_bytes().decode("utf-8", "replace"))
    return found


def leaks(outcome: TurnOutcome, secrets: tuple[str, ...]) -> list[str]:
    """The ``secrets`` (user marker, host root) readable in what was written."""
    folded = [(s, s.casefold()) for s in secrets]
    hits: set[str] = set()
    for text in dict.fromkeys(written_strings(outcome)):  # each distinct string once
        for form in readable_forms(text):
            lowered = form.casefold()
            hits.update(s for s, s_folded in folded if s_folded in lowered)
    return sorted(hits)


@dataclass(frozen=True)
class Injection:
    shape: str
    form: str
    field: str


def inject(
    project: Path, turn_id: str, user: str, shape: str, form: str, field: Field
) -> TurnOutcome:
    """Record one turn whose ``field`` holds ``shape`` dressed as ``form``."""
    value = FORMS[form](SHAPES[shape](user, str(project)), user)
    attachments = [field.attachment(value)] if field.attachment else []
    return record_turn(
        project, field.events(value), prompt=value, attachments=attachments, turn_id=turn_id
    )


@dataclass(frozen=True)
class MatrixResult:
    """``injections``: values injected; ``leaked``: the injections whose user marker
    (or the project root) is readable in the written bytes."""

    injections: int
    leaked: tuple[Injection, ...]


def run_matrix(
    folder: Path,
    *,
    shapes: tuple[str, ...] = tuple(SHAPES),
    forms: tuple[str, ...] = tuple(FORMS),
    fields: tuple[Field, ...] = FIELDS,
) -> MatrixResult:
    """Inject every shape in every form into every field: one turn per (shape, form),
    holding all fields, each with its own user marker (so a leak names its field)."""
    count = 0
    leaked: list[Injection] = []
    for number, (shape, form) in enumerate((s, f) for s in shapes for f in forms):
        project = folder / f"p{number}"
        project.mkdir()
        events: list[Event] = []
        attachments: list[dict[str, Any]] = []
        markers: dict[str, Field] = {}
        for index, field in enumerate(fields):
            user = f"zq{number:04d}x{index:02d}u"
            markers[user] = field
            value = FORMS[form](SHAPES[shape](user, str(project)), user)
            events.extend(field.events(value))
            if field.attachment is not None:
                attachments.append(field.attachment(value))
            count += 1
        outcome = record_turn(
            project,
            events,
            prompt="p",
            attachments=attachments,
            turn_id=f"matrix-{number}",
        )
        found = leaks(outcome, (*markers, str(project)))
        if str(project) in found:
            leaked.extend(Injection(shape, form, f.name) for f in fields)
            continue
        leaked.extend(Injection(shape, form, markers[user].name) for user in found)
    return MatrixResult(count, tuple(leaked))


if __name__ == "__main__":
    # python -m tests.ledger.injections: the figures (injections, leaks by form/field)
    import collections
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        result = run_matrix(Path(folder))
    print(
        f"{result.injections} injections ({len(SHAPES)} shapes x {len(FORMS)} forms x "
        f"{len(FIELDS)} fields), {len(result.leaked)} leaks"
    )
    for key in ("form", "field", "shape"):
        counts = collections.Counter(getattr(leak, key) for leak in result.leaked)
        if counts:
            print(f"  by {key}: {dict(counts.most_common())}")
