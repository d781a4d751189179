package aeron

import (
	"log/slog"
	"os/user"
	"path/filepath"
	"time"
)

// Options configure a [Client]. The zero value of every field means the default, which is
// Aeron's own.
type Options struct {
	// Dir is the media driver's directory (aeron.dir): /dev/shm/aeron-<user> by default.
	Dir string
	// DriverTimeout bounds the wait for a driver at connect, the wait for each command's
	// answer, and the age of the driver's heartbeat beyond which it counts as dead
	// (aeron.driver.timeout). Default 10 s.
	DriverTimeout time.Duration
	// KeepaliveInterval is how often the client refreshes its heartbeat and checks the
	// driver's. Default 500 ms.
	KeepaliveInterval time.Duration
	// ResourceLinger is how long a released log buffer stays mapped, so that a poll or
	// offer racing with the release reads mapped memory. Default 3 s.
	ResourceLinger time.Duration
	// IdleInterval is how long the conductor waits between duty cycles when no command is
	// awaiting an answer. It bounds how late the client sees new images. Default 10 ms.
	IdleInterval time.Duration
	// Logger receives the client's warnings and errors. Default slog.Default().
	Logger *slog.Logger
	// OnError is called on the conductor goroutine for errors that belong to no call:
	// a driver timeout, the driver timing this client out, an error for a channel
	// endpoint, the driver refusing to remove a closed publication or subscription (a
	// [*DriverError]). It must not block; a call that waits for the conductor made from it returns
	// [ErrReentrant]. The error that ends the client is passed to it before [Client.Dead]
	// is closed. Default: log at error level.
	OnError func(error)
}

// DefaultDir is the media driver's default directory on Linux: /dev/shm/aeron-<user>.
func DefaultDir() string {
	name := "default"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return filepath.Join("/dev/shm", "aeron-"+name)
}

func (o Options) withDefaults() Options {
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	if o.DriverTimeout <= 0 {
		o.DriverTimeout = 10 * time.Second
	}
	if o.KeepaliveInterval <= 0 {
		o.KeepaliveInterval = 500 * time.Millisecond
	}
	if o.ResourceLinger <= 0 {
		o.ResourceLinger = 3 * time.Second
	}
	if o.IdleInterval <= 0 {
		o.IdleInterval = 10 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OnError == nil {
		logger := o.Logger
		o.OnError = func(err error) { logger.Error("aeron client", "err", err) }
	}
	return o
}
