package kv_test

// The baseline serializers live in kv/kvbench, which registers them with
// kv.RegisterCodec; importing it here links them into this package's test
// binary, so the tests of every codec (internal ones included) run them.
import _ "github.com/cornflakes-go/cornflakes/kv/kvbench"
