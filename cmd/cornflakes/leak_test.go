package main

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// childArgsEnv, when set in the environment, makes the test binary run the
// cornflakes command line it holds (arguments separated by newlines) and
// exit with its code instead of running the tests: the two-process tests
// start a `cornflakes kv serve` this way (see startChild).
const childArgsEnv = "CORNFLAKES_TEST_CHILD_ARGS"

// TestMain fails the package's tests when any goroutine they started is
// still running after they finish (endpoints, servers, load generators and
// timers must all be stopped by Close).
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childArgsEnv); ok {
		os.Exit(run(strings.Split(args, "\n"), os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}
