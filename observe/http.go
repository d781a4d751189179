package observe

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/protobuf/encoding/protojson"
)

// Handler serves the board:
//
//	/status   the Status message as JSON (protojson: field names as in status.proto)
//	/healthz  200 "ok" when every stream is healthy, else 503 with each reason
//	/readyz   200 when every stream in streams is replaying, caught up or live, else 503
//	/metrics  Prometheus text: the series documented in metrics.go
func Handler(b *Board, streams []string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		out, err := protojson.MarshalOptions{Multiline: true, UseProtoNames: true, EmitUnpopulated: true}.Marshal(b.Snapshot())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reasons := b.Healthy()
		answer(w, ok, reasons)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reasons := b.Ready(streams)
		answer(w, ok, reasons)
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{b})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

func answer(w http.ResponseWriter, ok bool, reasons []string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if ok {
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(strings.Join(reasons, "\n") + "\n"))
}
