"""Runs inside the sandbox, before the command: makes the proxy's listening socket in the
command's own network namespace, hands it to codingcode over the inherited unix socket,
and then becomes the command (``exec``): nothing of it stays running.

The socket lives in the namespace it was made in, so codingcode (outside) accepts the
command's connections on it directly and no byte is copied inside the sandbox. Started as
``python -I -S`` (only the standard library and this file). If anything fails, one line
says so on stderr and the command still runs, with no network at all (fail closed).
"""

from __future__ import annotations

import _socket  # the C module: ``socket``'s import would add ~25 ms to every command
import os
import sys

#: The proxy's address inside every sandboxed network namespace (each is private, so
#: every call can use the same port).
PROXY_HOST = "127.0.0.1"
PROXY_PORT = 3128


def hand_over(control_fd: int, port: int) -> None:
    control = _socket.socket(fileno=control_fd)
    try:
        listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        try:
            listener.bind((PROXY_HOST, port))
            listener.listen(1024)
            fd = listener.fileno().to_bytes(4, sys.byteorder)  # one C int, as SCM_RIGHTS has it
            control.sendmsg([b"L"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fd)])
        finally:
            listener.close()
    finally:
        control.close()


def main(argv: list[str]) -> None:
    # argv: [prog, CONTROL_FD, PORT, "--", COMMAND...]
    try:
        sep = argv.index("--")
    except ValueError:
        print("codingcode network relay: usage: FD PORT -- COMMAND...", file=sys.stderr)
        sys.exit(2)
    command = argv[sep + 1 :]
    try:
        hand_over(int(argv[1]), int(argv[2]))
    except (OSError, ValueError) as exc:
        print(
            f"codingcode sandbox: the network proxy could not be set up ({exc}); "
            "this command has no network.",
            file=sys.stderr,
        )
    if not command:
        sys.exit(0)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr)
        sys.exit(127 if isinstance(exc, FileNotFoundError) else 126)
