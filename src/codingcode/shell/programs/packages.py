"""Package managers: they run hooks and maintainer scripts (``apt -o
APT::Update::Pre-Invoke::=CMD``, a package's install scripts), and their arguments name
packages, not commands (``apt install sudo`` runs no sudo)."""

from __future__ import annotations

PACKAGE_MANAGERS = frozenset(
    {
        "apt",
        "apt-get",
        "dpkg",
        "rpm",
        "dnf",
        "yum",
        "pacman",
        "zypper",
        "apk",
        "snap",
        "flatpak",
        "nix",
        "nix-env",
        "brew",
        "port",
        "choco",
        "winget",
        "scoop",
        "conda",
        "mamba",
        "go",
        "cargo",
        "gem",
        "pip",
        "pip3",
    }
)
#: The same on both counts (hooks of their own, names as arguments): man (its pager and
#: -H browser), cmake (a CMakeLists.txt runs commands).
NAMES_AND_HOOKS = PACKAGE_MANAGERS | {"man", "cmake"}
