"""Programs that run other commands, looked through: runners, option-held commands, and
programs whose own script language can run commands (editors, sed, awk, make, git, gdb,
interpreters' inline code).

:func:`look_inside` says what a command runs besides itself, as a list of parts:

- ``("argv", [Word, ...])``: a command line, run as such (``uv run pytest``);
- ``("script", Word)``: shell code (``ssh -o ProxyCommand=...``, ``git -c alias.x=!...``);
- ``("file", Word)``: a script file it runs (``make -f FILE``, ``vim -S FILE``);
- ``("makefile", Word)``: a makefile whose recipes it runs;
- ``("write", Word)`` / ``("read", Word)``: a file its script language writes or reads
  (``sed 'w /etc/x'``), so path rules see it;
- ``("opaque", reason)``: it runs something the analysis cannot see.

None means the program is not one of these. A remote command (``ssh HOST CMD``,
``docker exec``, ``kubectl exec``) is analysed like a local one: the rules apply to what
runs there as if it ran here (a ``sudo`` on another machine is still privilege escalation,
its ``/etc/shadow`` still a shadow file).
"""

from __future__ import annotations

import itertools
import re
import shlex
from typing import Any

from codingcode.shell.expand import decode_ansi_c
from codingcode.shell.model import DYN, Command, Word, literal_word

Part = tuple[str, Any]

# -- generic option skipping ------------------------------------------------------------


def _split_opts(
    words: list[Word], with_arg: frozenset[str], *, stop_at_positional: int = 1
) -> tuple[dict[str, list[Word]], list[Word]]:
    """Options (name → values) and the words from the ``stop_at_positional``-th positional
    word on. ``--opt=value`` and ``-oVALUE`` forms are understood for ``with_arg`` names."""
    opts: dict[str, list[Word]] = {}
    i = 0
    positional_seen = 0
    while i < len(words):
        w = words[i]
        t = w.text
        if t == "--":
            return opts, words[i + 1 :]
        if t.startswith("-") and len(t) > 1 and not w.dynamic:
            name, eq, val = t.partition("=")
            if eq and name.startswith("--"):
                opts.setdefault(name, []).append(literal_word(val) if not w.dynamic else w)
                i += 1
                continue
            if t in with_arg:
                if i + 1 < len(words):
                    opts.setdefault(t, []).append(words[i + 1])
                i += 2
                continue
            if not t.startswith("--") and t[:2] in with_arg and len(t) > 2:
                opts.setdefault(t[:2], []).append(literal_word(t[2:]))
                i += 1
                continue
            opts.setdefault(t, []).append(literal_word(""))
            i += 1
            continue
        positional_seen += 1
        if positional_seen >= stop_at_positional:
            return opts, words[i:]
        i += 1
    return opts, []


def _ws(s: str) -> frozenset[str]:
    return frozenset(s.split())


# -- runners: a command line after some options -----------------------------------------
_UV_OPTS = _ws(
    "--with --with-requirements --with-editable -p --python --project --directory "
    "--env-file --package --extra --group --only-group --index --default-index "
    "-i --index-url --extra-index-url -f --find-links --config-file --cache-dir -C "
    "--config-setting --exclude-newer --prerelease --resolution --link-mode --script"
)
_DOCKER_EXEC_OPTS = _ws("-e --env --env-file -u --user -w --workdir --detach-keys")
_DOCKER_RUN_OPTS = _ws(
    "-e --env --env-file -u --user -w --workdir -v --volume -p --publish --name --network "
    "--net -m --memory --cpus --entrypoint --mount -l --label --hostname -h --add-host "
    "--device --cap-add --cap-drop --security-opt --platform --pull --restart --runtime "
    "--tmpfs --ulimit --shm-size --ipc --pid --uts --userns --cgroupns --log-driver "
    "--log-opt --dns --expose --group-add --gpus --init-path --label-file --memory-swap "
    "--stop-signal --stop-timeout --volumes-from --cidfile --workdir"
)
_KUBECTL_OPTS = _ws("-c --container -n --namespace --context --kubeconfig -f --filename")
_NPX_OPTS = _ws("-p --package --registry --cache --userconfig --prefix -w --workspace")
_PRLIMIT_OPTS = _ws("-p --pid -o --output")
_SSD_OPTS = _ws(
    "-x --exec -a --startas -n --name -p --pidfile -u --user -c --chuid -g --group "
    "-r --chroot -d --chdir -N --nicelevel -P --procsched -I --iosched -k --umask "
    "-s --signal -R --retry --notify-timeout --output -O"
)
_SIMPLE_RUNNERS = frozenset(
    {
        "setpriv",
        "runcon",
        "fakeroot",
        "dbus-run-session",
        "xvfb-run",
        "eatmydata",
        "proxychains",
        "proxychains4",
        "torsocks",
        "rlwrap",
        "chronic",
        "sshpass",
        "ssh-agent",
        "cgexec",
        "systemd-inhibit",
        "numactl",
        "valgrind",
        "faketime",
        "with-contenv",
        "fakechroot",
        "sem",
        "entr",
    }
)


def _runner(cmd: Command) -> list[Part] | None:
    prog = cmd.program or ""
    rest = list(cmd.argv[1:])
    texts = [w.text for w in rest]
    if prog in ("npx", "bunx", "pnpx"):
        opts, inner = _split_opts(rest, _NPX_OPTS | _ws("-c --call"))
        calls = opts.get("-c", []) + opts.get("--call", [])
        if calls:
            return [("script", w) for w in calls]
        return [("argv", inner)] if inner else []
    if prog in ("npm", "pnpm", "yarn") and texts[:1] in (["exec"], ["dlx"], ["x"]):
        opts, inner = _split_opts(rest[1:], _NPX_OPTS | _ws("-c --call"))
        calls = opts.get("-c", []) + opts.get("--call", [])
        return [("script", w) for w in calls] or ([("argv", inner)] if inner else [])
    if (
        prog == "uvx"
        or (prog == "uv" and texts[:1] == ["run"])
        or (prog == "uv" and texts[:2] == ["tool", "run"])
    ):
        start = 0 if prog == "uvx" else (1 if texts[:1] == ["run"] else 2)
        _, inner = _split_opts(rest[start:], _UV_OPTS)
        return [("argv", inner)] if inner else []
    if prog in ("poetry", "pdm", "hatch", "rye", "pipenv") and texts[:1] == ["run"]:
        _, inner = _split_opts(rest[1:], _ws("-e --env -C --directory -P --project"))
        return [("argv", inner)] if inner else []
    if prog == "pipx" and texts[:1] == ["run"]:
        _, inner = _split_opts(rest[1:], _ws("--spec --python --index-url --pip-args"))
        return [("argv", inner)] if inner else []
    if prog == "conda" and texts[:1] == ["run"]:
        _, inner = _split_opts(rest[1:], _ws("-n --name -p --prefix --cwd"))
        return [("argv", inner)] if inner else []
    if prog in ("docker", "podman", "nerdctl") and texts[:1] in (["exec"], ["run"]):
        with_arg = _DOCKER_EXEC_OPTS if texts[0] == "exec" else _DOCKER_RUN_OPTS
        opts, after = _split_opts(rest[1:], with_arg)
        inner = after[1:]  # the container or image first
        parts: list[Part] = [("argv", inner)] if inner else []
        for w in opts.get("--entrypoint", []):
            parts.append(("argv", [w, *inner]))
        return parts
    if prog in ("docker", "podman") and texts[:2] == ["compose", "exec"]:
        _, after = _split_opts(rest[2:], _DOCKER_EXEC_OPTS | _ws("--index"))
        return [("argv", after[1:])] if len(after) > 1 else []
    if prog in ("kubectl", "oc") and texts[:1] in (["exec"], ["debug"], ["run"]):
        if "--" in texts:
            inner = rest[texts.index("--") + 1 :]
            return [("argv", inner)] if inner else []
        _, after = _split_opts(rest[1:], _KUBECTL_OPTS)
        return [("argv", after[1:])] if len(after) > 1 else []
    if prog == "ip" and "exec" in texts[:4]:
        i = texts.index("exec")
        if (i >= 1 and texts[i - 2 : i - 1] in (["netns"], ["vrf"])) or texts[:1] in (
            ["netns"],
            ["vrf"],
            ["-n"],
        ):
            inner = rest[i + 2 :]
            return [("argv", inner)] if inner else []
    if prog == "prlimit":
        opts, inner = _split_opts(rest, _PRLIMIT_OPTS)
        return [("argv", inner)] if inner else []
    if prog == "start-stop-daemon":
        opts, _tail = _split_opts(rest, _SSD_OPTS)
        progs = opts.get("--startas") or opts.get("-a") or opts.get("--exec") or opts.get("-x")
        args_after = rest[texts.index("--") + 1 :] if "--" in texts else []
        return [("argv", [w, *args_after]) for w in (progs or [])]
    if prog in _SIMPLE_RUNNERS:
        _, inner = _split_opts(rest, _ws("-l -n -s -C -g -m -N -t --what --why --who --mode"))
        if prog == "faketime" and inner:
            inner = inner[1:]
        return [("argv", inner)] if inner else []
    if prog == "systemd-run":
        _, inner = _split_opts(
            rest, _ws("-u --unit -p --property -E --setenv -d --working-directory --slice")
        )
        return [("argv", inner)] if inner else []
    return None


# -- commands held in options -----------------------------------------------------------
_SSH_CMD_OPTS = ("proxycommand", "localcommand", "remotecommand", "knownhostscommand")


def _ssh_options(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        value: str | None = None
        if w.text == "-o" and i + 1 < len(rest):
            value = rest[i + 1].text
        elif w.text.startswith("-o") and len(w.text) > 2:
            value = w.text[2:]
        if value is None:
            continue
        key, sep, val = _kv(value)
        if key.lower() in _SSH_CMD_OPTS and sep:
            parts.append(("script", literal_word(val) if DYN not in val else Word(DYN)))
    if cmd.program in ("scp", "sftp"):
        for i, w in enumerate(rest):
            if w.text == "-S" and i + 1 < len(rest):
                parts.append(("argv", [rest[i + 1]]))
    return parts


def _kv(value: str) -> tuple[str, str, str]:
    m = re.match(r"\s*([A-Za-z]+)(\s*=\s*|\s+)(.*)$", value, re.DOTALL)
    if not m:
        return value, "", ""
    return m.group(1), m.group(2), m.group(3)


_TAR_CMD = (
    "--to-command",
    "--use-compress-program",
    "--rsh-command",
    "--info-script",
    "--new-volume-script",
)


def _tar(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        t = w.text
        name, eq, val = t.partition("=")
        if name == "--checkpoint-action" and eq:
            if val.startswith("exec="):
                parts.append(("script", _lit(val[5:])))
            elif val.startswith("exec"):
                parts.append(("opaque", "tar --checkpoint-action runs a command"))
        elif name in _TAR_CMD:
            v = val if eq else (rest[i + 1].text if i + 1 < len(rest) else "")
            parts.append(("script", _lit(v)))
        elif t in ("-I", "-F") and i + 1 < len(rest):
            parts.append(("script", rest[i + 1]))
        elif t.startswith("-I") and len(t) > 2 and not t.startswith("--"):
            parts.append(("script", _lit(t[2:])))
    return parts


def _lit(text: str) -> Word:
    return Word(DYN) if DYN in text else literal_word(text)


def _rsync(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        name, eq, val = w.text.partition("=")
        if name in ("-e", "--rsh", "--rsync-path"):
            v = val if eq else (rest[i + 1].text if i + 1 < len(rest) else "")
            parts.append(("script", _lit(v)))
        elif name.startswith("-e") and len(name) > 2 and not name.startswith("--"):
            parts.append(("script", _lit(w.text[2:])))
    return parts


# -- git -----------------------------------------------------------------------------
#: Config keys whose value is a command git runs (``alias.*`` when it starts with ``!``).
_GIT_CMD_KEYS = re.compile(
    r"^(core\.(sshcommand|pager|editor|askpass|fsmonitor|gitproxy)|sequence\.editor|"
    r"pager\..*|diff\.(external|.*\.(command|textconv))|difftool\..*\.cmd|"
    r"mergetool\..*\.cmd|merge\..*\.driver|filter\..*\.(clean|smudge|process)|"
    r"credential\.(.*\.)?helper|gpg\.(.*\.)?program|uploadpack\.packobjectshook|"
    r"remote\..*\.(uploadpack|receivepack)|sendemail\..*|web\.browser|browser\..*\.cmd|"
    r"man\..*\.cmd|instaweb\..*|ssh\.variant|core\.hookspath|include\.path|includeif\..*)$",
    re.IGNORECASE,
)
_GIT_GLOBAL_WITH_ARG = _ws("-C -c --git-dir --work-tree --namespace --config-env --exec-path")


def _git(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    i = 0
    while i < len(rest):
        t = rest[i].text
        if t == "-c" and i + 1 < len(rest):
            parts.extend(_git_config(rest[i + 1].text))
            i += 2
            continue
        if t.startswith("--exec-path="):
            parts.append(("opaque", "git --exec-path runs git commands from another directory"))
        if t == "--config-env" or t.startswith("--config-env="):
            parts.append(("opaque", "git --config-env takes a setting from the environment"))
        if t in _GIT_GLOBAL_WITH_ARG:
            i += 2
            continue
        if t.startswith("-"):
            i += 1
            continue
        break
    sub = rest[i].text if i < len(rest) else ""
    tail = rest[i + 1 :]
    texts = [w.text for w in tail]
    if sub == "config" and any(
        _GIT_CMD_KEYS.match(x) or x.lower().startswith("alias.")
        for x in texts
        if not x.startswith("-")
    ):
        parts.append(("opaque", "git config stores a command that later git commands run"))
    elif sub == "rebase":
        for j, w in enumerate(tail):
            if w.text in ("-x", "--exec") and j + 1 < len(tail):
                parts.append(("script", tail[j + 1]))
            elif w.text.startswith("--exec="):
                parts.append(("script", _lit(w.text[7:])))
    elif sub == "bisect" and texts[:1] == ["run"]:
        parts.append(("argv", tail[1:]))
    elif sub == "submodule" and "foreach" in texts:
        after = tail[texts.index("foreach") + 1 :]
        after = [w for w in after if not w.text.startswith("--")]
        if after:
            parts.append(("script", _join(after)))
    elif sub == "filter-branch":
        for j, w in enumerate(tail):
            if w.text.endswith("-filter") and j + 1 < len(tail):
                parts.append(("script", tail[j + 1]))
    elif sub in ("difftool", "mergetool"):
        for j, w in enumerate(tail):
            if w.text in ("-x", "--extcmd") and j + 1 < len(tail):
                parts.append(("script", tail[j + 1]))
            elif w.text.startswith("--extcmd="):
                parts.append(("script", _lit(w.text[9:])))
    return parts


def _git_config(assignment: str) -> list[Part]:
    key, eq, value = assignment.partition("=")
    if DYN in key:
        return [("opaque", "git -c sets a setting only known at run time")]
    if key.lower().startswith("alias.") and value.startswith("!"):
        return [("script", _lit(value[1:]))]
    if key.lower() in ("core.hookspath",) or key.lower().startswith(("include", "includeif")):
        return [("opaque", f"git -c {key} makes git run files the analysis does not see")]
    if _GIT_CMD_KEYS.match(key):
        return [("script", _lit(value))] if eq else []
    return []


def _join(words: list[Word]) -> Word:
    if any(w.dynamic for w in words):
        return Word(DYN)
    return literal_word(" ".join(w.text for w in words))


# -- editors and pagers -----------------------------------------------------------------
_VIM = frozenset({"vim", "vi", "nvim", "ex", "view", "vimdiff", "gvim", "rvim", "rview", "evim"})
_PAGERS = frozenset({"less", "more", "most"})
_VIM_CODE = re.compile(
    r"(^|[|\s:])(!|sy(stem)?\(|py(thon)?3?\b|lua\b|perl\b|ruby\b|"
    r"r(ead)?\s*!|w(rite)?\s*!|te(rminal)?\b|sh(ell)?\b|so(urce)?\b|"
    r"exe(cute)?\b|call\b|let\b|norm(al)?\b|map\b|au(tocmd)?\b)"
)


def vim_command_parts(text: str) -> list[Part]:
    """An ex command: ``!cmd`` runs a shell command; anything else that can run one
    (system(), :terminal, :python, :source, ...) is opaque."""
    parts: list[Part] = []
    for piece in text.split("\n"):
        body = piece.strip().lstrip(":").strip()
        if not body:
            continue
        if body.startswith("!"):
            parts.append(("script", _lit(body[1:])))
        elif _VIM_CODE.search(body):
            parts.append(("opaque", f"the editor command {body[:40]!r} can run commands"))
    return parts


def _vim(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        t = w.text
        if t in ("-c", "--cmd") and i + 1 < len(rest):
            parts.extend(vim_command_parts(rest[i + 1].text))
        elif t.startswith("+") and len(t) > 1:
            parts.extend(vim_command_parts(t[1:]))
        elif t in ("-S", "-s", "-u", "-i") and i + 1 < len(rest) and t != "-i":
            parts.append(("opaque", f"{cmd.program} {t} reads editor commands from a file"))
        elif t.startswith("-S") and len(t) > 2:
            parts.append(("opaque", f"{cmd.program} -S reads editor commands from a file"))
    stdin = cmd.stdin
    if stdin is not None and (
        cmd.program == "ex" or any(w.text in ("-e", "-es", "-E", "-s", "-Es") for w in rest)
    ):
        if stdin.text is not None:
            parts.extend(vim_command_parts(stdin.text))
        elif stdin.opaque or stdin.download:
            parts.append(("opaque", f"{cmd.program} reads editor commands from stdin"))
    return parts


def _pager(cmd: Command) -> list[Part]:
    for w in cmd.argv[1:]:
        if w.text.startswith("+") and any(c in w.text for c in "!|"):
            return [("opaque", f"{cmd.program} {w.text} runs a command")]
    return []


# -- sed --------------------------------------------------------------------------------
_SED_ADDR = re.compile(
    r"^\s*(?:(?:\d+|\$|/(?:[^/\\]|\\.)*/[IM]*|\\(.)(?:(?!\1).)*\1)"
    r"(?:\s*,\s*(?:\d+|\$|/(?:[^/\\]|\\.)*/[IM]*|[+~]\d+))?\s*!?\s*)?"
)


def sed_parts(script: str) -> list[Part]:
    """What a sed script runs (``e``, ``s///e``) and writes or reads (``w``, ``r``)."""
    parts: list[Part] = []
    for raw_line in script.split("\n"):
        for cmdtext in _sed_commands(raw_line):
            body = _SED_ADDR.sub("", cmdtext, count=1).lstrip("{ ").strip()
            if not body:
                continue
            c = body[0]
            arg = body[1:].strip()
            if c == "e":
                parts.append(
                    ("script", _lit(arg)) if arg else ("opaque", "sed e runs the pattern space")
                )
            elif c in "wW":
                parts.append(("write", _lit(arg)))
            elif c in "rR":
                parts.append(("read", _lit(arg)))
            elif c == "s" and len(body) > 1:
                flags, wfile = _sed_s_flags(body)
                if "e" in flags:
                    parts.append(("opaque", "sed s///e runs the result as a command"))
                if wfile is not None:
                    parts.append(("write", _lit(wfile)))
    return parts


def _sed_commands(line: str) -> list[str]:
    # e/w/r/a/i/c take the rest of the line; otherwise ';' separates commands.
    out: list[str] = []
    rest = line
    while rest:
        body = _SED_ADDR.sub("", rest, count=1).lstrip("{ ")
        if body[:1] in ("e", "w", "W", "r", "R", "a", "i", "c"):
            out.append(rest)
            break
        if body[:1] == "s" and len(body) > 1:
            end = _sed_s_end(body)
            out.append(rest[: len(rest) - len(body) + end])
            rest = rest[len(rest) - len(body) + end :].lstrip("; }")
            continue
        head, sep, tail = rest.partition(";")
        out.append(head)
        rest = tail if sep else ""
    return out


def _sed_s_end(body: str) -> int:
    """Index just after the flags of ``s/a/b/flags`` (the w flag takes the line)."""
    delim = body[1]
    i, seen = 2, 0
    while i < len(body) and seen < 2:
        if body[i] == "\\":
            i += 2
            continue
        if body[i] == delim:
            seen += 1
        i += 1
    while i < len(body) and body[i] not in ";}\n":
        if body[i] == "w":
            return len(body)
        i += 1
    return i


def _sed_s_flags(body: str) -> tuple[str, str | None]:
    end = _sed_s_end(body)
    delim = body[1]
    i, seen = 2, 0
    while i < len(body) and seen < 2:
        if body[i] == "\\":
            i += 2
            continue
        if body[i] == delim:
            seen += 1
        i += 1
    flags = body[i:end]
    if "w" in flags:
        before, _, path = flags.partition("w")
        return before, path.strip()
    return flags, None


def _sed(cmd: Command) -> list[Part]:
    rest = list(cmd.argv[1:])
    scripts: list[Word] = []
    explicit = False
    i = 0
    positional: list[Word] = []
    while i < len(rest):
        t = rest[i].text
        if t in ("-e", "--expression") and i + 1 < len(rest):
            scripts.append(rest[i + 1])
            explicit = True
            i += 2
            continue
        if t.startswith("--expression="):
            scripts.append(_lit(t.split("=", 1)[1]))
            explicit = True
        elif (
            (t in ("-f", "--file") and i + 1 < len(rest))
            or t.startswith("--file=")
            or (t.startswith("-f") and len(t) > 2)
        ):
            return [("opaque", "sed -f reads its script from a file")]
        elif t.startswith("-") and len(t) > 1 and not t.startswith("--") and "e" in t[1:]:
            if i + 1 < len(rest):
                scripts.append(rest[i + 1])
                explicit = True
                i += 2
                continue
        elif not t.startswith("-") or t == "-":
            positional.append(rest[i])
        i += 1
    if not explicit and positional:
        scripts.append(positional[0])
    parts: list[Part] = []
    for w in scripts:
        if w.dynamic:
            parts.append(("opaque", "sed runs a script only known at run time"))
        else:
            parts.extend(sed_parts(w.text))
    return parts


# -- awk --------------------------------------------------------------------------------
AWK_LIKE = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk", "original-awk"})
_AWK_STR = r'"((?:[^"\\]|\\.)*)"'
_AWK_SYSTEM = re.compile(r"\bsystem\s*\(")
_AWK_SYSTEM_LIT = re.compile(r"\bsystem\s*\(\s*" + _AWK_STR + r"\s*\)")
_AWK_PIPE_TO = re.compile(r"(?<![|])\|(?![|&])\s*(?!getline)")
_AWK_PIPE_LIT = re.compile(r"(?<![|])\|(?![|&])\s*" + _AWK_STR)
_AWK_GETLINE_LIT = re.compile(_AWK_STR + r"\s*\|\s*getline")
_AWK_GETLINE = re.compile(r"\|\s*getline")
_AWK_COPROC = re.compile(r"\|&")


def awk_parts(code: str) -> list[Part]:
    """Commands an awk program runs: ``system("...")``, ``print | "cmd"``,
    ``"cmd" | getline``; a command built at run time is opaque."""
    parts: list[Part] = []
    literals = [_awk_unescape(m) for m in _AWK_SYSTEM_LIT.findall(code)]
    if len(_AWK_SYSTEM.findall(code)) != len(literals):
        parts.append(("opaque", "awk's system() runs a command built at run time"))
    getlines = _AWK_GETLINE_LIT.findall(code)
    pipes_to = _AWK_PIPE_LIT.findall(code)
    n_getline = len(_AWK_GETLINE.findall(code))
    n_pipes = len(_AWK_PIPE_TO.findall(code)) - n_getline
    if n_getline != len(getlines) or n_pipes > len(pipes_to) or _AWK_COPROC.search(code):
        parts.append(("opaque", "awk pipes to or from a command built at run time"))
    for lit in [*literals, *(_awk_unescape(g) for g in getlines), *map(_awk_unescape, pipes_to)]:
        parts.append(("script", literal_word(lit)))
    return parts


def _awk_unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)


def _awk(cmd: Command) -> list[Part]:
    rest = list(cmd.argv[1:])
    i = 0
    while i < len(rest):
        t = rest[i].text
        if t in ("-f", "--file") or t.startswith("-f"):
            return [("opaque", "awk -f reads its program from a file")]
        if t in ("-v", "-F", "--assign", "--field-separator"):
            i += 2
            continue
        if t == "--":
            i += 1
            break
        if t.startswith("-") and len(t) > 1:
            i += 1
            continue
        break
    if i >= len(rest):
        return []
    prog = rest[i]
    if prog.dynamic:
        return [("opaque", "awk runs a program only known at run time")]
    return awk_parts(prog.text)


# -- make -------------------------------------------------------------------------------
def _make(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    files = False
    for i, w in enumerate(rest):
        t = w.text
        if t in ("-f", "--file", "--makefile") and i + 1 < len(rest):
            parts.append(("makefile", rest[i + 1]))
            files = True
        elif t.startswith(("--file=", "--makefile=")):
            parts.append(("makefile", _lit(t.split("=", 1)[1])))
            files = True
        elif t.startswith("-f") and len(t) > 2:
            parts.append(("makefile", _lit(t[2:])))
            files = True
        elif t in ("-E", "--eval") or t.startswith("--eval="):
            code = (
                t.split("=", 1)[1] if "=" in t else (rest[i + 1].text if i + 1 < len(rest) else "")
            )
            parts.extend(_make_eval(code))
        elif "=" in t and not t.startswith("-"):
            name, _, value = t.partition("=")
            if "$(" in value or "${" in value or "`" in value or DYN in value:
                parts.append(("opaque", f"make variable {name} holds code make expands"))
            elif name.strip() in ("SHELL", ".SHELLFLAGS", "MAKESHELL"):
                parts.append(("opaque", f"make {name}= changes the shell recipes run in"))
    if not files:
        parts.append(("makefile", literal_word("")))  # the default makefile, if written here
    return parts


#: make code that can run commands or define rules (whose recipes run): not followed.
_MAKE_EVAL_RUNS = re.compile(
    r"shell|eval|guile|load|include|call|value|foreach|SHELL|[:;`\n]|\$\$|" + DYN
)
_MAKE_FILE_FN = re.compile(r"\$[({]file\s+(>>|>|<)\s*([^,)}\s]+)")


def _make_eval(code: str) -> list[Part]:
    """``make --eval CODE``: file reads and writes are seen; code that could run commands
    or define a rule is opaque."""
    if _MAKE_EVAL_RUNS.search(code):
        return [("opaque", "make --eval runs make code that can run commands")]
    return [
        ("read" if op == "<" else "write", literal_word(path))
        for op, path in _MAKE_FILE_FN.findall(code)
    ]


_MAKE_REF = re.compile(r"\$[({]\s*([^)}\s]*)[^)}]*[)}]|\$[@<^?*%+|]|\$\w")


def makefile_scripts(text: str) -> tuple[list[str], str | None]:
    """The recipes of a makefile as shell scripts (make references become unknown
    variables), and why it is opaque, if it is."""
    scripts: list[str] = []
    why: str | None = None
    for line in text.split("\n"):
        if "$(shell" in line or "${shell" in line or "$(eval" in line:
            why = "the makefile runs $(shell ...) or $(eval ...)"
        if line.startswith("\t"):
            body = line[1:].lstrip("@-+ ")
            body = body.replace("$$", "\x01")
            body = _MAKE_REF.sub("${__make_var}", body).replace("\x01", "$")
            scripts.append(body)
        elif re.match(r"^\s*(SHELL|\.SHELLFLAGS)\s*[:?+]?=", line):
            why = "the makefile sets SHELL"
    return scripts, why


# -- gdb and other debuggers --------------------------------------------------------------
def _gdb(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        t = w.text
        if t in ("-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--iex") and i + 1 < len(
            rest
        ):
            body = rest[i + 1].text.strip()
            if body.startswith(("shell ", "!")):
                parts.append(("script", _lit(body.split(None, 1)[1] if " " in body else "")))
                if body.startswith("!"):
                    parts[-1] = ("script", _lit(body[1:]))
            elif re.match(r"^(python|py|pi|guile|gu|source|pipe|\|)\b", body) or "system(" in body:
                parts.append(("opaque", f"gdb {body[:30]!r} can run commands"))
        elif t in ("-x", "--command", "-ix", "--init-command") or t.startswith("--command="):
            parts.append(("opaque", "gdb reads commands from a file"))
        elif t == "--args" and i + 1 < len(rest):
            parts.append(("argv", rest[i + 1 :]))
            break
    if cmd.stdin is not None and (cmd.stdin.text or cmd.stdin.opaque):
        parts.append(("opaque", "gdb reads commands from stdin"))
    return parts


# -- network tools that exec --------------------------------------------------------------
def _socat(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    for w in cmd.argv[1:]:
        m = re.match(r"^(EXEC|SYSTEM):(.*?)(,[a-z-]+(=[^,]*)?)*$", w.text, re.IGNORECASE)
        if m:
            parts.append(("script", _lit(m.group(2))))
    return parts


def _nc(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        if w.text in ("-e", "--exec") and i + 1 < len(rest):
            parts.append(("argv", [rest[i + 1]]))
        elif w.text in ("-c", "--sh-exec", "--lua-exec") and i + 1 < len(rest):
            parts.append(("script", rest[i + 1]))
    return parts


# -- scheduled and stored commands -------------------------------------------------------
def _opaque_builtin(cmd: Command) -> list[Part] | None:
    prog = cmd.program
    texts = [w.text for w in cmd.argv[1:]]
    if prog == "hash" and any(t.startswith("-") and "p" in t for t in texts):
        return [("opaque", "hash -p makes a name run another program")]
    if prog == "fc" and not any(t.startswith("-") and "l" in t for t in texts):
        return [("opaque", "fc runs commands from the history")]
    if prog == "history":
        # entries run again only through fc (opaque) or `!` expansion, which is off in
        # `bash -c` unless turned on (set -H, opaque); the file it reads or writes is seen
        parts: list[Part] = []
        for i, t in enumerate(texts[:-1]):
            if t in ("-r", "-n"):
                parts.append(("read", cmd.argv[i + 2]))
            elif t in ("-a", "-w"):
                parts.append(("write", cmd.argv[i + 2]))
        return parts
    if prog == "set" and (
        any(t.startswith("-") and "H" in t for t in texts)
        or any(a == "-o" and b in ("histexpand", "history") for a, b in itertools.pairwise(texts))
    ):
        return [("opaque", "set -H turns on history expansion: `!` words run earlier commands")]
    if prog == "enable" and any(t.startswith("-f") for t in texts):
        return [("opaque", "enable -f loads a builtin from a shared object")]
    if (prog == "mapfile" or prog == "readarray") and any(t.startswith("-C") for t in texts):
        return [("opaque", f"{prog} -C runs a callback")]
    if prog == "crontab" and not any(t in ("-l", "-r") for t in texts):
        return [("opaque", "crontab schedules commands the analysis does not see")]
    if prog in ("complete", "compgen") and any(t in ("-C", "-F") for t in texts):
        return [("opaque", f"{prog} -C/-F runs a command on completion")]
    if prog == "expect":
        return _expect(cmd)
    if prog in ("newgrp",):
        return [("opaque", f"{prog} starts a shell")]
    return None


_TCL = frozenset({"tclsh", "wish", "expect"})

# -- emacs --eval ------------------------------------------------------------------------
_EMACS = frozenset({"emacs", "emacsclient", "xemacs", "emacs-nox"})
_ELISP_STR = r'"((?:[^"\\]|\\.)*)"'
#: Lisp calls that hand a string to a shell.
_ELISP_SHELL_CALL = re.compile(
    r"\((?:async-)?shell-command(?:-to-string|-on-region)?\s+"
    r"|\((?:compile|call-process-shell-command|process-file-shell-command)\s+"
    r"|\(start-process-shell-command\s+\S+\s+\S+\s+"
)
#: Lisp that starts processes or shells in ways not followed here.
_ELISP_SPAWN = re.compile(
    r"\((?:call-process|call-process-region|start-process|start-file-process|make-process|"
    r"process-lines|process-file|make-comint|make-comint-in-buffer|term|ansi-term|shell|"
    r"eshell|vterm|server-eval|eval|load|load-file|require|funcall|apply|"
    r"dired-do-shell-command|dired-do-async-shell-command|executable-interpret)[\s)]"
)


def _emacs(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        name, eq, _ = w.text.partition("=")
        if name not in ("--eval", "-eval", "--execute", "-execute"):
            continue
        code = w.text[len(name) + 1 :] if eq else (rest[i + 1].text if i + 1 < len(rest) else "")
        if DYN in code:
            parts.append(("opaque", "emacs evaluates Lisp only known at run time"))
            continue
        for m in _ELISP_SHELL_CALL.finditer(code):
            lit = re.match(_ELISP_STR, code[m.end() :])
            if lit is None:
                parts.append(("opaque", "emacs --eval runs a shell command it builds"))
            else:
                parts.append(("script", literal_word(_elisp_unescape(lit.group(1)))))
        if _ELISP_SPAWN.search(code):
            parts.append(("opaque", "emacs --eval starts a process or a shell"))
        for lit in re.finditer(_ELISP_STR, code):
            text = _elisp_unescape(lit.group(1))
            if text.startswith(("/", "~", ".")) and " " not in text:
                parts.append(("read", literal_word(text)))
    return parts


def _elisp_unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _split(cmd: Command) -> list[Part]:
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        if w.text == "--filter" and i + 1 < len(rest):
            return [("script", rest[i + 1])]
        if w.text.startswith("--filter="):
            return [("script", _lit(w.text.partition("=")[2]))]
    return []


def look_inside(cmd: Command) -> list[Part] | None:
    """What ``cmd`` runs besides itself (see the module doc), or None."""
    prog = cmd.program
    if prog is None or prog not in _HANDLED:
        return None
    found = _runner(cmd)
    if found is not None:
        return found
    if prog in ("ssh", "scp", "sftp"):
        return _ssh_options(cmd) or None
    if prog in ("tar", "bsdtar", "gtar"):
        return _tar(cmd) or None
    if prog == "rsync":
        return _rsync(cmd) or None
    if prog == "zip":
        rest = list(cmd.argv[1:])
        for i, w in enumerate(rest):
            if w.text in ("-TT", "--unzip-command") and i + 1 < len(rest):
                return [("script", rest[i + 1])]
            if w.text.startswith("--unzip-command="):
                return [("script", _lit(w.text.split("=", 1)[1]))]
        return None
    if prog == "wget":
        for w in cmd.argv[1:]:
            if w.text.startswith("--use-askpass="):
                return [("file", _lit(w.text.split("=", 1)[1]))]
        return None
    if prog == "git":
        return _git(cmd) or None
    if prog in _VIM:
        return _vim(cmd) or None
    if prog in _PAGERS:
        return _pager(cmd) or None
    if prog == "man":
        rest = list(cmd.argv[1:])
        for i, w in enumerate(rest):
            if w.text in ("-P", "--pager") and i + 1 < len(rest):
                return [("script", rest[i + 1])]
            if w.text.startswith("--pager="):
                return [("script", _lit(w.text.split("=", 1)[1]))]
        return None
    if prog == "sed" or prog == "gsed":
        return _sed(cmd) or None
    if prog in AWK_LIKE:
        return _awk(cmd) or None
    if prog in ("make", "gmake", "bmake"):
        return _make(cmd)
    if prog in ("gdb", "lldb", "cgdb"):
        return _gdb(cmd) or None
    if prog == "socat":
        return _socat(cmd) or None
    if prog in _EMACS:
        return _emacs(cmd) or None
    if prog == "split":
        return _split(cmd) or None
    if prog in ("sqlite3", "sqlite"):
        return _sqlite(cmd)
    if prog in ("nc", "ncat", "netcat"):
        return _nc(cmd) or None
    return _opaque_builtin(cmd)


# -- interpreters' inline code --------------------------------------------------------------
#: Calls that start a process, in the interpreters we know (one pattern for all).
_SPAWN = re.compile(
    r"\b(?:os\.system|os\.popen|os\.exec\w*|os\.spawn\w*|os\.posix_spawnp?|subprocess\.\w+|"
    r"pty\.spawn|commands\.getoutput|Popen|check_output|check_call|getoutput|getstatusoutput|"
    r"system|exec|execv\w*|popen|spawn\w*|execSync|execFileSync|spawnSync|execFile|"
    r"shell_exec|passthru|proc_open|pcntl_exec|io\.popen|os\.execute|IO\.popen|"
    r"Process\.spawn|Kernel\.(?:exec|system|spawn)|run|pipeline|open3|capture[23]?\w*|"
    r"Runtime\.getRuntime|ProcessBuilder|child_process|Bun\.spawn\w*|Deno\.(?:run|Command))\b"
)
_STRING_LIT = re.compile(
    r"'''(.*?)'''|\"\"\"(.*?)\"\"\"|'((?:[^'\\\n]|\\.)*)'|\"((?:[^\"\\\n]|\\.)*)\"|"
    r"`((?:[^`\\]|\\.)*)`|\bqq?[({\[<](.*?)[)}\]>]|\bqx[({\[<](.*?)[)}\]>]",
    re.DOTALL,
)
_BACKTICK_RUN = re.compile(r"`[^`]+`|\bqx[({\[<]|%x[({\[]")


def code_parts(code: str, lang: str) -> list[Part]:
    """What inline interpreter code runs: each process-starting call must take string
    literals (a command line or a list of words); they are analysed as commands. A call
    with anything else (a variable, string building) is opaque."""
    if lang in _TCL:
        return _tcl_parts(code)
    _CURRENT_LANG[0] = lang
    spans = [m.span() for m in _STRING_LIT.finditer(code)]
    spawns = [m for m in _SPAWN.finditer(code) if not any(a <= m.start() < b for a, b in spans)]
    backticks = lang in ("perl", "ruby", "php", "julia", "node") and _BACKTICK_RUN.search(code)
    if not spawns and not backticks:
        return []
    parts: list[Part] = []
    for m in spawns:
        name = m.group(0)
        if name in ("run", "pipeline", "exec", "system") and lang == "python":
            # plain run()/exec() in Python are not process calls unless imported so
            if not re.search(r"\bfrom\s+(os|subprocess)\b", code) and name in ("run", "pipeline"):
                continue
            if name == "exec":
                parts.append(("opaque", "python exec() runs code built at run time"))
                continue
        after = code[m.end() : m.end() + 2000]
        arg = _call_argument(after)
        if arg is None:
            parts.append(("opaque", f"{lang} {name}() starts a process the analysis cannot see"))
            continue
        parts.append(("script", literal_word(arg)))
        decoded = decode_ansi_c(arg)  # the language's own escapes (`\\`, `\x..`)
        if decoded != arg:
            parts.append(("script", literal_word(decoded)))
    if backticks:
        for lit in re.findall(r"`([^`]*)`", code):
            if "$" in lit or "#{" in lit:
                parts.append(("opaque", f"{lang} backticks run a command built at run time"))
            else:
                parts.append(("script", literal_word(lit)))
        if re.search(r"\bqx[({\[<]|%x[({\[]", code):
            parts.append(("opaque", f"{lang} qx/%x runs a command"))
    return parts


def _call_argument(after: str) -> str | None:
    """The command a call's arguments spell, when they are literals; else None."""
    s = after.lstrip()
    if s.startswith("("):
        s = s[1:].lstrip()
    elif not s or s[0] not in "'\"qe[`":
        return None
    if s.startswith("["):  # a list of literal words
        end = _matching(s, "[", "]")
        if end is None:
            return None
        inner = s[1:end]
        words = []
        for lit in _STRING_LIT.finditer(inner):
            words.append(next(g for g in lit.groups() if g is not None))
        rest = _STRING_LIT.sub("", inner).replace(",", "").strip()
        if rest or not words:
            return None
        return " ".join(shlex.quote(w) for w in words)
    perl_q = _perl_quoted(s)
    if perl_q is not None:
        first, end, interpolates = perl_q
        if interpolates and "$" in first:
            return None
        tail = s[end:].lstrip()
    else:
        found = _STRING_LIT.match(s)
        if not found:
            return None
        first = next((g for g in found.groups() if g is not None), "")
        tail = s[found.end() :].lstrip()
    if tail[:1] in ("+", ".", "%", "[") or "#{" in first:
        return None  # string building: the command is only known at run time
    if s[:1] == '"' and lang_interpolates(s) and "$" in first:
        return None  # "...$x..." in perl, ruby, php: a variable in the command
    words = [first]
    if tail[:1] == ",":
        close = _matching("(" + tail, "(", ")")
        for lit in _STRING_LIT.finditer(tail[: close if close is not None else len(tail)]):
            words.append(next(g for g in lit.groups() if g is not None))
    if len(words) == 1:
        return first
    return " ".join(shlex.quote(w) for w in words)


def lang_interpolates(s: str) -> bool:
    # Python and JavaScript never put a variable into "..."; perl, ruby, php may.
    return _CURRENT_LANG[0] in ("perl", "ruby", "php")


_CURRENT_LANG = ["python"]
_PAIRS = {"(": ")", "{": "}", "[": "]", "<": ">"}


def _perl_quoted(s: str) -> tuple[str, int, bool] | None:
    """perl's q(...) / qq{...} literal at the start of ``s``: (text, end, interpolates)."""
    m = re.match(r"(qq|q)\s*([({\[<])", s)
    if not m:
        return None
    open_c = m.group(2)
    close_c = _PAIRS[open_c]
    depth = 0
    for i in range(m.end() - 1, len(s)):
        c = s[i]
        if c == "\\":
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return s[m.end() : i], i + 1, m.group(1) == "qq"
    return None


def _matching(s: str, open_c: str, close_c: str) -> int | None:
    depth = 0
    quote: str | None = None
    i = 0
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


_SQLITE_OPTS = _ws("-cmd -separator -newline -nullvalue -init -vfs -mmap -pagecache -lookaside")


def _sqlite(cmd: Command) -> list[Part]:
    """sqlite3's dot-commands: ``.shell``/``.system`` and ``.output |CMD`` run commands,
    ``.read``/``.import`` read files, ``.output``/``.once`` write one, ``.load`` loads code;
    SQL itself runs nothing (its ``load_extension`` does: opaque)."""
    rest = list(cmd.argv[1:])
    texts: list[Word] = []
    opts, positional = _split_opts(rest, _SQLITE_OPTS)
    texts.extend(opts.get("-cmd", []))
    for w in opts.get("-init", []):
        texts.append(literal_word(f".read {w.text}"))
    texts.extend(positional[1:])  # after the database: SQL or dot-commands
    if not positional[1:] and cmd.stdin is not None:
        if cmd.stdin.text is not None:
            texts.append(literal_word(cmd.stdin.text))
        elif cmd.stdin.opaque:
            return [("opaque", "sqlite3 runs commands from stdin only known at run time")]
    parts: list[Part] = []
    for w in texts:
        if w.dynamic:
            return [("opaque", "sqlite3 runs commands only known at run time")]
        if "load_extension" in w.text.lower():
            parts.append(("opaque", "sqlite3 load_extension loads a shared object"))
        for line in w.text.split("\n"):
            words = line.strip().split(None, 1)
            if not words or not words[0].startswith("."):
                continue
            dot, arg = words[0], (words[1].strip() if len(words) > 1 else "")
            name = arg.split()[0].strip("'\"") if arg else ""
            if dot in (".shell", ".system"):
                parts.append(("script", literal_word(arg)))
            elif dot in (".output", ".once", ".excel") and arg.startswith("|"):
                parts.append(("script", literal_word(arg[1:])))
            elif dot in (".output", ".once", ".log", ".save", ".backup", ".dump") and name:
                if dot != ".dump" and not name.startswith("-"):
                    parts.append(("write", literal_word(name)))
            elif dot in (".read", ".import", ".open", ".restore") and name:
                if name.startswith("|"):
                    parts.append(("script", literal_word(arg.lstrip("|"))))
                elif not name.startswith("-"):
                    parts.append(("read", literal_word(name)))
            elif dot == ".load":
                parts.append(("opaque", "sqlite3 .load loads a shared object"))
    return parts


def _expect(cmd: Command) -> list[Part]:
    """expect: ``-c CODE`` and a known stdin are Tcl (``spawn`` runs a program); a script
    file of the project is run like any interpreter's (one written in this line is caught
    by the written-files check)."""
    rest = list(cmd.argv[1:])
    parts: list[Part] = []
    files = 0
    for i, w in enumerate(rest):
        if w.text == "-c" and i + 1 < len(rest):
            code = rest[i + 1]
            if code.dynamic:
                return [("opaque", "expect runs Tcl only known at run time")]
            parts.extend(_tcl_parts(code.text, spawn=True))
        elif not w.text.startswith("-") and (i == 0 or rest[i - 1].text != "-c"):
            files += 1
            if w.dynamic:
                return [("opaque", "expect runs a script whose name is only known at run time")]
    if files == 0 and not any(w.text == "-c" for w in rest):
        stdin = cmd.stdin
        if stdin is not None and stdin.text is not None:
            parts.extend(_tcl_parts(stdin.text, spawn=True))
        elif stdin is not None and stdin.opaque:
            parts.append(("opaque", "expect runs Tcl from stdin only known at run time"))
    return parts


def _tcl_parts(code: str, *, spawn: bool = False) -> list[Part]:
    parts: list[Part] = []
    runs = r"exec|spawn|open\s+\"?\|" if spawn else r"exec|open\s+\"?\|"
    for m in re.finditer(r"(?:^|[;\[\n])\s*(" + runs + r")\s*([^\];\n]*)", code):
        body = m.group(2).strip()
        if "$" in body or "[" in body:
            parts.append(("opaque", "tcl exec runs a command built at run time"))
        else:
            parts.append(("script", literal_word(body)))
    if re.search(r"\b(eval|uplevel|source|interp)\b", code):
        parts.append(("opaque", "tcl eval/source runs code the analysis does not follow"))
    return parts


#: Every program look_inside knows something about (anything else: None at once).
_HANDLED = frozenset(
    {
        "npx",
        "bunx",
        "pnpx",
        "npm",
        "pnpm",
        "yarn",
        "uvx",
        "uv",
        "poetry",
        "pdm",
        "hatch",
        "rye",
        "pipenv",
        "pipx",
        "conda",
        "docker",
        "podman",
        "nerdctl",
        "kubectl",
        "oc",
        "ip",
        "prlimit",
        "start-stop-daemon",
        "systemd-run",
        "ssh",
        "scp",
        "sftp",
        "tar",
        "bsdtar",
        "gtar",
        "rsync",
        "zip",
        "wget",
        "git",
        "man",
        "sed",
        "gsed",
        "make",
        "gmake",
        "bmake",
        "gdb",
        "lldb",
        "cgdb",
        "socat",
        "nc",
        "ncat",
        "netcat",
        "hash",
        "fc",
        "history",
        "set",
        "sqlite3",
        "sqlite",
        "enable",
        "mapfile",
        "readarray",
        "crontab",
        "complete",
        "compgen",
        "expect",
        "newgrp",
    }
    | _SIMPLE_RUNNERS
    | _EMACS
    | {"split"}
    | _VIM
    | _PAGERS
    | AWK_LIKE
)
