"""The Pod Security Standards "restricted" profile, as checks on a pod spec.

Written from the published profile (kubernetes.io/docs/concepts/security/pod-security-standards,
baseline and restricted controls as of Kubernetes 1.30+). Returns one message per violation.
"""

from __future__ import annotations

_RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                       "projected", "secret"}
_SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                 "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                 "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                 "net.ipv4.tcp_keepalive_probes"}


def violations(pod_spec: dict) -> list[str]:
    found = []
    pod_security = pod_spec.get("securityContext", {})
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        if pod_spec.get(host):
            found.append(f"{host} is set")
    for volume in pod_spec.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= _RESTRICTED_VOLUMES:
            found.append(f"volume {volume['name']} uses {sorted(kinds - _RESTRICTED_VOLUMES)}")
    for sysctl in pod_security.get("sysctls", []):
        if sysctl["name"] not in _SAFE_SYSCTLS:
            found.append(f"unsafe sysctl {sysctl['name']}")
    containers = pod_spec.get("containers", []) + pod_spec.get("initContainers", []) + \
        pod_spec.get("ephemeralContainers", [])
    for container in containers:
        name = container["name"]
        security = container.get("securityContext", {})
        if security.get("privileged"):
            found.append(f"{name}: privileged")
        if security.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation is not false")
        capabilities = security.get("capabilities", {})
        if "ALL" not in capabilities.get("drop", []):
            found.append(f"{name}: capabilities do not drop ALL")
        if set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            found.append(f"{name}: adds capabilities {capabilities['add']}")
        if not (security.get("runAsNonRoot", pod_security.get("runAsNonRoot")) is True):
            found.append(f"{name}: runAsNonRoot is not true")
        if security.get("runAsUser", pod_security.get("runAsUser")) == 0:
            found.append(f"{name}: runs as uid 0")
        seccomp = security.get("seccompProfile", pod_security.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccomp profile is {seccomp}")
        if security.get("procMount", "Default") != "Default":
            found.append(f"{name}: procMount {security['procMount']}")
        for port in container.get("ports", []):
            if port.get("hostPort"):
                found.append(f"{name}: hostPort {port['hostPort']}")
        apparmor = security.get("appArmorProfile", pod_security.get("appArmorProfile", {})).get("type")
        if apparmor == "Unconfined":
            found.append(f"{name}: AppArmor unconfined")
    return found
