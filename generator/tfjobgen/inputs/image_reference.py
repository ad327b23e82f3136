"""Image references as the kubelet and the container runtime parse them: the grammar of
github.com/distribution/reference (regexp.go, normalize.go), which both use.

    reference  := name [ ":" tag ] [ "@" digest ]
    name       := [ domain "/" ] path            at most 255 characters
    domain     := host [ ":" port ]              host: DNS labels joined by '.', or [IPv6]
    path       := component [ "/" component ]*   component: [a-z0-9]+ joined by '.', '_', '__' or '-'s
    tag        := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
    digest     := algorithm ":" hex              sha256 (64 hex), sha384 (96), sha512 (128), lower-case

The first part of a name is its registry only when a '/' follows it and it has a '.' or a ':', is
localhost, or has upper-case letters (normalize.go's splitDockerDomain); otherwise the image is Docker
Hub's. A reference that breaks the grammar passes the API server (a container's image is any string)
and then fails in every pod (InvalidImageName), so the intent's spec.image and the profile's
imageRegistry are judged here. An input rule: it imports nothing.
"""

from __future__ import annotations

import re

NAME_MAX = 255  # distribution/reference's NameTotalLengthMax
_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_DOMAIN_LABEL = re.compile(r"[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]")
_IPV6 = re.compile(r"\[[a-fA-F0-9:]+\]")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_ALGORITHM = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*")
_DIGEST_HEX = {"sha256": 64, "sha384": 96, "sha512": 128}  # the algorithms go-digest knows, and their lengths
_HEX64 = re.compile(r"[a-f0-9]{64}")
PATH_RULE = ("lower-case letters and digits, separated by '.', '_', '__' or '-', with '/' between components, "
             "such as ml/wide-deep")


def is_domain(first: str) -> bool:
    """Whether the part before a name's first '/' is its registry (normalize.go's splitDockerDomain)."""
    return "." in first or ":" in first or first == "localhost" or first.lower() != first


def domain_problem(domain: str) -> str:
    """What keeps `domain` (host and optional port) from being a registry, "" when it is one."""
    host, colon, port = domain.rpartition(":") if not domain.endswith("]") else (domain, "", "")
    if not colon:
        host = domain
    elif not port.isdigit() or not port.isascii():
        return f"the port '{port}' is not a number"
    if _IPV6.fullmatch(host):
        return ""
    if not host:
        return "the host is empty"
    for label in host.split("."):
        if not label:
            return f"the registry '{domain}' has an empty DNS label (two dots, or a dot at an end)"
        if not _DOMAIN_LABEL.fullmatch(label):
            return (f"the registry's DNS label '{label}' is not valid: letters, digits and '-', starting and ending "
                    "with a letter or digit")
    return ""


def path_problem(path: str) -> str:
    """What keeps `path` from being a repository path, "" when it is one."""
    if path.lower() != path:
        return f"the repository path '{path}' has upper-case letters: repositories are {PATH_RULE}"
    for component in path.split("/"):
        if not _PATH_COMPONENT.fullmatch(component):
            shown = f"'{component}'" if component else "an empty component (two '/', or one at an end)"
            return f"the repository path '{path}' has {shown}: a path is {PATH_RULE}"
    return ""


def reference_problem(reference: str) -> str:
    """What keeps `reference` from being an image reference the kubelet can pull, "" when it is one."""
    name, at, digest = reference.partition("@")
    tag = ""
    colon = name.rfind(":")
    if colon > name.rfind("/"):
        name, tag = name[:colon], name[colon + 1:]
        if not _TAG.fullmatch(tag):
            return (f"the tag '{tag}' is not valid: up to 128 ASCII letters, digits, '_', '.' and '-', not starting "
                    "with '.' or '-'")
    if at:
        wrong = digest_problem(digest)
        if wrong:
            return wrong
    if not name:
        return "it names no repository"
    if len(name) > NAME_MAX:
        return f"the name is {len(name)} characters; at most {NAME_MAX}"
    first, slash, rest = name.partition("/")
    if slash and is_domain(first):
        wrong = domain_problem(first)
        if wrong:
            return wrong
        path = rest
    else:
        path = name
    if _HEX64.fullmatch(name):
        return "a name of 64 hexadecimal characters is read as an image ID, not a repository"
    return path_problem(path)


def digest_problem(digest: str) -> str:
    """What keeps `digest` (after '@') from being a content digest, "" when it is one."""
    algorithm, colon, hex_part = digest.partition(":")
    if not colon or not _ALGORITHM.fullmatch(algorithm):
        return f"the digest '{digest}' is not algorithm:hex, such as sha256: and 64 hexadecimal digits"
    if algorithm not in _DIGEST_HEX:
        return f"the digest algorithm '{algorithm}' is not one a registry knows (sha256, sha384, sha512)"
    wanted = _DIGEST_HEX[algorithm]
    if len(hex_part) != wanted or not re.fullmatch(r"[a-f0-9]+", hex_part):
        return (f"the digest '{digest}' is not {algorithm}: and {wanted} lower-case hexadecimal digits "
                f"(it has {len(hex_part)} characters)")
    return ""


def registry_problem(registry: str) -> str:
    """What keeps `registry` (a host, optional port and optional path: a mirror) from being a registry
    prefix of image references, "" when it is one."""
    first, slash, path = registry.partition("/")
    if not is_domain(first):
        return (f"'{first}' would be read as a Docker Hub repository, not a registry: a registry host has a '.' "
                "or a port, or is localhost, such as mirror.example.com")
    wrong = domain_problem(first)
    if not wrong and slash:
        wrong = path_problem(path)
    return wrong
