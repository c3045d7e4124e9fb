"""``sandbox.credentials``: the settings (Claude Code's names) and the ready-made entries.

::

    "sandbox": {
      "credentials": {
        "files":   [{"path": "~/.git-credentials", "mode": "mask",
                     "injectHosts": ["github.com", "*.githubusercontent.com"]}],
        "envVars": [{"name": "GITHUB_TOKEN", "mode": "mask", "injectHosts": ["api.github.com"]}],
        "presets": ["git", "gh"]
      },
      "network": {"mode": "limited", "tlsTerminate": true, "allowedDomains": ["github.com"]}
    }

``deny`` hides the credential; ``mask`` shows a placeholder that the proxy replaces with the
real value on requests to ``injectHosts`` only. ``presets`` (our addition) switches on
ready-made entries (:data:`PRESETS`), none of which is on by default. Claude Code's other
keys (``allowPlaintextInject``, ``awsPairs``, ``sigv4``) are accepted and ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codingcode.sandbox.network.domains import pattern_problem

Mode = Literal["deny", "mask"]


class CredentialFileSetting(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    path: str
    mode: Mode
    injectHosts: list[str] = Field(default_factory=list)


class CredentialEnvSetting(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    name: str
    mode: Mode
    injectHosts: list[str] = Field(default_factory=list)


class CredentialsSettings(BaseModel):
    """One file's ``sandbox.credentials`` object, as written."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    files: list[CredentialFileSetting] = Field(default_factory=list)
    envVars: list[CredentialEnvSetting] = Field(default_factory=list)
    presets: list[str] = Field(default_factory=list)
    # Claude Code's keys with no meaning here (accepted so its settings can be copied).
    allowPlaintextInject: Any = None
    awsPairs: Any = None
    sigv4: Any = None


@dataclass(frozen=True)
class CredentialSpec:
    """One credential: a file (``path`` as written, ``~`` allowed) or an environment variable."""

    kind: Literal["file", "env"]
    source: str
    mode: Mode
    inject_hosts: tuple[str, ...] = ()
    origin: str = ""

    @property
    def label(self) -> str:
        """How messages name it: the variable's name, or the file's path as written."""
        return self.source


@dataclass(frozen=True)
class Preset:
    name: str
    what: str
    entries: tuple[CredentialSpec, ...]
    #: A limit the user should know before switching it on ("" when none).
    limit: str = ""


def _file(path: str, *hosts: str) -> CredentialSpec:
    return CredentialSpec("file", path, "mask", hosts, "")


def _env(name: str, *hosts: str) -> CredentialSpec:
    return CredentialSpec("env", name, "mask", hosts, "")


_GITHUB = ("github.com", "api.github.com", "uploads.github.com", "*.githubusercontent.com")
#: The ready-made entries, off until ``sandbox.credentials.presets`` names them.
PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "git",
            "git's stored HTTPS credentials (~/.git-credentials) for GitHub, GitLab and Bitbucket",
            (_file("~/.git-credentials", *_GITHUB, "gitlab.com", "bitbucket.org"),),
        ),
        Preset(
            "gh",
            "the GitHub CLI's token (~/.config/gh/hosts.yml, GH_TOKEN, GITHUB_TOKEN)",
            (
                _file("~/.config/gh/hosts.yml", *_GITHUB),
                _env("GH_TOKEN", *_GITHUB),
                _env("GITHUB_TOKEN", *_GITHUB),
            ),
        ),
        Preset(
            "npm",
            "npm registry tokens (~/.npmrc, NPM_TOKEN, NODE_AUTH_TOKEN)",
            (
                _file("~/.npmrc", "registry.npmjs.org"),
                _env("NPM_TOKEN", "registry.npmjs.org"),
                _env("NODE_AUTH_TOKEN", "registry.npmjs.org"),
            ),
        ),
        Preset(
            "pypi",
            "PyPI upload tokens (~/.pypirc, TWINE_PASSWORD, UV_PUBLISH_TOKEN)",
            (
                _file("~/.pypirc", "upload.pypi.org", "test.pypi.org"),
                _env("TWINE_PASSWORD", "upload.pypi.org", "test.pypi.org"),
                _env("UV_PUBLISH_TOKEN", "upload.pypi.org", "test.pypi.org"),
            ),
        ),
        Preset(
            "docker",
            "Docker registry logins (~/.docker/config.json) for Docker Hub and ghcr.io",
            (
                _file(
                    "~/.docker/config.json",
                    "registry-1.docker.io",
                    "auth.docker.io",
                    "index.docker.io",
                    "ghcr.io",
                ),
            ),
            limit="a credential helper (credsStore) keeps its secrets outside the file",
        ),
        Preset(
            "aws",
            "AWS keys (~/.aws/credentials, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
            "AWS_SESSION_TOKEN)",
            (
                _file("~/.aws/credentials", "*.amazonaws.com"),
                _env("AWS_ACCESS_KEY_ID", "*.amazonaws.com"),
                _env("AWS_SECRET_ACCESS_KEY", "*.amazonaws.com"),
                _env("AWS_SESSION_TOKEN", "*.amazonaws.com"),
            ),
            limit=(
                "AWS signs requests with the secret key (SigV4); a signature made with the "
                "placeholder is refused by AWS, so tools see the placeholders but cannot call AWS"
            ),
        ),
    )
}


class CredentialSettingsError(ValueError):
    """One clear line naming the entry that is wrong."""


def parse_credentials(raw: Any) -> tuple[list[CredentialSpec], list[str]]:
    """One file's ``sandbox.credentials``: its entries, and the ready-made entries (presets)
    it switches on, by name."""
    if not isinstance(raw, dict):
        raise CredentialSettingsError(
            "sandbox.credentials must be an object such as "
            '{"files": [{"path": "~/.git-credentials", "mode": "mask", "injectHosts": '
            f'["github.com"]}}]}}, not {type(raw).__name__}'
        )
    try:
        parsed = CredentialsSettings.model_validate(raw)
    except ValidationError as exc:
        raise CredentialSettingsError("; ".join(_describe(e) for e in exc.errors())) from None
    specs: list[CredentialSpec] = []
    for i, f in enumerate(parsed.files):
        where = f"sandbox.credentials.files[{i}]"
        if not f.path.strip() or "\0" in f.path:
            raise CredentialSettingsError(f"{where}.path must be a path, got {f.path!r}")
        hosts = _hosts(where, f.injectHosts, f.mode)
        specs.append(CredentialSpec("file", f.path.strip(), f.mode, hosts))
    for i, e in enumerate(parsed.envVars):
        where = f"sandbox.credentials.envVars[{i}]"
        if not e.name or not e.name.replace("_", "a").isalnum() or e.name[0].isdigit():
            raise CredentialSettingsError(
                f"{where}.name must be an environment variable's name, got {e.name!r}"
            )
        hosts = _hosts(where, e.injectHosts, e.mode)
        specs.append(CredentialSpec("env", e.name, e.mode, hosts))
    for name in parsed.presets:
        if name not in PRESETS:
            raise CredentialSettingsError(
                f"sandbox.credentials.presets names {name!r}, which is not a ready-made entry "
                f"(known: {', '.join(PRESETS)})"
            )
    return specs, parsed.presets


def _hosts(where: str, hosts: list[str], mode: str) -> tuple[str, ...]:
    for host in hosts:
        problem = pattern_problem(host)
        if problem is not None:
            raise CredentialSettingsError(
                f"{where}.injectHosts holds {host!r}, which is not a host pattern: {problem}"
            )
    if hosts and mode == "deny":
        raise CredentialSettingsError(
            f"{where} has injectHosts but mode 'deny' (a denied credential is never sent; "
            "use mode 'mask')"
        )
    return tuple(dict.fromkeys(h.strip().lower() for h in hosts))


def _describe(error: Any) -> str:
    where = "sandbox.credentials." + ".".join(str(p) for p in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"unknown key {where}"
    if error["type"] == "literal_error":
        return f"{where} must be 'deny' or 'mask', got {error.get('input')!r}"
    return f"{where}: {error['msg']}"


def expand(specs: list[CredentialSpec], presets: list[str]) -> tuple[CredentialSpec, ...]:
    """The credentials in effect: the presets' entries first, then the settings' entries; a
    later entry for the same source replaces an earlier one (a settings entry overrides a
    preset's)."""
    by_source: dict[tuple[str, str], CredentialSpec] = {}
    for name in dict.fromkeys(presets):
        for spec in PRESETS[name].entries:
            origin = f"sandbox.credentials.presets {name!r}"
            by_source[(spec.kind, spec.source)] = CredentialSpec(
                spec.kind, spec.source, spec.mode, spec.inject_hosts, origin
            )
    for spec in specs:
        by_source.pop((spec.kind, spec.source), None)
        by_source[(spec.kind, spec.source)] = spec
    return tuple(by_source.values())
