package infra

import (
	"fmt"
	"os"
	"path/filepath"
)

// archiveReady reports why the archive is not ready yet, or nil once it is.
// Interim check until the Go Aeron client can read the CnC file: cnc.dat exists.
func archiveReady(a *Archive) error {
	if _, err := os.Stat(filepath.Join(a.AeronDir, "cnc.dat")); err != nil {
		return fmt.Errorf("no cnc.dat yet: %w", err)
	}
	return nil
}
