package hns_test

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/hns"
)

// TestDocsListEveryFlag keeps docs/hns.md's flag table in step with the
// flags the driver registers.
func TestDocsListEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../docs/hns.md")
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("hns", pflag.ContinueOnError)
	var o hns.Options
	o.AddFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(string(doc), "| `--"+f.Name+"` |") {
			t.Errorf("docs/hns.md has no row for --%s", f.Name)
		}
	})
	for gap := range (&hns.Factory{}).Capabilities().Gaps {
		if !strings.Contains(string(doc), "`"+string(gap)+"`") {
			t.Errorf("docs/hns.md does not name the declared gap %s", gap)
		}
	}
}
