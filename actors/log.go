package actors

import (
	"context"
	"log/slog"
)

// levelFilter passes records at or above min to h.
type levelFilter struct {
	h   slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.h.Enabled(ctx, l)
}
func (f levelFilter) Handle(ctx context.Context, r slog.Record) error { return f.h.Handle(ctx, r) }
func (f levelFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFilter{f.h.WithAttrs(a), f.min}
}
func (f levelFilter) WithGroup(g string) slog.Handler { return levelFilter{f.h.WithGroup(g), f.min} }
