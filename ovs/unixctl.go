package ovs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

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
	if err := json.NewEncoder(c).Encode(unixctlRequest{Method: method, Params: params}); err != nil {
		return "", err
	}
	var reply unixctlReply
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
