// Package observe serves what ferry knows about its streams: the status board the
// pipeline pushes into, and the HTTP endpoints /status (JSON), /metrics (Prometheus),
// /healthz and /readyz.
//
// What it must never do: make a remote call, or wait on the pipeline, to answer a request.
// Everything it serves is the last status the stream supervisors pushed (lesson 23), so a
// request is answered at once even while the archive and Pulsar are down; and it says so
// of a stream that stopped pushing (stale), rather than serve its last status as current.
//
// Callers must create one [Board], pass it to the pipeline (actors.Env.Board) and serve
// [Handler] on it.
package observe
