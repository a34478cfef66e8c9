package naos

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"
)

// The registry of concrete types that interfaces may hold. A sender names
// the dynamic type of an interface by its type id (a hash of the type's
// full name and its fingerprint); the receiver accepts only ids it has
// registered too.
var registry struct {
	sync.RWMutex
	byID   map[uint64]*plan
	byType map[reflect.Type]uint64
}

// Register records the concrete type of v so that interface values holding
// it can be sent and received. Both peers must register it. Registering a
// type twice is a no-op; a type that cannot be sent is an error
// (*UnsupportedError), as is a different type with the same id.
func Register(v any) error {
	if v == nil {
		return fmt.Errorf("naos: Register(nil)")
	}
	return RegisterType(reflect.TypeOf(v))
}

// RegisterType is Register for a reflect.Type.
func RegisterType(t reflect.Type) error {
	p, err := planOf(t)
	if err != nil {
		return err
	}
	id := typeID(p)
	registry.Lock()
	defer registry.Unlock()
	if registry.byID == nil {
		registry.byID = map[uint64]*plan{}
		registry.byType = map[reflect.Type]uint64{}
	}
	if q, ok := registry.byID[id]; ok {
		if q.t != t {
			return fmt.Errorf("naos: Register(%s): type id %#x already taken by %s", t, id, q.t)
		}
		return nil
	}
	registry.byID[id] = p
	registry.byType[t] = id
	return nil
}

func typeID(p *plan) uint64 {
	name := p.t.String()
	if p.t.PkgPath() != "" {
		name = p.t.PkgPath() + "." + p.t.Name()
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], p.fp)
	h := sha256.Sum256(append([]byte(name+"\x00"), b[:]...))
	return binary.LittleEndian.Uint64(h[:8])
}

func registeredID(t reflect.Type) (uint64, *plan, bool) {
	registry.RLock()
	defer registry.RUnlock()
	id, ok := registry.byType[t]
	if !ok {
		return 0, nil, false
	}
	return id, registry.byID[id], true
}

func registeredPlan(id uint64) *plan {
	registry.RLock()
	defer registry.RUnlock()
	return registry.byID[id]
}
