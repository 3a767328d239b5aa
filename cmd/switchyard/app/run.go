package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/cmd/switchyard/app/health"
	"github.com/switchyard-proxy/switchyard/core/build"
	coremetrics "github.com/switchyard-proxy/switchyard/core/metrics"
	"github.com/switchyard-proxy/switchyard/core/runner"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
)

// runOptions are the flags of `switchyard run`.
type runOptions struct {
	src               sourceOptions
	dataplane         string
	minSyncPeriod     time.Duration
	syncPeriod        time.Duration
	healthzAddr       string
	metricsAddr       string
	profiling         bool
	healthCheckBindIP string
	once              bool
	ownerDaemonSet    string
	uninstallMarker   string
	serviceCounters   int
	slowTraceDir      string
	slowTraceOver     time.Duration
}

// stallTimeout is how long one sync attempt may run before /livez fails
// (the loop is stuck in the driver): far past a cold sync of a large
// cluster (docs/scale.md) or a driver's own timeouts.
const stallTimeout = 5 * time.Minute

func newRunCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the proxy: watch objects and program the chosen dataplane",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context())
		},
	}
	o.addFlags(cmd.Flags())
	addDriverFlags(cmd)
	return cmd
}

// addFlags registers the flags of `switchyard run`.
func (o *runOptions) addFlags(fs *pflag.FlagSet) {
	o.src.addFlags(fs)
	fs.StringVar(&o.dataplane, "dataplane", "", "the dataplane driver (see `switchyard drivers`)")
	fs.DurationVar(&o.minSyncPeriod, "min-sync-period", time.Second, "apply changes at most this often")
	fs.DurationVar(&o.syncPeriod, "sync-period", 30*time.Second, "re-sync the whole graph this often")
	fs.StringVar(&o.healthzAddr, "healthz-bind-address", "0.0.0.0:10256", `serve /healthz, /readyz and /livez here ("" to disable)`)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "127.0.0.1:10249", `serve /metrics here ("" to disable)`)
	fs.BoolVar(&o.profiling, "profiling", false, "also serve Go's /debug/pprof/ on the metrics address (as kube-proxy's enableProfiling); only with a loopback --metrics-bind-address")
	fs.StringVar(&o.healthCheckBindIP, "healthcheck-bind-ip", "", "listen on this IP for health-check node ports (default: every address)")
	fs.StringVar(&o.slowTraceDir, "trace-slow-changes", "", "keep the last seconds of Go's execution trace in memory and write them to a file in this directory when a change takes longer than --trace-slow-changes-over to program (at most 16 files, 10 s apart; for `go tool trace`; off when empty)")
	fs.DurationVar(&o.slowTraceOver, "trace-slow-changes-over", 100*time.Millisecond, "with --trace-slow-changes: how long from a change's trigger time to programmed is slow")
	fs.BoolVar(&o.once, "once", false, "sync once and exit (no servers are started)")
	fs.IntVar(&o.serviceCounters, "service-counters", 0, "export the dataplane's per-service-port counts (new connections, by endpoint, rejects, drops) for at most this many service ports, the busiest (0: off; docs/explain.md)")
	fs.StringVar(&o.ownerDaemonSet, "owner-daemonset", "", "NAMESPACE/NAME of the DaemonSet switchyard runs in (the chart sets it; with --uninstall-marker)")
	fs.StringVar(&o.uninstallMarker, "uninstall-marker", "", "name of a ConfigMap in the --owner-daemonset's namespace that asks for an uninstall (the chart's pre-delete hook creates it at helm uninstall): when it appears, newer than the DaemonSet, and the DaemonSet then goes, switchyard removes what the dataplane programmed as it stops, as `switchyard cleanup`; any other stop keeps the dataplane")
}

func (o *runOptions) validate() error {
	if o.dataplane == "" {
		return errors.New("--dataplane is required (see `switchyard drivers`)")
	}
	if o.minSyncPeriod < 0 || o.syncPeriod <= 0 || o.minSyncPeriod > o.syncPeriod {
		return fmt.Errorf("need 0 <= --min-sync-period (%s) <= --sync-period (%s), and a positive --sync-period", o.minSyncPeriod, o.syncPeriod)
	}
	if o.serviceCounters < 0 || o.serviceCounters > maxServiceCounters {
		return fmt.Errorf("--service-counters %d: want 0 (off) to %d service ports", o.serviceCounters, maxServiceCounters)
	}
	if o.slowTraceDir != "" && o.slowTraceOver <= 0 {
		return fmt.Errorf("--trace-slow-changes-over %s: want a positive duration", o.slowTraceOver)
	}
	if o.profiling && !loopbackAddr(o.metricsAddr) {
		return fmt.Errorf("--profiling serves Go's profiles (memory contents, goroutine stacks) on --metrics-bind-address %q: allowed only on a loopback address", o.metricsAddr)
	}
	return nil
}

// loopbackAddr: a host:port whose host is a loopback address or
// "localhost" (an empty host or 0.0.0.0 listens everywhere).
func loopbackAddr(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func (o *runOptions) run(ctx context.Context) error {
	plan, err := o.plan()
	if err != nil {
		return usageError{err}
	}
	reg, m := o.newRegistry()
	api, err := o.src.connect()
	if err != nil {
		return err
	}
	plan.build.ProtectedIPs = api.ips(ctx)
	ev := newEvents(api.client, o.dataplane, o.src.nodeName)
	defer ev.stop()
	core := &coremetrics.Observer{Metrics: m, Driver: o.dataplane}
	if o.slowTraceDir != "" {
		slow, stop, err := startSlowChangeTracer(o.slowTraceDir, o.slowTraceOver)
		if err != nil {
			return usageError{err}
		}
		defer stop()
		core.OnSync = slow.synced
	}
	obs := &observer{Observer: core, events: ev}
	src := o.src.newSource(obs, api)
	// The runner, made after the driver, subscribes to the tracker's
	// changes; one heard before is taken by its first full sync.
	tr := tracker.New(tracker.Options{NodeName: o.src.nodeName, Build: plan.build, Observer: obs, Peers: o.src.peers})
	// The source reads its initial state (the API server's lists, or the
	// file) while the driver opens the dataplane: in a large cluster
	// each takes a while.
	mem := &memoryPolicy{}
	defer mem.stop()
	if limit, ok := mem.limitToContainer(os.Getenv, "/sys/fs/cgroup", "/proc/self/cgroup"); ok {
		klog.InfoS("Go memory limit set from the container's memory limit", "bytes", limit, "share", containerLimitShare)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan error, 1)
	listing := time.Now()
	go func() { started <- src.Start(ctx, tr) }()
	var rs rounds
	driver, err := plan.factory.New(ctx, dataplanes.Env{Problems: ev, RequestRound: rs.request, Metrics: reg})
	if err != nil {
		return fmt.Errorf("dataplane %s: %w", o.dataplane, err)
	}
	defer driver.Close()
	// Capabilities after New: a driver may learn a gap from its dataplane
	// (HNS: an overlay network is single-stack).
	gaps := newGapReporter(o.dataplane, plan.factory.Capabilities())
	gaps.register(reg)
	o.registerServiceCounters(reg, driver)

	proxyHealth := &health.Proxy{Timeout: 2 * o.syncPeriod, StallTimeout: stallTimeout}
	hc := &health.Services{BindIP: o.healthCheckBindIP, ProxyHealthy: proxyHealth.Healthy}
	defer hc.Close()
	p := &programmer{driver: driver, gaps: gaps, hc: hc, mem: mem}
	var applier runner.Applier = p
	if a, ok := driver.(dataplanes.Auditor); ok {
		applier = auditingProgrammer{programmer: p, auditor: a}
	}
	r := runner.New(tr, applier, runner.Config{MinSyncPeriod: o.minSyncPeriod, SyncPeriod: o.syncPeriod}, core)
	rs.runner.Store(r)
	proxyHealth.Status = r.Status

	klog.InfoS("Starting switchyard", "version", versionString(), "dataplane", o.dataplane, "node", o.src.nodeName)
	if o.once {
		if err := <-started; err != nil {
			return err
		}
		return r.RunOnce(ctx)
	}
	// Served while the source still lists: /livez answers (a long initial
	// list is not a dead process), /readyz waits for the first sync.
	servers, err := startServers(map[string]http.Handler{
		o.healthzAddr: proxyHealth.Mux(),
		o.metricsAddr: metricsMux(reg, o.dataplane, o.profiling, map[string]http.Handler{
			"/graph": graphHandler(tr, p), "/explain": explainHandler(tr, o.dataplane, driver)}),
	})
	if err != nil {
		return err
	}
	defer stopServers(servers)
	if err := <-started; err != nil {
		if ctx.Err() != nil {
			return nil // stopped while listing: not a failure
		}
		return err
	}
	// As kube-proxy's "Caches are synced": at scale the initial state's
	// reading is the first sync's largest part (docs/scale.md).
	klog.InfoS("Read the initial state", "elapsed", time.Since(listing))
	plan.owner.arm(ctx, api.client)
	r.Run(ctx)
	if plan.owner.cleanupIfUninstalled(driver.Cleanup) {
		return nil
	}
	klog.InfoS("Stopping switchyard; the dataplane keeps its state")
	return nil
}

// runPlan is what the flags ask for, checked before anything starts.
type runPlan struct {
	build   build.Options
	owner   *uninstall
	factory dataplanes.Factory
}

// plan checks the flags and picks the driver; an error is a usage error.
func (o *runOptions) plan() (*runPlan, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	bo, err := o.src.complete()
	if err != nil {
		return nil, err
	}
	owner, err := parseUninstall(o.ownerDaemonSet, o.uninstallMarker)
	if err != nil {
		return nil, err
	}
	factory, err := dataplanes.Get(o.dataplane)
	if err != nil {
		return nil, err
	}
	bo.Annotations = dataplanes.AnnotationsOf(factory)
	o.src.peers = dataplanes.ReadsPeers(factory)
	return &runPlan{build: bo, owner: owner, factory: factory}, nil
}

// registerServiceCounters exports the driver's per-service-port counts
// when --service-counters asks for them and the driver counts.
func (o *runOptions) registerServiceCounters(reg metrics.KubeRegistry, driver dataplanes.Driver) {
	if o.serviceCounters <= 0 {
		return
	}
	c, ok := driver.(dataplanes.Counter)
	if !ok {
		klog.ErrorS(nil, "--service-counters: this driver counts nothing per service port; no counters are exported", "dataplane", o.dataplane)
		return
	}
	reg.CustomMustRegister(&serviceCounters{counter: c, limit: o.serviceCounters})
}

// newRegistry makes /metrics' registry: Go and process collectors, the
// core's metrics (the driver's series shown at 0) and the problems count.
func (o *runOptions) newRegistry() (metrics.KubeRegistry, *coremetrics.Metrics) {
	reg := metrics.NewKubeRegistry()
	reg.RawMustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := coremetrics.New()
	m.Register(reg)
	for _, kind := range []string{"full", "delta"} {
		m.ApplyErrors.WithLabelValues(o.dataplane, kind)
	}
	m.Degraded.WithLabelValues(o.dataplane).Set(0)
	reg.MustRegister(problemsTotal)
	return reg, m
}

// metricsMux serves /metrics, /proxyMode, what the running switchyard
// says of itself (running: /graph, what `switchyard graph --from` reads,
// and /explain, `switchyard explain --running`) and, with profiling,
// pprof.
func metricsMux(reg metrics.KubeRegistry, dataplane string, profiling bool, running map[string]http.Handler) http.Handler {
	m := http.NewServeMux()
	m.Handle("/metrics", metrics.HandlerFor(reg, metrics.HandlerOpts{}))
	// As kube-proxy's metrics server: the mode, here the dataplane's name
	// (upstream's e2e "should check kube-proxy urls" asks for it).
	m.HandleFunc("/proxyMode", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, dataplane) })
	for path, h := range running {
		m.Handle(path, h)
	}
	if profiling {
		m.HandleFunc("/debug/pprof/", pprof.Index)
		m.HandleFunc("/debug/pprof/profile", pprof.Profile)
		m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return m
}

// startServers listens on every non-empty address first, so a taken port
// fails the start with a clear error, then serves.
func startServers(handlers map[string]http.Handler) ([]*http.Server, error) {
	var servers []*http.Server
	for addr, h := range handlers {
		if addr == "" {
			continue
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			stopServers(servers)
			return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				klog.ErrorS(err, "Server stopped", "address", addr)
			}
		}()
	}
	return servers, nil
}

func stopServers(servers []*http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(ctx)
	}
}
