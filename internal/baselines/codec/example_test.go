package codec_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/internal/baselines/codec"
)

// A server's echo with one of the baselines: decode the received message (the values alias
// it), then encode a response holding the same values into the codec's reused output.
func ExampleFlatBuffers() {
	c, err := codec.NewFlatBuffers(codec.KindList, 1<<12)
	if err != nil {
		panic(err)
	}
	req, _ := c.Encode([][]byte{[]byte("hello"), []byte("world")})
	received := append([]byte(nil), req...) // as a datapath would deliver it

	vals, err := c.Decode(received)
	if err != nil {
		panic(err)
	}
	resp, _ := c.Encode(vals) // valid until the next Encode
	fmt.Printf("%q, response of %d bytes\n", vals, len(resp))
	// Output: ["hello" "world"], response of 68 bytes
}

func ExampleProtobuf() {
	c, _ := codec.NewProtobuf(codec.KindSingle, true) // vtprotobuf
	msg, _ := c.Encode([][]byte{[]byte("value")})
	vals, err := c.Decode(msg)
	fmt.Printf("%q %v\n", vals, err)
	// Output: ["value"] <nil>
}

func ExampleCapnp() {
	c, _ := codec.NewCapnp(codec.KindTree)
	defer c.Close()
	leaves := make([][]byte, codec.TreeLeaves)
	for i := range leaves {
		leaves[i] = []byte{byte(i)}
	}
	hdr, seg, _ := c.Encode(leaves)
	vals, err := c.Decode(append(append([]byte(nil), hdr...), seg...))
	fmt.Println(len(vals), vals[31], err)
	// Output: 32 [31] <nil>
}

func ExampleCheckCount() {
	fmt.Println(codec.CheckCount(codec.KindTree, 3))
	// Output: codec: wrong number of values: 3 leaves in a Tree5
}
