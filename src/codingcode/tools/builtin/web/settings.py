"""The ``web`` section of the settings: fetch_url's limits and private-host grants, and the
web_search provider. Both grants are ignored from a project file the user has not trusted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from pathlib import Path

    from codingcode.workspace import Workspace


class _Strict(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")


class FetchSettings(_Strict):
    allow_private_hosts: list[str] = Field(
        default_factory=list,
        description="Host names, IP addresses or CIDR ranges fetch_url may reach although "
        "they are not public (e.g. 127.0.0.1, localhost, 10.0.0.0/8).",
    )
    timeout_s: float = Field(default=30.0, gt=0, le=300)
    max_redirects: int = Field(default=5, ge=0, le=20)


class SearchSettings(_Strict):
    provider: Literal["searxng", "brave", "tavily"] | None = None
    #: SearXNG: the instance's base URL (required). Brave/Tavily: an API base override.
    url: str | None = None
    #: The environment variable holding the key (Brave/Tavily).
    api_key_env: str | None = None
    timeout_s: float = Field(default=20.0, gt=0, le=120)


class WebSettings(_Strict):
    fetch: FetchSettings = Field(default_factory=FetchSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)


@dataclass
class LoadedWebSettings:
    """The merged ``web`` section, with the scope each private-host grant came from.

    Allowing a private host is a grant, and so is a search provider (it receives every query):
    from a project file the user has not trusted (workspace trust), both are ignored, and
    ``ignored`` says what was, so a refusal can tell the user how to enable it.
    """

    settings: WebSettings
    #: host → the scope (user, project, local) of the file that allowed it
    private_host_scopes: dict[str, str] = field(default_factory=dict)
    search_scope: str | None = None
    ignored: list[str] = field(default_factory=list)

    def ignored_note(self) -> str:
        if not self.ignored:
            return ""
        return (
            f" (Ignored from untrusted project settings: {'; '.join(self.ignored)}. Review "
            "them, then run `codingcode trust` to apply them.)"
        )


def load_web_settings(workspace: Workspace) -> LoadedWebSettings:
    """The ``web`` section of the session's settings (untrusted project grants left out)."""
    loaded = LoadedWebSettings(WebSettings())

    def keep(path: Path, scope: str, value: dict[str, Any], applies: bool) -> dict[str, Any]:
        part = WebSettings.model_validate(value)
        if not applies:
            if part.fetch.allow_private_hosts:
                loaded.ignored.append(
                    f"web.fetch.allow_private_hosts {part.fetch.allow_private_hosts} in {path}"
                )
                value["fetch"] = {
                    k: v for k, v in value.get("fetch", {}).items() if k != "allow_private_hosts"
                }
            if "search" in value:
                loaded.ignored.append(f"web.search in {path}")
                value.pop("search")
        for host in part.fetch.allow_private_hosts if applies else []:
            loaded.private_host_scopes.setdefault(host, str(scope))
        if "search" in value:
            loaded.search_scope = str(scope)
        return value

    loaded.settings = workspace.section("web", WebSettings, keep=keep)
    return loaded
