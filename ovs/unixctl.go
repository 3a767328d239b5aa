package ovs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// unixctl calls a command on ovs-vswitchd's control socket (what
// ovs-appctl does): one JSON-RPC request, one reply.
func unixctl(ctx context.Context, socket, method string, params ...string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	c.SetDeadline(deadline)
	if params == nil {
		params = []string{}
	}
	req := struct {
		ID     int      `json:"id"`
		Method string   `json:"method"`
		Params []string `json:"params"`
	}{0, method, params}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return "", err
	}
	var reply struct {
		Result *string `json:"result"`
		Error  *string `json:"error"`
	}
	if err := json.NewDecoder(c).Decode(&reply); err != nil {
		return "", fmt.Errorf("%s: reading the reply: %w", method, err)
	}
	if reply.Error != nil {
		return "", fmt.Errorf("%s: %s", method, *reply.Error)
	}
	if reply.Result == nil {
		return "", errors.New(method + ": empty reply")
	}
	return *reply.Result, nil
}

// settle waits until ovs-vswitchd's revalidators have run a round after a
// committed bundle: until then the datapath may still hold flows cached
// from the old tables, and a connection whose first packet takes one is
// committed to conntrack without the new NAT and stays broken. With the
// wait, "Apply returned" means packets follow the new flows. A failure is
// only logged: the flows are installed, they just take effect a little
// later.
func (d *Driver) settle(ctx context.Context) error {
	ctl, err := vswitchdControl(d.opts.RunDir)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = unixctl(cctx, ctl, "revalidator/wait")
	return err
}
