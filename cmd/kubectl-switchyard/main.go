// Command kubectl-switchyard is the kubectl plugin of switchyard:
// `kubectl switchyard explain --node NODE --from SRC --to DST:PORT` runs
// the query in the switchyard pod of that node, as `kubectl exec ...
// cilium-dbg` users are used to.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/switchyard-proxy/switchyard/cmd/kubectl-switchyard/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(plugin.Run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
