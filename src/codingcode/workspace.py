"""The Workspace: a project as one session sees it, built once by the front end (issue 19).

A front end (``codingcode run``, the interactive app, ``codingcode tool``, the MCP server)
builds one :class:`Workspace` when its session starts and hands it down: to the runner, to
every tool through ``ToolExecCtx.workspace``, to the sandbox, the web tools, checkpoints,
background commands, hooks, MCP and sub-agents. Nothing below the front ends reads the
settings files or the trust records on its own; they read the workspace.

It holds:

- ``root``: the project root (resolved);
- ``trust``: the user's trust records (one store) and the session's trust decision
  (``trust_project_grants=False`` treats every project file as untrusted);
- ``settings``: every settings file, merged on demand, each file marked trusted or not —
  what an untrusted project file *grants* (allow rules, hooks, looser modes, widening
  sandbox entries, servers to start) is left out by every section's reader, what it
  *restricts* still applies;
- ``state_dir`` / ``config_dir``: where codingcode keeps its state and the user's config.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from codingcode.dirs import user_config_dir, user_state_dir

if TYPE_CHECKING:
    from pydantic import BaseModel

    from codingcode.config import Keep, Settings
    from codingcode.trust import TrustStore

    M = TypeVar("M", bound=BaseModel)


@dataclass
class Workspace:
    root: Path
    settings: Settings
    trust: TrustStore
    #: False: every project file counts as untrusted for this session, whatever the records.
    trust_project_grants: bool = True
    state_dir: Path = field(default_factory=user_state_dir)
    config_dir: Path = field(default_factory=user_config_dir)

    def __post_init__(self) -> None:
        # One place says the session distrusts its project: its settings files. Every reader
        # then leaves out what an untrusted file grants, with no flag passed beside them.
        if not self.trust_project_grants:
            self.settings = distrusted(self.settings)

    @classmethod
    def load(cls, project: Path, *, trust_project_grants: bool = True) -> Workspace:
        """Read the settings files and the trust records of ``project``: once per session."""
        from codingcode.config import load_settings
        from codingcode.trust import TrustStore

        root = Path(project).resolve()
        store = TrustStore()
        return cls(root, load_settings(root, trust=store), store, trust_project_grants)

    def is_trusted(self, path: Path, data: bytes | None = None) -> bool:
        """Whether a grant-bearing project file (an agent, a skill, a server) may grant or
        run anything, as it is now (``data``: the exact bytes the caller read)."""
        if not self.trust_project_grants:
            return False
        return self.trust.is_trusted(self.root, path, data)

    def reload(self) -> Workspace:
        """The same session after its own write to a settings file (an always / never
        answer): the files read again, the same trust store and decision."""
        from codingcode.config import load_settings

        return replace(self, settings=load_settings(self.root, trust=self.trust))

    def section(
        self,
        key: str,
        model: type[M],
        *,
        keep: Keep | None = None,
    ) -> M:
        """A settings section as its reader's typed model (see ``Settings.section``): how a
        tool reads its settings, without knowing the files."""
        return self.settings.section(key, model, keep=keep)


def distrusted(settings: Settings) -> Settings:
    """``settings`` with every project and local file marked untrusted (the settings of a
    workspace that does not trust its project's grants)."""
    from codingcode.config import users_own

    files = [f if users_own(f.scope) else replace(f, trusted=False) for f in settings.files]
    return replace(settings, files=files)
