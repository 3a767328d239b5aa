package pipeline

import "github.com/switchyard-proxy/switchyard/ovs/openflow"

// Register and mark layout, in one place.
//
//	reg0[0..3]   packet source: 1 pod, 2 uplink, 3 node (LOCAL); bit 0 set = from this node
//	reg0[5]      masquerade: SNAT the connection to the node IP (set in ServiceLB)
//	reg3         selected endpoint IPv4 address
//	xxreg3       selected endpoint IPv6 address (overlaps reg12..reg15)
//	reg4[0..15]  selected endpoint port
//	reg4[16..18] endpoint state: 1 to select, 2 selected, 3 selected, affinity to learn
//	ct_mark[4]   connection was DNATed to a service endpoint (in the DNAT zone)
const (
	regSource   = 0
	srcPod      = 1
	srcUplink   = 2
	srcNode     = 3
	srcMask     = 0xf
	srcLocalBit = 0x1 // pod (1) and node (3) have it, uplink (2) not

	regFlags       = 0
	masqueradeBit  = 5
	flagMasquerade = 1 << masqueradeBit

	regEndpointIP  = 3
	xxregEndpoint6 = 3

	regEndpoint   = 4
	portMask      = 0xffff
	stateShift    = 16
	stateMask     = 0x7 << stateShift
	stateToSelect = 1 << stateShift
	stateSelected = 2 << stateShift
	stateToLearn  = 3 << stateShift
	endpointMask  = stateMask | portMask
	markService   = 0x10
)

func loadSource(v uint32) openflow.Action {
	return openflow.LoadReg{Index: regSource, Value: v, Mask: srcMask}
}

func matchState(state uint32) openflow.Match {
	return openflow.Reg{Index: regEndpoint, Value: state, Mask: stateMask}
}

func loadState(state uint32) openflow.Action {
	return openflow.LoadReg{Index: regEndpoint, Value: state, Mask: stateMask}
}
