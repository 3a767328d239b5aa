package hnssim

import "github.com/switchyard-proxy/switchyard/hns"

// What the simulator supports follows the HNS version it reports, with
// the version lines hcsshim and hnslib check (hcn/hcnglobals.go of
// hcsshim v0.13.0 and hnslib v0.1.2):
//
//	DSR                 9.3 to 9.x, and 10.2+       (DSRVersion)
//	IPv6 dual-stack     11.10+                      (IPv6DualStackVersion)
//	session affinity    12.0+                       (SessionAffinityVersion)
//	ModifyLoadBalancer  15.4+ in hcsshim; hnslib 15.5+ (ModifyLoadbalancerVersion)
//
// A Build is a shorthand for an HNS version. Which HNS version a Windows
// Server build ships is not documented anywhere we found: the versions
// below are unverified, chosen inside the lines above so that each build
// has what Microsoft's Kubernetes documentation says it has (DSR from
// 2019, session affinity and dual-stack from 2022, in-place modify on
// 2025). SetVersion sets any version.

// Build is a simulated Windows Server build.
type Build int

// Builds, and the HNS version each is assumed to report.
const (
	Windows2019 Build = 17763 // HNS 10.2 (unverified): DSR
	Windows2022 Build = 20348 // HNS 13.0 (unverified): + session affinity, IPv6 dual-stack
	Windows2025 Build = 26100 // HNS 15.5 (unverified; kubernetes#131466 met 15.4 on WS2025): + ModifyLoadBalancer
)

// versionOf is the HNS version assumed for a build.
func versionOf(b Build) hns.Version {
	switch {
	case b >= Windows2025:
		return hns.Version{Major: 15, Minor: 5}
	case b >= Windows2022:
		return hns.Version{Major: 13, Minor: 0}
	case b >= Windows2019:
		return hns.Version{Major: 10, Minor: 2}
	}
	return hns.Version{Major: 9, Minor: 2}
}

// featuresOf is what an HNS version supports, as hcsshim reports it
// (hcn.GetSupportedFeatures): the driver's Windows client reads these.
func featuresOf(v hns.Version) hns.Features {
	return hns.Features{
		DSR:                v.Major == 9 && v.Minor >= 3 || v.AtLeast(10, 2),
		IPv6DualStack:      v.AtLeast(11, 10),
		SessionAffinity:    v.AtLeast(12, 0),
		ModifyLoadBalancer: v.AtLeast(15, 4),
		Version:            v,
	}
}

// maxBackends is how many endpoints a load balancer takes (0: no limit
// modelled). 64 is kubernetes#98680's report (2021, Windows Server 2019
// era); that later versions take more is unverified: assumed from HNS 12.0
// (the 2022 line) on.
func maxBackends(v hns.Version) int {
	if !v.AtLeast(12, 0) {
		return 64
	}
	return 0
}
