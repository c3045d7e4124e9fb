"""Programs that run another program: npx, uv run, poetry run, docker exec, kubectl exec, systemd-run..."""

from __future__ import annotations

from codingcode.shell.model import Command
from codingcode.shell.programs.common import Part, split_opts, ws

# -- runners: a command line after some options -----------------------------------------
_UV_OPTS = ws(
    "--with --with-requirements --with-editable -p --python --project --directory "
    "--env-file --package --extra --group --only-group --index --default-index "
    "-i --index-url --extra-index-url -f --find-links --config-file --cache-dir -C "
    "--config-setting --exclude-newer --prerelease --resolution --link-mode --script"
)


_DOCKER_EXEC_OPTS = ws("-e --env --env-file -u --user -w --workdir --detach-keys")


_DOCKER_RUN_OPTS = ws(
    "-e --env --env-file -u --user -w --workdir -v --volume -p --publish --name --network "
    "--net -m --memory --cpus --entrypoint --mount -l --label --hostname -h --add-host "
    "--device --cap-add --cap-drop --security-opt --platform --pull --restart --runtime "
    "--tmpfs --ulimit --shm-size --ipc --pid --uts --userns --cgroupns --log-driver "
    "--log-opt --dns --expose --group-add --gpus --init-path --label-file --memory-swap "
    "--stop-signal --stop-timeout --volumes-from --cidfile --workdir"
)


_KUBECTL_OPTS = ws("-c --container -n --namespace --context --kubeconfig -f --filename")


_NPX_OPTS = ws("-p --package --registry --cache --userconfig --prefix -w --workspace")


_PRLIMIT_OPTS = ws("-p --pid -o --output")


_SSD_OPTS = ws(
    "-x --exec -a --startas -n --name -p --pidfile -u --user -c --chuid -g --group "
    "-r --chroot -d --chdir -N --nicelevel -P --procsched -I --iosched -k --umask "
    "-s --signal -R --retry --notify-timeout --output -O"
)


SIMPLE_RUNNERS = frozenset(
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


def runner_parts(cmd: Command) -> list[Part] | None:
    prog = cmd.program or ""
    rest = list(cmd.argv[1:])
    texts = [w.text for w in rest]
    if prog in ("npx", "bunx", "pnpx"):
        opts, inner = split_opts(rest, _NPX_OPTS | ws("-c --call"))
        calls = opts.get("-c", []) + opts.get("--call", [])
        if calls:
            return [("script", w) for w in calls]
        return [("argv", inner)] if inner else []
    if prog in ("npm", "pnpm", "yarn") and texts[:1] in (["exec"], ["dlx"], ["x"]):
        opts, inner = split_opts(rest[1:], _NPX_OPTS | ws("-c --call"))
        calls = opts.get("-c", []) + opts.get("--call", [])
        return [("script", w) for w in calls] or ([("argv", inner)] if inner else [])
    if (
        prog == "uvx"
        or (prog == "uv" and texts[:1] == ["run"])
        or (prog == "uv" and texts[:2] == ["tool", "run"])
    ):
        start = 0 if prog == "uvx" else (1 if texts[:1] == ["run"] else 2)
        _, inner = split_opts(rest[start:], _UV_OPTS)
        return [("argv", inner)] if inner else []
    if prog in ("poetry", "pdm", "hatch", "rye", "pipenv") and texts[:1] == ["run"]:
        _, inner = split_opts(rest[1:], ws("-e --env -C --directory -P --project"))
        return [("argv", inner)] if inner else []
    if prog == "pipx" and texts[:1] == ["run"]:
        _, inner = split_opts(rest[1:], ws("--spec --python --index-url --pip-args"))
        return [("argv", inner)] if inner else []
    if prog == "conda" and texts[:1] == ["run"]:
        _, inner = split_opts(rest[1:], ws("-n --name -p --prefix --cwd"))
        return [("argv", inner)] if inner else []
    if prog in ("docker", "podman", "nerdctl") and texts[:1] in (["exec"], ["run"]):
        with_arg = _DOCKER_EXEC_OPTS if texts[0] == "exec" else _DOCKER_RUN_OPTS
        opts, after = split_opts(rest[1:], with_arg)
        inner = after[1:]  # the container or image first
        parts: list[Part] = [("argv", inner)] if inner else []
        for w in opts.get("--entrypoint", []):
            parts.append(("argv", [w, *inner]))
        return parts
    if prog in ("docker", "podman") and texts[:2] == ["compose", "exec"]:
        _, after = split_opts(rest[2:], _DOCKER_EXEC_OPTS | ws("--index"))
        return [("argv", after[1:])] if len(after) > 1 else []
    if prog in ("kubectl", "oc") and texts[:1] in (["exec"], ["debug"], ["run"]):
        if "--" in texts:
            inner = rest[texts.index("--") + 1 :]
            return [("argv", inner)] if inner else []
        _, after = split_opts(rest[1:], _KUBECTL_OPTS)
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
        opts, inner = split_opts(rest, _PRLIMIT_OPTS)
        return [("argv", inner)] if inner else []
    if prog == "start-stop-daemon":
        opts, _tail = split_opts(rest, _SSD_OPTS)
        progs = opts.get("--startas") or opts.get("-a") or opts.get("--exec") or opts.get("-x")
        args_after = rest[texts.index("--") + 1 :] if "--" in texts else []
        return [("argv", [w, *args_after]) for w in (progs or [])]
    if prog in SIMPLE_RUNNERS:
        _, inner = split_opts(rest, ws("-l -n -s -C -g -m -N -t --what --why --who --mode"))
        if prog == "faketime" and inner:
            inner = inner[1:]
        return [("argv", inner)] if inner else []
    if prog == "systemd-run":
        _, inner = split_opts(
            rest, ws("-u --unit -p --property -E --setenv -d --working-directory --slice")
        )
        return [("argv", inner)] if inner else []
    return None
