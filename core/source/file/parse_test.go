package file

import (
	"os"
	"strings"
	"testing"
)

func TestParseMixedFile(t *testing.T) {
	data, err := os.ReadFile("testdata/mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l := Parse("mixed.yaml", data)
	if len(l.Services) != 1 || l.Services[0].Name != "web" || len(l.Slices) != 1 || len(l.Nodes) != 1 {
		t.Fatalf("loaded %d services, %d slices, %d nodes", len(l.Services), len(l.Slices), len(l.Nodes))
	}
	if l.Ignored["Pod"] != 1 {
		t.Errorf("ignored = %v, want the Pod counted", l.Ignored)
	}
	if len(l.Errors) != 1 {
		t.Fatalf("errors = %v", l.Errors)
	}
	e := l.Errors[0]
	if e.Index != 3 || e.Line != 32 || e.Key != "Service shop/broken" || !strings.Contains(e.Error(), "mixed.yaml: document 3 (line 32) Service shop/broken:") {
		t.Errorf("error = %q (index %d line %d key %q)", e.Error(), e.Index, e.Line, e.Key)
	}
}

func TestParseList(t *testing.T) {
	data, err := os.ReadFile("testdata/list.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l := Parse("list.yaml", data)
	if len(l.Services) != 1 || l.Services[0].Namespace != "default" {
		t.Fatalf("services = %v (want a, defaulted into namespace default)", l.Services)
	}
	if len(l.Errors) != 2 {
		t.Fatalf("errors = %v", l.Errors)
	}
	if l.Errors[0].Item != 1 || l.Errors[0].Key != "Service x/b" {
		t.Errorf("first error %+v", l.Errors[0])
	}
	if l.Errors[1].Item != 2 || !strings.Contains(l.Errors[1].Error(), "metadata.name is missing") {
		t.Errorf("second error %q", l.Errors[1].Error())
	}
}

func TestParseProblems(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		errs    int
		key     string // key of the first error
		service string // name of the surviving service, if any
	}{
		{"broken YAML names nothing", "apiVersion: v1\nkind: Service\nmetadata: {name: a\n", 1, "", ""},
		{"not YAML at all", "\t::: {{{", 1, "", ""},
		{"unknown apiVersion of a kind we use", "apiVersion: v9\nkind: Service\nmetadata: {name: a}\n", 1, "Service default/a", ""},
		{"duplicate object: later wins",
			"apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: ns1}\nspec: {clusterIP: 10.96.0.1}\n---\n" +
				"apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: ns1}\nspec: {clusterIP: 10.96.0.2}\n",
			1, "Service ns1/a", "a"},
		{"empty file", "", 0, "", ""},
		{"separators and comments only", "---\n# hi\n---\n", 0, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := Parse("f.yaml", []byte(tc.in))
			if len(l.Errors) != tc.errs {
				t.Fatalf("errors = %v, want %d", l.Errors, tc.errs)
			}
			if tc.errs > 0 && l.Errors[0].Key != tc.key {
				t.Errorf("key = %q, want %q", l.Errors[0].Key, tc.key)
			}
			if tc.service != "" {
				if len(l.Services) != 1 || l.Services[0].Spec.ClusterIP != "10.96.0.2" {
					t.Errorf("services = %v, want the later definition only", l.Services)
				}
			}
		})
	}
}
