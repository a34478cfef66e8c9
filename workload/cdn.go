package workload

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// Tragen tc-1 ("images") tables, derived from UMass-LIDS/Tragen
// FOOTPRINT_DESCRIPTORS/tc-1/popularity.txt (see data/ and docs/WORKLOADS.md).
var (
	//go:embed data/tragen_tc1_image_size_cdf.csv
	tragenSizeCSV []byte
	//go:embed data/tragen_tc1_image_popularity.csv
	tragenPopularityCSV []byte
)

// cdfRow is one row of a CDF table: values in (prev.le, le] have cumulative
// probability cdf.
type cdfRow struct {
	le  int
	cdf float64
}

var (
	tragenOnce       sync.Once
	tragenSizes      []cdfRow // object size in KB, object-weighted
	tragenPopularity []cdfRow // requests per object
	tragenErr        error
)

func loadTragen() error {
	tragenOnce.Do(func() {
		tragenSizes, tragenErr = parseCDF(tragenSizeCSV, "size_kb_le")
		if tragenErr == nil {
			tragenPopularity, tragenErr = parseCDF(tragenPopularityCSV, "requests_per_object_le")
		}
	})
	return tragenErr
}

// parseCDF reads "le,cdf,..." rows after a header starting with first.
func parseCDF(data []byte, first string) ([]cdfRow, error) {
	var rows []cdfRow
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || strings.HasPrefix(line, first) {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 2 {
			return nil, fmt.Errorf("workload: embedded CDF row %q", line)
		}
		le, err1 := strconv.Atoi(f[0])
		c, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil || (len(rows) > 0 && (le <= rows[len(rows)-1].le || c < rows[len(rows)-1].cdf)) {
			return nil, fmt.Errorf("workload: embedded CDF row %q", line)
		}
		rows = append(rows, cdfRow{le, c})
	}
	if len(rows) == 0 || rows[len(rows)-1].cdf < 0.999 {
		return nil, fmt.Errorf("workload: embedded CDF %s incomplete", first)
	}
	return rows, sc.Err()
}

// sampleCDF draws an integer in (prev.le, row.le] of the row u falls in,
// uniformly, capped at limit.
func sampleCDF(rows []cdfRow, r *rand.Rand, limit int) int {
	u := r.Float64() * rows[len(rows)-1].cdf
	lo := 0
	for _, row := range rows {
		if u < row.cdf {
			hi := min(row.le, limit)
			if hi <= lo {
				return hi
			}
			return lo + 1 + r.IntN(hi-lo)
		}
		lo = row.le
	}
	return min(rows[len(rows)-1].le, limit)
}

// CDNConfig configures the CDN workload. Zero fields take defaults.
type CDNConfig struct {
	Objects        int // objects loaded (default 10000; the paper uses 1M)
	SegmentSize    int // bytes per list element (default 8000, Cornflakes' 8 KB with 1 KB = 1000 B)
	KeySize        int // key bytes, "key_<i>" padded with 'a' (default 64)
	MaxObjectBytes int // object sizes are capped here (default 4096000: the table's last finite bound, 4096 KB)
	// NoPopularity picks objects uniformly instead of with Tragen's
	// requests-per-object distribution.
	NoPopularity bool
	// PreloadBatchBytes bounds one preload request (default DefaultPreloadBatchBytes).
	PreloadBatchBytes int
}

// CDN is the Tragen "image" (tc-1) workload of Cornflakes' Table 2. Object
// sizes are integer KB (1 KB = 1000 B) drawn from the object-weighted size
// CDF; each object is a list of SegmentSize-byte segments (the last holds the
// remainder) under one key. Requests are GetFromList(key, i) for every segment
// of an object in order; the last segment's request has Units = 1, so units
// per second are objects per second. With popularity, every object gets a
// request count from Tragen's requests-per-object CDF (77% are requested
// once) and the request sequence is a fixed shuffle of those counts, which
// each client walks from its own offset, looping (an independent-reference
// model; Tragen's stack-distance fidelity is not reproduced).
type CDN struct {
	cfg   CDNConfig
	model *Model
	seq   []int32 // object order of one pass over the trace
	// direct: object i is model entry i, so a stream records its keys'
	// model indexes (Request.mix) and reads segment counts without a
	// lookup.
	direct bool
}

// NewCDN builds the workload and its model.
func NewCDN(c CDNConfig) (*CDN, error) {
	if err := loadTragen(); err != nil {
		return nil, err
	}
	if c.Objects == 0 {
		c.Objects = 10_000
	}
	if c.SegmentSize == 0 {
		c.SegmentSize = 8000
	}
	if c.KeySize == 0 {
		c.KeySize = 64
	}
	if c.MaxObjectBytes == 0 {
		c.MaxObjectBytes = 4096 * 1000
	}
	if c.PreloadBatchBytes == 0 {
		c.PreloadBatchBytes = DefaultPreloadBatchBytes
	}
	switch {
	case c.Objects < 1 || c.Objects > 1<<26:
		return nil, fmt.Errorf("%w: cdn objects %d out of range [1, 2^26]", ErrBadSpec, c.Objects)
	case c.SegmentSize < 64 || c.SegmentSize > 1<<20:
		return nil, fmt.Errorf("%w: cdn segment size %d out of range [64, 1 MiB]", ErrBadSpec, c.SegmentSize)
	case c.KeySize < 1 || c.KeySize > 1024:
		return nil, fmt.Errorf("%w: cdn key size %d out of range [1, 1024]", ErrBadSpec, c.KeySize)
	case c.MaxObjectBytes < 1000 || c.MaxObjectBytes > 1<<30:
		return nil, fmt.Errorf("%w: cdn max object %d out of range [1000, 1 GiB]", ErrBadSpec, c.MaxObjectBytes)
	case c.PreloadBatchBytes < c.SegmentSize:
		return nil, fmt.Errorf("%w: cdn preload batch %d smaller than a segment", ErrBadSpec, c.PreloadBatchBytes)
	}
	d := &CDN{cfg: c, model: NewModel(), direct: true}
	r := newRand(0xCD0, 0)
	var key []byte
	var sizes []int
	maxKB := c.MaxObjectBytes / 1000
	for i := range c.Objects {
		obj := sampleCDF(tragenSizes, r, maxKB) * 1000
		sizes = sizes[:0]
		for off := 0; off < obj; off += c.SegmentSize {
			sizes = append(sizes, min(c.SegmentSize, obj-off))
		}
		key = GoogleKey(key[:0], i, c.KeySize)
		d.direct = d.direct && int(d.model.set(key, sizes...)) == i
	}
	if !c.NoPopularity {
		for i := range c.Objects {
			n := sampleCDF(tragenPopularity, r, 1_000_000)
			for range n {
				d.seq = append(d.seq, int32(i))
			}
		}
		r.Shuffle(len(d.seq), func(i, j int) { d.seq[i], d.seq[j] = d.seq[j], d.seq[i] })
	}
	return d, nil
}

// Config returns the effective configuration.
func (d *CDN) Config() CDNConfig { return d.cfg }

// Name implements Workload.
func (d *CDN) Name() string {
	return fmt.Sprintf("cdn:objects=%d,segment=%d,keysize=%d,maxobject=%d,popularity=%t,preloadbatch=%d", d.cfg.Objects, d.cfg.SegmentSize, d.cfg.KeySize, d.cfg.MaxObjectBytes, !d.cfg.NoPopularity, d.cfg.PreloadBatchBytes)
}

// Unit implements Workload: objects.
func (d *CDN) Unit() string { return UnitObjects }

// Model implements Workload.
func (d *CDN) Model() *Model { return d.model }

// Preload implements Workload: PutList of each object's segments, continued
// with AppendToList beyond PreloadBatchBytes.
func (d *CDN) Preload(fn func(*Request) error) error {
	var req Request
	var key []byte
	for i := range d.cfg.Objects {
		key = GoogleKey(key[:0], i, d.cfg.KeySize)
		sizes, _ := d.model.Sizes(key)
		if err := preloadList(&req, key, sizes, d.cfg.PreloadBatchBytes, fn); err != nil {
			return err
		}
	}
	return nil
}

// Segments returns the number of segments of object i.
func (d *CDN) Segments(i int) int {
	var key []byte
	sizes, _ := d.model.Sizes(GoogleKey(key, i, d.cfg.KeySize))
	return len(sizes)
}

// NewStream implements Workload.
func (d *CDN) NewStream(client, clients int, seed uint64) Stream {
	s := &cdnStream{d: d, r: newRand(seed, uint64(client))}
	if len(d.seq) > 0 && clients > 0 {
		s.pos = (client*len(d.seq)/clients + int(seed%uint64(len(d.seq)))) % len(d.seq)
	}
	return s
}

type cdnStream struct {
	d         *CDN
	r         *rand.Rand
	pos       int
	obj       int
	seg, nseg int
	key       []byte
}

func (s *cdnStream) Next(req *Request) {
	d := s.d
	if s.seg >= s.nseg {
		if len(d.seq) > 0 {
			s.obj = int(d.seq[s.pos])
			s.pos++
			if s.pos == len(d.seq) {
				s.pos = 0
			}
		} else {
			s.obj = s.r.IntN(d.cfg.Objects)
		}
		s.key = GoogleKey(s.key[:0], s.obj, d.cfg.KeySize)
		if d.direct {
			s.seg, s.nseg = 0, int(d.model.entries[s.obj].n)
		} else {
			sizes, _ := d.model.Sizes(s.key)
			s.seg, s.nseg = 0, len(sizes)
		}
	}
	req.reset(OpGetFromList)
	st := req.beginKey()
	req.buf = append(req.buf, s.key...)
	x := int32(-1)
	if d.direct {
		x = int32(s.obj)
	}
	req.endKeyAt(st, d.model, x)
	req.Index = s.seg
	s.seg++
	if s.seg < s.nseg {
		req.Units = 0
	}
	req.finish()
}
