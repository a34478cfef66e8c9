//go:build !linux

package respbench

import "errors"

func pinServers(map[string]int) (func(), string, error) {
	return nil, "", errors.New("respbench: --pin is implemented on Linux only")
}
