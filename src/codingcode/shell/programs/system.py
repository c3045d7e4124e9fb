"""Programs that raise privileges or stop the machine, and the names they print only.

The preset rules (R2 privilege, R5 shutdown, R6/R7 reading a protected file's content)
are written against these lists; the analysis uses them too (a file written with ``sudo``
in it is one a later program may run)."""

from __future__ import annotations

PRIVILEGE = frozenset({"sudo", "su", "doas", "pkexec", "run0", "sudoedit", "runuser", "calife"})
SHUTDOWN = frozenset({"shutdown", "reboot", "poweroff", "halt"})
SYSTEMCTL_SHUTDOWN = frozenset({"poweroff", "reboot", "halt", "kexec", "soft-reboot"})
SHUTDOWN_TARGETS = frozenset(
    {"poweroff.target", "reboot.target", "halt.target", "kexec.target", "shutdown.target"}
)
#: Programs that only print or inspect their arguments as names, never open them.
NAMES_ONLY = frozenset({"echo", "printf", "basename", "dirname", "test", "[", "true", "false", ":"})
#: ...and for R6/R7 (reading the file's content), those that look at metadata only.
METADATA_ONLY = NAMES_ONLY | {"ls", "stat", "realpath", "readlink", "which", "type", "du"}
