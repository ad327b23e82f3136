"""A small model of cluster DNS as a pod sees it, from Kubernetes' documented behaviour.

"DNS for Services and Pods" (kubernetes.io/docs/concepts/services-networking/dns-pod-service):

- the kubelet gives a pod with dnsPolicy ClusterFirst (the default) a resolv.conf with
  `search <namespace>.svc.<domain> svc.<domain> <domain>` and `options ndots:5`;
- a resolver tries a name with fewer dots than ndots with each search domain appended
  first, then as written; a name with ndots dots or more as written first, then with
  the search domains (resolv.conf(5));
- a pod that sets hostname and subdomain has the A record
  `<hostname>.<subdomain>.<namespace>.svc.<domain>` when a headless Service named like
  the subdomain, in its namespace, selects it; while the pod is not ready (TensorFlow
  is still starting), only if the Service sets publishNotReadyAddresses.

- a headless Service has the record `<service>.<namespace>.svc.<domain>` for the pods it
  selects (the TFJob operator's Service per pod is how its TF_CONFIG names resolve), under
  the same readiness rule.

Limits: pods are taken as not ready (the moment TF_CONFIG matters) unless `ready` says
otherwise (a pod without a readiness probe is Ready once its container runs); no Service ClusterIP
or SRV records, no search domains a node adds to the list, no caching. gRPC's resolvers
apply the search list as described (getaddrinfo; c-ares' ares_gethostbyname, see
grpc/grpc#41307), which is what TensorFlow dials with.
"""

from __future__ import annotations

NDOTS = 5


def search_list(namespace: str, domain: str) -> list[str]:
    return [f"{namespace}.svc.{domain}", f"svc.{domain}", domain]


def candidates(name: str, namespace: str, domain: str) -> list[str]:
    """The names a pod's resolver asks for, in order."""
    searched = [f"{name}.{suffix}" for suffix in search_list(namespace, domain)]
    return searched + [name] if name.count(".") < NDOTS else [name] + searched


def _selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


class ClusterDNS:
    """The pod records CoreDNS would serve for `objects` (for their Services) and `pods`."""

    def __init__(self, objects: list[dict], pods: list, domain: str = "cluster.local", ready: bool = False):
        self.domain = domain
        services = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["spec"]
                    for o in objects if o.get("kind") == "Service" and o.get("apiVersion") == "v1"}
        self.records = {}

        def published(service: dict | None, pod) -> bool:
            return bool(service and service.get("clusterIP") == "None" and _selects(service.get("selector"), pod.labels)
                        and (ready or service.get("publishNotReadyAddresses")))

        for pod in pods:
            if pod.hostname and published(services.get((pod.namespace, pod.subdomain)), pod):
                self.records[f"{pod.hostname}.{pod.subdomain}.{pod.namespace}.svc.{domain}"] = pod
        for (namespace, name), service in services.items():
            chosen = [pod for pod in pods if pod.namespace == namespace and published(service, pod)]
            if len(chosen) == 1:  # a Service of one pod: its name reaches that pod
                self.records[f"{name}.{namespace}.svc.{domain}"] = chosen[0]

    def resolve(self, name: str, namespace: str):
        """The pod `name` reaches from a pod in `namespace`, or None."""
        return next((self.records[c] for c in candidates(name, namespace, self.domain) if c in self.records), None)
