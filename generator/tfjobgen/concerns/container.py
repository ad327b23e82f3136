"""The training container: image, command, ports, and a restricted security context.

Commands are argument lists handed to the container runtime as they are:
tfjobgen never builds a shell string, and refuses intents that ask a shell to
run text (`sh -c "..."`), which is how a typo or a pasted value turns into
command injection.
"""

from __future__ import annotations

import re

from ..inputs import image_reference
from ..inputs.problems import WARNING, Problem
from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob
from ..shared import contract
from .names import Naming

# The kubelet asks the registry at every pod start: a copy cached on the node is never run without
# the pod's pull credentials being checked, and a moved tag is noticed. Layers already on the node are
# not downloaded again, so a restart costs one manifest request (checkov CKV_K8S_15).
PULL_POLICY = "Always"
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash"}
# Options that take the next argument as their value: env's (GNU coreutils, busybox), and a shell's (-o pipefail,
# bash's -O shopt and its long ones): the value is not where a script or -c could be.
_ENV_VALUED = {"-u", "--unset", "-C", "--chdir"}
_SHELL_VALUED = {"--rcfile", "--init-file"}
_SHELL_SYNTAX = re.compile(r"[;&|`$<>(){}\n*?~]|\s")


def shell_string(argv: list[str]) -> tuple[list[str], bool]:
    """The words of `argv` up to the one that makes a shell run a string of code (`bash -xc`, `env sh -c`,
    `busybox ash -c`), or env split a string into a command line (`env -S '...'`: True), and which of the two;
    [] when it runs a program or a script file. A shell is known by its program's name, wherever it lives
    (/bin/bash); its -c may be in a cluster of flags (-xc, -ec, -lc); a -c after the script's name is the
    script's own argument."""
    i = 0
    while i < len(argv) and _program(argv[i]) == "env":  # env [OPTION]... [NAME=VALUE]... PROGRAM [ARG]...
        i += 1
        while i < len(argv):
            word, short = argv[i], _short_options(argv[i])
            if word == "--":
                i += 1
                break
            if word.startswith("--split-string") or "S" in short:
                return argv[:i + 1], True  # env -S splits its argument into words itself, as a shell would
            if word in _ENV_VALUED or short[-1:] in ("u", "C") and len(short) > 1:
                i += 2  # -u NAME, -C DIR (a value joined to its option, -uHOME, is one word)
            elif word.startswith("-") or "=" in word[1:]:
                i += 1
            else:
                break
    if i < len(argv) and _program(argv[i]) == "busybox":  # busybox APPLET [ARG]...
        i += 1
    if i >= len(argv) or _program(argv[i]) not in _SHELLS:
        return [], False
    j = i + 1
    while j < len(argv):  # the shell's options, up to its script's name (or --)
        word = argv[j]
        if word == "--" or word[:1] not in ("-", "+") or word in ("-", "+"):
            return [], False
        short = _short_options(word) or (word[1:] if word[:1] == "+" else "")
        if "c" in _short_options(word):
            return argv[:j + 1], False
        j += 2 if word in _SHELL_VALUED or short[-1:] in ("o", "O") else 1  # -o pipefail: the value follows
    return [], False


def _short_options(word: str) -> str:
    """The letters of a cluster of short options ("-xc" -> "xc"), "" for any other word."""
    return word[1:] if word[:1] == "-" and word[1:2] not in ("", "-") else ""


def _program(word: str) -> str:
    return word.rsplit("/", 1)[-1]


# Linux's MAX_ARG_STRLEN: 32 pages (4 KiB each) for one argv or environment string, its NUL included; execve
# refuses a longer one with E2BIG, and the container never starts (limits.py holds the environment to it).
ARG_STRING_MAX = 32 * 4096


def string_problem(value: str, at: str, env_name: str | None = None) -> Problem | None:
    """What keeps `value` from being one argument of a process (or, with `env_name`, the value of that
    environment variable), None when it can be one: execve takes C strings, each within MAX_ARG_STRLEN."""
    what = "environment variable" if env_name else "argument"
    if "\0" in value:
        return Problem(f"has a NUL character (\\0), which no {what} can hold: the container runtime refuses it "
                       "and the pod never starts", at)
    size = len((f"{env_name}={value}" if env_name else value).encode("utf-8", "surrogatepass")) + 1
    if size > ARG_STRING_MAX:
        shown = f"{env_name}=... is" if env_name else "this argument is"
        kind = "environment string" if env_name else "argument"
        return Problem(f"{shown} {size:,} bytes; Linux refuses one {kind} over {ARG_STRING_MAX:,} bytes "
                       "(MAX_ARG_STRLEN), so no container could start: pass it in a file (a ConfigMap, a volume) "
                       "and give the path", at)
    return None


DOCKER_HUB_OFFICIAL = "library"  # Docker Hub's path for single-name images (ubuntu is library/ubuntu)


def split_reference(reference: str) -> tuple[str, str]:
    """(registry host, the rest) of an image reference, by the Docker reference grammar: the first
    part is a registry only when a '/' follows it and it has a '.' or ':' or is localhost;
    otherwise the image is Docker Hub's ('' here), single names under `library/`."""
    first, slash, rest = reference.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    name = reference.split("@", 1)[0].split(":", 1)[0]
    return "", reference if "/" in name else f"{DOCKER_HUB_OFFICIAL}/{reference}"


def written_image(job: TrainingJob, role: str | None = None) -> str:
    """The image a role's tasks run as the intent writes it: the role's own, else spec.image."""
    own = job.roles[role].image if role is not None else None
    return own or job.image


def image(job: TrainingJob, profile: ClusterProfile, role: str | None = None) -> str:
    """The image reference a role's tasks pull (a role's own when it has one), moved to the profile's
    imageRegistry (on_mirror)."""
    return on_mirror(written_image(job, role), profile)


def on_mirror(reference: str, profile: ClusterProfile) -> str:
    """With the profile's imageRegistry (host[:port][/prefix]), the same repository on that mirror: its registry
    host replaced (Docker Hub's when it names none), path, tag and digest kept, under the mirror's prefix unless
    the path already starts with that prefix's folders (ml/x on harbor/ml: harbor/ml/x, not harbor/ml/ml/x)."""
    mirror = profile.image_registry
    if not mirror or reference.startswith(mirror + "/"):
        return reference
    host, _, prefix = mirror.partition("/")
    path = split_reference(reference)[1]
    return f"{host}/{path}" if prefix and path.startswith(prefix + "/") else f"{mirror}/{path}"


def entry_image(profile: ClusterProfile) -> str:
    """The entrypoint's image (`make images` builds it), of this tfjobgen's version, pulled as the job's image is."""
    from .. import __version__

    return on_mirror(f"{contract.ENTRY_REPOSITORY}:{__version__}", profile)


def wraps(job: TrainingJob) -> bool:
    """True when the pods run a program of your own under the entrypoint (cluster-tools/entry). A role's own
    command needs spec.command (podspec refuses it alone), so spec.command decides for every role."""
    return job.command is not None


def program(job: TrainingJob, role: str | None = None) -> list[str] | None:
    """The program of your own a role's tasks run: the role's own command, else spec.command; None for
    tfjobgen's runtime. A new list each time."""
    own = job.roles[role].command if role is not None else None
    if own is not None:
        return list(own)
    return list(job.command) if job.command is not None else None


def command(job: TrainingJob, role: str | None = None) -> list[str]:
    """The container's command: the runtime's, or `entry -- <program>`: the entrypoint runs the role's program
    (program()) as its child."""
    own = program(job, role)
    if own is None:
        return list(contract.RUNTIME_COMMAND)
    return [contract.ENTRY_PROGRAM, "--", *own]


ENTRY_VOLUME = "tfjobgen-entry"


def entry_init_container(job: TrainingJob, profile: ClusterProfile) -> dict:
    """Copies the entrypoint's static binary into the emptyDir the training container runs it from (the team's
    image needs nothing of tfjobgen). Sized with the pod's other containers (qos.apply)."""
    return {
        "command": [contract.ENTRY_SOURCE, "copy", contract.ENTRY_PROGRAM],
        "image": entry_image(profile),
        "imagePullPolicy": PULL_POLICY,
        "name": contract.ENTRY_CONTAINER,
        "securityContext": {**security_context(job), "readOnlyRootFilesystem": True},
        "volumeMounts": [{"mountPath": contract.ENTRY_DIR, "name": ENTRY_VOLUME}],
    }


def args(job: TrainingJob, role: str | None = None) -> list[str]:
    """The arguments after a role's command: the role's own, else spec.args."""
    own = job.roles[role].args if role is not None else None
    return list(own if own is not None else job.args)


def ports(job: TrainingJob, profile: ClusterProfile, naming: Naming) -> list[dict]:
    """Container ports other tasks connect to (what the NetworkPolicy opens to the job's own pods)."""
    result = [{"containerPort": profile.grpc_port, "name": naming.grpc_port_name, "protocol": "TCP"}]
    if job.uses_star_server:
        result.append({"containerPort": profile.seastar_port, "name": "seastar", "protocol": "TCP"})
    result.append({"containerPort": profile.control_port, "name": "control", "protocol": "TCP"})  # runtime or entry
    return result


def metrics_port(profile: ClusterProfile) -> dict:
    """The port Prometheus scrapes: only the monitoring namespace reaches it (backends/common.py)."""
    return {"containerPort": profile.metrics_port, "name": contract.METRICS_PORT_NAME, "protocol": "TCP"}


def security_context(job: TrainingJob) -> dict:
    """Pod Security Standards, restricted profile."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": job.read_only_root_filesystem,
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_security_context(profile: ClusterProfile) -> dict:
    return {
        "fsGroup": profile.fs_group,
        "runAsGroup": profile.run_as_group,
        "runAsNonRoot": True,
        "runAsUser": profile.run_as_user,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def check(job: TrainingJob) -> list[Problem]:
    problems = _training_ignored(job) + _check_image(job.image) + _check_strings(job) + _check_shell(job)
    for role in job.roles.values():
        if role.image is not None:
            problems += _check_image(role.image, at=f"spec.roles.{role.name}.image")
        if role.command is not None and job.command is None:
            problems.append(Problem(
                f"the {role.name} would run its own program while the other roles run tfjobgen's runtime, whose "
                "chief steers every task: set spec.command (the program of the roles without one), or remove "
                "this command", f"spec.roles.{role.name}.command"))
    return problems


def _training_ignored(job: TrainingJob) -> list[Problem]:
    """spec.training written beside spec.command: it configures a runtime that does not run."""
    if job.command is None or "training" not in job.written:
        return []
    return [Problem("spec.training configures tfjobgen's own runtime, which does not run when spec.command is set: "
                    "your program gets none of it (only startupTimeoutSeconds is used: twice it is how long the "
                    "entrypoint your program runs under waits for an absent chief); remove spec.training, or remove "
                    "spec.command to run the runtime",
                    "spec.training", severity=WARNING)]


def _check_image(reference: str, mirror: str = "", at: str = "spec.image") -> list[Problem]:
    wrong = image_reference.reference_problem(reference)
    if not wrong:
        return []
    where = f" ({at} on the profile's mirror {mirror})" if mirror else ""
    return [Problem(f"'{reference}'{where} is not an image reference the kubelet can pull: {wrong}", at)]


def check_image(job: TrainingJob, profile: ClusterProfile) -> list[Problem]:
    """The references pods really get: on the profile's mirror, each must still parse (and fit 255 characters)."""
    problems = []
    for role, at in [(None, "spec.image")] + [(r.name, f"spec.roles.{r.name}.image") for r in job.roles.values()
                                              if r.image is not None]:
        written, mirrored = written_image(job, role), image(job, profile, role)
        if mirrored != written and not image_reference.reference_problem(written):  # the latter said by check
            problems += _check_image(mirrored, profile.image_registry, at)
    return problems


def _check_strings(job: TrainingJob) -> list[Problem]:
    """Every string execve gets as it is written: the command line, env values, the Hadoop paths."""
    lines = [("spec", job.command or (), job.args)] + [(f"spec.roles.{r.name}", r.command or (), r.args or ())
                                                       for r in job.roles.values()]
    found = [string_problem(value, f"{at}.{key}[{i}]") for at, command_line, arguments in lines
             for key, values in (("command", command_line), ("args", arguments)) for i, value in enumerate(values)]
    lists = [("spec.env", job.env)] + [(f"spec.roles.{role.name}.env", role.env) for role in job.roles.values()]
    found += [string_problem(entry["value"], f"{where}[{i}].value", entry["name"])
              for where, entries in lists for i, entry in enumerate(entries) if "value" in entry]
    if job.hadoop is not None:  # HADOOP_HOME, JAVA_HOME, and both in LD_LIBRARY_PATH
        found += [string_problem(value, f"spec.hadoop.{key}", "LD_LIBRARY_PATH")
                  for key, value in (("home", job.hadoop.home), ("javaHome", job.hadoop.java_home))]
        found += [string_problem(job.hadoop.user or "", "spec.hadoop.user", "HADOOP_USER_NAME")]
    return [problem for problem in found if problem]


def _check_shell(job: TrainingJob) -> list[Problem]:
    """Each command line a role runs (its own command or spec.command, its own args or spec.args), said once
    at the field that wrote its command."""
    if job.command is None:
        return []
    problems, seen = [], set()
    for role in job.roles.values():
        at = f"spec.roles.{role.name}.command" if role.command is not None else "spec.command"
        line = (program(job, role.name), args(job, role.name))
        if (at, str(line)) not in seen and not (at == "spec.command" and any(p.field.startswith(at) for p in problems)):
            seen.add((at, str(line)))
            problems += _shell_problems(*line, at)
    return problems


def _shell_problems(program: list[str], arguments: list[str], at: str) -> list[Problem]:
    words, split = shell_string(program + arguments)
    if split:
        return [Problem(
            f"'{' '.join(words)}' runs its argument as a command line, split as a shell splits it; tfjobgen only "
            "runs argument lists: write the program and its arguments as list items, e.g. [python, train.py, "
            "--steps, '100']", at)]
    if words:
        return [Problem(
            f"'{' '.join(words)}' runs its argument as shell code; tfjobgen only runs argument lists: "
            "write the program and its arguments as list items, e.g. [python, train.py, --steps, '100']", at)]
    if _SHELL_SYNTAX.search(program[0]):
        split = program[0].split()
        return [Problem(
            f"'{program[0]}' looks like a shell command line, but it is run as one program name: "
            f"split it into list items, e.g. {split + program[1:]}", f"{at}[0]")]
    return []
