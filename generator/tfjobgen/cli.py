"""The `tfjobgen` command line.

    tfjobgen validate PATH...     check intents (files or folders); exit 0 valid, 1 invalid, 2 usage
    tfjobgen render PATH...       print the objects, exactly as `kustomize build` would
    tfjobgen schema [NAME]        print a JSON Schema (trainingjob or clusterprofile)
    tfjobgen krm [CONFIG]         the KRM function (kustomize, kpt)
    tfjobgen summary [FILE]       describe rendered objects (from `kustomize build`) as a table
    tfjobgen plugin-home          print the kustomize plugin folder of this install (KUSTOMIZE_PLUGIN_HOME)

Commands of other features (run-local, hydrate, diff, plan, cluster, place, status, images) live beside their code:
each module in FEATURE_COMMANDS has `register(commands)`, which adds its
subparser and imports nothing heavy until the command runs.
"""

from __future__ import annotations

import errno
import io
import os
import sys

from . import __version__
from .shared import contract

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
FEATURE_COMMANDS: tuple[str, ...] = ("tfjobgen.cluster.command", "tfjobgen.place.command", "tfjobgen.gitops.command",
                                     "tfjobgen.artifacts.images.command", "tfjobgen.local.command",
                                     "tfjobgen.planner.command", "tfjobgen.status.command",
                                     "tfjobgen.importer.command")


class _UsageError(Exception):
    pass


def _load_intents(paths: list[str]):
    """Intents of every file, and problems of files that could not be read or parsed."""
    from .expand import pipeline

    try:
        return pipeline.load_given(paths)
    except pipeline.MissingPath as err:
        raise _UsageError(str(err)) from None


def _print_problems(problems) -> None:
    for problem in problems:
        print(problem.format(), file=sys.stderr)


def cmd_validate(args) -> int:
    from pathlib import Path

    from .expand import pipeline
    from .inputs import intents
    from .inputs.problems import has_errors

    found, problems = _load_intents(args.paths)
    problems += pipeline.empty_folders(args.paths, found)
    repository = None if args.profile else _repository_of(args.paths)
    if repository:  # every job against the profile of each cluster it runs on (docs/gitops.md)
        from .gitops import clusters, tree

        overlays = clusters.read(repository)
        jobs = [tree.job_file(intent) for intent in found]
        # What only all the jobs together show (a cluster left without jobs, a destination no job uses) is
        # checked when the paths are the whole of jobs/.
        whole = {Path(p).resolve() for p in args.paths} == {(repository / tree.JOBS).resolve()}
        problems += clusters.validate(repository, found, overlays, whole=whole, projects=True)
        problems += clusters.check(repository, jobs, overlays) if whole else clusters.check_jobs(jobs, overlays)
        against = f"against the profile of each cluster it runs on: {', '.join(c.overlay for c in overlays)}"
    else:
        profile = pipeline.load_profile(args.profile)
        problems += pipeline.expand(found, profile).problems  # exactly what the KRM function checks
        against = f"against {args.profile}" if args.profile else "against the embedded default profile"
    problems += intents.unlisted(args.paths) + intents.missing_listed(args.paths)
    problems = list(dict.fromkeys(problems))
    _print_problems(sorted(problems, key=lambda p: (p.file, p.line, p.field)))
    errors = sum(p.is_error for p in problems)
    print(f"{len(found)} TrainingJob(s) checked: {errors} error(s), {len(problems) - errors} warning(s) ({against})",
          file=sys.stderr)
    return EXIT_INVALID if has_errors(problems) else EXIT_OK


def _repository_of(paths: list[str]):
    """The repository (a folder with jobs/ and overlays/ that hold clusters) the paths are in, if any."""
    from pathlib import Path

    from .gitops import tree

    root = tree.find_root(Path(paths[0]).resolve()) if paths else None
    return root if root is not None and tree.overlay_names(root) else None


def cmd_render(args) -> int:
    from .expand import emit, pipeline

    profile = pipeline.load_profile(args.profile)
    intents, problems = _load_intents(args.paths)
    problems += pipeline.empty_folders(args.paths, intents)
    if any(p.is_error for p in problems):
        _print_problems(problems)
        return EXIT_INVALID
    expansion = pipeline.expand(intents, profile)
    problems += expansion.problems
    _print_problems(problems)
    if any(p.is_error for p in problems):
        return EXIT_INVALID
    objects = expansion.in_order()
    sys.stdout.write(emit.to_json(objects) + "\n" if args.output == "json" else emit.to_yaml(objects))
    return EXIT_OK


def cmd_schema(args) -> int:
    from .inputs import schema

    with open(schema.schema_path(args.name), encoding="utf-8") as handle:
        sys.stdout.write(handle.read())
    return EXIT_OK


def cmd_krm(args) -> int:
    from .expand import krm

    return krm.main(args.config)


def cmd_summary(args) -> int:
    from .expand import summary
    from .inputs import intents, source
    from .inputs.problems import InvalidInput

    name = "<stdin>" if args.file == "-" else args.file
    try:
        text = (source.read_stream(sys.stdin.buffer, name) if args.file == "-"
                else source.read_text(args.file, source.MAX_STREAM_BYTES))
        objects = [d for d in source.parse_stream(text, name) if isinstance(d, dict)]
        unrendered = summary.intents_given(text, name) if any(intents.kind_of(o) != "other" for o in objects) else []
    except InvalidInput as err:
        _print_problems(err.problems)
        return EXIT_INVALID
    if unrendered:
        _print_problems(unrendered)
        return EXIT_INVALID
    summaries = summary.jobs(objects)
    print(summary.table_of(summaries))
    for job in (s for s in summaries if s.unreadable):  # described as far as its objects go
        print(f"{name}: warning: {job.key}: {job.unreadable}", file=sys.stderr)
    return EXIT_OK


def cmd_plugin_home(args) -> int:
    """The folder to set as KUSTOMIZE_PLUGIN_HOME: the plugin this tfjobgen carries (a wheel's copy of plugins/,
    whose script runs the install it sits in), or the checkout's plugins/ (an editable install)."""
    from .shared import package_data

    home = package_data.find("plugins")
    script = os.path.join(home, "tfjobgen.dev", "v1alpha1", "clusterprofile", "ClusterProfile")
    if not os.access(script, os.X_OK):
        print(f"tfjobgen: {script}: the kustomize plugin is missing or not executable; reinstall tfjobgen with pip "
              "(README.md, \"Install\")", file=sys.stderr)
        return EXIT_INVALID
    print(home)
    return EXIT_OK


def _parser():
    import argparse  # not on the KRM function's path (main() skips the parser for `krm`)

    parser = argparse.ArgumentParser(prog="tfjobgen", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"tfjobgen {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser("validate", help="check TrainingJob files against the schema and the profile")
    validate.add_argument("paths", nargs="+", metavar="PATH", help="files, or folders searched for *.yaml")
    validate.add_argument("--profile", metavar="FILE", help="ClusterProfile file (default: the embedded profile)")
    validate.set_defaults(run=cmd_validate)

    render = commands.add_parser("render", help="print the Kubernetes objects the jobs become")
    render.add_argument("paths", nargs="+", metavar="PATH")
    render.add_argument("--profile", metavar="FILE", help="ClusterProfile file (default: the embedded profile)")
    render.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    render.set_defaults(run=cmd_render)

    schema = commands.add_parser("schema", help="print a JSON Schema")
    schema.add_argument("name", nargs="?", default="trainingjob", choices=("trainingjob", "clusterprofile"))
    schema.set_defaults(run=cmd_schema)

    krm = commands.add_parser("krm", help="run as a KRM function (ResourceList on stdin) or kustomize plugin")
    krm.add_argument("config", nargs="*", metavar="CONFIG",
                     help="legacy kustomize plugin: the ClusterProfile file kustomize passes")
    krm.set_defaults(run=cmd_krm)

    summary = commands.add_parser("summary", help="table of what each job became, from rendered objects")
    summary.add_argument("file", nargs="?", default="-", metavar="FILE", help="rendered YAML (default: stdin)")
    summary.set_defaults(run=cmd_summary)

    plugin_home = commands.add_parser("plugin-home", help="print the kustomize plugin folder of this install: "
                                                          "export KUSTOMIZE_PLUGIN_HOME=$(tfjobgen plugin-home)")
    plugin_home.set_defaults(run=cmd_plugin_home)

    import importlib

    for module in FEATURE_COMMANDS:
        importlib.import_module(module).register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    from .inputs.problems import InvalidInput

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["krm"] and not any(a.startswith("-") for a in argv[1:]):
        from .expand import krm  # the hot path inside every kustomize build: skip argparse

        return krm.main(argv[1:])
    args = _parser().parse_args(argv)
    from .kit import owned

    owned.unwind_on_sigterm()  # a killed command still stops its clusters, tasks and containers
    stdout, sys.stdout = sys.stdout, _StandardOutput(sys.stdout)
    try:
        code = args.run(args)
        sys.stdout.flush()  # a full disk or a closed pipe is met here, not at exit
        if isinstance(sys.stdout, _StandardOutput):  # a command may have redirected it, and put it back
            sys.stdout.check_complete()
        return code
    except InvalidInput as err:
        _print_problems(err.problems)
        return EXIT_INVALID
    except _UsageError as err:
        print(f"tfjobgen: {err}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except owned.Terminated:
        return 143
    except KeyboardInterrupt:
        return 130
    except StandardOutputFailed as err:
        from .kit.files import why

        _drop_stdout()
        print(f"tfjobgen: cannot write standard output: {why(err)}", file=sys.stderr)
        return EXIT_INVALID
    except OSError as err:
        if err.errno not in _CANNOT_WRITE or err.filename is not None:
            return _internal_error(err)
        from .kit.files import why

        # A library's write to a file of its own that it did not name (tarfile, shutil): not standard output.
        print(f"tfjobgen: cannot write a file (the system did not say which): {why(err)}", file=sys.stderr)
        return EXIT_INVALID
    except Exception as err:
        return _internal_error(err)
    finally:
        sys.stdout = stdout


class StandardOutputFailed(OSError):
    """A write to standard output failed: a full disk, a file-size limit (not a closed pipe: BrokenPipeError)."""


class _StandardOutput:
    """sys.stdout as the commands write to it, whose failures say they are standard output's: an OSError without
    a file name may come from any file a library writes."""

    def __init__(self, stream):
        self._stream = stream
        self._written = 0  # bytes handed to a regular file, whose growth check_complete compares
        self._start = _file_offset(stream)

    def write(self, text: str) -> int:
        try:
            count = self._stream.write(text)
        except OSError as err:
            raise _said(err) from None
        if self._start is not None:
            self._written += len(text.encode(self._stream.encoding or "utf-8", self._stream.errors or "strict"))
        return count

    def check_complete(self) -> None:
        """Past its file-size limit (RLIMIT_FSIZE) Python's buffered stdout drops what does not fit without an
        error: a regular file that grew less than was written to it is standard output failing."""
        end = _file_offset(self._stream)
        if self._start is not None and end is not None and end - self._start < self._written:
            raise StandardOutputFailed(errno.EFBIG, os.strerror(errno.EFBIG))

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            raise _said(err) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _file_offset(stream) -> int | None:
    """Where writes to `stream` land in the regular file it is (its size when it appends), None for anything else."""
    import stat

    try:
        fd = stream.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.fstat(fd).st_size if _appends(fd) else os.lseek(fd, 0, os.SEEK_CUR)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def _appends(fd: int) -> bool:
    import fcntl

    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND)


def _said(err: OSError) -> OSError:
    return StandardOutputFailed(err.errno, err.strerror) if err.errno in _CANNOT_WRITE else err


def _internal_error(err: Exception) -> int:
    """A bug in tfjobgen: say so in one line (TFJOBGEN_DEBUG=1 shows the traceback)."""
    if os.environ.get(contract.DEBUG_ENV):
        raise err
    print(f"tfjobgen: internal error ({type(err).__name__}: {err}); this is a bug, please report it "
          "with the input (TFJOBGEN_DEBUG=1 shows the traceback)", file=sys.stderr)
    return EXIT_INTERNAL


# Errors of writing standard output (no file name): the place it goes to is full or broken, not tfjobgen.
_CANNOT_WRITE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS}


def _drop_stdout() -> None:
    """What is left in stdout's buffer would fail again when Python flushes it at exit: send it nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


if __name__ == "__main__":
    sys.exit(main())
