package calibrate

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine they started is
// still running after they finish (endpoints, servers, load generators and
// timers must all be stopped by Close).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
