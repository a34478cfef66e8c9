package rpc

// Sleeping reports whether ep's Run is in (or about to enter) the
// datapath's Wait with a Wake pending for hand-overs (for tests that need
// a hand-over to reach a sleeping endpoint).
func Sleeping(ep *Endpoint) bool { return ep.sleeping.Load() }

// CCConfigOf returns the congestion-control configuration ep's core runs
// with (defaults applied).
func CCConfigOf(ep *Endpoint) CCConfig { return ep.core.Config().CC }
