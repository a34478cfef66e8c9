package kvbench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine they started is
// still running after they finish.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
