// Command coredns is CoreDNS with only the plugins a cluster's DNS uses
// (the kubeadm Corefile's, less those that reach the internet), built by
// hack/ensure-e2e.sh for the upstream conformance cluster's kube-dns.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// directives are the plugins this binary has, in CoreDNS's own order.
var directives = []string{"reload", "health", "ready", "errors", "log", "loadbalance", "cache", "loop", "kubernetes", "forward"}

func main() {
	var kept []string
	for _, d := range dnsserver.Directives {
		for _, ours := range directives {
			if d == ours {
				kept = append(kept, d)
			}
		}
	}
	dnsserver.Directives = kept
	coremain.Run()
}
