package shm

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

// Map maps the whole file at path into memory, shared with every other
// process that maps it. The file must exist and must not be empty
// ([ErrEmptyFile]). The returned errors wrap the underlying *os.PathError
// or syscall errno, so errors.Is(err, fs.ErrNotExist) works.
//
// The file descriptor is closed before Map returns; the mapping stays valid
// until [Mapping.Close]. A file that grows after mapping is not remapped.
func Map(path string, mode Mode) (*Mapping, error) {
	var (
		flag int
		prot int
	)
	switch mode {
	case ReadOnly:
		flag, prot = os.O_RDONLY, syscall.PROT_READ
	case ReadWrite:
		flag, prot = os.O_RDWR, syscall.PROT_READ|syscall.PROT_WRITE
	default:
		return nil, fmt.Errorf("shm: map %s: invalid %v", path, mode)
	}

	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: map: %w", err)
	}
	defer f.Close() // the mapping does not need the descriptor

	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shm: map: %w", err)
	}
	size := info.Size()
	if size == 0 {
		return nil, fmt.Errorf("shm: map %s: %w", path, ErrEmptyFile)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("shm: map %s: file of %d bytes does not fit in the address space", path, size)
	}

	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), prot, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap %s (%d bytes, %v): %w", path, size, mode, err)
	}
	return &Mapping{path: path, mode: mode, data: data}, nil
}

func munmap(data []byte) error {
	return syscall.Munmap(data)
}
