package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Code is a status code: gRPC's code set, with the same numbers and
// meanings (google.golang.org/grpc/codes), so that errors map one to one
// between the two.
type Code uint8

// The status codes.
const (
	OK                 Code = 0
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
	Unauthenticated    Code = 16
)

// NumCodes is the number of status codes; codes at or above it are invalid
// on the wire (the client reports them as Unknown).
const NumCodes = 17

var codeNames = [NumCodes]string{"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded",
	"NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
	"Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"}

// String returns the code's name ("NotFound"), or "Code(n)".
func (c Code) String() string {
	if int(c) < NumCodes {
		return codeNames[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// Error is an application error: a status code other than OK, a message
// and optional details (opaque bytes, for example a serialized message),
// returned by a handler and carried in the response to the caller. It is
// distinct from the transport's errors (rpc.ErrPeerFailed, ...), which a
// call returns as they are: errors.As(err, new(*Error)) tells them apart.
//
// errors.Is(err, target) holds for a target *Error with the same Code and,
// if the target's Message is not empty, the same Message: compare with a
// sentinel such as &service.Error{Code: service.NotFound}. An Error of
// code DeadlineExceeded (the handler's context expired first) also matches
// context.DeadlineExceeded, and one of code Canceled context.Canceled.
type Error struct {
	Code    Code
	Message string
	Details []byte
}

// Errorf returns an *Error with code c and a formatted message.
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Error formats the error as "service: <Code>: <message>".
func (e *Error) Error() string {
	if e.Message == "" {
		return "service: " + e.Code.String()
	}
	return "service: " + e.Code.String() + ": " + e.Message
}

// Is reports whether target is an *Error with e's code (and message, if
// target's is not empty).
func (e *Error) Is(target error) bool {
	switch target {
	case context.DeadlineExceeded:
		return e.Code == DeadlineExceeded
	case context.Canceled:
		return e.Code == Canceled
	}
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// CodeOf returns the status code of err: OK for nil, the code of an
// *Error in err's chain, Canceled or DeadlineExceeded for the context
// errors, and Unknown for anything else (transport errors included).
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var se *Error
	switch {
	case errors.As(err, &se):
		return se.Code
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	}
	return Unknown
}

// toStatus turns a handler's error into the status sent to the client: an
// *Error as it is, the context errors as Canceled / DeadlineExceeded, and
// anything else as Unknown with the error's text.
func toStatus(err error) *Error {
	var se *Error
	if errors.As(err, &se) {
		if se.Code == OK { // an *Error with code OK is a handler bug
			return &Error{Code: Unknown, Message: "handler returned an error with code OK: " + se.Message}
		}
		return se
	}
	c := CodeOf(err)
	return &Error{Code: c, Message: err.Error()}
}
