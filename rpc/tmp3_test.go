package rpc_test

import (
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/rpc"
)

func BenchmarkTmpSessUDP(b *testing.B) {
	for _, n := range []int{1, 20000} {
		b.Run(fmt.Sprintf("udp/%d", n), func(b *testing.B) { benchSmallRPC(b, "udp", n, rpc.DefaultWindow) })
	}
}
