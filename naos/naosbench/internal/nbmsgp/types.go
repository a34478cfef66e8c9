// Package nbmsgp holds the data of naosbench as plain Go types with
// tinylib/msgp generated (de)serializers (types_gen.go; regenerate with
// naos/naosbench/gen.sh).
package nbmsgp

//go:generate msgp -file types.go -o types_gen.go -tests=false

// Point is a 2D point.
type Point struct {
	X float64 `msg:"x"`
	Y float64 `msg:"y"`
}

// Pair is a key/value pair.
type Pair struct {
	Key int32  `msg:"k"`
	Val string `msg:"v"`
}

// Floats is an array of float32.
type Floats []float32

// PointsVal is an array of points held by value.
type PointsVal []Point

// PointsPtr is an array of points held by pointer.
type PointsPtr []*Point

// Pairs is an array of pairs held by pointer.
type Pairs []*Pair
