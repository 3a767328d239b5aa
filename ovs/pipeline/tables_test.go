package pipeline

import (
	"os"
	"strings"
	"testing"
)

// The pipeline is documented in docs/ovs.md; keep the two in step.
func TestEveryTableIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ovs.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint8]bool{}
	for i, tb := range Tables {
		if seen[tb.ID] || (i > 0 && tb.ID <= Tables[i-1].ID) {
			t.Fatalf("table %s: IDs must be unique and increasing", tb.Name)
		}
		seen[tb.ID] = true
		row := "| " + itoa(tb.ID) + " | " + tb.Name + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/ovs.md has no row %q", row)
		}
	}
}

func itoa(n uint8) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}
