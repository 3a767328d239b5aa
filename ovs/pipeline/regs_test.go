package pipeline

import "testing"

// A mark's value must fit its field (else it sets or matches bits of a
// neighbouring field: OVS refuses a match whose value has bits outside
// its mask), and fields of one register must not overlap, but for the
// source's low bit, which is part of the source.
func TestRegisterMarksFitAndFieldsDoNotOverlap(t *testing.T) {
	marks := map[string]regMark{"fromPod": fromPod, "fromOutside": fromOutside, "fromNode": fromNode, "fromTunnel": fromTunnel,
		"fromThisNode": fromThisNode, "newConn": newConn, "masquerade": masquerade, "toPod": toPod, "toGateway": toGateway,
		"toTunnel": toTunnel, "isService": isService, "notService": notService, "toSelect": toSelect, "selected": selected, "toLearn": toLearn}
	for name, mk := range marks {
		if mk.value<<mk.field.start&^mk.field.mask() != 0 {
			t.Errorf("%s: value %d does not fit %s", name, mk.value, mk.field)
		}
	}
	fields := []regField{sourceField, newConnField, masqueradeField, destField, serviceField, outPortField, scratchField,
		endpointIPField, endpointPortField, endpointStateField}
	for i, a := range fields {
		for _, b := range fields[i+1:] {
			if a.reg == b.reg && a.mask()&b.mask() != 0 {
				t.Errorf("%s and %s overlap", a, b)
			}
		}
	}
	if thisNodeField.mask()&^sourceField.mask() != 0 {
		t.Errorf("%s is not within %s", thisNodeField, sourceField)
	}
}
