"""The OS-level sandbox: every command a tool starts runs contained (DESIGN: contract).

:class:`SandboxService` turns the ``sandbox`` settings into a launcher for
:func:`codingcode.process.run_command`. Backends: bubblewrap (namespaces and mounts, plus a
seccomp filter), Landlock + seccomp through raw syscalls in a re-exec'd helper, or none
(only when the user asks, and every command says so).

This package is imported by the re-exec'd helper too, so it imports nothing heavy itself.
"""
