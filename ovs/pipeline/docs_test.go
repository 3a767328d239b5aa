package pipeline

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// docs/ovs.md's pipeline and register tables are made from the
// declarations (Tables, regs.go): this test fails when they differ, and
// go test ./ovs/pipeline -update rewrites them.
const docsFile = "../../docs/ovs.md"

// docBlocks are the generated parts of docs/ovs.md, each between its
// begin and end marker lines.
func docBlocks() []struct{ name, body string } {
	return []struct{ name, body string }{
		{"pipeline tables", tablesMarkdown()},
		{"registers", registersMarkdown()},
	}
}

func markers(name string) (begin, end string) {
	return fmt.Sprintf("<!-- %s: generated from ovs/pipeline by `go test ./ovs/pipeline -update` -->\n", name),
		fmt.Sprintf("<!-- end of %s -->\n", name)
}

func tablesMarkdown() string {
	var b strings.Builder
	b.WriteString("| # | Table | Purpose | Miss (priority 0) |\n|---|---|---|---|\n")
	for _, t := range Tables {
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", t.ID, t.Name, t.Purpose, missText(t.Miss))
	}
	return b.String()
}

// missText says what a miss does: drop, go on to a table, or its actions.
func missText(m Miss) string {
	var parts []string
	for _, a := range m.Actions {
		parts = append(parts, "`"+a.Text()+"`")
	}
	if m.Next != nil {
		parts = append(parts, "→ "+m.Next.Name)
	}
	if len(parts) == 0 {
		return "drop"
	}
	return strings.Join(parts, ", ")
}

func registersMarkdown() string {
	var b strings.Builder
	b.WriteString("| Field | Meaning |\n|---|---|\n")
	for _, f := range registerDocs() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", f[0], f[1])
	}
	return b.String()
}

func TestDocsTablesAreTheDeclarations(t *testing.T) {
	for i, tb := range Tables {
		if i > 0 && tb.ID <= Tables[i-1].ID {
			t.Fatalf("table %s: IDs must be unique and increasing", tb.Name)
		}
	}
	raw, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, blk := range docBlocks() {
		begin, end := markers(blk.name)
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("docs/ovs.md has no %q ... %q block", strings.TrimSpace(begin), strings.TrimSpace(end))
		}
		got := doc[i+len(begin) : j]
		if got == blk.body {
			continue
		}
		if !*update {
			t.Errorf("docs/ovs.md's %s differ from ovs/pipeline's declarations (go test ./ovs/pipeline -update rewrites them):\n%s",
				blk.name, lineDiff(got, blk.body))
			continue
		}
		doc = doc[:i+len(begin)] + blk.body + doc[j:]
	}
	if *update && doc != string(raw) {
		if err := os.WriteFile(docsFile, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
