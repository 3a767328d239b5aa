//go:build linux

package ovs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"antrea.io/ofnet/ofctrl"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

var countersRe = regexp.MustCompile(`(duration|n_packets|n_bytes|idle_age|hard_age)=[^ ,]*,? ?`)

func dumpNormalized(o *ovstest.OVS, br string) []string {
	var lines []string
	for _, out := range []string{o.Ofctl("dump-flows", br), o.Ofctl("dump-groups", br)} {
		for _, l := range strings.Split(out, "\n") {
			l = strings.TrimSpace(countersRe.ReplaceAllString(l, ""))
			if l != "" && !strings.HasPrefix(l, "OFPST_") && !strings.HasPrefix(l, "NXST_") {
				lines = append(lines, l)
			}
		}
	}
	slices.Sort(lines)
	return lines
}

type quietHandler struct{}

func (quietHandler) Connected(int)             {}
func (quietHandler) PacketIn(*ofctrl.PacketIn) {}

func TestRenderedPipelineLoadsIntoOVS(t *testing.T) {
	o := ovstest.Start(t)
	o.AddBridge("br-text")
	o.AddBridge("br-msgs")
	snap := exampleSnapshot(t)
	f := &Factory{Options: testOptions()}

	var out bytes.Buffer
	if err := f.Render(&out, dataplanes.Env{}, snap); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	groupsPart, flowsPart, ok := strings.Cut(text, "# flows\n")
	if !ok {
		t.Fatalf("render output has no flows section:\n%s", text)
	}
	dir := t.TempDir()
	gf, ff := filepath.Join(dir, "groups"), filepath.Join(dir, "flows")
	os.WriteFile(gf, []byte(groupsPart), 0o644)
	os.WriteFile(ff, []byte(flowsPart), 0o644)
	o.Ofctl("add-groups", "br-text", gf)
	o.Ofctl("add-flows", "br-text", ff)

	// The same state through OpenFlow messages in one bundle.
	m, err := f.renderModel(snap)
	if err != nil {
		t.Fatal(err)
	}
	batch := m.State().Pending(engine.All)
	c := ofconn.Dial(o.MgmtSocket("br-msgs"), quietHandler{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, batch, nil); err != nil {
		t.Fatal(err)
	}
	a, b := dumpNormalized(o, "br-text"), dumpNormalized(o, "br-msgs")
	if !slices.Equal(a, b) {
		t.Fatalf("rendered text and OpenFlow messages differ:\ntext:\n%s\nmessages:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	nFlows := strings.Count(flowsPart, "\n")
	if len(a) < nFlows || nFlows < 60 {
		t.Fatalf("only %d flows rendered / %d lines installed", nFlows, len(a))
	}
	t.Logf("%d flows and %d groups render, load with ovs-ofctl and match the messages", nFlows, strings.Count(groupsPart, "group_id="))
}
