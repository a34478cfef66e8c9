package service

// HoldLoop takes c's endpoint loop on a goroutine of its own, as a caller
// running it would, without running it: until release, calls from other
// goroutines are handed to the loop with Post. For tests.
func HoldLoop(c *Client) (release func()) {
	ok := make(chan bool)
	go func() { ok <- c.tryLead() }()
	if !<-ok {
		panic("service: HoldLoop: the loop is busy")
	}
	return func() {
		c.leadG.Store(0)
		c.lead.Store(false)
	}
}
