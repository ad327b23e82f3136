// CoreDNS with only the plugins a cluster's DNS uses.
//
// Upstream's main imports core/plugin, which registers every plugin of plugin.cfg, the Route 53,
// Azure and Cloud DNS ones among them, and with them the cloud SDKs: most of a cold build's time.
// This main registers the plugins below and tells the server that only their directives exist,
// in the execution order of upstream's plugin.cfg (the order a Corefile's plugins run in).
package main

import (
	"fmt"
	"os"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"       // listen on the node network's address only
	_ "github.com/coredns/coredns/plugin/cache"      // answers kept for their TTL
	_ "github.com/coredns/coredns/plugin/errors"     // errors to the log
	_ "github.com/coredns/coredns/plugin/forward"    // names outside the cluster, to a resolver the Corefile names
	_ "github.com/coredns/coredns/plugin/health"     // /health: the process is up
	_ "github.com/coredns/coredns/plugin/kubernetes" // <service>.<namespace>.svc.<domain>, pods, reverse lookups
	_ "github.com/coredns/coredns/plugin/log"        // a line per query, when a Corefile asks
	_ "github.com/coredns/coredns/plugin/loop"       // stops on a forwarding loop rather than spinning
	_ "github.com/coredns/coredns/plugin/metrics"    // `prometheus`: /metrics (forward and cache register it anyway)
	_ "github.com/coredns/coredns/plugin/ready"      // /ready: kubernetes has synced with the API server
)

// directives is upstream plugin.cfg's order, kept to the plugins imported above.
var directives = []string{"bind", "ready", "health", "prometheus", "errors", "log", "cache", "kubernetes", "loop", "forward"}

func main() {
	if err := dnsserver.SetDirectives(directives); err != nil {
		fmt.Fprintln(os.Stderr, "coredns:", err)
		os.Exit(1)
	}
	coremain.Run()
}
