//go:build !linux

package shm

import (
	"errors"
	"fmt"
)

// Map is not implemented on this platform: the Aeron media driver ferry
// targets runs on Linux. It returns an error wrapping errors.ErrUnsupported.
func Map(path string, mode Mode) (*Mapping, error) {
	return nil, fmt.Errorf("shm: map %s (%v): %w", path, mode, errors.ErrUnsupported)
}

func munmap([]byte) error { return errors.ErrUnsupported }
