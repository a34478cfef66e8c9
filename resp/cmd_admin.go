package resp

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Eviction policies (Config.MaxMemoryPolicy, CONFIG SET maxmemory-policy).
const (
	PolicyNoEviction = "noeviction"
	PolicyAllKeysLRU = "allkeys-lru"
)

// makeRoom evicts keys (allkeys-lru) until the dataset estimate is under
// maxmemory; false when it stays over (noeviction, or nothing to evict).
// Keyspace lock held.
func (s *Server) makeRoom() bool {
	limit := s.maxMemory.Load()
	if limit <= 0 || s.ks.used <= limit {
		return true
	}
	if s.policy.Load() != 1 {
		return false
	}
	for s.ks.used > limit {
		if !s.ks.evictOne() {
			return false
		}
	}
	s.scheduleFree()
	return true
}

// configParams answers CONFIG GET: name and current value.
func (s *Server) configParams() [][2]string {
	pol := PolicyNoEviction
	if s.policy.Load() == 1 {
		pol = PolicyAllKeysLRU
	}
	prot := "yes"
	if s.cfg.NoProtectedMode {
		prot = "no"
	}
	return [][2]string{
		{"appendonly", "no"},
		{"client-query-buffer-limit", strconv.Itoa(s.cfg.Limits.MaxCommand)},
		{"databases", strconv.Itoa(NumDBs)},
		{"maxclients", strconv.Itoa(s.cfg.MaxConns)},
		{"maxmemory", strconv.FormatInt(s.maxMemory.Load(), 10)},
		{"maxmemory-policy", pol},
		{"proto-max-bulk-len", strconv.Itoa(s.cfg.Limits.MaxBulk)},
		{"protected-mode", prot},
		{"requirepass", s.cfg.Password},
		{"save", ""},
		{"timeout", strconv.FormatInt(s.idle.Load()/int64(time.Second), 10)},
	}
}

func cmdConfig(cn *conn, args [][]byte) {
	s := cn.srv
	switch strings.ToUpper(string(args[1])) {
	case "GET":
		if len(args) < 3 {
			cn.arity("config|get")
			return
		}
		var pairs [][2]string
		for _, p := range s.configParams() {
			for _, pat := range args[2:] {
				if globMatch(lower(pat), []byte(p[0])) {
					pairs = append(pairs, p)
					break
				}
			}
		}
		cn.out.mapHeader(len(pairs))
		for _, p := range pairs {
			cn.out.bulkString(p[0])
			cn.out.bulkString(p[1])
		}
	case "SET":
		if len(args) < 4 || len(args)%2 != 0 {
			cn.arity("config|set")
			return
		}
		for i := 2; i < len(args); i += 2 {
			name, val := strings.ToLower(string(args[i])), string(args[i+1])
			bad := func() {
				cn.fail("CONFIG SET failed (possibly related to argument '" + name + "') - argument couldn't be parsed into an integer")
			}
			switch name {
			case "maxmemory":
				v, err := ParseMemory(val)
				if err != nil {
					bad()
					return
				}
				s.maxMemory.Store(v)
			case "maxmemory-policy":
				switch strings.ToLower(val) {
				case PolicyNoEviction:
					s.policy.Store(0)
				case PolicyAllKeysLRU:
					s.policy.Store(1)
				default:
					cn.fail("CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: noeviction, allkeys-lru")
					return
				}
			case "timeout":
				v, ok := str2ll([]byte(val))
				if !ok || v < 0 {
					bad()
					return
				}
				s.idle.Store(v * int64(time.Second))
			case "save", "appendonly":
			default:
				cn.fail("Unknown option or number of arguments for CONFIG SET - '" + sanitize(args[i]) + "'")
				return
			}
		}
		cn.out.simple("OK")
	case "RESETSTAT":
		cn.out.simple("OK")
	default:
		cn.fail("unknown subcommand '" + sanitize(args[1]) + "'. Try CONFIG HELP.")
	}
}

// ParseMemory parses a Redis memory size (maxmemory): bytes, or with a
// k/kb/m/mb/g/gb suffix (k = 1000, kb = 1024, ...), any case.
func ParseMemory(v string) (int64, error) {
	v = strings.ToLower(v)
	mul := int64(1)
	for _, u := range []struct {
		s string
		m int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}} {
		if strings.HasSuffix(v, u.s) {
			v, mul = strings.TrimSuffix(v, u.s), u.m
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, strconv.ErrSyntax
	}
	return n * mul, nil
}

// rss is the process's resident set size in bytes (0 when unknown).
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func cmdInfo(cn *conn, args [][]byte) {
	s := cn.srv
	st := s.Stats()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var pool int64
	if p := s.pool; p != nil {
		ps := p.Stats()
		pool = ps.Bytes
	}
	used := int64(ms.HeapInuse+ms.StackInuse) + pool
	r := rss()
	pol := PolicyNoEviction
	if s.policy.Load() == 1 {
		pol = PolicyAllKeysLRU
	}
	secs := map[string]string{
		"server": "# Server\r\nredis_version:" + Version + "\r\nredis_mode:standalone\r\nserver_name:cornflakes\r\nos:" + runtime.GOOS +
			"\r\narch_bits:64\r\nprocess_id:" + strconv.Itoa(os.Getpid()) + "\r\nuptime_in_seconds:" + strconv.FormatInt(int64(time.Since(s.ks.start)/time.Second), 10) + "\r\n",
		"clients": "# Clients\r\nconnected_clients:" + strconv.Itoa(s.connCount()) + "\r\nmaxclients:" + strconv.Itoa(s.cfg.MaxConns) +
			"\r\nblocked_clients:" + strconv.Itoa(s.ks.nblocked) + "\r\n",
		"memory": "# Memory\r\nused_memory:" + strconv.FormatInt(used, 10) + "\r\nused_memory_rss:" + strconv.FormatInt(r, 10) +
			"\r\nused_memory_dataset:" + strconv.FormatInt(s.ks.used, 10) + "\r\nused_memory_heap:" + strconv.FormatUint(ms.HeapInuse, 10) +
			"\r\nused_memory_registered:" + strconv.FormatInt(pool, 10) + "\r\nmem_fragmentation_ratio:" + ratio(r, used) +
			"\r\nmaxmemory:" + strconv.FormatInt(s.maxMemory.Load(), 10) + "\r\nmaxmemory_policy:" + pol + "\r\n",
		"stats": "# Stats\r\ntotal_connections_received:" + strconv.FormatUint(st.Conns, 10) +
			"\r\ntotal_commands_processed:" + strconv.FormatUint(st.Commands, 10) +
			"\r\nrejected_connections:" + strconv.FormatUint(st.Rejected, 10) +
			"\r\nprotected_mode_denied:" + strconv.FormatUint(st.Denied, 10) +
			"\r\nidle_timeout_closed:" + strconv.FormatUint(st.IdleClosed, 10) +
			"\r\nunfinished_command_closed:" + strconv.FormatUint(st.SlowClosed, 10) +
			"\r\nclient_query_buffer_limit_disconnections:" + strconv.FormatUint(st.QueryLimit, 10) +
			"\r\nclient_output_buffer_limit_disconnections:" + strconv.FormatUint(st.OutputLimit, 10) +
			"\r\nexpired_keys:" + strconv.FormatUint(s.ks.expired, 10) + "\r\nevicted_keys:" + strconv.FormatUint(s.ks.evicted, 10) +
			"\r\nkeyspace_hits:" + strconv.FormatUint(s.ks.keyspaceH, 10) + "\r\nkeyspace_misses:" + strconv.FormatUint(s.ks.keyspaceM, 10) +
			"\r\nacl_access_denied_auth:" + strconv.FormatUint(st.AuthFailed, 10) + "\r\nacl_access_denied_cmd:" + strconv.FormatUint(st.ACLDenied, 10) +
			"\r\nzero_copy_values:" + strconv.FormatUint(st.ZeroCopy, 10) + "\r\nzero_copy_bytes:" + strconv.FormatUint(st.ZCBytes, 10) +
			"\r\nbig_args_received:" + strconv.FormatUint(st.BigArgs, 10) + "\r\n",
	}
	ks := "# Keyspace\r\n"
	now := nowMs()
	for i, d := range s.ks.dbs {
		if len(d.keys) > 0 {
			ks += "db" + strconv.Itoa(i) + ":keys=" + strconv.Itoa(len(d.keys)) + ",expires=" + strconv.Itoa(len(d.expires)) + ",avg_ttl=" + strconv.FormatInt(avgTTL(d, now), 10) + "\r\n"
		}
	}
	secs["keyspace"] = ks
	order := []string{"server", "clients", "memory", "stats", "keyspace"}
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	var out []string
	for _, name := range order {
		if len(want) == 0 || want[name] || want["all"] || want["everything"] || want["default"] {
			out = append(out, secs[name])
		}
	}
	cn.out.bulkString(strings.Join(out, "\r\n"))
}

func ratio(a, b int64) string {
	if b == 0 {
		return "0"
	}
	return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64)
}

func avgTTL(d *db, now int64) int64 {
	var sum, n int64
	for _, t := range d.expires {
		if n == 100 {
			break
		}
		sum += max(t-now, 0)
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
