package kvbench_test

import (
	"slices"
	"testing"

	"github.com/cornflakes-go/cornflakes/kv"
	_ "github.com/cornflakes-go/cornflakes/kv/kvbench"
)

// TestRegistered: importing kvbench makes every baseline codec available
// (their round trips, fuzzing and allocation tests run in kv's tests,
// which import this package).
func TestRegistered(t *testing.T) {
	all := kv.AllCodecs()
	for _, c := range []kv.Codec{kv.CodecProtobuf, kv.CodecVTProtobuf, kv.CodecFlatBuffers, kv.CodecCapnp} {
		if !slices.Contains(all, c) {
			t.Errorf("%v not registered: AllCodecs = %v", c, all)
		}
	}
}
