package ovs

import (
	"antrea.io/libOpenflow/openflow15"
	"antrea.io/libOpenflow/util"
	"antrea.io/ofnet/ofctrl"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
	"github.com/switchyard-proxy/switchyard/ovs/replies"
	"k8s.io/klog/v2"
)

// PacketIn implements ofconn.Handler: rejects for frontends without
// endpoints, neighbour advertisements (the router's MAC for any address
// asked about).
func (d *Driver) PacketIn(pkt *ofctrl.PacketIn) {
	if len(pkt.UserData) > 0 && pkt.UserData[0] == pipeline.PacketInReject && pkt.PacketIn != nil {
		d.rejects.add(pkt.Cookie)
	}
	if len(pkt.UserData) == 0 || !d.limiter.Allow() {
		return
	}
	data, err := pkt.Data.MarshalBinary()
	if err != nil {
		return
	}
	var reply []byte
	switch pkt.UserData[0] {
	case pipeline.PacketInReject:
		reply = replies.Reject(data)
	case pipeline.PacketInNeighbor:
		d.mu.Lock()
		mac := d.model.Config().RouterMAC
		d.mu.Unlock()
		reply = replies.NeighborAdvert(data, mac)
	}
	if reply == nil {
		return
	}
	inPort, ok := inPortOf(pkt)
	if !ok {
		return
	}
	po := openflow15.NewPacketOut()
	po.Match.AddField(*openflow15.NewInPortField(inPort))
	po.AddAction(openflow15.NewActionOutput(openflow15.P_IN_PORT))
	po.Data = util.NewBuffer(reply)
	if err := d.conn.Send(po); err != nil {
		klog.V(2).InfoS("Packet-out failed", "err", err)
	}
}

func inPortOf(pkt *ofctrl.PacketIn) (uint32, bool) {
	for _, f := range pkt.Match.Fields {
		if f.Class == openflow15.OXM_CLASS_OPENFLOW_BASIC && f.Field == openflow15.OXM_FIELD_IN_PORT {
			if p, ok := f.Value.(*openflow15.InPortField); ok {
				return p.InPort, true
			}
		}
	}
	return 0, false
}
