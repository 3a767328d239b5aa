package object

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"google.golang.org/protobuf/encoding/protowire"
)

// DecodeService makes the core's copy of a v1 Service straight from its
// protobuf encoding (the message inside the API server's runtime.Unknown
// envelope), as DecodeEndpointSlice does for slices: the copy is exactly
// what Service makes of the decoded object
// (TestDecodeServiceMatchesConvert). Unknown fields are skipped; a field
// of the wrong wire type or a truncated message is an error.
func (c *Converter) DecodeService(b []byte) (*Service, error) {
	d := serviceDecoder{out: &Service{}}
	if err := fields(b, d.service); err != nil {
		return nil, fmt.Errorf("Service: %w", err)
	}
	if d.hasTimeout {
		d.out.AffinityTimeout = &d.timeout
	}
	return d.out, nil
}

// serviceDecoder fills out as the wire says. The affinity timeout is
// kept aside: the copy points to it only when it was sent (inside
// sessionAffinityConfig's clientIP), as Service copies the API type's
// pointer.
type serviceDecoder struct {
	out        *Service
	timeout    int32
	hasTimeout bool
}

func (d *serviceDecoder) service(num protowire.Number, typ protowire.Type, _ uint64, v []byte) error {
	if num > 3 {
		return nil
	}
	if typ != protowire.BytesType {
		return errWireType
	}
	switch num {
	case 1:
		return objectMeta(v, &d.out.Meta, d.label, d.annotation)
	case 2:
		return fields(v, d.spec)
	default:
		return fields(v, d.status)
	}
}

func (d *serviceDecoder) label(k, v []byte) {
	switch string(k) {
	case LabelServiceProxyName:
		d.out.ProxyName, d.out.HasProxyName = string(v), true
	case LabelHeadless:
		d.out.Headless = true
	}
}

// annotation keeps all but kubectl's last-applied configuration, as
// Service does; later entries win, as in a map.
func (d *serviceDecoder) annotation(k, v []byte) {
	if string(k) == v1.LastAppliedConfigAnnotation {
		return
	}
	if d.out.Annotations == nil {
		d.out.Annotations = map[string]string{}
	}
	d.out.Annotations[string(k)] = string(v)
}

// The ServiceSpec fields the copy reads, by number, and their wire types.
var specFields = map[protowire.Number]protowire.Type{
	1: protowire.BytesType, 3: protowire.BytesType, 4: protowire.BytesType, 5: protowire.BytesType,
	7: protowire.BytesType, 9: protowire.BytesType, 11: protowire.BytesType, 12: protowire.VarintType,
	14: protowire.BytesType, 18: protowire.BytesType, 22: protowire.BytesType,
}

func (d *serviceDecoder) spec(num protowire.Number, typ protowire.Type, x uint64, v []byte) error {
	want, read := specFields[num]
	if !read {
		return nil
	}
	if typ != want {
		return errWireType
	}
	o := d.out
	switch num {
	case 1:
		o.Ports = append(o.Ports, ServicePort{})
		return servicePort(&o.Ports[len(o.Ports)-1], v)
	case 3:
		o.ClusterIP = string(v)
	case 4:
		o.Type = v1.ServiceType(v)
	case 5:
		o.ExternalIPs = append(o.ExternalIPs, string(v))
	case 7:
		o.SessionAffinity = v1.ServiceAffinity(v)
	case 9:
		o.LoadBalancerSourceRanges = append(o.LoadBalancerSourceRanges, string(v))
	case 11:
		o.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicy(v)
	case 12:
		o.HealthCheckNodePort = int32(x)
	case 14:
		return d.affinityConfig(v)
	case 18:
		o.ClusterIPs = append(o.ClusterIPs, string(v))
	case 22:
		o.InternalTrafficPolicy = v1.ServiceInternalTrafficPolicy(v)
	}
	return nil
}

// affinityConfig reads sessionAffinityConfig's clientIP (1) and its
// timeoutSeconds (1).
func (d *serviceDecoder) affinityConfig(b []byte) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, v []byte) error {
		if num != 1 {
			return nil
		}
		if typ != protowire.BytesType {
			return errWireType
		}
		return fields(v, func(n protowire.Number, t protowire.Type, x uint64, _ []byte) error {
			if n != 1 {
				return nil
			}
			if t != protowire.VarintType {
				return errWireType
			}
			d.timeout, d.hasTimeout = int32(x), true
			return nil
		})
	})
}

func servicePort(p *ServicePort, b []byte) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, x uint64, v []byte) error {
		switch num {
		case 1, 2:
			if typ != protowire.BytesType {
				return errWireType
			}
			if num == 1 {
				p.Name = string(v)
			} else {
				p.Protocol = v1.Protocol(v)
			}
		case 3, 5:
			if typ != protowire.VarintType {
				return errWireType
			}
			if num == 3 {
				p.Port = int32(x)
			} else {
				p.NodePort = int32(x)
			}
		}
		return nil
	})
}

// status reads the load balancer's (1) ingress points (1): each one's ip
// (1) and ipMode (3); those without an IP are left out, as Service does.
func (d *serviceDecoder) status(num protowire.Number, typ protowire.Type, _ uint64, v []byte) error {
	if num != 1 {
		return nil
	}
	if typ != protowire.BytesType {
		return errWireType
	}
	return fields(v, func(n protowire.Number, t protowire.Type, _ uint64, w []byte) error {
		if n != 1 {
			return nil
		}
		if t != protowire.BytesType {
			return errWireType
		}
		var in Ingress
		err := fields(w, func(f protowire.Number, ft protowire.Type, _ uint64, x []byte) error {
			if f != 1 && f != 3 {
				return nil
			}
			if ft != protowire.BytesType {
				return errWireType
			}
			if f == 1 {
				in.IP = string(x)
			} else {
				in.IPMode = v1.LoadBalancerIPMode(x)
			}
			return nil
		})
		if err == nil && in.IP != "" {
			d.out.Ingress = append(d.out.Ingress, in)
		}
		return err
	})
}
