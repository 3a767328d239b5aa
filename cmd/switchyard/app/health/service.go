package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"k8s.io/klog/v2"
)

// Services serves one HTTP health check per health-check node port: 200 and
// the count of this node's ready endpoints while there is at least one (and
// the proxy is healthy), 503 otherwise. Load balancers use it to send
// externalTrafficPolicy=Local traffic only to nodes with local endpoints.
// It is kept current from the same snapshots and deltas the driver gets.
type Services struct {
	// BindIP is the address to listen on ("" for every address).
	BindIP string
	// ProxyHealthy feeds "serviceProxyHealthy" (nil: always true).
	ProxyHealthy func() bool
	// Listen opens a listener (nil: net.Listen on tcp).
	Listen func(addr string) (net.Listener, error)

	mu       sync.Mutex
	ports    map[serviceKey]map[graph.ServicePortName]portState
	servers  map[uint16]*hcServer
	failures map[uint16]failure // ports that could not be opened, retried at each update
}

type serviceKey struct{ namespace, name string }

type failure struct {
	svc   serviceKey
	err   error
	tries int // failed attempts in a row
}

// retried is the failure after another failed attempt to open a port
// (had: it failed before, as prev). loud says whether to log it as an
// error: the first time, or when the error changed. Every update retries
// (a port held by another program is freed some time), so logging each
// retry would write a line per port per sync for as long as it is held.
func retried(prev failure, had bool, svc serviceKey, err error) (f failure, loud bool) {
	if !had || prev.svc != svc {
		return failure{svc: svc, err: err, tries: 1}, true
	}
	return failure{svc: svc, err: err, tries: prev.tries + 1}, prev.err.Error() != err.Error()
}

type portState struct {
	hcPort uint16
	ready  int // local ready endpoints of this service port
}

type hcServer struct {
	svc    serviceKey
	count  int
	srv    *http.Server
	closed chan struct{}
}

// Sync replaces the whole state with a snapshot.
func (s *Services) Sync(snap graph.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	touched := map[serviceKey]bool{}
	s.perServicePort(touched).Sync(snap, s.names())
	s.reconcile(touched)
}

// perServicePort keeps the state per service port, noting the Services
// it touches.
func (s *Services) perServicePort(touched map[serviceKey]bool) dataplanes.PerServicePort {
	return dataplanes.PerServicePort{
		Set:    func(sp *graph.ServicePort) { s.set(sp); touched[keyOf(sp.Name)] = true },
		Remove: func(n graph.ServicePortName) { s.unset(n); touched[keyOf(n)] = true },
	}
}

// names are the service ports held.
func (s *Services) names() iter.Seq[graph.ServicePortName] {
	return func(yield func(graph.ServicePortName) bool) {
		for _, ports := range s.ports {
			for n := range ports {
				if !yield(n) {
					return
				}
			}
		}
	}
}

// Apply updates the state by a delta; only the services it names change.
func (s *Services) Apply(d graph.Delta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	touched := map[serviceKey]bool{}
	s.perServicePort(touched).Apply(d)
	for _, f := range s.failures {
		touched[f.svc] = true // retry ports that could not be opened
	}
	s.reconcile(touched)
}

func (s *Services) init() {
	if s.ports == nil {
		s.ports = map[serviceKey]map[graph.ServicePortName]portState{}
		s.servers = map[uint16]*hcServer{}
		s.failures = map[uint16]failure{}
	}
}

func keyOf(n graph.ServicePortName) serviceKey { return serviceKey{n.Namespace, n.Name} }

func (s *Services) set(sp *graph.ServicePort) {
	if sp.HealthCheckNodePort == 0 {
		s.unset(sp.Name)
		return
	}
	ready := 0
	for e := range sp.ExternalEndpoints.All() {
		if e.Local && e.Ready {
			ready++
		}
	}
	k := keyOf(sp.Name)
	if s.ports[k] == nil {
		s.ports[k] = map[graph.ServicePortName]portState{}
	}
	s.ports[k][sp.Name] = portState{hcPort: sp.HealthCheckNodePort, ready: ready}
}

func (s *Services) unset(n graph.ServicePortName) {
	k := keyOf(n)
	delete(s.ports[k], n)
	if len(s.ports[k]) == 0 {
		delete(s.ports, k)
	}
}

// reconcile opens, updates and closes servers for the touched services.
func (s *Services) reconcile(touched map[serviceKey]bool) {
	before := map[uint16]failure{}
	for port, f := range s.failures {
		if touched[f.svc] {
			before[port] = f
			delete(s.failures, port) // recorded again below if it still fails
		}
	}
	want := map[uint16]hcServer{}
	for k := range touched {
		total, port := 0, uint16(0)
		for _, p := range s.ports[k] {
			total += p.ready // upstream sums ready local endpoints over the ports
			port = p.hcPort
		}
		if port != 0 {
			want[port] = hcServer{svc: k, count: total}
		}
	}
	for port, srv := range s.servers {
		if touched[srv.svc] {
			if w, ok := want[port]; !ok || w.svc != srv.svc {
				srv.close()
				delete(s.servers, port)
			}
		}
	}
	for port, w := range want {
		if srv, ok := s.servers[port]; ok {
			srv.count = w.count
			continue
		}
		prev, had := before[port]
		srv, err := s.open(port, w.svc)
		if err != nil {
			f, loud := retried(prev, had, w.svc, err)
			if loud {
				klog.ErrorS(err, "Cannot open health check node port; retried at every update, logged again if the error changes", "service", w.svc.namespace+"/"+w.svc.name, "port", port)
			} else {
				klog.V(4).InfoS("Health check node port still cannot be opened", "service", w.svc.namespace+"/"+w.svc.name, "port", port, "tries", f.tries, "err", err.Error())
			}
			s.failures[port] = f
			continue
		}
		if had {
			klog.InfoS("Opened health check node port", "service", w.svc.namespace+"/"+w.svc.name, "port", port, "failedTries", prev.tries)
		}
		srv.count = w.count
		s.servers[port] = srv
	}
}

func (s *Services) open(port uint16, k serviceKey) (*hcServer, error) {
	listen := s.Listen
	if listen == nil {
		listen = func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
	}
	l, err := listen(net.JoinHostPort(s.BindIP, strconv.Itoa(int(port))))
	if err != nil {
		return nil, err
	}
	h := &hcServer{svc: k, closed: make(chan struct{})}
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { s.serve(w, port) }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(h.closed)
		if err := h.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Health check server stopped", "port", port)
		}
	}()
	return h, nil
}

func (h *hcServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = h.srv.Shutdown(ctx)
	<-h.closed
}

// Close stops every server.
func (s *Services) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for port, srv := range s.servers {
		srv.close()
		delete(s.servers, port)
	}
}

// Failures lists ports that could not be opened.
func (s *Services) Failures() map[uint16]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint16]error{}
	for p, f := range s.failures {
		out[p] = f.err
	}
	return out
}

type serviceReport struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

func (s *Services) serve(w http.ResponseWriter, port uint16) {
	s.mu.Lock()
	srv := s.servers[port]
	var rep serviceReport
	if srv != nil {
		rep.Service.Namespace, rep.Service.Name, rep.LocalEndpoints = srv.svc.namespace, srv.svc.name, srv.count
	}
	s.mu.Unlock()
	rep.ServiceProxyHealthy = s.ProxyHealthy == nil || s.ProxyHealthy()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(rep.LocalEndpoints))
	if rep.LocalEndpoints > 0 && rep.ServiceProxyHealthy {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if err := json.NewEncoder(w).Encode(rep); err != nil {
		klog.V(4).InfoS("Health check reply not sent", "err", fmt.Sprint(err))
	}
}
