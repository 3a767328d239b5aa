// Package vswitchd speaks to ovs-vswitchd on the side channels the OVS
// driver needs besides OpenFlow and OVSDB: its control socket (what
// ovs-appctl speaks), the datapath's settle after each committed bundle,
// and conntrack flushes.
package vswitchd

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Control is a connection to ovs-vswitchd's control socket (JSON-RPC, one
// request at a time), kept open between requests. Any failure closes it;
// the next request dials again (ovs-vswitchd may have restarted with a
// new control socket). A Control is not safe for concurrent use.
type Control struct {
	runDir string
	conn   net.Conn
	dec    *json.Decoder
	id     int
}

// NewControl returns a Control for the ovs-vswitchd whose pid file is in
// runDir. It dials on first use (or Open).
func NewControl(runDir string) *Control { return &Control{runDir: runDir} }

type request struct {
	ID     int      `json:"id"`
	Method string   `json:"method"`
	Params []string `json:"params"`
}

type reply struct {
	ID     int     `json:"id"`
	Result *string `json:"result"`
	Error  *string `json:"error"`
}

// ControlSocket is the path of ovs-vswitchd's control socket, found from
// its pid file in runDir.
func ControlSocket(runDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(runDir, "ovs-vswitchd.pid"))
	if err != nil {
		return "", err
	}
	return filepath.Join(runDir, fmt.Sprintf("ovs-vswitchd.%s.ctl", strings.TrimSpace(string(b)))), nil
}

// Open dials the control socket unless the connection is open.
func (c *Control) Open() error {
	if c.conn != nil {
		return nil
	}
	ctl, err := ControlSocket(c.runDir)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("unix", ctl, 2*time.Second)
	if err != nil {
		return err
	}
	c.conn, c.dec = conn, json.NewDecoder(conn)
	return nil
}

// Call sends a request and reads its answer, by deadline: the result, or
// the error ovs-vswitchd answered (which leaves the connection usable).
func (c *Control) Call(deadline time.Time, method string, params ...string) (string, error) {
	if err := c.send(method, params...); err != nil {
		return "", err
	}
	return c.recv(deadline)
}

// send writes a request; a kept connection that turns out dead gets one
// more try on a new one.
func (c *Control) send(method string, params ...string) error {
	if params == nil {
		params = []string{}
	}
	for try := 0; ; try++ {
		fresh := c.conn == nil
		if err := c.Open(); err != nil {
			return err
		}
		c.id++
		c.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		err := json.NewEncoder(c.conn).Encode(request{ID: c.id, Method: method, Params: params})
		if err == nil {
			return nil
		}
		c.Close()
		if fresh || try > 0 {
			return err
		}
	}
}

// recv reads the answer to the last request.
func (c *Control) recv(deadline time.Time) (string, error) {
	if c.conn == nil {
		return "", errors.New("no control connection")
	}
	c.conn.SetReadDeadline(deadline)
	var r reply
	if err := c.dec.Decode(&r); err != nil {
		c.Close()
		return "", fmt.Errorf("ovs-vswitchd control socket: %w", err)
	}
	if r.ID != c.id {
		c.Close()
		return "", fmt.Errorf("ovs-vswitchd control socket: the answer to request %d, not %d", r.ID, c.id)
	}
	if r.Error != nil {
		return "", fmt.Errorf("ovs-vswitchd: %s", *r.Error)
	}
	if r.Result == nil {
		return "", nil
	}
	return *r.Result, nil
}

// Close closes the connection; the next request dials again.
func (c *Control) Close() {
	if c.conn != nil {
		c.conn.Close()
	}
	c.conn, c.dec = nil, nil
}
