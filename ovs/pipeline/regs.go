package pipeline

import "github.com/switchyard-proxy/switchyard/ovs/openflow"

// Register and mark layout, in one place.
//
//	reg0[0..3]   packet source: 1 pod, 2 external (forwarded by the host),
//	             3 node (the host's own), 4 tunnel; bit 0 set = from this node
//	reg0[4]      a new connection (set in ConntrackState)
//	reg0[5]      masquerade: SNAT the connection (set in ServiceLB)
//	reg0[6..7]   destination (set in L3Forwarding): 1 pod, 2 gateway, 3 tunnel
//	reg0[8]      the connection is DNATed to a service endpoint
//	reg1         output port (set in L3Forwarding)
//	reg2         scratch (the ARP responder swaps addresses through it)
//	reg3         selected endpoint IPv4 address
//	xxreg3       selected endpoint IPv6 address (overlaps reg12..reg15)
//	reg4[0..15]  selected endpoint port
//	reg4[16..18] endpoint state: 1 to select, 2 selected, 3 selected, affinity to learn
//	ct_mark[4]   connection was DNATed to a service endpoint (in the DNAT zone)
const (
	regSource   = 0
	srcPod      = 1
	srcExternal = 2
	srcNode     = 3
	srcTunnel   = 4
	srcMask     = 0xf
	srcLocalBit = 0x1 // pod (1) and node (3) have it, external (2) and tunnel (4) not

	regFlags       = 0
	newConnBit     = 1 << 4
	masqueradeBit  = 5
	flagMasquerade = 1 << masqueradeBit
	destShift      = 6
	destMask       = 0x3 << destShift
	destPod        = 1 << destShift
	destGateway    = 2 << destShift
	destTunnel     = 3 << destShift
	serviceBit     = 1 << 8

	regOutPort = 1
	regScratch = 2

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

func matchSource(v uint32) openflow.Match {
	return openflow.Reg{Index: regSource, Value: v, Mask: srcMask}
}

func setFlag(bit uint32) openflow.Action {
	return openflow.LoadReg{Index: regFlags, Value: bit, Mask: bit}
}

func matchFlag(bit uint32, on bool) openflow.Match {
	v := uint32(0)
	if on {
		v = bit
	}
	return openflow.Reg{Index: regFlags, Value: v, Mask: bit}
}

func setDest(dest uint32) openflow.Action {
	return openflow.LoadReg{Index: regFlags, Value: dest, Mask: destMask}
}

func matchDest(dest uint32) openflow.Match {
	return openflow.Reg{Index: regFlags, Value: dest, Mask: destMask}
}

func setOutPort(port uint32) openflow.Action {
	return openflow.LoadReg{Index: regOutPort, Value: port, Mask: 0xffffffff}
}

func matchOutPort(port uint32) openflow.Match {
	return openflow.Reg{Index: regOutPort, Value: port, Mask: 0xffffffff}
}

func matchState(state uint32) openflow.Match {
	return openflow.Reg{Index: regEndpoint, Value: state, Mask: stateMask}
}

func loadState(state uint32) openflow.Action {
	return openflow.LoadReg{Index: regEndpoint, Value: state, Mask: stateMask}
}
