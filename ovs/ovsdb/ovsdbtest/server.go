// Package ovsdbtest runs an OVSDB server in memory for tests without
// root: libovsdb's own server and database over the Open_vSwitch schema
// (ovs/ovsdb/vswitch), on a unix socket that ovs/ovsdb.Client connects to
// as it connects to ovsdb-server, with what ovs-vswitchd does to that
// database stood in for: the root row ovs-vsctl init makes, and an
// OpenFlow port number and a MAC for every interface added (ofport,
// mac_in_use), as ovs-vswitchd writes once it has made the interface.
// The server enforces the schema (types, constraints, references, the
// garbage collection of rows no root row reaches) as ovsdb-server does.
package ovsdbtest

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/database/inmemory"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/ovn-kubernetes/libovsdb/server"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb/vswitch"
)

// localPort is OpenFlow's OFPP_LOCAL, a bridge's own interface.
const localPort = 65534

// Server is an in-memory OVSDB with an ovs-vswitchd stand-in.
type Server struct {
	// Socket is the unix socket clients connect to ("db.sock" in the
	// run directory given to Start).
	Socket string
	srv    *server.OvsdbServer
	vsd    client.Client // the ovs-vswitchd stand-in's connection

	mu     sync.Mutex
	ofport int // the last OpenFlow port number given (a bridge's own interface takes one too)
}

// Start serves an empty Open_vSwitch database (its root row only) at
// runDir/db.sock until the test ends.
func Start(t testing.TB, runDir string) *Server {
	t.Helper()
	clientModel, err := vswitch.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	dbModel, errs := model.NewDatabaseModel(vswitch.Schema(), clientModel)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	logger := logr.Discard()
	db := inmemory.NewDatabase(map[string]model.ClientDBModel{"Open_vSwitch": clientModel}, &logger)
	srv, err := server.NewOvsdbServer(db, &logger, dbModel)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Socket: filepath.Join(runDir, "db.sock"), srv: srv}
	served := make(chan error, 1)
	go func() { served <- srv.Serve("unix", s.Socket) }()
	t.Cleanup(func() {
		srv.Close()
		<-served
	})
	for deadline := time.Now().Add(5 * time.Second); !srv.Ready(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the in-memory OVSDB server did not start")
		}
	}
	if err := s.startVswitchd(clientModel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.vsd.Close)
	return s
}

// startVswitchd connects the stand-in, makes the root row and follows
// the Interface table.
func (s *Server) startVswitchd(clientModel model.ClientDBModel) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	logger := logr.Discard()
	c, err := client.NewOVSDBClient(clientModel, client.WithEndpoint("unix:"+s.Socket), client.WithLogger(&logger))
	if err != nil {
		return err
	}
	if err := c.Connect(ctx); err != nil {
		return err
	}
	s.vsd = c
	if _, err := c.Monitor(ctx, c.NewMonitor(client.WithTable(&vswitch.Interface{}), client.WithTable(&vswitch.Bridge{}))); err != nil {
		return err
	}
	ops, err := c.Create(&vswitch.OpenvSwitch{UUID: "root"})
	if err != nil {
		return err
	}
	if err := transact(ctx, c, ops); err != nil {
		return fmt.Errorf("the root row: %w", err)
	}
	c.Cache().AddEventHandler(&cacheHandler{s: s})
	return nil
}

// cacheHandler gives each interface added a port number and a MAC.
type cacheHandler struct{ s *Server }

func (h *cacheHandler) OnAdd(table string, m model.Model) {
	if iface, ok := m.(*vswitch.Interface); ok && table == vswitch.InterfaceTable && iface.Ofport == nil {
		// Numbered here, in the order the interfaces were added, so that
		// the same steps give the same numbers in every test.
		h.s.mu.Lock()
		h.s.ofport++
		n := h.s.ofport
		h.s.mu.Unlock()
		go h.s.plug(iface.UUID, iface.Name, n)
	}
}
func (h *cacheHandler) OnUpdate(string, model.Model, model.Model) {}
func (h *cacheHandler) OnDelete(string, model.Model)              {}

// plug writes what ovs-vswitchd writes once it has made an interface: a
// bridge's own interface is its local port (OFPP_LOCAL, 65534), any other
// gets the number it was given.
func (s *Server) plug(uuid, name string, n int) {
	port := n
	if err := s.vsd.Get(context.Background(), &vswitch.Bridge{Name: name}); err == nil {
		port = localPort
	}
	mac := fmt.Sprintf("02:00:00:00:%02x:%02x", port>>8&0xff, port&0xff)
	iface := &vswitch.Interface{UUID: uuid, Ofport: &port, MACInUse: &mac}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ops, err := s.vsd.Where(iface).Update(iface, &iface.Ofport, &iface.MACInUse)
	if err == nil {
		err = transact(ctx, s.vsd, ops)
	}
	_ = err // the interface may be gone already: nothing to plug
}

func transact(ctx context.Context, c client.Client, ops []ovsdb.Operation) error {
	res, err := c.Transact(ctx, ops...)
	if err != nil {
		return err
	}
	_, err = ovsdb.CheckOperationResults(res, ops)
	return err
}
