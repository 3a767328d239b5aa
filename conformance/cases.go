package conformance

import "embed"

//go:embed cases/*.yaml
var caseFiles embed.FS

// Cases returns the built-in case list (cases/*.yaml).
func Cases() ([]Case, error) { return LoadCases(caseFiles, "cases/*.yaml") }
