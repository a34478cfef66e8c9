package memnet

// BreakEarlyRelease turns ep into a deliberately broken datapath that
// releases its zero-copy references when Send returns instead of at
// completion (for the test proving such a bug corrupts data and is caught).
func BreakEarlyRelease(ep *Endpoint) { ep.earlyRelease = true }
