package conformance

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// judge compares a probe's answers with what the case expects; it returns
// "" when they agree, else "expected ..., saw ...".
func judge(e Expect, dst netip.Addr, as []Answer) string {
	seen := tally(as)
	bad := func(why string) string {
		return fmt.Sprintf("expected %s; saw %s (%s)", e, seen, why)
	}
	switch e.Outcome {
	case ExpectRejected:
		if n := count(as, Rejected); n != len(as) {
			return bad(fmt.Sprintf("%d of %d not refused", len(as)-n, len(as)))
		}
		return ""
	case ExpectDropped:
		if n := count(as, Dropped); n != len(as) {
			return bad(fmt.Sprintf("%d of %d got some answer", len(as)-n, len(as)))
		}
		return ""
	case ExpectUnreached:
		if n := count(as, Answered); n > 0 {
			return bad(fmt.Sprintf("%d of %d answered", n, len(as)))
		}
		if n := count(as, Failed); n > 0 {
			return bad(fmt.Sprintf("%d of %d failed in the harness, not in the network", n, len(as)))
		}
		return ""
	}
	ids := map[string]int{}
	for _, a := range as {
		if a.Outcome != Answered {
			return bad("a connection was not answered")
		}
		ok := false
		for _, want := range e.Reaches {
			if matches(want, a.Identity) {
				ok = true
			}
		}
		if !ok {
			return bad(a.Identity + " is not expected")
		}
		if e.Source != "" {
			want, _ := e.sourceAddr(dst)
			if e.Source == "node" && a.NodeSource.IsValid() {
				want = a.NodeSource
			}
			if a.Source != want {
				return bad(fmt.Sprintf("%s saw the connection from %v, not %s (%s)", a.Identity, a.Source, want, e.Source))
			}
		}
		ids[a.Identity]++
	}
	if e.All {
		for _, want := range e.Reaches {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(ids)), func(id string) bool { return matches(want, id) }) {
				return bad(want + " never answered")
			}
		}
	}
	if e.Sticky && len(ids) > 1 {
		return bad("not sticky")
	}
	if e.Distinct > 0 && len(ids) < e.Distinct {
		return bad(fmt.Sprintf("only %d different endpoints", len(ids)))
	}
	return ""
}

// matches reports whether an answer's identity ("p1:8080") is the
// expected one ("p1" or "p1:8080").
func matches(want, id string) bool {
	if strings.Contains(want, ":") {
		return want == id
	}
	name, _, _ := strings.Cut(id, ":")
	return name == want
}

func count(as []Answer, o Outcome) int {
	n := 0
	for _, a := range as {
		if a.Outcome == o {
			n++
		}
	}
	return n
}

// tally summarises answers: "p1:8080 x6, p2:8080 x4, dropped x1 (timeout)".
func tally(as []Answer) string {
	n := map[string]int{}
	detail := map[string]string{}
	for _, a := range as {
		k := a.Identity
		if a.Outcome != Answered {
			k = string(a.Outcome)
			if detail[k] == "" {
				detail[k] = a.Detail
			}
		}
		n[k]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		s := fmt.Sprintf("%s x%d", k, n[k])
		if d := detail[k]; d != "" {
			s += " (" + d + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// String renders the expectation for a failure message.
func (e Expect) String() string {
	if e.Outcome != "" {
		return e.Outcome
	}
	s := "answers from " + strings.Join(e.Reaches, "|")
	if e.All {
		s += ", each of them"
	}
	if e.Sticky {
		s += ", all from one"
	}
	if e.Distinct > 0 {
		s += fmt.Sprintf(", from at least %d different", e.Distinct)
	}
	if e.Source != "" {
		s += ", seeing the connection from " + e.Source
	}
	return s
}
