"""One session's masked credentials, read afresh from their sources at the start of each call.

:meth:`CredentialBroker.for_call` reads every credential (a file's text, a variable of the
codingcode process's environment), finds a file's secret values by format, and gives the
call its :class:`CallCredentials`: the placeholders for its environment, the sentinel copies
of its files (bytes, mounted from memory), what is denied, and the secrets the proxy may
inject — the real values held in this object only, in memory, for the call's lifetime.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codingcode.sandbox.credentials.formats import find_secrets
from codingcode.sandbox.credentials.placeholders import MIN_DISTINCT_LENGTH, Placeholders
from codingcode.sandbox.credentials.settings import CredentialSpec
from codingcode.sandbox.network.domains import matches, normalize_host

#: A credential file larger than this is not searched (denied instead).
MAX_FILE_BYTES = 1024 * 1024
SETTING = "sandbox.credentials"


@dataclass(frozen=True, repr=False)
class Secret:
    """One real value and its placeholder (``repr`` never shows the value)."""

    credential: str
    placeholder: str
    real: str
    inject_hosts: tuple[str, ...]

    def injects_to(self, host: str) -> bool:
        name = normalize_host(host) or host
        return any(matches(name, p) for p in self.inject_hosts)

    def __repr__(self) -> str:
        return f"Secret({self.credential!r}, hosts={self.inject_hosts!r})"


@dataclass
class CallCredentials:
    """What one call gets. ``secrets`` hold the real values: never log or record them."""

    #: Variables set to their placeholder.
    env: dict[str, str] = field(default_factory=dict)
    #: Variables removed from the command's environment.
    deny_env: set[str] = field(default_factory=set)
    #: Real path -> the sentinel copy's bytes.
    files: dict[Path, bytes] = field(default_factory=dict)
    #: Files hidden (deny, or no secret found by format).
    deny_files: list[Path] = field(default_factory=list)
    secrets: list[Secret] = field(default_factory=list)
    #: What could not be done, one clear line each (no values).
    notes: list[str] = field(default_factory=list)
    tls_terminate: bool = False

    def intercepts(self, host: str) -> bool:
        """Whether the proxy terminates TLS for ``host`` (a masked credential names it)."""
        return self.tls_terminate and any(s.injects_to(host) for s in self.secrets)

    @property
    def inject_patterns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for s in self.secrets for p in s.inject_hosts))

    def real_values(self) -> list[bytes]:
        return [s.real.encode() for s in self.secrets]


class CredentialBroker:
    """The session's credentials (placeholders stay the same for the whole session)."""

    def __init__(
        self,
        specs: Iterable[CredentialSpec],
        *,
        tls_terminate: bool,
        project: Path | None = None,
    ) -> None:
        self.specs = tuple(specs)
        #: Where a relative credential path is (``.env`` is the project's).
        self.project = project
        self.tls_terminate = tls_terminate
        self.placeholders = Placeholders()

    def __bool__(self) -> bool:
        return bool(self.specs)

    def for_call(self, env: Mapping[str, str] | None = None) -> CallCredentials:
        """Read every credential now (``env``: the environment the command would get, by
        default codingcode's own; its ``HOME`` is where ``~`` is)."""
        source_env = os.environ if env is None else env
        call = CallCredentials(tls_terminate=self.tls_terminate)
        for spec in self.specs:
            if spec.kind == "env":
                self._env(spec, source_env, call)
            else:
                self._file(spec, source_env.get("HOME") or os.environ.get("HOME"), call)
        return call

    def _env(self, spec: CredentialSpec, env: Mapping[str, str], call: CallCredentials) -> None:
        name = spec.source
        if spec.mode == "deny":
            call.deny_env.add(name)
            return
        # The command's environment, else codingcode's own (an MCP server's environment is
        # built from its configuration, without codingcode's variables).
        real = env.get(name) or os.environ.get(name)
        if not real:
            if not spec.origin.startswith("sandbox.credentials.presets"):
                call.notes.append(
                    f"credential {name} ({SETTING}.envVars): the variable is not set in "
                    "codingcode's environment; the command does not get it"
                )
            call.deny_env.add(name)
            return
        placeholder = self._placeholder(real, name, call)
        if placeholder is None:
            call.deny_env.add(name)
            return
        call.env[name] = placeholder
        call.secrets.append(Secret(name, placeholder, real, spec.inject_hosts))

    def _file(self, spec: CredentialSpec, home: str | None, call: CallCredentials) -> None:
        path = _resolve(spec.source, home, self.project)
        label = spec.source
        if spec.mode == "deny":
            call.deny_files.append(path)
            return
        preset = spec.origin.startswith("sandbox.credentials.presets")
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            if not preset:
                call.notes.append(
                    f"credential {label} ({SETTING}.files): the file does not exist; "
                    "nothing is shown or injected for it"
                )
            return
        except OSError as exc:
            call.notes.append(
                f"credential {label} ({SETTING}.files): cannot be read ({exc.strerror}); denied"
            )
            call.deny_files.append(path)
            return
        if len(data) > MAX_FILE_BYTES:
            call.notes.append(
                f"credential {label} ({SETTING}.files): larger than {MAX_FILE_BYTES} bytes, "
                "not searched for secrets; denied"
            )
            call.deny_files.append(path)
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        found = find_secrets(text) if text else []
        if not found:
            call.notes.append(
                f"credential {label} ({SETTING}.files): no secret could be found in it by "
                "format, so it cannot be shown safely; denied"
            )
            call.deny_files.append(path)
            return
        out: list[str] = []
        pos = 0
        for f in found:
            real = text[f.start : f.end]
            placeholder = self._placeholder(real, label, call)
            if placeholder is None:
                call.deny_files.append(path)
                return
            out.append(text[pos : f.start])
            out.append(placeholder)
            pos = f.end
            if all(s.real != real or s.credential != label for s in call.secrets):
                call.secrets.append(Secret(label, placeholder, real, spec.inject_hosts))
        out.append(text[pos:])
        call.files[path] = "".join(out).encode("utf-8")

    def _placeholder(self, real: str, label: str, call: CallCredentials) -> str | None:
        try:
            placeholder = self.placeholders.for_value(real)
        except ValueError:
            call.notes.append(f"credential {label}: a value made only of punctuation; denied")
            return None
        if len(real) < MIN_DISTINCT_LENGTH:
            call.notes.append(
                f"credential {label}: a value shorter than {MIN_DISTINCT_LENGTH} characters; "
                "its placeholder could also occur by chance in a request to its hosts"
            )
        return placeholder


def _resolve(source: str, home: str | None, project: Path | None) -> Path:
    """``~`` is ``home`` (the command's ``$HOME``, codingcode's own unless a tool changed it);
    a relative path is the project's."""
    if home and (source == "~" or source.startswith("~/")):
        path = home + source[1:]
    else:
        path = os.path.expanduser(source)
    if not os.path.isabs(path) and project is not None:
        path = str(project / path)
    return Path(os.path.realpath(path))
