package hns

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOwnershipJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owned.json")
	s, err := loadOwned(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 10 {
		id := fmt.Sprintf("lb-%d", i)
		s.add(id, "key-"+id, "")
		want[id] = "key-" + id
	}
	s.remove("lb-3")
	delete(want, "lb-3")
	s.remove("not-ours") // no line for what was never recorded
	if err := s.saveIfChanged(path); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	s.add("lb-10", "key-lb-10", "")
	want["lb-10"] = "key-lb-10"
	if err := s.saveIfChanged(path); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(after), string(before)) || strings.Count(string(after), "\n") != strings.Count(string(before), "\n")+1 {
		t.Fatalf("one new load balancer did not append one line:\n%s\n---\n%s", before, after)
	}

	t.Run("reload", func(t *testing.T) {
		got, err := loadOwned(path)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got.LoadBalancers, want) {
			t.Fatalf("reloaded %v, want %v", got.LoadBalancers, want)
		}
	})
	t.Run("a torn last line is ignored", func(t *testing.T) {
		f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString(`{"add":"lb-99","ke`)
		f.Close()
		got, err := loadOwned(path)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got.LoadBalancers, want) {
			t.Fatalf("reloaded %v, want %v", got.LoadBalancers, want)
		}
	})
	t.Run("deletions are compacted away", func(t *testing.T) {
		s, _ := loadOwned(path)
		for i := range 500 {
			id := fmt.Sprintf("churn-%d", i)
			s.add(id, "k", "")
			s.remove(id)
			if err := s.saveIfChanged(path); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := os.ReadFile(path)
		if n := strings.Count(string(b), "\n"); n > 2*len(want)+64+2 {
			t.Fatalf("%d lines for %d load balancers: not compacted", n, len(want))
		}
		got, _ := loadOwned(path)
		if !maps.Equal(got.LoadBalancers, want) {
			t.Fatalf("after churn %v, want %v", got.LoadBalancers, want)
		}
	})
	t.Run("another file is refused, not overwritten", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other.json")
		os.WriteFile(other, []byte(`{"something":"else"}`+"\n"), 0o644)
		if _, err := loadOwned(other); err == nil {
			t.Fatal("a file that is not an ownership record was accepted")
		}
		if b, _ := os.ReadFile(other); string(b) != `{"something":"else"}`+"\n" {
			t.Fatal("it was overwritten")
		}
	})
}

// A create HNS keeps refusing is retried with the same intent: it is
// written once, not once a retry, and survives a reload until resolved.
func TestIntentWrittenOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owned.json")
	s, err := loadOwned(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.intend(path, "key-a", "echo-1", "asked-1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.intend(path, "key-a", "echo-2", "asked-1"); err != nil { // the Service changed
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), `"intent":"key-a"`); n != 2 {
		t.Fatalf("%d intent lines for two different intents:\n%s", n, b)
	}
	got, err := loadOwned(path)
	if err != nil {
		t.Fatal(err)
	}
	if in := got.Intents["key-a"]; in.echo != "echo-2" {
		t.Fatalf("reloaded intent %+v, want the latest", in)
	}
}
