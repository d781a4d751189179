// Package messages is the Go code generated from proto/ferry/v1 by `make proto` (buf and
// protoc-gen-go): every message ferry's actors exchange, the checkpoint record and the status
// model. Never edit the .pb.go files by hand; `make test` fails when they are stale.
//
// It imports only google.golang.org/protobuf. Any ferry package may import it.
package messages
