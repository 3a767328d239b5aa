//go:build !windows

package hns

import "errors"

// platformClient: HNS exists only on Windows.
func platformClient() (Client, error) {
	return nil, errors.New("the hns dataplane needs Windows (HNS); on Linux use `switchyard render --dataplane hns` or the simulator")
}
