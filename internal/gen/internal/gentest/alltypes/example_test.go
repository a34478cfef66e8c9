package alltypes_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/other"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Building, serializing and decoding a generated message. Everything lives
// in the arena until Reset.
func Example() {
	a := wire.NewArena() // threshold 512: shorter values are copied
	defer a.Reset()

	// Build.
	x := alltypes.NewOuter(a)
	x.SetSnakeCaseField(7)
	x.InitInner().SetPayload([]byte("hello"))
	blobs := x.InitBlobs(2)
	for _, name := range []string{"a", "b"} {
		b := other.NewBlob(a)
		b.SetName(name)
		b.SetLevel(other.Level_LEVEL_HIGH)
		blobs.Append(b)
	}

	// Serialize into a scatter-gather array (a datapath would instead call
	// SendObject(x), which writes the head into its TX buffer).
	var sga wire.SGA
	if err := wire.SerializeSGA(x, &sga); err != nil {
		panic(err)
	}
	fmt.Println("size matches Sizes:", sga.Len() == x.Sizes().Total(), "zero-copy entries:", len(sga.Entries))

	// Decode (zero-copy: fields alias the input until a.Reset).
	y := alltypes.NewOuter(a)
	if err := y.DecodeBytes(sga.AppendTo(nil)); err != nil {
		panic(err)
	}
	in, _ := y.GetInner()
	l, _ := y.GetBlobs()
	name, _ := l.At(1).GetName()
	fmt.Println(y.GetSnakeCaseField(), string(in.GetPayload()), l.Len(), name, x.Equal(y))
	fmt.Println(y)
	// Output:
	// size matches Sizes: true zero-copy entries: 0
	// 7 hello 2 b true
	// Outer{inner:Outer_Inner{payload:"hello"} blobs:[Blob{name:"a" level:LEVEL_HIGH} Blob{name:"b" level:LEVEL_HIGH}] snake_case_field:7}
}
