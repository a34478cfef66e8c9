package resp

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// BenchmarkSetPipeline serves batches of 16 SETs (of one key, as
// redis-benchmark without -r) or MSETs of 10 pairs through a connection
// that reads whole batches, as `resp bench` -P 16 does: the user-space
// work per command (parse, execute, store the value, answer), without
// system calls. An op is one command.
func BenchmarkSetPipeline(b *testing.B) {
	for _, size := range []int{64, 4096, 65536} {
		v := bytes.Repeat([]byte{'v'}, size)
		k := []byte("key:__rand_int__")
		set := encode([]byte("SET"), k, v)
		mset := [][]byte{[]byte("MSET")}
		for range 10 {
			mset = append(mset, k, v)
		}
		for _, c := range []struct {
			name string
			cmd  []byte
		}{{"set", set}, {"mset", encode(mset...)}} {
			b.Run(c.name+"/d"+strconv.Itoa(size), func(b *testing.B) {
				p := memtest.NewPool(b, mem.PoolConfig{Name: "resp-bench", Concurrent: true, MaxBytes: 256 << 20})
				srv, err := NewServer(Config{Pool: p, CommandTimeout: -1})
				if err != nil {
					b.Fatal(err)
				}
				defer srv.Close()
				in := bytes.Repeat(c.cmd, 16)
				fc := &fakeConn{chunk: len(in)}
				cn := srv.newConn(fc)
				for range 4 { // grow the buffers
					fc.in = in
					cn.serve()
				}
				b.SetBytes(int64(len(c.cmd)))
				b.ResetTimer()
				for i := 0; i < b.N; i += 16 {
					fc.in = in
					cn.serve()
				}
				b.StopTimer()
				cn.out.release()
				srv.FlushAll()
			})
		}
	}
}
