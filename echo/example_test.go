package echo_test

import (
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/echo"
)

// One short run of Cornflakes (hybrid) echoing two 2048-byte fields over
// kernel UDP on loopback, every response checked byte for byte.
func ExampleRunOne() {
	r, err := echo.RunOne(echo.Config{Datapath: "udp", Duration: 50 * time.Millisecond, Warmup: 10 * time.Millisecond, Verify: true, MinResponses: 10}, "cornflakes-hybrid", "2x2048")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Approach, r.Shape, r.Requests > 0, r.Bad)
	// Output: cornflakes-hybrid 2x2048 true 0
}
