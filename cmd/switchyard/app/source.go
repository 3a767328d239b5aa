package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"k8s.io/klog/v2"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/source"
	"github.com/switchyard-proxy/switchyard/core/source/file"
	"github.com/switchyard-proxy/switchyard/core/source/kube"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// sourceOptions choose where objects come from and how they become a graph.
type sourceOptions struct {
	kubeconfig    string
	master        string
	file          string
	nodeName      string
	proxyName     string
	nodePortRange string
	syncTimeout   time.Duration
	// peers: watch every Node, not only this one (the driver reads the
	// graph's peers). Set by the command, not a flag.
	peers bool
}

func (o *sourceOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to reach the API server (default: in-cluster config when --file is not set)")
	fs.StringVar(&o.master, "master", "", "the API server's address (https://host:port), overriding the in-cluster one or the kubeconfig's: lets switchyard start while no Service works yet, as kube-proxy's --master or Antrea's kubeAPIServerOverride (in a pod, the service account's token and CA are still used)")
	fs.StringVar(&o.file, "file", "", "read Services, EndpointSlices and Nodes from this YAML file instead of an API server (re-read when it changes)")
	fs.StringVar(&o.nodeName, "node-name", "", "the node this proxy runs on (default: the host name)")
	fs.StringVar(&o.proxyName, "proxy-name", "", "also proxy Services labelled service.kubernetes.io/service-proxy-name with this value")
	fs.StringVar(&o.nodePortRange, "nodeport-range", build.DefaultNodePortRange.String(), `refuse NodePorts outside this range ("" for no check)`)
	fs.DurationVar(&o.syncTimeout, "informer-sync-timeout", 2*time.Minute, "give up if the API server's objects are not listed within this time")
}

// complete fills defaults and checks the values.
func (o *sourceOptions) complete() (build.Options, error) {
	if o.file != "" && (o.kubeconfig != "" || o.master != "") {
		return build.Options{}, errors.New("--file excludes --kubeconfig and --master")
	}
	if o.master != "" {
		u, err := url.Parse(o.master)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			// https only: the service account's token goes with every
			// request, and must not cross the network in clear.
			return build.Options{}, fmt.Errorf("--master %q: want https://host:port (the token is never sent in clear)", o.master)
		}
	}
	if o.nodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return build.Options{}, fmt.Errorf("--node-name not set and no host name: %w", err)
		}
		o.nodeName = strings.ToLower(strings.TrimSpace(h))
	}
	r, err := build.ParsePortRange(o.nodePortRange)
	if err != nil {
		return build.Options{}, fmt.Errorf("--nodeport-range: %w", err)
	}
	return build.Options{ProxyName: o.proxyName, NodePortRange: r}, nil
}

// apiServer is how switchyard reaches the API server: the config read
// from the options and the client made from it. Both are nil with a file
// source.
type apiServer struct {
	config *rest.Config
	client kubernetes.Interface
}

// connect reads the options' config once and makes the client from it.
func (o *sourceOptions) connect() (apiServer, error) {
	if o.file != "" {
		return apiServer{}, nil
	}
	cfg, err := o.restConfig()
	if err != nil {
		return apiServer{}, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return apiServer{}, fmt.Errorf("API client: %w", err)
	}
	return apiServer{config: cfg, client: client}, nil
}

// newSource is the source the options name: the file, or the API server.
// Its Services and EndpointSlices decode straight into the core's copies
// (kube.Source.Config).
func (o *sourceOptions) newSource(obs source.Observer, api apiServer) source.Source {
	if o.file != "" {
		return &file.Source{Path: o.file, Observer: obs}
	}
	return &kube.Source{Client: api.client, Config: api.config, NodeName: o.nodeName, AllNodes: o.peers,
		ProxyName: o.proxyName, SyncTimeout: o.syncTimeout}
}

// serviceAccountDir holds a pod's service account token and CA.
var serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// restConfig is how to reach the API server: a kubeconfig, else the pod's
// in-cluster config; --master replaces the server either takes. Without a
// kubeconfig, --master keeps the service account's token and CA, so a pod
// can name the API server before the kubernetes Service works (nothing
// programs its ClusterIP until a proxy runs).
func (o *sourceOptions) restConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case o.kubeconfig != "":
		if _, statErr := os.Stat(o.kubeconfig); statErr != nil {
			return nil, fmt.Errorf("kubeconfig: %w", statErr)
		}
		if cfg, err = clientcmd.BuildConfigFromFlags(o.master, o.kubeconfig); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", o.kubeconfig, err)
		}
	case o.master != "":
		token, ca := filepath.Join(serviceAccountDir, "token"), filepath.Join(serviceAccountDir, "ca.crt")
		for _, f := range []string{token, ca} {
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Errorf("--master without --kubeconfig uses the pod's service account: %w", err)
			}
		}
		cfg = &rest.Config{Host: o.master, BearerTokenFile: token, TLSClientConfig: rest.TLSClientConfig{CAFile: ca}}
	default:
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("no --file, --kubeconfig or --master given, and not running in a cluster: %w", err)
		}
	}
	cfg.UserAgent = "switchyard"
	// Protobuf, as kube-proxy asks for (--kube-api-content-type): at 10k
	// Services the initial lists decode in a fraction of JSON's time and
	// garbage.
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	return cfg, nil
}

// ips are the addresses of the API server switchyard talks to
// (the kubeconfig's, --master, or the in-cluster one): no Service may
// take one as an external or load-balancer IP (build.Options.ProtectedIPs).
// A host name is looked up once, briefly; what cannot be found is logged.
func (a apiServer) ips(ctx context.Context) []netip.Addr {
	if a.config == nil {
		return nil
	}
	u, err := url.Parse(a.config.Host)
	if err != nil || u.Hostname() == "" {
		u, err = url.Parse("https://" + a.config.Host) // a bare host:port
		if err != nil {
			return nil
		}
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		return []netip.Addr{ip.Unmap()}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		klog.InfoS("Cannot resolve the API server's name: Services may name its addresses as external IPs", "host", u.Hostname(), "err", err)
		return nil
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, addr := range addrs {
		out = append(out, addr.Unmap())
	}
	return out
}

// collector keeps what a source or tracker refused.
type collector struct {
	mu   sync.Mutex
	list []build.Rejection
}

func (c *collector) Rejected(r build.Rejection) {
	c.mu.Lock()
	c.list = append(c.list, r)
	c.mu.Unlock()
}
func (c *collector) ObjectChanged(string) {}

// snapshotOnce loads the objects once and returns their graph and every
// part of the input that was refused (for graph and render).
func (o *sourceOptions) snapshotOnce(ctx context.Context, annotations []string, peers bool) (onceView, error) {
	bo, err := o.complete()
	if err != nil {
		return onceView{}, usageError{err}
	}
	bo.Annotations = annotations
	o.peers = peers
	api, err := o.connect()
	if err != nil {
		return onceView{}, err
	}
	refused := &collector{}
	src := o.newSource(refused, api)
	tr := tracker.New(tracker.Options{NodeName: o.nodeName, Build: bo, Observer: refused, Peers: peers})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the file watcher or the informers
	if err := src.Start(ctx, tr); err != nil {
		return onceView{}, err
	}
	v := onceView{snap: tr.Snapshot(), notProxied: tr.NotProxied(), tr: tr}
	refused.mu.Lock()
	defer refused.mu.Unlock()
	v.refused = refused.list
	return v, nil
}

// onceView is the graph read once, with what was refused and the Services
// not proxied at all.
type onceView struct {
	snap       graph.Snapshot
	refused    []build.Rejection
	notProxied []string
	tr         *tracker.Tracker // what the graph was built by (Explain)
}

// printNotes writes what was refused and what is not proxied (to stderr).
func (v onceView) printNotes(w io.Writer) {
	printRejections(w, v.refused)
	if len(v.notProxied) > 0 {
		fmt.Fprintf(w, "%d Service(s) not proxied:\n", len(v.notProxied))
		for _, n := range v.notProxied {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}
