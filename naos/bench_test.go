package naos

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"testing"
	"unsafe"
)

func benchPairs(n int) []*Pair {
	v := make([]*Pair, n)
	for i := range v {
		v[i] = &Pair{int32(i), fmt.Sprintf("%05d", i)}
	}
	return v
}

// BenchmarkStream sends and receives over loopback TCP (b.N arrays).
func BenchmarkStream(b *testing.B) {
	for _, c := range []struct {
		name string
		v    any
		recv func(*Conn) error
	}{
		{"float32-65536", make([]float32, 1<<16), func(k *Conn) error { _, err := Recv[[]float32](k); return err }},
		{"pointval-65536", make([]Point, 1<<16), func(k *Conn) error { _, err := Recv[[]Point](k); return err }},
		{"pairptr-65536", benchPairs(1 << 16), func(k *Conn) error { _, err := Recv[[]*Pair](k); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			a, r := pair(b, "tcp", Options{})
			errc := make(chan error, 1)
			b.ResetTimer()
			go func() {
				for i := 0; i < b.N; i++ {
					if err := a.Send(c.v); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			for i := 0; i < b.N; i++ {
				if err := c.recv(r); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkDecodePairs is the receiver's recovery alone.
func BenchmarkDecodePairs(b *testing.B) {
	msg, _ := AppendEncode(nil, benchPairs(1<<16), Options{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode[[]*Pair](msg, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTraversePairs is the in-memory sender (AppendEncode, the RPC
// path): the traversal and the copy into a (reused) message buffer.
func BenchmarkTraversePairs(b *testing.B) {
	v := benchPairs(1 << 16)
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := encodeWith(v, Options{}, func(n int) ([]byte, error) {
			if cap(buf) < n {
				buf = make([]byte, n)
			}
			return buf[:n], nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamFloats1M(b *testing.B) {
	a, r := pair(b, "tcp", Options{})
	v := make([]float32, 1<<20)
	go func() {
		for i := 0; i < b.N; i++ {
			if a.Send(v) != nil {
				return
			}
		}
	}()
	for i := 0; i < b.N; i++ {
		if _, err := Recv[[]float32](r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamInto is BenchmarkStream with the receiver reusing its
// array (RecvInto): no allocation per message on either side.
func BenchmarkStreamInto(b *testing.B) {
	for _, n := range []int{4096, 1 << 16, 1 << 20} {
		b.Run(fmt.Sprintf("float32-%d", n), func(b *testing.B) {
			a, r := pair(b, "tcp", Options{})
			v := make([]float32, n)
			errc := make(chan error, 1)
			go func() {
				for i := 0; i < b.N; i++ {
					if err := a.Send(v); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			b.ReportAllocs()
			b.SetBytes(int64(4 * n))
			var w []float32
			for i := 0; i < b.N; i++ {
				if err := RecvInto(r, &w); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkStreamFloor moves the same bytes as BenchmarkStreamInto's
// float32 case with one write and buffered reads into a reused buffer:
// the kernel's two copies, for comparison.
func BenchmarkStreamFloor(b *testing.B) {
	for _, n := range []int{4096, 1 << 16, 1 << 20} {
		b.Run(fmt.Sprintf("float32-%d", n), func(b *testing.B) {
			a, r := pair(b, "tcp", Options{})
			msg, err := AppendEncode(nil, make([]float32, n), Options{})
			if err != nil {
				b.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() {
				for i := 0; i < b.N; i++ {
					if _, err := a.NetConn().Write(msg); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			b.ReportAllocs()
			b.SetBytes(int64(4 * n))
			br := bufio.NewReaderSize(r.NetConn(), 64<<10)
			in := make([]byte, len(msg))
			for i := 0; i < b.N; i++ {
				if _, err := io.ReadFull(br, in); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkStreamIntoPairs is BenchmarkStreamInto for an array of
// pointers to pairs: the receiver reuses the array and its objects.
func BenchmarkStreamIntoPairs(b *testing.B) {
	for _, n := range []int{4096, 1 << 16, 1 << 18} {
		b.Run(fmt.Sprintf("pairptr-%d", n), func(b *testing.B) {
			a, r := pair(b, "tcp", benchOpts())
			var v any = benchPairs(n)
			errc := make(chan error, 1)
			go func() {
				for i := 0; i < b.N; i++ {
					if err := a.Send(v); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			b.ReportAllocs()
			var w []*Pair
			for i := 0; i < b.N; i++ {
				if err := RecvInto(r, &w); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// benchOpts: NAOS_RB (read buffer bytes) and NAOS_COMPACT=1 for experiments.
func benchOpts() Options {
	var o Options
	if s := os.Getenv("NAOS_RB"); s != "" {
		o.ReadBuffer, _ = strconv.Atoi(s)
	}
	o.Compact = os.Getenv("NAOS_COMPACT") == "1"
	return o
}

// BenchmarkDecodeIntoPairs is the receiver's recovery alone, into the
// previous value (RecvInto's reuse), from a message in memory; compact is
// NaosIt's encoding.
func BenchmarkDecodeIntoPairs(b *testing.B) {
	for _, compact := range []bool{false, true} {
		b.Run(fmt.Sprintf("compact=%v", compact), func(b *testing.B) {
			msg, err := AppendEncode(nil, benchPairs(1<<16), Options{Compact: compact})
			if err != nil {
				b.Fatal(err)
			}
			d := &decoder{}
			var w []*Pair
			p, _ := planOf(reflect.TypeFor[[]*Pair]())
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.own = reader{buf: msg, w: len(msg)}
				d.r, d.lim = &d.own, Limits{}.withDefaults()
				if err := decodeInto(d, &w, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStagePairs is the stream sender's traversal alone: 2^16 pairs
// staged (hybrid send list), without the writev.
func BenchmarkStagePairs(b *testing.B) {
	for _, compact := range []bool{false, true} {
		b.Run(fmt.Sprintf("compact=%v", compact), func(b *testing.B) {
			v := benchPairs(1 << 16)
			root := reflect.New(reflect.TypeOf(v))
			root.Elem().Set(reflect.ValueOf(v))
			p, _ := planOf(root.Elem().Type())
			e := newEncoder(Options{Compact: compact}, true)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := stageOnce(&e, root.UnsafePointer(), p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func stageOnce(e *encoder, root unsafe.Pointer, p *plan) error {
	defer e.reset()
	return e.traverse(root, p)
}
