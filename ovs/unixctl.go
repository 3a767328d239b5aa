package ovs

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// ctlConn is a connection to ovs-vswitchd's control socket (what
// ovs-appctl speaks: JSON-RPC, one request at a time), kept open between
// requests. Any failure closes it; the next request dials again
// (ovs-vswitchd may have restarted with a new control socket).
type ctlConn struct {
	runDir string
	conn   net.Conn
	dec    *json.Decoder
	id     int
}

type unixctlRequest struct {
	ID     int      `json:"id"`
	Method string   `json:"method"`
	Params []string `json:"params"`
}

type unixctlReply struct {
	ID     int     `json:"id"`
	Result *string `json:"result"`
	Error  *string `json:"error"`
}

// open dials the control socket unless the connection is open.
func (c *ctlConn) open() error {
	if c.conn != nil {
		return nil
	}
	ctl, err := vswitchdControl(c.runDir)
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

// call sends a request and reads its answer, by deadline.
func (c *ctlConn) call(deadline time.Time, method string, params ...string) (string, error) {
	if err := c.send(method, params...); err != nil {
		return "", err
	}
	return c.recv(deadline)
}

// send writes a request; a kept connection that turns out dead gets one
// more try on a new one.
func (c *ctlConn) send(method string, params ...string) error {
	if params == nil {
		params = []string{}
	}
	for try := 0; ; try++ {
		fresh := c.conn == nil
		if err := c.open(); err != nil {
			return err
		}
		c.id++
		c.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		err := json.NewEncoder(c.conn).Encode(unixctlRequest{ID: c.id, Method: method, Params: params})
		if err == nil {
			return nil
		}
		c.close()
		if fresh || try > 0 {
			return err
		}
	}
}

// recv reads the answer to the last request: its result, or the error
// ovs-vswitchd answered.
func (c *ctlConn) recv(deadline time.Time) (string, error) {
	if c.conn == nil {
		return "", errors.New("no control connection")
	}
	c.conn.SetReadDeadline(deadline)
	var reply unixctlReply
	if err := c.dec.Decode(&reply); err != nil {
		c.close()
		return "", fmt.Errorf("ovs-vswitchd control socket: %w", err)
	}
	if reply.ID != c.id {
		c.close()
		return "", fmt.Errorf("ovs-vswitchd control socket: the answer to request %d, not %d", reply.ID, c.id)
	}
	if reply.Error != nil {
		return "", fmt.Errorf("ovs-vswitchd: %s", *reply.Error)
	}
	if reply.Result == nil {
		return "", nil
	}
	return *reply.Result, nil
}

func (c *ctlConn) close() {
	if c.conn != nil {
		c.conn.Close()
	}
	c.conn, c.dec = nil, nil
}
