"""Resources served by ``codingcode mcp``: the project's files, and installed plugins' resources.

Project files are ``file://`` URIs. Listing walks the project (``.git``, virtualenvs,
``node_modules`` and caches left out), sorted, in pages of :data:`PAGE_SIZE`, at most
:data:`MAX_LISTED` files. Reading one is a ``read_file`` call as far as approval is
concerned — the same rules, mode, hooks and confirmation decide it, and the audit records
it — then the bytes are read without ever blocking (a FIFO or device is refused) up to
:data:`MAX_READ_BYTES`: UTF-8 text comes back as text, anything else (images…) as a
base64 blob with its MIME type.

Plugins: an installed package's ``codingcode.resources`` entry point names an object with
``resources`` (a list of resources in MCP wire form), optionally ``resource_templates``
(templates in wire form, ``{name}`` placeholders) and ``async read(uri, **template_params)``
returning the contents in wire form (``[{"uri", "mimeType", "text" | "blob"}]``). Installed
packages are the user's own environment, so their resources are served as they are.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote, unquote, urlsplit

from codingcode.errors import InvalidArgumentsError, NotFoundError, ToolFailureError
from codingcode.plugins import PluginSet

RESOURCE_GROUP = "codingcode.resources"
PAGE_SIZE = 500
MAX_LISTED = 20_000
MAX_READ_BYTES = 10 * 1024 * 1024
#: Completion answers at most this many values (the spec's limit is 100).
MAX_COMPLETIONS = 100
SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
     ".pytest_cache", ".ruff_cache", ".tox"}
)  # fmt: skip
FILE_TEMPLATE = "file:///{path}"


def file_uri(path: Path | str) -> str:
    """``file://`` and the path's bytes percent-encoded (a name that is not UTF-8 too)."""
    return "file://" + quote(os.fsencode(path), safe="/")


def shown_name(text: str) -> str:
    """A file name as valid Unicode (undecodable bytes shown as U+FFFD)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def path_of_uri(uri: str) -> Path | None:
    """The absolute path of a ``file://`` URI (local host only), None for other schemes."""
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    if parts.netloc not in ("", "localhost"):
        raise InvalidArgumentsError(f"{uri}: only local file:// URIs are served.")
    text = unquote(parts.path, errors="surrogateescape")
    if "\0" in text or not text.startswith("/"):
        raise InvalidArgumentsError(f"{uri}: not an absolute file path.")
    return Path(text)


def mime_of(path: Path | str) -> str | None:
    """The MIME type a file's name suggests (by its extension; no I/O)."""
    if not mimetypes.inited:
        mimetypes.init()
    ext = os.path.splitext(str(path))[1]
    return mimetypes.types_map.get(ext) or mimetypes.types_map.get(ext.lower())


def walk_files(root: Path) -> Iterator[str]:
    """The project's files (paths relative to ``root``, ``/``-separated), sorted, depth
    first; symlinks are not followed into directories."""
    stack = [""]
    base = str(root)
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(os.path.join(base, folder) if folder else base) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[str] = []
        for entry in entries:
            rel = f"{folder}/{entry.name}" if folder else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRS:
                        subdirs.append(rel)
                elif entry.is_file(follow_symlinks=False):
                    yield rel
            except OSError:
                continue
        stack.extend(reversed(subdirs))


@dataclass
class ProjectListing:
    """The project's files as resources, listed in pages from one walk: the first page
    (no cursor) walks the project once (at most :data:`MAX_LISTED` files) and the next
    pages slice that snapshot, so listing N files costs O(N) in all."""

    root: Path
    #: Files not to list (the sandbox's masks: what read_file may not read), by absolute path.
    hidden: Callable[[str], bool] | None = None
    _snapshot: list[str] = field(default_factory=list)
    _generation: int = 0

    def page(self, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of resources (wire form) and the next cursor (None at the end)."""
        if not cursor:
            self._generation += 1
            self._snapshot = []
            base = str(self.root)
            for rel in walk_files(self.root):
                if len(self._snapshot) == MAX_LISTED:
                    break
                if self.hidden is None or not self.hidden(f"{base}/{rel}"):
                    self._snapshot.append(rel)
            start = 0
        else:
            generation, _, offset = cursor.partition(":")
            if not (generation.isdigit() and offset.isdigit()):
                raise InvalidArgumentsError(f"Invalid cursor {cursor!r}.")
            if int(generation) != self._generation:
                raise InvalidArgumentsError(
                    "The listing changed since that cursor was given; list again from the start."
                )
            start = int(offset)
        chunk = self._snapshot[start : start + PAGE_SIZE]
        end = start + len(chunk)
        next_cursor = f"{self._generation}:{end}" if end < len(self._snapshot) else None
        return [self._item(p) for p in chunk], next_cursor

    def _item(self, rel: str) -> dict[str, Any]:
        item: dict[str, Any] = {
            "uri": file_uri(f"{self.root}/{rel}"),
            "name": shown_name(rel),
            "description": "a file of the project",
        }
        mime = mime_of(rel)
        if mime:
            item["mimeType"] = mime
        return item


def read_contents(path: Path, uri: str) -> dict[str, Any]:
    """The contents of a regular file, text or base64 blob; never blocks on a FIFO."""
    from codingcode.tools.builtin.file_access import open_for_reading

    shown = str(path)
    try:
        with open_for_reading(path, shown) as f:
            data = f.read(MAX_READ_BYTES + 1)
    except FileNotFoundError:
        raise NotFoundError(f"No such file: {shown}.") from None
    except IsADirectoryError:
        raise InvalidArgumentsError(f"{shown} is a directory, not a file.") from None
    except PermissionError:
        raise ToolFailureError(f"Permission denied reading {shown}.") from None
    except OSError as exc:
        raise ToolFailureError(f"Could not read {shown}: {exc.strerror or exc}.") from None
    if len(data) > MAX_READ_BYTES:
        raise ToolFailureError(
            f"{shown} is larger than {MAX_READ_BYTES // (1024 * 1024)} MiB; read it in parts "
            "with the read_file tool (offset/limit)."
        )
    mime = mime_of(path)
    content: dict[str, Any] = {"uri": uri}
    textual = mime is None or mime.startswith("text/") or mime.endswith(("json", "xml"))
    if textual:
        try:
            content["text"] = data.decode("utf-8")
            content["mimeType"] = mime or "text/plain"
            return content
        except UnicodeDecodeError:
            pass
    content["blob"] = base64.b64encode(data).decode("ascii")
    content["mimeType"] = mime or "application/octet-stream"
    return content


def complete_path(root: Path, value: str, hidden: Callable[[str], bool] | None = None) -> list[str]:
    """Project paths (relative, ``/``-separated) starting with ``value``, at most 100;
    not the ``hidden`` ones (masked) nor names that are not UTF-8."""
    head, _, prefix = value.rpartition("/")
    folder = (root / head).resolve() if head else root
    try:
        folder.relative_to(root)
    except ValueError:
        return []
    try:
        names = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    out: list[str] = []
    for entry in names:
        if not entry.name.startswith(prefix) or entry.name in SKIPPED_DIRS:
            continue
        if shown_name(entry.name) != entry.name or (hidden and hidden(entry.path)):
            continue
        suffix = "/" if entry.is_dir(follow_symlinks=False) else ""
        out.append(f"{head}/{entry.name}{suffix}" if head else entry.name + suffix)
        if len(out) == MAX_COMPLETIONS:
            break
    return out


# -- plugins -------------------------------------------------------------------------------
def template_regex(template: str) -> re.Pattern[str]:
    """A regex for a level-1 URI template: each ``{name}`` matches one path segment."""
    pattern = ""
    for literal, name in re.findall(r"([^{]*)(?:\{([A-Za-z0-9_]+)\})?", template):
        pattern += re.escape(literal)
        if name:
            pattern += f"(?P<{name}>[^/?#]+)"
    return re.compile(pattern + r"\Z")


@dataclass
class PluginResources(PluginSet):
    """The ``codingcode.resources`` providers of installed packages."""

    providers: list[Any] = field(default_factory=list)
    #: (provider, template wire form, its regex), in the order found.
    templates: list[tuple[Any, dict[str, Any], re.Pattern[str]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    group: ClassVar[str] = RESOURCE_GROUP
    kind: ClassVar[str] = "resource"

    def add(self, provider: Any) -> None:
        resources = list(getattr(provider, "resources", []) or [])
        templates = list(getattr(provider, "resource_templates", []) or [])
        if not callable(getattr(provider, "read", None)):
            raise TypeError("it has no read(uri, **template_params)")
        for item in resources + templates:
            if not isinstance(item, dict):
                raise TypeError(f"{item!r} is not a resource in wire form (a dict)")
        self.providers.append(provider)
        for t in templates:
            self.templates.append((provider, t, template_regex(str(t.get("uriTemplate", "")))))

    def resources(self) -> list[dict[str, Any]]:
        return [r for p in self.providers for r in getattr(p, "resources", []) or []]

    def resource_templates(self) -> list[dict[str, Any]]:
        return [t for _, t, _ in self.templates]

    def owner(self, uri: str) -> tuple[Any, dict[str, str]] | None:
        for provider in self.providers:
            if any(r.get("uri") == uri for r in getattr(provider, "resources", []) or []):
                return provider, {}
        for provider, _, regex in self.templates:
            match = regex.match(uri)
            if match:
                return provider, {k: unquote(v) for k, v in match.groupdict().items()}
        return None

    async def read(self, uri: str) -> list[dict[str, Any]] | None:
        found = self.owner(uri)
        if found is None:
            return None
        provider, params = found
        try:
            contents = await provider.read(uri, **params)
        except Exception as exc:
            raise ToolFailureError(f"Reading {uri} failed: {type(exc).__name__}: {exc}") from None
        if isinstance(contents, dict):
            contents = [contents]
        if not isinstance(contents, list):
            raise ToolFailureError(f"Reading {uri} gave {type(contents).__name__}, not contents.")
        return contents

    async def complete(self, template: str, argument: str, value: str) -> list[str] | None:
        for provider, t, _ in self.templates:
            complete = getattr(provider, "complete", None)
            if t.get("uriTemplate") == template and callable(complete):
                values = await complete(argument, value)
                return [str(v) for v in values][:MAX_COMPLETIONS]
        return None
