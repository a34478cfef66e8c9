package main

import (
	"path/filepath"
	"time"
)

// outDir is the directory a benchmark command writes its files to: the
// --out flag's value, or ./out/<command>-<timestamp> when it is empty.
func outDir(flag, command string) string {
	if flag != "" {
		return flag
	}
	return filepath.Join("out", command+"-"+time.Now().Format("20060102-150405"))
}
