//go:build linux

package ovsharness

import "testing"

// Two entries of one zone with one reply tuple are the same key; another
// zone or another tuple is not.
func TestReplyOf(t *testing.T) {
	natted := "tcp,orig=(src=10.244.1.1,dst=10.96.200.1,sport=40001,dport=80),reply=(src=10.244.2.10,dst=10.244.1.1,sport=8080,dport=40001),zone=21337,mark=16,protoinfo=(state=TIME_WAIT)"
	straight := "tcp,orig=(src=10.244.1.1,dst=10.244.2.10,sport=40001,dport=8080),reply=(src=10.244.2.10,dst=10.244.1.1,sport=8080,dport=40001),zone=21337,protoinfo=(state=ESTABLISHED)"
	otherZone := "tcp,orig=(src=10.244.1.1,dst=10.244.2.10,sport=40001,dport=8080),reply=(src=10.244.2.10,dst=10.244.1.1,sport=8080,dport=40001),zone=21338,protoinfo=(state=ESTABLISHED)"
	otherPort := "tcp,orig=(src=10.244.1.1,dst=10.244.2.10,sport=40002,dport=8080),reply=(src=10.244.2.10,dst=10.244.1.1,sport=8080,dport=40002),zone=21337,protoinfo=(state=ESTABLISHED)"
	want := "zone=21337 reply=(src=10.244.2.10,dst=10.244.1.1,sport=8080,dport=40001)"
	if got := replyOf(natted); got != want {
		t.Errorf("replyOf = %q, want %q", got, want)
	}
	if replyOf(straight) != replyOf(natted) {
		t.Error("two entries with one reply tuple in one zone differ")
	}
	if replyOf(otherZone) == replyOf(natted) || replyOf(otherPort) == replyOf(natted) {
		t.Error("another zone or port is the same key")
	}
	if replyOf("") != "" {
		t.Error("a line without a reply tuple has one")
	}
}
