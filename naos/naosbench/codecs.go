package naosbench

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/cornflakes-go/cornflakes/naos"
	"github.com/cornflakes-go/cornflakes/naos/naosbench/internal/nbcf"
	"github.com/cornflakes-go/cornflakes/naos/naosbench/internal/nbmsgp"
	"github.com/cornflakes-go/cornflakes/naos/naosbench/internal/nbpb"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Point is the point of Naos §4.1: two float64.
type Point struct{ X, Y float64 }

// Pair is the key/value pair of Naos §4.1: an int32 key and a 5-byte
// string (the paper's char array of the average English word length).
type Pair struct {
	Key int32
	Val string
}

// Structures are the data of Naos §4.1, by name.
var Structures = []string{"float32", "point-ptr", "point-val", "pair-ptr"}

// Libraries are the libraries compared, by name. naosit is Naos with
// compressed pointer arrays (only for the structures held by pointer).
// floor is not a library: it moves the bytes of the Naos message from a
// buffer into a reused buffer with no encoding, no decoding and no
// allocation, the two kernel copies every transfer pays; for the flat
// arrays (float32, point-val) it then reads every value in the received
// bytes as every library's check does (see checkFloor).
var Libraries = []string{"naos", "naosit", "gob", "protobuf", "vtprotobuf", "msgp", "cornflakes", "floor"}

// dataset is one structure of one size in every library's own types,
// built once before it is measured.
type dataset struct {
	structure string
	n         int
	floats    []float32
	pptr      []*Point
	pval      []Point
	pairs     []*Pair
	want      float64 // sum(), computed once
}

func newDataset(structure string, n int) (*dataset, error) {
	d := &dataset{structure: structure, n: n}
	switch structure {
	case "float32":
		d.floats = make([]float32, n)
		for i := range d.floats {
			d.floats[i] = float32(i) * 0.5
		}
	case "point-ptr":
		d.pptr = make([]*Point, n)
		for i := range d.pptr {
			d.pptr[i] = &Point{float64(i), -float64(i)}
		}
	case "point-val":
		d.pval = make([]Point, n)
		for i := range d.pval {
			d.pval[i] = Point{float64(i), -float64(i)}
		}
	case "pair-ptr":
		d.pairs = make([]*Pair, n)
		for i := range d.pairs {
			d.pairs[i] = &Pair{int32(i), fmt.Sprintf("%05d", i%100000)}
		}
	default:
		return nil, fmt.Errorf("naosbench: unknown structure %q (known: %v)", structure, Structures)
	}
	d.want = d.sum()
	return d, nil
}

// value is the structure as Naos sends it: the Go value itself.
// approxBytes is about the size of one array on the wire (the same for
// every library: it sizes the streaming window, see inFlight).
func (d *dataset) approxBytes() int {
	switch d.structure {
	case "float32":
		return 4 * d.n
	case "pair-ptr":
		return 18 * d.n // naos' dense layout; msgp's is about 16
	}
	return 16 * d.n // a Point
}

func (d *dataset) value() any {
	switch d.structure {
	case "float32":
		return d.floats
	case "point-ptr":
		return d.pptr
	case "point-val":
		return d.pval
	}
	return d.pairs
}

// codec encodes the dataset into a frame and decodes frames into the
// library's own types, reading every value. A codec is used by one
// goroutine; sender and receiver get their own.
type codec struct {
	encode func(dst []byte) ([]byte, error)
	decode func(frame []byte) error
}

var errCheck = errors.New("naosbench: decoded value differs from what was sent")

// check verifies a decoded element count and a checksum of the values.
func (d *dataset) check(n int, sum float64) error {
	if n != d.n || sum != d.want {
		return fmt.Errorf("%w (%s, %d elements: got %d, checksum %v want %v)", errCheck, d.structure, d.n, n, sum, d.want)
	}
	return nil
}

// sum is a checksum of the dataset the decoders recompute.
func (d *dataset) sum() float64 {
	var s float64
	switch d.structure {
	case "float32":
		for _, f := range d.floats {
			s += float64(f)
		}
	case "point-ptr":
		for _, p := range d.pptr {
			s += p.X + 2*p.Y
		}
	case "point-val":
		for _, p := range d.pval {
			s += p.X + 2*p.Y
		}
	case "pair-ptr":
		for _, p := range d.pairs {
			s += float64(p.Key) + float64(len(p.Val))
		}
	}
	return s
}

// sink is a receiver's values kept from one message to the next when
// values are reused: each library then decodes into the previous value as
// far as its API lets it (naos.RecvInto reuses an array of pointer-free
// elements, gob and msgp reuse slice capacity and msgp the pointed-to
// objects, protobuf-go merges into a message whose list is truncated,
// vtprotobuf appends to it). The zero sink (reuse false) decodes every
// message into a new value.
type sink struct {
	reuse  bool
	floats []float32
	pptr   []*Point
	pval   []Point
	pairs  []*Pair
	pb     proto.Message
	mf     nbmsgp.Floats
	mpp    nbmsgp.PointsPtr
	mpv    nbmsgp.PointsVal
	mpairs nbmsgp.Pairs
}

// newCodec returns lib's codec for d; its decoder reuses values between
// messages if reuse is set (see sink).
func newCodec(lib string, d *dataset, reuse bool) (codec, error) {
	switch lib {
	case "naos", "naosit":
		return naosCodec(d, naos.Options{Compact: lib == "naosit"}), nil
	case "gob":
		return gobCodec(d, &sink{reuse: reuse}), nil
	case "protobuf", "vtprotobuf":
		return pbCodec(d, lib == "vtprotobuf", &sink{reuse: reuse}), nil
	case "msgp":
		return msgpCodec(d, &sink{reuse: reuse}), nil
	case "cornflakes":
		return cfCodec(d), nil
	case "floor":
		msg, err := naos.AppendEncode(nil, d.value(), naos.Options{})
		if err != nil {
			return codec{}, err
		}
		return codec{
			encode: func(dst []byte) ([]byte, error) { return append(dst, msg...), nil },
			decode: func(f []byte) error {
				if len(f) != len(msg) {
					return errCheck
				}
				return d.checkFloor(f)
			},
		}, nil
	}
	return codec{}, fmt.Errorf("naosbench: unknown library %q (known: %v)", lib, Libraries)
}

func naosCodec(d *dataset, o naos.Options) codec {
	v := d.value()
	return codec{
		encode: func(dst []byte) ([]byte, error) { return naos.AppendEncode(dst, v, o) },
		decode: func(f []byte) error { return naosDecode(d, f) },
	}
}

func naosDecode(d *dataset, f []byte) error {
	switch d.structure {
	case "float32":
		v, err := naos.Decode[[]float32](f, naos.Limits{})
		if err != nil {
			return err
		}
		return d.checkFloats(v)
	case "point-ptr":
		v, err := naos.Decode[[]*Point](f, naos.Limits{})
		if err != nil {
			return err
		}
		return d.checkPointPtrs(v)
	case "point-val":
		v, err := naos.Decode[[]Point](f, naos.Limits{})
		if err != nil {
			return err
		}
		return d.checkPoints(v)
	}
	v, err := naos.Decode[[]*Pair](f, naos.Limits{})
	if err != nil {
		return err
	}
	return d.checkPairs(v)
}

// The checks read every decoded value. The values are integers well
// within float64's 53 bits, so any order of addition gives the exact sum:
// four independent sums keep the check from being one chain of
// dependent additions (a harness cost every library would pay).

func (d *dataset) checkFloats(v []float32) error {
	n := len(v)
	var s0, s1, s2, s3 float64
	for ; len(v) >= 4; v = v[4:] {
		s0 += float64(v[0])
		s1 += float64(v[1])
		s2 += float64(v[2])
		s3 += float64(v[3])
	}
	for _, x := range v {
		s0 += float64(x)
	}
	return d.check(n, s0+s1+s2+s3)
}

// checkFloor is the floor's check of a received Naos message: for the
// flat arrays, whose elements are the message's last bytes as they are in
// memory, it reads every value with the libraries' own check (checkFloats,
// checkPoints) on a view of those bytes, so the floor pays the same
// harness cost as every library; for the other structures it checks
// nothing beyond the length. The view needs the bytes aligned for the
// element type (serveTCP aligns the floor's frame so); unaligned bytes
// are summed as they are, with the same additions.
func (d *dataset) checkFloor(f []byte) error {
	switch d.structure {
	case "float32":
		if len(f) < 4*d.n {
			return errCheck
		}
		if v, ok := tailView[float32](f, d.n); ok {
			return d.checkFloats(v)
		}
		// Unaligned (the RPC floor's message): the same sums, read from
		// the bytes.
		b := f[len(f)-4*d.n:]
		var s0, s1, s2, s3 float64
		for ; len(b) >= 16; b = b[16:] {
			s0 += float64(math.Float32frombits(binary.LittleEndian.Uint32(b[0:])))
			s1 += float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4:])))
			s2 += float64(math.Float32frombits(binary.LittleEndian.Uint32(b[8:])))
			s3 += float64(math.Float32frombits(binary.LittleEndian.Uint32(b[12:])))
		}
		for ; len(b) >= 4; b = b[4:] {
			s0 += float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		}
		return d.check(d.n, s0+s1+s2+s3)
	case "point-val":
		if len(f) < 16*d.n {
			return errCheck
		}
		if v, ok := tailView[Point](f, d.n); ok {
			return d.checkPoints(v)
		}
		b := f[len(f)-16*d.n:]
		var s0, s1 float64
		for ; len(b) >= 32; b = b[32:] {
			s0 += math.Float64frombits(binary.LittleEndian.Uint64(b[0:])) + 2*math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
			s1 += math.Float64frombits(binary.LittleEndian.Uint64(b[16:])) + 2*math.Float64frombits(binary.LittleEndian.Uint64(b[24:]))
		}
		for ; len(b) >= 16; b = b[16:] {
			s0 += math.Float64frombits(binary.LittleEndian.Uint64(b[0:])) + 2*math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
		}
		return d.check(d.n, s0+s1)
	}
	return nil
}

// tailView returns the last n elements' worth of f's bytes as a []T, if f
// holds them and they are aligned for T. T must be pointer-free.
func tailView[T any](f []byte, n int) ([]T, bool) {
	var z T
	size := int(unsafe.Sizeof(z))
	if n == 0 || len(f) < size*n {
		return nil, n == 0
	}
	b := f[len(f)-size*n:]
	p := unsafe.Pointer(&b[0])
	if uintptr(p)%unsafe.Alignof(z) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(p), n), true
}

func (d *dataset) checkPointPtrs(v []*Point) error {
	var s float64
	for _, p := range v {
		s += p.X + 2*p.Y
	}
	return d.check(len(v), s)
}

func (d *dataset) checkPoints(v []Point) error {
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(v); i += 2 {
		s0 += v[i].X + 2*v[i].Y
		s1 += v[i+1].X + 2*v[i+1].Y
	}
	for ; i < len(v); i++ {
		s0 += v[i].X + 2*v[i].Y
	}
	return d.check(len(v), s0+s1)
}

func (d *dataset) checkPairs(v []*Pair) error {
	var s float64
	for _, p := range v {
		s += float64(p.Key) + float64(len(p.Val))
	}
	return d.check(len(v), s)
}

// gobCodec: one encoder and one decoder per codec, so the type
// description goes once per stream as gob intends (framed mode: the
// frames of one codec must be decoded in order).
func gobCodec(d *dataset, s *sink) codec {
	var out bytes.Buffer
	enc := gob.NewEncoder(&out)
	in := &frameReader{}
	dec := gob.NewDecoder(in)
	v := d.value()
	return codec{
		encode: func(dst []byte) ([]byte, error) {
			out.Reset()
			if err := enc.Encode(v); err != nil {
				return dst, err
			}
			return append(dst, out.Bytes()...), nil
		},
		decode: func(f []byte) error {
			in.b = f
			return gobDecode(d, dec, s)
		},
	}
}

func gobDecode(d *dataset, dec *gob.Decoder, s *sink) error {
	if !s.reuse {
		*s = sink{}
	}
	switch d.structure {
	case "float32":
		if err := dec.Decode(&s.floats); err != nil {
			return err
		}
		return d.checkFloats(s.floats)
	case "point-ptr":
		if err := dec.Decode(&s.pptr); err != nil {
			return err
		}
		return d.checkPointPtrs(s.pptr)
	case "point-val":
		if err := dec.Decode(&s.pval); err != nil {
			return err
		}
		return d.checkPoints(s.pval)
	}
	if err := dec.Decode(&s.pairs); err != nil {
		return err
	}
	return d.checkPairs(s.pairs)
}

// frameReader feeds a gob decoder one frame at a time (an io.ByteReader,
// so that gob does not add a buffer that reads ahead).
type frameReader struct{ b []byte }

func (r *frameReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func (r *frameReader) ReadByte() (byte, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, nil
}

// pbMessage is the dataset as protobuf messages (the library's own types
// hold the data; building them is not measured).
func pbMessage(d *dataset) proto.Message {
	switch d.structure {
	case "float32":
		return &nbpb.Floats{V: d.floats}
	case "point-ptr", "point-val":
		m := &nbpb.Points{V: make([]*nbpb.Point, d.n)}
		for i := range m.V {
			m.V[i] = &nbpb.Point{X: float64(i), Y: -float64(i)}
		}
		return m
	}
	m := &nbpb.Pairs{V: make([]*nbpb.Pair, d.n)}
	for i, p := range d.pairs {
		m.V[i] = &nbpb.Pair{Key: p.Key, Val: p.Val}
	}
	return m
}

type vtMessage interface {
	proto.Message
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
	UnmarshalVT([]byte) error
}

func pbCodec(d *dataset, vt bool, sk *sink) codec {
	m := pbMessage(d)
	return codec{
		encode: func(dst []byte) ([]byte, error) {
			if !vt {
				return proto.MarshalOptions{}.MarshalAppend(dst, m)
			}
			v := m.(vtMessage)
			n := v.SizeVT()
			dst = grow(dst, n)
			_, err := v.MarshalToSizedBufferVT(dst[len(dst)-n:])
			return dst, err
		},
		decode: func(f []byte) error {
			r := sk.pb
			if !sk.reuse || r == nil {
				r = m.ProtoReflect().New().Interface()
				sk.pb = r
			}
			switch x := r.(type) { // reused: the list truncated, its capacity kept
			case *nbpb.Floats:
				x.V = x.V[:0]
			case *nbpb.Points:
				x.V = x.V[:0]
			case *nbpb.Pairs:
				x.V = x.V[:0]
			}
			var err error
			if vt {
				err = r.(vtMessage).UnmarshalVT(f)
			} else {
				err = proto.UnmarshalOptions{Merge: true}.Unmarshal(f, r)
			}
			if err != nil {
				return err
			}
			return pbCheck(d, r)
		},
	}
}

func pbCheck(d *dataset, m proto.Message) error {
	var s float64
	switch m := m.(type) {
	case *nbpb.Floats:
		for _, f := range m.V {
			s += float64(f)
		}
		return d.check(len(m.V), s)
	case *nbpb.Points:
		for _, p := range m.V {
			s += p.X + 2*p.Y
		}
		return d.check(len(m.V), s)
	case *nbpb.Pairs:
		for _, p := range m.V {
			s += float64(p.Key) + float64(len(p.Val))
		}
		return d.check(len(m.V), s)
	}
	return errCheck
}

// grow extends dst by n bytes.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		nd := make([]byte, len(dst), len(dst)+n)
		copy(nd, dst)
		dst = nd
	}
	return dst[:len(dst)+n]
}

type msgpValue interface {
	MarshalMsg([]byte) ([]byte, error)
	Msgsize() int
}

func msgpCodec(d *dataset, sk *sink) codec {
	var v msgpValue
	switch d.structure {
	case "float32":
		v = nbmsgp.Floats(d.floats)
	case "point-ptr":
		p := make(nbmsgp.PointsPtr, d.n)
		for i, q := range d.pptr {
			p[i] = &nbmsgp.Point{X: q.X, Y: q.Y}
		}
		v = p
	case "point-val":
		p := make(nbmsgp.PointsVal, d.n)
		for i, q := range d.pval {
			p[i] = nbmsgp.Point{X: q.X, Y: q.Y}
		}
		v = p
	default:
		p := make(nbmsgp.Pairs, d.n)
		for i, q := range d.pairs {
			p[i] = &nbmsgp.Pair{Key: q.Key, Val: q.Val}
		}
		v = p
	}
	return codec{
		encode: func(dst []byte) ([]byte, error) {
			if cap(dst)-len(dst) < v.Msgsize() {
				dst = grow(dst, v.Msgsize())[:len(dst)]
			}
			return v.MarshalMsg(dst)
		},
		decode: func(f []byte) error {
			if !sk.reuse {
				*sk = sink{}
			}
			var s float64
			switch d.structure {
			case "float32":
				x := &sk.mf
				if _, err := x.UnmarshalMsg(f); err != nil {
					return err
				}
				for _, f := range *x {
					s += float64(f)
				}
				return d.check(len(*x), s)
			case "point-ptr":
				x := &sk.mpp
				if _, err := x.UnmarshalMsg(f); err != nil {
					return err
				}
				for _, p := range *x {
					s += p.X + 2*p.Y
				}
				return d.check(len(*x), s)
			case "point-val":
				x := &sk.mpv
				if _, err := x.UnmarshalMsg(f); err != nil {
					return err
				}
				for _, p := range *x {
					s += p.X + 2*p.Y
				}
				return d.check(len(*x), s)
			}
			x := &sk.mpairs
			if _, err := x.UnmarshalMsg(f); err != nil {
				return err
			}
			for _, p := range *x {
				s += float64(p.Key) + float64(len(p.Val))
			}
			return d.check(len(*x), s)
		},
	}
}

// cfCodec: Cornflakes' generated messages, built from the Go data in an
// arena per message (the serialization step) and decoded lazily, reading
// every value.
func cfCodec(d *dataset) codec {
	ea, da := wire.NewArena(), wire.NewArena()
	return codec{
		encode: func(dst []byte) ([]byte, error) {
			defer func() { _ = ea.Reset() }()
			var obj wire.Object
			switch d.structure {
			case "float32":
				m := nbcf.NewFloats(ea)
				l := m.InitV(d.n)
				for _, f := range d.floats {
					l.Append(f)
				}
				obj = m
			case "point-ptr", "point-val":
				m := nbcf.NewPoints(ea)
				l := m.InitV(d.n)
				for i := 0; i < d.n; i++ {
					p := nbcf.NewPoint(ea)
					if d.pptr != nil {
						p.SetX(d.pptr[i].X)
						p.SetY(d.pptr[i].Y)
					} else {
						p.SetX(d.pval[i].X)
						p.SetY(d.pval[i].Y)
					}
					l.Append(p)
				}
				obj = m
			default:
				m := nbcf.NewPairs(ea)
				l := m.InitV(d.n)
				for _, q := range d.pairs {
					p := nbcf.NewPair(ea)
					p.SetKey(q.Key)
					p.SetVal(q.Val)
					l.Append(p)
				}
				obj = m
			}
			return wire.Flatten(obj, dst)
		},
		decode: func(f []byte) error {
			defer func() { _ = da.Reset() }()
			var s float64
			switch d.structure {
			case "float32":
				m := nbcf.NewFloats(da)
				if err := m.DecodeBytes(f); err != nil {
					return err
				}
				l, err := m.GetV()
				if err != nil {
					return err
				}
				for _, f := range l.Slice() {
					s += float64(f)
				}
				return d.check(l.Len(), s)
			case "point-ptr", "point-val":
				m := nbcf.NewPoints(da)
				if err := m.DecodeBytes(f); err != nil {
					return err
				}
				l, err := m.GetV()
				if err != nil {
					return err
				}
				for i := 0; i < l.Len(); i++ {
					p := l.At(i)
					s += p.GetX() + 2*p.GetY()
				}
				return d.check(l.Len(), s)
			}
			m := nbcf.NewPairs(da)
			if err := m.DecodeBytes(f); err != nil {
				return err
			}
			l, err := m.GetV()
			if err != nil {
				return err
			}
			for i := 0; i < l.Len(); i++ {
				p := l.At(i)
				s += float64(p.GetKey()) + float64(len(p.GetValBytes()))
			}
			return d.check(l.Len(), s)
		},
	}
}

var _ = binary.LittleEndian
var _ = math.Inf
