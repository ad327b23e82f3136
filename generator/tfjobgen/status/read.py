"""Reading jobs from a cluster: the I/O at the edge of `tfjobgen status`.

Everything is read with plain GETs by path (no discovery: a kind the cluster does not serve is a
404, and simply absent), as JSON dicts, and handed to derive.py as a Snapshot. What a job is made of:

    the carrier     its TFJob, else its JobSet, else its batch/v1 Jobs (native): the objects labelled
                    tfjobgen.dev/job=NAME (a JobSet's child Jobs carry the label too, and are read
                    as `jobs`, not as carriers)
    pods            every pod labelled as the job's, whatever its phase (failed pods of a Job stay)
    events          of the namespace, those about the job's objects (the scheduler's FailedScheduling,
                    the training-operator's ExitedWithCode, the Job controller's PodFailurePolicy)
    gang            Kueue's Workload of the carrier, the PodGroup named as the job
    nodes           how many (the spread rule needs it), and other jobs' pods (the colocated rule)
    metrics         the chief's and each PS's /metrics, through the API server's pod proxy

Errors a person can act on come out as StatusError, one line each; a part that cannot be read
(nodes one may not list, metrics behind a proxy one may not use) is a note, not an error.
"""

from __future__ import annotations

import datetime
import json
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, TypeVar
from urllib.parse import quote

from ..backends import jobset, native, tfjob
from ..concerns import gang, gang_schedulers, labels
from ..shared import contract

REQUEST_TIMEOUT = 15.0  # seconds for one API request (each wait for bytes: a server may trickle them)
METRICS_TIMEOUT = 3.0  # seconds for one task's metrics through the pod proxy
METRICS_DEADLINE = 10.0  # seconds for every task's metrics together, however slowly the bytes come
READ_DEADLINE = 60.0  # seconds for one read of a job, or of the list, in all (`status --timeout`)
KUEUE_APIS = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")  # the first one served is read
# Kinds as (apiVersion, plural, kind): a list's items come without apiVersion and kind, which decode reads.
TFJOBS = (tfjob.API_VERSION, "tfjobs", tfjob.KIND)
JOBSETS = (jobset.API_VERSION, "jobsets", jobset.KIND)
JOBS = ("batch/v1", "jobs", "Job")
PODS = ("v1", "pods", "Pod")
CONFIG_MAPS = ("v1", "configmaps", "ConfigMap")
EVENTS = ("v1", "events", "Event")
NODES = ("v1", "nodes", "Node")
# The PodGroups whose pods name them by an annotation or a label (Volcano's, the coscheduling plugin's).
NAMED_BY_POD = [row for row in gang_schedulers.SCHEDULERS.values() if row.group_annotation or row.group_label]
POD_GROUPS = tuple((row.pod_group, "podgroups", "PodGroup") for row in NAMED_BY_POD)
T = TypeVar("T")


class StatusError(Exception):
    """One line for the user: the cluster unreachable, no such job, not allowed."""


class DeadlinePassed(BaseException):
    """The read's total deadline passed. A BaseException, as KeyboardInterrupt is: no `except Exception` on the
    way (the Kubernetes client's, urllib3's) may take it for a failed request and carry on."""


def bounded(seconds: float, read: Callable[[], T], server: Callable[[], str] = lambda: "") -> T:
    """read(), or StatusError once `seconds` passed in all. A request's own timeout bounds each wait for bytes,
    not the request: a server that sends a byte a second never trips it. The deadline is SIGALRM's, so it only
    holds in the main thread (where the command runs); elsewhere read() runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        return read()

    def expire(signum, frame):
        raise DeadlinePassed()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return read()
    except DeadlinePassed:
        where = server()
        raise StatusError(f"{'the cluster at ' + where if where else 'the cluster'} did not answer in {seconds:g} s "
                          "(--timeout SECONDS gives it longer)") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Scrape:
    """One task's metrics: the exposition text, or why it could not be had."""

    pod: str
    text: str = ""
    error: str = ""


@dataclass
class Snapshot:
    """One job as the cluster has it now: plain JSON objects."""

    namespace: str
    name: str
    backend: str  # native | jobset | tfjob
    carriers: list[dict]  # the TFJob, the JobSet, or the batch/v1 Jobs
    jobs: list[dict]  # batch/v1 Jobs of the job (native's own, a JobSet's children)
    config_maps: list[dict]
    pods: list[dict]
    events: list[dict] = field(default_factory=list)
    workloads: list[dict] = field(default_factory=list)  # Kueue's, owned by a carrier
    pod_groups: list[dict] = field(default_factory=list)
    neighbours: list[dict] = field(default_factory=list)  # other tfjobgen jobs' live pods (colocated)
    node_count: int | None = None  # None: not readable
    metrics: dict[str, Scrape] = field(default_factory=dict)  # task -> its scrape
    notes: list[str] = field(default_factory=list)  # what could not be read, and why
    read_at: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _path(kind: tuple[str, str, str], namespace: str | None, name: str = "") -> str:
    api_version, plural, _ = kind
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{base}{scope}/{plural}" + (f"/{name}" if name else "")


def _status_of(err) -> int:
    return int(getattr(err, "status", 0) or 0)


def _message(err) -> str:
    """The API server's own sentence for a refused request (its Status message), else the HTTP reason."""
    body = getattr(err, "body", None) or getattr(err, "data", None) or b""
    try:
        message = json.loads(body).get("message", "")
    except (ValueError, TypeError, AttributeError):
        message = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
    message = " ".join(str(message).split())
    return message or f"HTTP {_status_of(err)} {getattr(err, 'reason', '') or ''}".strip()


class Reader:
    """A connection to one cluster, and the reads `tfjobgen status` makes of it."""

    def __init__(self, kubeconfig: str | None = None, context: str | None = None):
        from ..kube import api

        try:
            client = api.connect(kubeconfig, context, retries=1)
        except api.ClusterUnreachable as err:
            raise StatusError(str(err)) from None
        self.objects = api.Objects(client)
        self.server = client.configuration.host
        self.context = context
        self.default_namespace = _context_namespace(kubeconfig, context)

    # ---- requests ----------------------------------------------------------------------------

    def _get(self, path: str, query: dict | None = None, timeout: float = REQUEST_TIMEOUT) -> dict | None:
        """The JSON at `path`; None when the cluster serves no such thing (404)."""
        from kubernetes.client.exceptions import ApiException

        try:
            body = self.objects.get_raw(path, query, timeout=timeout, accept="application/json")
        except ApiException as err:
            status = _status_of(err)
            if status == 404:
                return None
            if status == 401:
                raise StatusError(f"the cluster at {self.server} did not accept the kubeconfig's credentials "
                                  f"(401 Unauthorized)") from None
            if status == 403:
                raise StatusError(f"not allowed: {_message(err)}") from None
            if status == 0:  # the client's own failure (TLS)
                raise StatusError(f"cannot reach the cluster at {self.server}: {_message(err)}") from None
            raise StatusError(f"the cluster at {self.server} answered {path}: {_message(err)}") from None
        except Exception as err:  # urllib3's connection errors, timeouts
            if type(err).__module__.startswith(("urllib3", "socket", "ssl")) or isinstance(err, OSError):
                raise StatusError(f"cannot reach the cluster at {self.server}: {_reach_error(err)}") from None
            raise
        return self._decoded(path, body)

    def _decoded(self, path: str, body: bytes) -> dict:
        """A 2xx answer as the API server gives it: one JSON object (a list's `items` a list of objects). Anything
        else (a web page, a proxy's login form) means the server is not a Kubernetes API server."""
        try:
            found = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            found = None
            shape = f"something that is not JSON ({_start_of(body)})"
        else:
            shape = f"JSON {type(found).__name__}, not an object"
        if isinstance(found, dict):
            items = found.get("items", [])
            if isinstance(items, list) and all(isinstance(i, dict) and isinstance(i.get("metadata", {}), dict)
                                               for i in items):
                return found
            shape = "JSON whose items are not a list of objects"
        raise StatusError(f"the server at {self.server} answered {path} with {shape}: is it a Kubernetes API server? "
                          "(the kubeconfig's cluster.server names it)")

    def list(self, kind: tuple[str, str, str], namespace: str | None, selector: str = "",
             field_selector: str = "") -> list[dict] | None:
        """The items of a kind (None when the cluster does not serve it)."""
        query = {k: v for k, v in (("labelSelector", selector), ("fieldSelector", field_selector)) if v}
        found = self._get(_path(kind, namespace), query)
        if found is None:
            return None
        return [{"apiVersion": kind[0], "kind": kind[2], **item} for item in found.get("items") or []]

    def _optional(self, what: str, read, notes: list[str]):
        """read(), or None with a note when it is not allowed (one may see a job without seeing the nodes)."""
        try:
            return read()
        except StatusError as err:
            if str(err).startswith("not allowed"):
                notes.append(f"{what}: {err}")
                return None
            raise

    # ---- one job -----------------------------------------------------------------------------

    def job(self, namespace: str, name: str, metrics: bool = True) -> Snapshot:
        selector = f"{labels.JOB}={name}"
        carriers_by_kind = {kind: self.list(kind, namespace, selector) or [] for kind in (TFJOBS, JOBSETS, JOBS)}
        snapshot = _assemble(namespace, name, carriers_by_kind)
        if snapshot is None:
            raise StatusError(self._not_found(namespace, name))
        snapshot.pods = self.list(PODS, namespace, selector) or []
        snapshot.config_maps = self.list(CONFIG_MAPS, namespace, selector) or []
        snapshot.workloads = self._workloads(snapshot)
        snapshot.pod_groups = self._pod_groups(snapshot)
        snapshot.events = _about(self.list(EVENTS, namespace) or [], snapshot)
        nodes = self._optional("nodes", lambda: self.list(NODES, None), snapshot.notes)
        snapshot.node_count = None if nodes is None else len(nodes)
        if any(p["metadata"].get("annotations", {}).get(labels.TOPOLOGY) == "colocated" for p in snapshot.pods):
            snapshot.neighbours = self._neighbours(snapshot)
        if metrics:
            snapshot.metrics = self.metrics(snapshot)
        return snapshot

    def _not_found(self, namespace: str, name: str) -> str:
        present = sorted({(o["metadata"].get("labels") or {}).get(labels.JOB, "")
                          for kind in (TFJOBS, JOBSETS, JOBS) for o in self.list(kind, namespace, labels.JOB) or []})
        there = f"; jobs there: {', '.join(present)}" if present else "; it has none"
        return (f"no job {name!r} in namespace {namespace!r} (no TFJob, JobSet or Job labelled "
                f"{labels.JOB}={name}){there}")

    def _workloads(self, snapshot: Snapshot) -> list[dict]:
        """Kueue's Workloads of the carriers (Kueue names them itself; they are found by owner)."""
        if not any(gang.KUEUE_QUEUE_LABEL in (c["metadata"].get("labels") or {}) for c in snapshot.carriers):
            return []
        owners = {c["metadata"].get("uid") for c in snapshot.carriers}
        for api_version in KUEUE_APIS:
            found = self._optional("Kueue workloads", lambda: self.list((api_version, "workloads", "Workload"),
                                                                        snapshot.namespace), snapshot.notes)
            if found is not None:
                return [w for w in found if any(o.get("uid") in owners
                                                for o in w["metadata"].get("ownerReferences") or [])]
        return []

    def _pod_groups(self, snapshot: Snapshot) -> list[dict]:
        """The PodGroup named as the job, when its pods (or its TFJob) ask for a gang scheduler."""
        asks = any(row.group_annotation in (p["metadata"].get("annotations") or {})
                   or row.group_label in (p["metadata"].get("labels") or {}) for p in snapshot.pods for row in NAMED_BY_POD)
        asks = asks or any((c.get("spec") or {}).get("runPolicy", {}).get("schedulingPolicy")
                           for c in snapshot.carriers)
        if not asks:
            return []
        found = []
        for kind in POD_GROUPS:
            group = self._optional("PodGroups", lambda: self._get(_path(kind, snapshot.namespace, snapshot.name)),
                                   snapshot.notes)
            if group:
                found.append(group)
        return found

    def _neighbours(self, snapshot: Snapshot) -> list[dict]:
        """Live pods of every tfjobgen job (colocated promises nothing else on a group's servers)."""
        live = "status.phase!=Succeeded,status.phase!=Failed"
        found = self._optional("other jobs' pods", lambda: self.list(PODS, None, labels.JOB, live), snapshot.notes)
        if found is None:
            found = self.list(PODS, snapshot.namespace, labels.JOB, live) or []
        return [p for p in found if (p["metadata"].get("labels") or {}).get(labels.JOB) != snapshot.name
                or p["metadata"].get("namespace") != snapshot.namespace]

    def metrics(self, snapshot: Snapshot) -> dict[str, Scrape]:
        """Each PS's and the chief's metrics, through the API server's pod proxy, all at once."""
        from ..concerns import promises

        targets = {}
        for pod in snapshot.pods:
            task = promises.task_of(pod)
            port = _metrics_port(pod)
            if port and pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp") \
                    and (task.role == "ps" or task.name in _chiefs(snapshot.pods)):
                targets[task.name] = (pod["metadata"]["name"], port)
        if not targets:
            return {}
        # Daemon threads, 8 at a time, waited for METRICS_DEADLINE in all: a proxy that trickles bytes holds a
        # thread (each wait has its own timeout, the whole answer none), and an executor's threads would hold
        # the process's exit too.
        scrapes: dict[str, Scrape] = {}
        slots = threading.Semaphore(8)

        def scrape(task: str, pod: str, port: int) -> None:
            with slots:
                scrapes[task] = self._scrape(snapshot.namespace, pod, port)

        threads = [threading.Thread(target=scrape, args=(task, *target), daemon=True)
                   for task, target in targets.items()]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + METRICS_DEADLINE
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        for task, (pod, _) in targets.items():
            if task not in scrapes:
                scrapes[task] = Scrape(pod, error=f"no answer through the pod proxy in {METRICS_DEADLINE:g} s")
        return dict(sorted(dict(scrapes).items(), key=lambda item: task_order(item[0])))

    def _scrape(self, namespace: str, pod: str, port: int) -> Scrape:
        from kubernetes.client.exceptions import ApiException

        path = f"/api/v1/namespaces/{namespace}/pods/{quote(pod)}:{port}/proxy{contract.METRICS_PATH}"
        try:
            body = self.objects.get_raw(path, timeout=METRICS_TIMEOUT, accept="text/plain")
        except ApiException as err:
            proxied = _proxy_error(err, pod)
        except Exception as err:  # a timeout through the proxy, a connection that broke
            proxied = _reach_error(err)
        else:
            return Scrape(pod, text=body.decode("utf-8", errors="replace"))
        # The job's NetworkPolicy admits the metrics port only from the monitoring namespace, so on a network
        # that enforces it the proxy is refused (or dropped); a forwarded port enters the pod's own network instead.
        if not any(word in proxied.lower() for word in ("refused", "timed out", "timeout")):
            return Scrape(pod, error=proxied)
        try:
            return Scrape(pod, text=self._forwarded(namespace, pod, port).decode("utf-8", errors="replace"))
        except Exception as err:  # not allowed (pods/portforward), or no kubelet to forward (KWOK)
            return Scrape(pod, error=proxied if "not allowed" in proxied or not _said(err) else
                          f"{proxied}; port-forward: {_said(err)}")

    def _forwarded(self, namespace: str, pod: str, port: int) -> bytes:
        """GET /metrics through `pods/portforward` (the kubelet connects inside the pod's network namespace)."""
        from kubernetes import client
        from kubernetes.stream import portforward

        core = client.CoreV1Api(self.objects.api_client)
        forward = portforward(core.connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port),
                              _request_timeout=METRICS_TIMEOUT)
        try:
            channel = forward.socket(port)
            channel.settimeout(METRICS_TIMEOUT)
            channel.sendall(f"GET {contract.METRICS_PATH} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
            answer = b""
            while chunk := channel.recv(1 << 16):
                answer += chunk
            channel.close()
        finally:
            forward.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0].decode("latin-1", errors="replace")
        if " 200 " not in f"{status} ":
            raise OSError(f"answered {status or 'nothing'}")
        return body

    # ---- every job of a namespace ------------------------------------------------------------

    def all_jobs(self, namespace: str | None) -> list[Snapshot]:
        """Every tfjobgen job of a namespace (None: of every namespace), read in one list per kind."""
        carriers = {kind: self.list(kind, namespace, labels.JOB) or [] for kind in (TFJOBS, JOBSETS, JOBS)}
        keys = sorted({(o["metadata"]["namespace"], o["metadata"]["labels"][labels.JOB])
                       for found in carriers.values() for o in found})
        if not keys:
            return []
        pods = self.list(PODS, namespace, labels.JOB) or []
        found = []
        for job_namespace, name in keys:
            mine = {kind: [o for o in objects if _belongs(o, job_namespace, name)] for kind, objects in carriers.items()}
            snapshot = _assemble(job_namespace, name, mine)
            if snapshot is not None:
                snapshot.pods = [p for p in pods if _belongs(p, job_namespace, name)]
                found.append(snapshot)
        return found


def task_order(task: str) -> tuple[int, int]:
    """"role:index" in the order tables list tasks (contract.TABLE_ROLES, then the index as a number)."""
    role, _, index = task.partition(":")
    rank = contract.TABLE_ROLES.index(role) if role in contract.TABLE_ROLES else len(contract.TABLE_ROLES)
    return rank, int(index) if index.isdigit() else 0


def _belongs(obj: dict, namespace: str, name: str) -> bool:
    meta = obj["metadata"]
    return meta.get("namespace") == namespace and (meta.get("labels") or {}).get(labels.JOB) == name


def _assemble(namespace: str, name: str, carriers: dict) -> Snapshot | None:
    """A snapshot of a job's carriers (None when there are none): a TFJob, else a JobSet, else Jobs
    that no JobSet owns."""
    jobs = carriers[JOBS]
    own_jobs = [j for j in jobs if not any(o.get("kind") == jobset.KIND for o in j["metadata"].get("ownerReferences") or [])]
    if carriers[TFJOBS]:
        return Snapshot(namespace, name, tfjob.NAME, carriers[TFJOBS], [], [], [])
    if carriers[JOBSETS]:
        return Snapshot(namespace, name, jobset.NAME, carriers[JOBSETS], jobs, [], [])
    if own_jobs:
        return Snapshot(namespace, name, native.NAME, own_jobs, own_jobs, [], [])
    return None


def _about(events: list[dict], snapshot: Snapshot) -> list[dict]:
    """The events about the job's pods (by uid: a name can come back), carriers, Jobs, Workloads."""
    uids = {p["metadata"].get("uid") for p in snapshot.pods}
    names = {(o.get("kind"), o["metadata"]["name"])
             for o in snapshot.carriers + snapshot.jobs + snapshot.workloads + snapshot.pod_groups}
    found = []
    for event in events:
        involved = event.get("involvedObject") or {}
        if involved.get("uid") in uids or (involved.get("kind"), involved.get("name")) in names:
            found.append(event)
    return sorted(found, key=event_time)


def event_time(event: dict) -> str:
    """When an event last happened (core/v1 events fill one of these, events.k8s.io/v1 ones another)."""
    series = event.get("series") or {}
    return (series.get("lastObservedTime") or event.get("lastTimestamp") or event.get("eventTime")
            or event.get("firstTimestamp") or (event.get("metadata") or {}).get("creationTimestamp") or "")


def _metrics_port(pod: dict) -> int | None:
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == contract.METRICS_PORT_NAME:
                return int(port["containerPort"])
    return None


def _chiefs(pods: list[dict]) -> set[str]:
    """The task that drives the global step: the chief, else worker 0 (it serves the job's counters)."""
    from ..concerns import promises

    roles = {promises.task_of(p).role for p in pods}
    return {"chief:0"} if "chief" in roles else {"worker:0"}


def _said(err: Exception) -> str:
    """An error in one line, without the client's HTTP dump."""
    return " ".join(str(getattr(err, "reason", None) or err).split())[:200]


def _proxy_error(err, pod: str) -> str:
    """Why the pod proxy gave no metrics, the same words for every pod (so that they group)."""
    status, message = _status_of(err), _message(err)
    if status == 403:
        return f"not allowed to use the API server's pod proxy ({message})"
    inner = message.split("error trying to reach service: ", 1)[-1]
    inner = re.sub(r"^proxy error from \S+ while dialing \S+, code \d+: \d+ ", "", inner)
    inner = re.sub(r"\b\d{1,3}(\.\d{1,3}){3}:\d+\b", "its address", inner.replace(pod, "the pod"))
    return f"the API server's pod proxy reached nothing: {inner}" if "error trying to reach" in message \
        else f"HTTP {status}: {inner}"


def _start_of(body: bytes) -> str:
    """How an answer begins, in a few escaped characters: enough to tell a web page from an empty answer."""
    if not body:
        return "an empty answer"
    shown = body[:40].decode("utf-8", errors="replace")
    return f"it begins {shown!r}" + ("..." if len(body) > 40 else "")


def _reach_error(err: Exception) -> str:
    """A connection error in a few words (urllib3 nests the cause several levels deep)."""
    reason = getattr(err, "reason", None) or err
    text = str(reason)
    for marker in ("Connection refused", "timed out", "Name or service not known", "No route to host",
                   "certificate verify failed", "Connection reset"):
        if marker in text:
            return marker.lower() if marker != "certificate verify failed" else "its certificate is not trusted"
    return " ".join(text.split())[:200]


def _context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace of the kubeconfig's context, as kubectl defaults to it ("default" when it names none)."""
    try:
        from kubernetes import config

        contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)
        chosen = next((c for c in contexts if c["name"] == context), current) if context else current
        return (chosen or {}).get("context", {}).get("namespace") or "default"
    except Exception:  # the kubeconfig was read once already by connect(); a namespace is only a default
        return "default"
