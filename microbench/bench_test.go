package microbench

import (
	"testing"
)

// benchShapes are the shapes of the go test -bench benchmarks (the CLI runs all of them).
var benchShapes = []string{"1x1024", "2x2048", "4x1024", "1x4096", "1x8192", "8x512",
	"google-1", "google-1-4", "google-1-8", "google-1-16", "tree5", "sweep-512", "sweep-65536"}

// benchOp runs op for every bench shape and library/mode, e.g. BenchmarkEcho/2x2048/vtprotobuf
// or BenchmarkEcho/2x2048/cornflakes/hybrid.
func benchOp(b *testing.B, op Op) {
	for _, name := range benchShapes {
		shape, err := ShapeByName(name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for _, lib := range Libraries() {
				for _, mode := range lib.Modes() {
					b.Run(label(lib.Name(), mode), func(b *testing.B) {
						c, err := lib.Prepare(shape, mode)
						if err != nil {
							b.Fatal(err)
						}
						defer func() {
							if err := c.Close(); err != nil {
								b.Error(err)
							}
						}()
						b.ReportAllocs()
						b.SetBytes(int64(shape.TotalBytes(0)))
						b.ResetTimer()
						for b.Loop() {
							if err := op.Run(c); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		})
	}
}

func BenchmarkSerialize(b *testing.B) { benchOp(b, OpSerialize) }
func BenchmarkDecode(b *testing.B)    { benchOp(b, OpDecode) }
func BenchmarkEcho(b *testing.B)      { benchOp(b, OpEcho) }
