package wireimpl

import (
	"fmt"
	"strconv"
)

// Text builds the one-line debugging form that generated String methods
// return: Name{field:value field:value ...}. Short bytes values are quoted;
// values over TextMaxBytes are shown by length only.
type Text struct {
	b []byte
	n int
}

// TextMaxBytes is the longest bytes or string value Text prints in full.
const TextMaxBytes = 64

// Begin starts a message named name.
func (t *Text) Begin(name string) {
	t.b = append(t.b, name...)
	t.b = append(t.b, '{')
}

// End finishes the message and returns the text.
func (t *Text) End() string {
	t.b = append(t.b, '}')
	return string(t.b)
}

func (t *Text) key(name string) {
	if t.n > 0 {
		t.b = append(t.b, ' ')
	}
	t.n++
	t.b = append(t.b, name...)
	t.b = append(t.b, ':')
}

// Int adds a signed integer field.
func (t *Text) Int(name string, v int64) { t.key(name); t.b = strconv.AppendInt(t.b, v, 10) }

// Uint adds an unsigned integer field.
func (t *Text) Uint(name string, v uint64) { t.key(name); t.b = strconv.AppendUint(t.b, v, 10) }

// Bool adds a bool field.
func (t *Text) Bool(name string, v bool) { t.key(name); t.b = strconv.AppendBool(t.b, v) }

// Float adds a float (bitSize 32) or double (64) field.
func (t *Text) Float(name string, v float64, bitSize int) {
	t.key(name)
	t.b = strconv.AppendFloat(t.b, v, 'g', -1, bitSize)
}

// Enum adds an enum field by name (or number when unnamed).
func (t *Text) Enum(name string, v int32, s string) { t.key(name); t.b = append(t.b, s...) }

func (t *Text) raw(p []byte) {
	if len(p) > TextMaxBytes {
		t.b = append(t.b, '<')
		t.b = strconv.AppendInt(t.b, int64(len(p)), 10)
		t.b = append(t.b, " bytes>"...)
		return
	}
	t.b = strconv.AppendQuote(t.b, stringOf(p))
}

// Bytes adds a bytes field.
func (t *Text) Bytes(name string, b *Bytes) { t.key(name); t.raw(b.data) }

// String adds a string field (invalid UTF-8 is shown quoted with escapes).
func (t *Text) String(name string, s *String) { t.key(name); t.raw(s.b.data) }

// Err adds a field that could not be decoded.
func (t *Text) Err(name string, err error) {
	t.key(name)
	t.b = append(t.b, "<error: "...)
	t.b = append(t.b, err.Error()...)
	t.b = append(t.b, '>')
}

// Message adds a nested message field.
func (t *Text) Message(name string, m fmt.Stringer) { t.key(name); t.b = append(t.b, m.String()...) }

// BytesList adds a list of bytes.
func (t *Text) BytesList(name string, l *BytesList) {
	t.key(name)
	t.b = append(t.b, '[')
	for i := range l.Len() {
		if i > 0 {
			t.b = append(t.b, ' ')
		}
		t.raw(l.At(i))
	}
	t.b = append(t.b, ']')
}

// StringList adds a list of strings.
func (t *Text) StringList(name string, l *StringList) {
	t.key(name)
	t.b = append(t.b, '[')
	for i := range l.items {
		if i > 0 {
			t.b = append(t.b, ' ')
		}
		t.raw(l.items[i].b.data)
	}
	t.b = append(t.b, ']')
}

// TextScalars adds a list of scalars.
func TextScalars[T Scalar](t *Text, name string, l *ScalarList[T]) {
	t.key(name)
	t.b = fmt.Appendf(t.b, "%v", l.items)
}

// TextMessages adds a list of messages.
func TextMessages[P MessagePtr](t *Text, name string, l *MessageList[P]) {
	t.key(name)
	t.b = append(t.b, '[')
	for i, m := range l.items {
		if i > 0 {
			t.b = append(t.b, ' ')
		}
		t.b = append(t.b, m.String()...)
	}
	t.b = append(t.b, ']')
}
